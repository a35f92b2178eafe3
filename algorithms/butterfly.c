/*
 * butterfly.c -- recursive doubling: log2(p) steps, in step k every rank swaps its whole
 * partial result with partner rank ^ 2^k and reduces. The fewest message latencies of
 * any allreduce, at p times the bytes of ring: for small vectors.
 *
 * Both partners of a step compute the same sum (a+b vs b+a: commutative), so every
 * rank ends with bit-identical results and each divides for AVG itself, once.
 *
 * p not a power of two: with p2 = 2^floor(log2 p) and extra = p - p2, ranks below
 * 2*extra pair up; each odd one (a helper) hands its input to its even neighbour, and
 * the p2 remaining ranks run the butterfly as virtual ranks v. Instead of a third
 * phase sending the result back, the helper joins the last step: both ends of that
 * step also send what they are about to swap to the helpers on either side, so a
 * helper adds the same two operands in the same order as its even neighbour. That
 * costs log2(p2) + 1 latencies instead of log2(p2) + 2.
 */
#include "algorithms.h"
#include "fold.h"

/* The virtual rank that a helper's even neighbour meets in the last step. */
static int last_partner(const struct zcoll__fold *f, int v) { return v ^ (f->p2 / 2); }

static void butterfly_build(struct zcoll__sched *s, const struct zcoll__algo_params *params) {
  (void)params;
  size_t n = s->count;
  struct zcoll__fold f = zcoll__fold_of(s->size);
  int r = s->rank;
  /* Count 0 still exchanges (empty) pieces, so that a rank disagreeing on the count is
   * caught, not left waiting. */
  if (s->size == 1) {
    zcoll__sched_copy(s, 0, n);
    return;
  }
  if (zcoll__fold_is_helper(&f, r)) {
    int even = r - 1, other = zcoll__fold_real(&f, last_partner(&f, zcoll__fold_virt(&f, even)));
    zcoll__sched_send(s, even, ZCOLL_BUF_SRC, 0, n);
    zcoll__sched_recv_copy(s, even, 0, n);
    zcoll__sched_recv_reduce(s, other, ZCOLL_BUF_DST, 0, n, 1);
    return;
  }
  int v = zcoll__fold_virt(&f, r), h = zcoll__fold_helper(&f, v), acc = ZCOLL_BUF_SRC;
  if (h >= 0) {
    zcoll__sched_recv_reduce(s, h, ZCOLL_BUF_SRC, 0, n, 0);
    acc = ZCOLL_BUF_DST;
  }
  for (int k = 0; k < f.steps; k++) {
    int w = v ^ (1 << k), last = k == f.steps - 1;
    if (last) {
      /* Our helper takes our operand as its first, the partner's helper as its second. */
      if (h >= 0) zcoll__sched_send(s, h, acc, 0, n);
      if (zcoll__fold_helper(&f, w) >= 0)
        zcoll__sched_send(s, zcoll__fold_helper(&f, w), acc, 0, n);
    }
    zcoll__sched_send(s, zcoll__fold_real(&f, w), acc, 0, n);
    zcoll__sched_recv_reduce(s, zcoll__fold_real(&f, w), acc, 0, n, last);
    acc = ZCOLL_BUF_DST;
  }
}

static int butterfly_peers(int rank, int size, const struct zcoll__algo_params *params, int *out,
                           int max) {
  (void)params;
  struct zcoll__fold f = zcoll__fold_of(size);
  int n = 0;
  if (size == 1) return 0;
  if (zcoll__fold_is_helper(&f, rank)) {
    int even = rank - 1;
    if (n < max) out[n++] = even;
    if (n < max) out[n++] = zcoll__fold_real(&f, last_partner(&f, zcoll__fold_virt(&f, even)));
    return n;
  }
  int v = zcoll__fold_virt(&f, rank);
  if (zcoll__fold_helper(&f, v) >= 0 && n < max) out[n++] = zcoll__fold_helper(&f, v);
  for (int k = 0; k < f.steps && n < max; k++) out[n++] = zcoll__fold_real(&f, v ^ (1 << k));
  int w = last_partner(&f, v);
  if (zcoll__fold_helper(&f, w) >= 0 && n < max) out[n++] = zcoll__fold_helper(&f, w);
  return n;
}

const struct zcoll__algo zcoll__algo_butterfly = {
    "butterfly", "recursive doubling, whole vector per step; fewest latencies, for small vectors",
    butterfly_build, butterfly_peers};
