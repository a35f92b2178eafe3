/*
 * wire.h -- wiring a new communicator: hosts, transports, channels (comm_setup.c,
 * comm_hosts.c, comm_addr.c, comm_summary.c).
 */
#ifndef ZCOLL_WIRE_H
#define ZCOLL_WIRE_H

#include <stdint.h>

#include "core/comm.h"

/* Wires a new communicator (comm_setup.c): finds each rank's host, picks and opens the
 * transport for each peer, and sets up the channels. */
zcoll_status_t zcoll__comm_wire(zcoll_comm_t *comm);
/* The first rounds of the wiring (comm_hosts.c): comm->wiring.host_of and nhosts, what
 * every rank can run (masks, of zcoll__transports indices) on its own host, and rank 0's
 * geometry; *net_round: whether some pair needs a network transport, then
 * zcoll__wire_nets (collective: every rank calls it, probing only where `need`) adds what
 * each can run across hosts and gives the geometry anew. */
zcoll_status_t zcoll__wire_hosts(zcoll_comm_t *comm, unsigned *masks, uint64_t *chunk,
                                 uint32_t *depth, int *net_round);
zcoll_status_t zcoll__wire_nets(zcoll_comm_t *comm, unsigned *masks, int need, uint64_t *chunk,
                                uint32_t *depth);
/* A communicator split from `parent` that runs its channels over the parent's transport
 * instances (core/family.h): its channel set there, and its ranks' ranks in the parent. */
struct zcoll__share {
  zcoll_comm_t *parent;
  int set, gen; /* its channel set and the set's generation (core/channel.h) */
  int tl_idx;   /* the parent's instance it runs over (zcoll__family_local_tl) */
  const int *members;
  /* The star of its control already made (socket pairs, zcoll__bootstrap_attach), or NULL
   * for a rendezvous. */
  const int *bs_fds;
};
/* Wires comm over share's instances (comm_share.c): no host round, no probing, no new
 * instance; endpoints the family lacks are connected on its instances. */
zcoll_status_t zcoll__comm_wire_shared(zcoll_comm_t *comm, const struct zcoll__share *share);

/* The steps of a wiring (comm_setup.c), shared by both kinds. The union of every
 * algorithm's peers: the channels this rank needs (*out malloc'ed). */
zcoll_status_t zcoll__wire_peers(zcoll_comm_t *comm, int **out, int *n);
/* More local ranks than cores: the transports must offer descriptors to sleep on (and
 * comm's spin is off unless the user set it). */
int zcoll__wire_oversubscribed(zcoll_comm_t *comm);
/* The transport of each peer (*kinds, the caller frees it, even after an error) and the
 * communicator's channels, none made yet. */
zcoll_status_t zcoll__wire_tables(zcoll_comm_t *comm, int npeers, int **kinds);
/* The channels to peers[i] over transport kinds[i]: receive slots registered with every
 * instance, an address round through rank 0, endpoints where the instance lacks them. */
zcoll_status_t zcoll__wire_channels(zcoll_comm_t *comm, const int *peers, int npeers,
                                    const int *kinds);

/* The address round (comm_addr.c), collective: sends rank 0 this rank's peers (kinds[i]:
 * the transport of peers[i]) and addresses; fills, per peer, where this rank is in the
 * peer's list (pos, UINT32_MAX if it is not), and the peer's blob (blob/blen, pointing
 * into *reply, which the caller frees). */
zcoll_status_t zcoll__wire_addresses(zcoll_comm_t *comm, const int *peers, int npeers,
                                     const int *kinds, uint32_t *pos, const char **blob,
                                     uint32_t *blen, void **reply);
/* Rank q's address for transport idx in its blob, with this rank's part of it appended
 * (alen counts both), and its receive key. */
zcoll_status_t zcoll__wire_find_entry(const char *blob, size_t len, int q, int idx,
                                      const char **addr, size_t *alen, const char **key,
                                      size_t *klen);

/* The line a ready communicator logs at info (comm_summary.c): each peer's transport and
 * device, chunk and depth, and why the transports probed and refused cannot run. */
void zcoll__comm_log_summary(const zcoll_comm_t *comm);

#endif
