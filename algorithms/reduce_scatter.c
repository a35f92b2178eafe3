/*
 * reduce_scatter.c -- reduce-scatter schedules: block r of the reduction of every rank's
 * input, to rank r.
 *
 * The first halves of the ring and halving-doubling allreduces (ring.c, rhd.c), shifted so
 * that rank r ends with block r: partial sums go to scratch (TMP), the last reduction of
 * block r into the result. A non-commutative op needs rank order, which only the chain
 * allreduce keeps: its reduce-scatter is that allreduce into scratch and a copy of block r
 * out of it. In place (MPI's rules: the input is the result buffer, the block goes to its
 * start) block r is reduced where it lies and moved to the start at the end.
 */
#include <string.h>

#include "algorithms.h"
#include "fold.h"

/* The result: block `rank` of the input's coordinates (in place: the whole buffer, the
 * block moved to its start at the end). Scratch for every block. */
static size_t start(struct zcoll__sched *s) {
  size_t n = s->count / (size_t)s->size, mine = (size_t)s->rank * n;
  if (s->in_place) {
    s->post_off = mine;
    s->post_count = n;
  } else {
    s->base[ZCOLL_BUF_DST] = mine;
  }
  if (s->size > 1) s->tmp_count = s->count;
  if (s->size == 1) zcoll__sched_copy(s, 0, n);
  return n;
}

static void rs_ring_build(struct zcoll__sched *s, const struct zcoll__algo_params *params) {
  (void)params;
  start(s);
  if (s->size > 1) zcoll__ring_rs(s, -1, ZCOLL_BUF_TMP, ZCOLL_BUF_DST);
}

static int pow2(int p) { return p > 0 && (p & (p - 1)) == 0; }

static void rs_rh_build(struct zcoll__sched *s, const struct zcoll__algo_params *params) {
  (void)params;
  start(s);
  if (s->size == 1) return;
  if (!pow2(s->size)) { /* the selector never asks: a forced choice gets the ring */
    zcoll__ring_rs(s, -1, ZCOLL_BUF_TMP, ZCOLL_BUF_DST);
    return;
  }
  struct zcoll__fold f = zcoll__fold_of(s->size);
  zcoll__rh_rs(s, &f, s->rank, ZCOLL_BUF_SRC, ZCOLL_BUF_TMP, ZCOLL_BUF_DST);
}

static void rs_chain_build(struct zcoll__sched *s, const struct zcoll__algo_params *params) {
  size_t n = start(s);
  if (s->size == 1) return;
  s->remap_dst = ZCOLL_BUF_TMP;
  zcoll__algo_chain.build(s, params);
  s->remap_dst = 0;
  zcoll__sched_move(s, ZCOLL_BUF_TMP, ZCOLL_BUF_DST, (size_t)s->rank * n, n);
}

const struct zcoll__algo zcoll__rs_ring = {"ring", "p - 1 steps around a ring", rs_ring_build,
                                           NULL};
const struct zcoll__algo zcoll__rs_rh = {
    "recursive_halving",
    "log2 p exchanges with rank ^ 2^k, halving the vector (a power-of-two p; else the ring)",
    rs_rh_build, NULL};
const struct zcoll__algo zcoll__rs_chain = {
    "chain", "the chain allreduce, in rank order (non-commutative ops), keeping block r",
    rs_chain_build, NULL};

const struct zcoll__algo *const zcoll__rs_algos[] = {&zcoll__rs_ring, &zcoll__rs_rh,
                                                     &zcoll__rs_chain};
const int zcoll__nrs_algos = (int)(sizeof(zcoll__rs_algos) / sizeof(zcoll__rs_algos[0]));

int zcoll__rs_algo_find(const char *name) {
  for (int i = 0; i < zcoll__nrs_algos; i++)
    if (strcmp(zcoll__rs_algos[i]->name, name) == 0) return i;
  return -1;
}
