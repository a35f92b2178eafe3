/*
 * broadcast.c -- the broadcast schedules. Both run over channels the allreduce already
 * has (no extra connections, whatever the root): a chain around the ring for large
 * vectors, and the k-nomial tree of tree.c, entered at the root, for small ones.
 *
 * A broadcast is in place (one buffer, the root's input and everyone's result): ranks
 * only copy what arrives (RECV_COPY) and send from the result (DST), so the executor
 * streams it in chunks like the allgather half of an allreduce -- a rank forwards a
 * chunk as soon as it has it -- and the zero-copy grants apply as they do there.
 */
#include "algorithms.h"
#include "knomial.h"

static int mod(int a, int p) { return ((a % p) + p) % p; }

/* root -> root+1 -> ... -> root-1: every rank receives and sends the vector once, so
 * its cost is one transfer plus p-1 chunk latencies. */
static void chain_build(struct zcoll__sched *s, const struct zcoll__algo_params *params) {
  (void)params;
  int p = s->size, v = mod(s->rank - s->root, p);
  if (v > 0) zcoll__sched_recv_copy(s, mod(s->rank - 1, p), 0, s->count);
  if (v < p - 1) zcoll__sched_send(s, mod(s->rank + 1, p), ZCOLL_BUF_DST, 0, s->count);
}

static int chain_peers(int rank, int size, const struct zcoll__algo_params *params, int *out,
                       int max) {
  return zcoll__algo_ring.peers(rank, size, params, out, max);
}

/* The tree rooted at rank 0, flooded from the root: a rank receives from the neighbour
 * on its path to the root and sends to all its others, the larger side first. log_k(p)
 * levels from rank 0, at most twice that from elsewhere. */
static void tree_build(struct zcoll__sched *s, const struct zcoll__algo_params *params) {
  int kids[ZCOLL_KNOMIAL_MAX_CHILDREN], parent, k = zcoll__knomial_arity(params);
  int nkids = zcoll__knomial_family(s->rank, s->size, k, &parent, kids);
  int from = -1; /* the neighbour towards the root: a child whose subtree holds it, or up */
  if (s->rank != s->root) {
    from = parent;
    for (int c = 0; c < nkids; c++)
      if (s->root >= kids[c] && s->root < kids[c] + zcoll__knomial_span(s->rank, kids[c], k))
        from = kids[c];
    zcoll__sched_recv_copy(s, from, 0, s->count);
  }
  if (parent >= 0 && parent != from) zcoll__sched_send(s, parent, ZCOLL_BUF_DST, 0, s->count);
  for (int c = nkids - 1; c >= 0; c--)
    if (kids[c] != from) zcoll__sched_send(s, kids[c], ZCOLL_BUF_DST, 0, s->count);
}

static int tree_peers(int rank, int size, const struct zcoll__algo_params *params, int *out,
                      int max) {
  return zcoll__algo_tree.peers(rank, size, params, out, max);
}

const struct zcoll__algo zcoll__bcast_chain = {
    "chain", "pipelined chain from the root around the ring; for large vectors", chain_build,
    chain_peers};
const struct zcoll__algo zcoll__bcast_tree = {
    "tree", "the k-nomial tree (ZCOLL_TREE_ARITY) entered at the root; for small vectors",
    tree_build, tree_peers};
