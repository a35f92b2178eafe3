/*
 * chain.c -- a pipelined chain: reduce along 0 -> 1 -> ... -> p-1, then pass the result
 * back along p-1 -> ... -> 0.
 *
 * The one algorithm that combines in rank order: rank r folds the combination of ranks
 * 0..r-1 (what arrives from r-1) with its own input, so that a non-commutative op
 * yields x0 (op) x1 (op) ... (op) x(p-1), as MPI defines it. The vector streams through
 * in chunks, so its cost is about two transfers of the vector plus 2(p-1) chunk
 * latencies: fine for few ranks or big vectors, and the price of order elsewhere. The
 * selector never picks it for commutative ops (ZCOLL_ALGO=chain may).
 */
#include "algorithms.h"

static void chain_build(struct zcoll__sched *s, const struct zcoll__algo_params *params) {
  (void)params;
  int p = s->size, r = s->rank;
  size_t n = s->count;
  if (p == 1) {
    zcoll__sched_copy(s, 0, n);
    return;
  }
  if (r == 0) {
    zcoll__sched_send(s, 1, ZCOLL_BUF_SRC, 0, n);
  } else {
    zcoll__sched_recv_reduce(s, r - 1, ZCOLL_BUF_SRC, 0, n, r == p - 1);
    if (r < p - 1) zcoll__sched_send(s, r + 1, ZCOLL_BUF_DST, 0, n);
  }
  /* The result comes back down; the last rank made it. */
  if (r < p - 1) zcoll__sched_recv_copy(s, r + 1, 0, n);
  if (r > 0) zcoll__sched_send(s, r - 1, ZCOLL_BUF_DST, 0, n);
}

static int chain_peers(int rank, int size, const struct zcoll__algo_params *params, int *out,
                       int max) {
  (void)params;
  int n = 0;
  if (rank > 0 && n < max) out[n++] = rank - 1;
  if (rank < size - 1 && n < max) out[n++] = rank + 1;
  return n;
}

const struct zcoll__algo zcoll__algo_chain = {
    "chain", "pipelined chain 0 -> p-1 and back; combines in rank order (non-commutative ops)",
    chain_build, chain_peers};
