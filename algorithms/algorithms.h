/*
 * algorithms.h -- the table of allreduce algorithms.
 *
 * An algorithm is a short file that only builds a schedule (algorithms/schedule.h) over peer
 * roles; it never calls a transport, so every algorithm runs on every transport and
 * can be unit-tested with no network at all.
 */
#ifndef ZCOLL_ALGORITHMS_H
#define ZCOLL_ALGORITHMS_H

#include <stddef.h>
#include "schedule.h"

struct zcoll__algo_params {
  int tree_arity;
  /* Where the ranks run: host_of[r] is rank r's host, numbered 0..nhosts-1 in the order
   * of each host's first rank. NULL (nhosts 0): unknown, every algorithm but the
   * hierarchical one ignores it. The same on every rank. */
  const int *host_of;
  int nhosts;
};

struct zcoll__algo {
  const char *name;
  const char *description;
  /* Appends rank s->rank's program for an allreduce of s->count elements. */
  void (*build)(struct zcoll__sched *s, const struct zcoll__algo_params *p);
  /* The ranks this rank ever exchanges data with, for any count; the relation is
   * symmetric (q is in r's list iff r is in q's). Returns how many were written
   * (at most `max`). */
  int (*peers)(int rank, int size, const struct zcoll__algo_params *p, int *out, int max);
};

extern const struct zcoll__algo zcoll__algo_ring;
extern const struct zcoll__algo zcoll__algo_butterfly;
extern const struct zcoll__algo zcoll__algo_rhd;
extern const struct zcoll__algo zcoll__algo_tree;
extern const struct zcoll__algo zcoll__algo_chain;
extern const struct zcoll__algo zcoll__algo_hier;

/* Every algorithm, in a fixed order (their index is their id on the wire). */
extern const struct zcoll__algo *const zcoll__algos[];
extern const int zcoll__nalgos;

/* Index of the named algorithm, -1 if unknown ("auto" is not an algorithm). */
int zcoll__algo_find(const char *name);
/* "auto" or an algorithm's name: what ZCOLL_ALGO accepts (handed to configuration). */
int zcoll__algo_name_valid(const char *name);

/* The broadcast algorithms (broadcast.c): schedules from s->root, over channels some
 * allreduce algorithm already has. Their index is their id on the wire too. */
extern const struct zcoll__algo zcoll__bcast_chain;
extern const struct zcoll__algo zcoll__bcast_tree;
extern const struct zcoll__algo *const zcoll__bcast_algos[];
extern const int zcoll__nbcast_algos;
int zcoll__bcast_algo_find(const char *name);
/* "auto" or a broadcast algorithm's name: what ZCOLL_BCAST_ALGO accepts. */
int zcoll__bcast_algo_name_valid(const char *name);

/* Allgather and reduce-scatter (allgather.c, reduce_scatter.c): their schedules span
 * s->count = size x the per-rank count, rank r's block being r's input (allgather) or
 * result (reduce-scatter); the builders set the buffers' bases (schedule.h). Their
 * index is their id on the wire. */
extern const struct zcoll__algo *const zcoll__ag_algos[];
extern const int zcoll__nag_algos;
extern const struct zcoll__algo *const zcoll__rs_algos[];
extern const int zcoll__nrs_algos;
int zcoll__ag_algo_find(const char *name);
int zcoll__rs_algo_find(const char *name);
/* A reduce to s->root (reduce.c): allreduce algorithm `al` (zcoll__reduce_tree: the tree
 * folded toward the root) whose result, off the root, goes to scratch. Its id on the wire
 * is the allreduce algorithm's, or ZCOLL_REDUCE_TREE. */
#define ZCOLL_REDUCE_TREE 63
extern const struct zcoll__algo zcoll__reduce_tree;
void zcoll__reduce_build(struct zcoll__sched *s, const struct zcoll__algo *al,
                         const struct zcoll__algo_params *params);
const char *zcoll__reduce_algo_name(int algo);
/* Whether a reduce runs the tree toward the root where the allreduce would run the named
 * algorithm: where that one is latency-bound (the butterfly, the tree). The one rule for the
 * plan, zcoll_collective_algorithm and zcoll_collective_explain. */
int zcoll__reduce_takes_tree(const char *allreduce_algo);

/* The halves the algorithms above share with the allreduces that are made of them. Ring:
 * a reduce-scatter whose rank r ends with block r + 1 + shift complete, in final_buf
 * (partial sums in `partial`, the first send from the input); an allgather starting from
 * block r + 1 + shift, its first send from `first`. */
void zcoll__ring_rs(struct zcoll__sched *s, int shift, int partial, int final_buf);
void zcoll__ring_ag(struct zcoll__sched *s, int shift, int first);
/* Recursive halving (virtual rank v ends with block v of f->p2, complete in final_buf;
 * acc: its input's buffer) and doubling (from block v, its first send from `first`; a
 * helper >= 0 gets every block as it completes) -- rhd.c. */
struct zcoll__fold;
void zcoll__rh_rs(struct zcoll__sched *s, const struct zcoll__fold *f, int v, int acc, int partial,
                  int final_buf);
void zcoll__rd_ag(struct zcoll__sched *s, const struct zcoll__fold *f, int v, int first,
                  int helper);

#endif
