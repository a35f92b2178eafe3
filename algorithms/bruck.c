/*
 * bruck.c -- alltoall by Bruck's algorithm, for small blocks at larger p: ceil(log2 p) steps
 * instead of p - 1, each block travelling its distance in binary.
 *
 * Slot i of rank r is the block it owes rank r + i (from its input), and, once moved, the one
 * that rank r - i (mod p) owes r. At step k a rank sends the slots whose bit k is set to
 * rank + 2^k and receives the same slots from rank - 2^k. No block is ever rotated in memory:
 * a slot not yet moved is read from the input (block r + i), a slot moved for the last time
 * (k is its top bit) lands in the result (block r - i), and one in between waits in scratch
 * (TMP, slot i at coordinate (p + i) x count, clear of the result's coordinates). The slots
 * of one step are one op each (small blocks: the pieces are the slots). Out of place only
 * (in place, the result would overwrite input not yet sent: exchange.c runs the pairwise
 * exchange then, and the selector never asks).
 */
#include "algorithms.h"

static int mod(int a, int p) { return ((a % p) + p) % p; }

void zcoll__bruck(struct zcoll__sched *s) {
  int p = s->size, r = s->rank;
  size_t n = s->count, P = (size_t)p;
  zcoll__sched_copy(s, (size_t)r * n, n); /* slot 0 */
  s->base[ZCOLL_BUF_TMP] = P * n;
  s->tmp_count = P * n;
  for (int k = 0; (1 << k) < p; k++) {
    int b = 1 << k, to = mod(r + b, p), from = mod(r - b, p);
    if (n == 0) { /* nothing to move: the step's header alone, both ways */
      zcoll__xchg_ack_send(s, to);
      zcoll__xchg_ack_recv(s, from);
      continue;
    }
    for (int i = 1; i < p; i++) {
      if (!(i & b)) continue;
      int moved = (i & (b - 1)) != 0;
      if (moved)
        zcoll__sched_send(s, to, ZCOLL_BUF_TMP, (P + (size_t)i) * n, n);
      else
        zcoll__sched_send(s, to, ZCOLL_BUF_SRC, (size_t)mod(r + i, p) * n, n);
    }
    int was = s->remap_dst;
    for (int i = 1; i < p; i++) {
      if (!(i & b)) continue;
      int last = i < 2 * b; /* k is i's top bit */
      s->remap_dst = last ? 0 : ZCOLL_BUF_TMP;
      zcoll__sched_recv_copy(s, from, last ? (size_t)mod(r - i, p) * n : (P + (size_t)i) * n, n);
    }
    s->remap_dst = was;
  }
}
