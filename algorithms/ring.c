/*
 * ring.c -- ring allreduce: a reduce-scatter then an allgather around the ring,
 * 2(p-1) steps each moving 1/p of the vector: bandwidth-optimal, every link busy.
 *
 * Rank r sends to r+1 and receives from r-1. In reduce-scatter step s it forwards
 * block r-s (its own input at s = 0, afterwards the partial sum it just made) and
 * folds block r-s-1 from its left neighbour into its own input; after p-1 steps it
 * holds the complete block r+1. The allgather then passes complete blocks around.
 * Chunks stream through: a chunk that has been reduced is forwarded while the rest
 * of its block is still arriving.
 */
#include "algorithms.h"

static int mod(int a, int p) { return ((a % p) + p) % p; }

void zcoll__ring_rs(struct zcoll__sched *s, int shift, int partial, int final_buf) {
  int p = s->size, r = s->rank, next = mod(r + 1, p), prev = mod(r - 1, p);
  size_t off, len;
  for (int step = 0; step < p - 1; step++) {
    zcoll__block(s->count, p, mod(r + shift - step, p), &off, &len);
    zcoll__sched_send(s, next, step == 0 ? ZCOLL_BUF_SRC : partial, off, len);
    zcoll__block(s->count, p, mod(r + shift - step - 1, p), &off, &len);
    zcoll__sched_recv_reduce_to(s, prev, step == p - 2 ? final_buf : partial, ZCOLL_BUF_SRC, off,
                                len, step == p - 2);
  }
}

void zcoll__ring_ag(struct zcoll__sched *s, int shift, int first) {
  int p = s->size, r = s->rank, next = mod(r + 1, p), prev = mod(r - 1, p);
  size_t off, len;
  for (int step = 0; step < p - 1; step++) {
    zcoll__block(s->count, p, mod(r + shift + 1 - step, p), &off, &len);
    zcoll__sched_send(s, next, step == 0 ? first : ZCOLL_BUF_DST, off, len);
    zcoll__block(s->count, p, mod(r + shift - step, p), &off, &len);
    zcoll__sched_recv_copy(s, prev, off, len);
  }
}

static void ring_build(struct zcoll__sched *s, const struct zcoll__algo_params *params) {
  (void)params;
  if (s->size == 1) {
    zcoll__sched_copy(s, 0, s->count);
    return;
  }
  zcoll__ring_rs(s, 0, ZCOLL_BUF_DST, ZCOLL_BUF_DST);
  zcoll__ring_ag(s, 0, ZCOLL_BUF_DST);
}

static int ring_peers(int rank, int size, const struct zcoll__algo_params *params, int *out,
                      int max) {
  (void)params;
  int n = 0;
  if (size > 1 && n < max) out[n++] = mod(rank + 1, size);
  if (size > 2 && n < max) out[n++] = mod(rank - 1, size);
  return n;
}

const struct zcoll__algo zcoll__algo_ring = {
    "ring", "reduce-scatter + allgather around a ring; bandwidth-optimal", ring_build, ring_peers};
