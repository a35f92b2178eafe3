/*
 * transports.h -- the table of transports: which exist in this build, which may run here,
 * and which one reaches a peer.
 */
#ifndef ZCOLL_TRANSPORTS_H
#define ZCOLL_TRANSPORTS_H

#include <stddef.h>

#include "base/config.h"
#include "tl/transport.h"

extern const struct zcoll_tl_ops zcoll__tl_shm;
extern const struct zcoll_tl_ops zcoll__tl_verbs;
extern const struct zcoll_tl_ops zcoll__tl_ucx;
extern const struct zcoll_tl_ops zcoll__tl_loopback;

/* The transports: the one list (transports.c). ZCOLL_TRANSPORT names one of them; a
 * communicator reaches each peer over one of them (comm_setup.c). */
enum {
  ZCOLL_TLE_AUTO = 1u << 0,     /* ZCOLL_TRANSPORT=auto may choose it */
  ZCOLL_TLE_ONE_HOST = 1u << 1, /* reaches only peers on this host, in this PID namespace */
};
struct zcoll__tl_entry {
  const char *name;
  const struct zcoll_tl_ops *ops; /* NULL: not in this build, `missing` says why */
  const char *missing;
  unsigned flags;
  const char *doc; /* for zcoll_info */
  /* Its knobs (transports/<name>/config.c), listed in this table's order between base's
   * (comm/config_api.c); NULL, 0: none. */
  const struct zcoll__config_field *config;
  int nconfig;
};
extern const struct zcoll__tl_entry zcoll__transports[];
extern const int zcoll__ntransports;

/* Was the field set from the environment or code (not left at its default)? Configuration
 * with every table (config_api.c). */
int zcoll__config_explicit(const zcoll_config_t *cfg, const char *name);

/* The index of the named transport, -1 if there is none of that name. */
int zcoll__transport_find(const char *name);
/* Bit i set: transport i may run here (its probe succeeds) -- among those with flags
 * `with` (all of them if 0) and, forced, only the forced one. Refusals are collected in
 * why ("name: reason; ..."), quietly unless they are all there is. */
unsigned zcoll__transport_probe(const zcoll_config_t *cfg, unsigned with, char *why,
                                size_t why_len);
/* The transport for a pair of ranks, from what both ends can run (masks from
 * zcoll__transport_probe) and whether they share a host: both ends get the same answer.
 * -1: none reaches it. */
int zcoll__transport_pick(const zcoll_config_t *cfg, int same_host, unsigned a, unsigned b);
/* The pipeline chunk of a job whose ranks can run the transports in mask (the union over
 * ranks): ZCOLL_CHUNK_BYTES, else the largest of their defaults, so that every channel's
 * pieces fit the biggest. Rank 0's answer is everybody's (comm_hosts.c). */
size_t zcoll__transport_chunk(const zcoll_config_t *cfg, unsigned mask);

#endif
