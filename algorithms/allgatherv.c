/*
 * allgatherv.c -- allgatherv: every rank's block, of its own size, to every rank, in rank
 * order at the displacements the call names.
 *
 * A ring with uneven blocks: p - 1 steps, at step k a rank passes block rank - k to its right
 * neighbour and takes block rank - k - 1 from its left, each block forwarded as its first
 * chunks arrive (the executor pipelines by range). The layout's rcount / rdispl are every
 * rank's block (the call's recvcounts and displs); the input is block `rank` of DST's
 * coordinates. A block of zero elements still takes its step (a header alone), so that the
 * ring's pieces line up on both ends whatever the sizes.
 */
#include "algorithms.h"

static int mod(int a, int p) { return ((a % p) + p) % p; }

static void step_send(struct zcoll__sched *s, int to, int buf, const struct zcoll__layout *l,
                      int b) {
  if (l->rcount[b])
    zcoll__sched_send(s, to, buf, l->rdispl[b], l->rcount[b]);
  else
    zcoll__xchg_ack_send(s, to);
}

static void agv_ring(struct zcoll__sched *s, const struct zcoll__algo_params *params) {
  (void)params;
  const struct zcoll__layout *l = s->lay;
  if (!l) return;
  int p = s->size, r = s->rank, next = mod(r + 1, p), prev = mod(r - 1, p);
  s->base[ZCOLL_BUF_SRC] = l->rdispl[r];
  zcoll__sched_copy(s, l->rdispl[r], l->rcount[r]);
  for (int k = 0; k < p - 1; k++) {
    int sb = mod(r - k, p), rb = mod(r - k - 1, p);
    step_send(s, next, k == 0 && !s->in_place ? ZCOLL_BUF_SRC : ZCOLL_BUF_DST, l, sb);
    if (l->rcount[rb])
      zcoll__sched_recv_copy(s, prev, l->rdispl[rb], l->rcount[rb]);
    else
      zcoll__xchg_ack_recv(s, prev);
  }
}

static const struct zcoll__algo agv_ring_algo = {
    "ring", "p - 1 steps around a ring, blocks of uneven sizes forwarded as they arrive", agv_ring,
    NULL};

const struct zcoll__algo *const zcoll__agv_algos[] = {&agv_ring_algo};
const int zcoll__nagv_algos = (int)(sizeof(zcoll__agv_algos) / sizeof(zcoll__agv_algos[0]));
