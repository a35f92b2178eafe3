/*
 * tree.c -- k-nomial tree: reduce to rank 0, then broadcast from rank 0 along the same
 * tree. log_k(p) levels each way, whole vector per edge; the root divides for AVG, once.
 *
 * Rank r's parent clears its lowest non-zero base-k digit; its children are r + j k^i
 * for every level i below that digit (all levels for the root) and j = 1..k-1. The
 * vector streams through in chunks: a rank forwards a chunk upward as soon as every
 * child's part of it is folded in, and downward as soon as it arrives, so the depth
 * of the tree costs a few chunk latencies, not a few vector transfers.
 */
#include "algorithms.h"
#include "knomial.h"

static void tree_build(struct zcoll__sched *s, const struct zcoll__algo_params *params) {
  int kids[ZCOLL_KNOMIAL_MAX_CHILDREN], parent;
  int nkids = zcoll__knomial_family(s->rank, s->size, zcoll__knomial_arity(params), &parent, kids);
  size_t n = s->count;
  /* Count 0 still exchanges (empty) pieces, so that a rank disagreeing on the count is
   * caught, not left waiting. */
  if (s->size == 1) {
    zcoll__sched_copy(s, 0, n);
    return;
  }
  /* Small subtrees first: their data comes soonest, and each fold waits for the last. */
  int acc = ZCOLL_BUF_SRC;
  for (int c = 0; c < nkids; c++) {
    zcoll__sched_recv_reduce(s, kids[c], acc, 0, n, parent < 0 && c == nkids - 1);
    acc = ZCOLL_BUF_DST;
  }
  if (parent >= 0) {
    zcoll__sched_send(s, parent, acc, 0, n);
    zcoll__sched_recv_copy(s, parent, 0, n);
  }
  for (int c = nkids - 1; c >= 0; c--) zcoll__sched_send(s, kids[c], ZCOLL_BUF_DST, 0, n);
}

static int tree_peers(int rank, int size, const struct zcoll__algo_params *params, int *out,
                      int max) {
  int kids[ZCOLL_KNOMIAL_MAX_CHILDREN], parent, n = 0;
  int nkids = zcoll__knomial_family(rank, size, zcoll__knomial_arity(params), &parent, kids);
  if (parent >= 0 && n < max) out[n++] = parent;
  for (int c = 0; c < nkids && n < max; c++) out[n++] = kids[c];
  return n;
}

const struct zcoll__algo zcoll__algo_tree = {
    "tree", "k-nomial tree reduce then broadcast (ZCOLL_TREE_ARITY); pipelined in chunks",
    tree_build, tree_peers};
