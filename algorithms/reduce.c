/*
 * reduce.c -- reduce schedules: every rank's vector reduced into the root's.
 *
 * Where the allreduce is latency-bound (its choice is the butterfly or the tree), a reduce
 * is the k-nomial tree walked toward the root: the tree broadcast's edges entered at the
 * root (broadcast.c), so no channel is added for any root. A rank folds in what its
 * neighbours away from the root send (small subtrees first), then passes the sum on toward
 * the root and is done: half the messages of the allreduce's tree, and no rank but the root
 * waits for the result. Elsewhere a reduce is the allreduce's schedule (ring, halving-
 * doubling, hierarchical, the chain's rank order for non-commutative ops) whose result, on
 * every rank but the root, lands in scratch and stays there: up to twice a dedicated
 * reduce's traffic on big vectors (a reduce-scatter and a gather to the root would not move
 * the result back). Either way a non-root's result buffer is never touched.
 */
#include <string.h>

#include "algorithms.h"
#include "knomial.h"

static int mod(int a, int p) { return ((a % p) + p) % p; }

/* After zcoll__ring_rs rank x holds the complete block x + 1. The rank d steps behind the
 * root sends its own, then forwards the p - 1 - d it gets from behind, one by one. */
static void ring_gather(struct zcoll__sched *s) {
  int p = s->size, r = s->rank, d = mod(s->root - r, p);
  size_t off, len;
  int sends = d == 0 ? 0 : p - d, recvs = d == 0 ? p - 1 : p - 1 - d;
  for (int step = 0; step < sends || step < recvs; step++) {
    if (step < sends) {
      zcoll__block(s->count, p, mod(r + 1 - step, p), &off, &len);
      zcoll__sched_send(s, mod(r + 1, p), ZCOLL_BUF_DST, off, len);
    }
    if (step < recvs) {
      zcoll__block(s->count, p, mod(r - step, p), &off, &len);
      zcoll__sched_recv_copy(s, mod(r - 1, p), off, len);
    }
  }
}

void zcoll__reduce_build(struct zcoll__sched *s, const struct zcoll__algo *al,
                         const struct zcoll__algo_params *params) {
  if (s->rank != s->root) {
    s->tmp_count = s->count;
    s->remap_dst = ZCOLL_BUF_TMP;
  }
  if (al == &zcoll__algo_ring && s->size > 1) {
    zcoll__ring_rs(s, 0, ZCOLL_BUF_DST, ZCOLL_BUF_DST);
    ring_gather(s);
  } else {
    al->build(s, params);
  }
  s->remap_dst = 0;
}

static void tree_build(struct zcoll__sched *s, const struct zcoll__algo_params *params) {
  int kids[ZCOLL_KNOMIAL_MAX_CHILDREN], from[ZCOLL_KNOMIAL_MAX_CHILDREN + 1], parent;
  int k = zcoll__knomial_arity(params), nf = 0, to = -1;
  int nkids = zcoll__knomial_family(s->rank, s->size, k, &parent, kids);
  size_t n = s->count;
  if (s->size == 1) {
    zcoll__sched_copy(s, 0, n);
    return;
  }
  if (s->rank !=
      s->root) { /* the neighbour toward the root: a child whose subtree holds it, or up */
    to = parent;
    for (int c = 0; c < nkids; c++)
      if (s->root >= kids[c] && s->root < kids[c] + zcoll__knomial_span(s->rank, kids[c], k))
        to = kids[c];
  }
  for (int c = 0; c < nkids; c++)
    if (kids[c] != to) from[nf++] = kids[c];
  if (parent >= 0 && parent != to) from[nf++] = parent; /* the rest of the tree: last */
  int acc = ZCOLL_BUF_SRC;
  for (int i = 0; i < nf; i++) {
    zcoll__sched_recv_reduce(s, from[i], acc, 0, n, s->rank == s->root && i == nf - 1);
    acc = ZCOLL_BUF_DST;
  }
  if (to >= 0) zcoll__sched_send(s, to, acc, 0, n);
}

const struct zcoll__algo zcoll__reduce_tree = {
    "tree", "the k-nomial tree entered at the root, folded toward it (ZCOLL_TREE_ARITY)",
    tree_build, NULL};

int zcoll__reduce_takes_tree(const char *allreduce_algo) {
  return !strcmp(allreduce_algo, "butterfly") || !strcmp(allreduce_algo, "tree");
}

const char *zcoll__reduce_algo_name(int algo) {
  if (algo == ZCOLL_REDUCE_TREE) return zcoll__reduce_tree.name;
  return algo >= 0 && algo < zcoll__nalgos ? zcoll__algos[algo]->name : "?";
}
