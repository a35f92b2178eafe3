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

/* The rest of MPI's set (exchange.c, allgatherv.c): what a rank moves to and from each peer.
 * Peer q gets scount[q] elements of SRC from coordinate sdispl[q] (displacements in the
 * buffer, before the base shift the builder applies); rcount[q] elements from q land in DST
 * at rdispl[q]; ZCOLL_LAYOUT_NONE: nothing moves that way. A pair that moves anything moves
 * something both ways (zero elements: a header alone), so that each end checks the other's
 * call. q == rank: the local copy. The v-forms' planner hands it to the builder (s->lay);
 * the uniform kinds' builders make it from s->count and s->root. */
#define ZCOLL_LAYOUT_NONE SIZE_MAX
struct zcoll__layout {
  size_t *scount, *sdispl, *rcount, *rdispl;
};
/* Their algorithms, per kind; the index is the id on the wire. */
extern const struct zcoll__algo *const zcoll__a2a_algos[];
extern const int zcoll__na2a_algos;
extern const struct zcoll__algo *const zcoll__a2av_algos[];
extern const int zcoll__na2av_algos;
extern const struct zcoll__algo *const zcoll__agv_algos[];
extern const int zcoll__nagv_algos;
extern const struct zcoll__algo *const zcoll__gather_algos[];
extern const int zcoll__ngather_algos;
extern const struct zcoll__algo *const zcoll__gatherv_algos[];
extern const int zcoll__ngatherv_algos;
extern const struct zcoll__algo *const zcoll__scatter_algos[];
extern const int zcoll__nscatter_algos;
extern const struct zcoll__algo *const zcoll__scatterv_algos[];
extern const int zcoll__nscatterv_algos;
/* Gather and scatter over a binomial tree, for small blocks (gather_tree.c). */
extern const struct zcoll__algo zcoll__gather_binomial;
extern const struct zcoll__algo zcoll__scatter_binomial;
/* Bruck's alltoall of s->count per block, out of place (bruck.c). */
void zcoll__bruck(struct zcoll__sched *s);
/* The exchange itself, over a layout (exchange.c): every pair at once, in pairwise order
 * (step k: to rank + k, from rank - k); in place (alltoall), what is sent is first copied
 * to scratch, since the same buffer receives. */
void zcoll__xchg_pairwise(struct zcoll__sched *s, const struct zcoll__layout *l);
/* A zero-element op with peer: the header alone (in scratch, never a user buffer). */
void zcoll__xchg_ack_send(struct zcoll__sched *s, int peer);
void zcoll__xchg_ack_recv(struct zcoll__sched *s, int peer);

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
