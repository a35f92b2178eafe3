/*
 * select.h -- choosing an algorithm by message size and rank count.
 *
 * A selection table is an ordered list of rules "ranks_min ranks_max max_bytes
 * algorithm" for the allreduce, and "broadcast ranks_min ranks_max max_bytes algorithm"
 * for the broadcast; per collective, the first rule that covers (ranks, bytes) wins. A
 * built-in table holds defaults; ZCOLL_TUNING_FILE replaces it with one measured on the
 * machine at hand (perf/tune.py writes it). Rules naming an algorithm this build lacks
 * are an error. A file without broadcast rules leaves the broadcast to the built-in ones.
 */
#ifndef ZCOLL_SELECT_H
#define ZCOLL_SELECT_H

#include <stddef.h>
#include "zcoll.h"

enum { ZCOLL__SEL_ALLREDUCE, ZCOLL__SEL_BCAST }; /* which collective a rule is for */

struct zcoll__rule {
  int coll; /* ZCOLL__SEL_* */
  int min_ranks, max_ranks;
  size_t max_bytes; /* SIZE_MAX: any size */
  int algo;         /* zcoll__algos' index, or zcoll__bcast_algos' for a broadcast rule */
  int line;         /* in the tuning file; 0 for the built-in table */
};

struct zcoll__selector {
  struct zcoll__rule *rules;
  int nrules;
  char source[160]; /* "built-in table" or the file's path */
};

/* Loads path, or the built-in table when path is empty. */
zcoll_status_t zcoll__selector_init(struct zcoll__selector *sel, const char *path);
void zcoll__selector_free(struct zcoll__selector *sel);
/* The algorithm for an allreduce of `bytes` on `ranks`, and why (for the log). */
int zcoll__select(const struct zcoll__selector *sel, int ranks, size_t bytes, char *why,
                  size_t why_len);
/* The broadcast's algorithm (zcoll__bcast_algos' index) for `bytes` on `ranks`, and why:
 * the table's broadcast rules, else the built-in ones. */
int zcoll__select_bcast(const struct zcoll__selector *sel, int ranks, size_t bytes, char *why,
                        size_t why_len);

/* Everything the allreduce's choice depends on besides the size: a communicator's
 * (allreduce.c) or a would-be one's (zcoll_allreduce_explain, for zcoll_info -s), so that
 * both answer with the same code. */
struct zcoll__choice {
  const struct zcoll__selector *sel;
  int ranks;
  int forced;          /* ZCOLL_ALGO's algorithm; -1: auto */
  int hier_auto;       /* several hosts, more ranks than hosts, no tuning file */
  int nhosts;          /* for the reason only */
  int ring, rhd, hier; /* the algorithms hier_auto replaces, and hier */
};
/* An allgather's (coll_rs 0) or reduce-scatter's (1) algorithm, an index of
 * zcoll__ag_algos / zcoll__rs_algos, for `bytes` of result (input) on `ranks`, and why. */
int zcoll__select_gather(int coll_rs, int ranks, size_t bytes, char *why, size_t why_len);
/* Gather's and scatter's algorithm (an index of zcoll__gather_algos / zcoll__scatter_algos)
 * for blocks of block_bytes on `ranks`, and why: the binomial tree for small blocks (log2 p
 * steps on the root's path), else direct (p - 1 pipelined messages at the root, each block
 * moved once). */
#define ZCOLL__SEL_TREE_MAX_BYTES 2048
#define ZCOLL__SEL_TREE_MIN_RANKS 4
int zcoll__select_rooted(int ranks, size_t block_bytes, char *why, size_t why_len);
/* Alltoall's (an index of zcoll__a2a_algos): Bruck's log2 p steps for small blocks on many
 * ranks out of place (latency: each block moves up to log2 p times), else pairwise. */
#define ZCOLL__SEL_BRUCK_MAX_BYTES 256
#define ZCOLL__SEL_BRUCK_MIN_RANKS 6
int zcoll__select_alltoall(int ranks, size_t block_bytes, int in_place, char *why, size_t why_len);
/* The algorithm for an allreduce of `bytes`, and the rule that chose it in why. */
int zcoll__choose(const struct zcoll__choice *c, size_t bytes, char *why, size_t why_len);

#endif
