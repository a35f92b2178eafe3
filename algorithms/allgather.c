/*
 * allgather.c -- allgather schedules: every rank's block to every rank, in rank order.
 *
 * They are the second halves of the ring and halving-doubling allreduces (ring.c, rhd.c),
 * started from the rank's own block: the ring passes blocks to its right neighbour, p - 1
 * steps of one block each; recursive doubling swaps everything held so far with rank ^ 2^k,
 * log2 p steps, for a power-of-two p (the selector keeps it to those). Out of place, the
 * first send goes out of the input itself while a local copy puts the block into the result.
 */
#include <string.h>

#include "algorithms.h"
#include "fold.h"

/* The input is block `rank` of the result's coordinates. */
static int start(struct zcoll__sched *s) {
  size_t n = s->count / (size_t)s->size;
  s->base[ZCOLL_BUF_SRC] = (size_t)s->rank * n;
  zcoll__sched_copy(s, (size_t)s->rank * n, n);
  return s->in_place ? ZCOLL_BUF_DST : ZCOLL_BUF_SRC;
}

static void ag_ring_build(struct zcoll__sched *s, const struct zcoll__algo_params *params) {
  (void)params;
  int first = start(s);
  if (s->size > 1) zcoll__ring_ag(s, -1, first);
}

static int pow2(int p) { return p > 0 && (p & (p - 1)) == 0; }

static void ag_rd_build(struct zcoll__sched *s, const struct zcoll__algo_params *params) {
  (void)params;
  int first = start(s);
  if (s->size == 1) return;
  if (!pow2(s->size)) { /* the selector never asks: a forced choice gets the ring */
    zcoll__ring_ag(s, -1, first);
    return;
  }
  struct zcoll__fold f = zcoll__fold_of(s->size);
  zcoll__rd_ag(s, &f, s->rank, first, -1);
}

const struct zcoll__algo zcoll__ag_ring = {"ring", "p - 1 steps around a ring", ag_ring_build,
                                           NULL};
const struct zcoll__algo zcoll__ag_rd = {
    "recursive_doubling", "log2 p exchanges with rank ^ 2^k (a power-of-two p; else the ring)",
    ag_rd_build, NULL};

const struct zcoll__algo *const zcoll__ag_algos[] = {&zcoll__ag_ring, &zcoll__ag_rd};
const int zcoll__nag_algos = (int)(sizeof(zcoll__ag_algos) / sizeof(zcoll__ag_algos[0]));

int zcoll__ag_algo_find(const char *name) {
  for (int i = 0; i < zcoll__nag_algos; i++)
    if (strcmp(zcoll__ag_algos[i]->name, name) == 0) return i;
  return -1;
}
