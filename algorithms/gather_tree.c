/*
 * gather_tree.c -- gather and scatter over a binomial tree, for small blocks: log2 p steps
 * on the root's critical path instead of p - 1 messages into (or out of) one rank.
 *
 * Virtual rank v = rank - root (mod p); v's parent is v minus its lowest set bit, its
 * children v + 2^i for every 2^i below that bit (every 2^i for the root), and child c's
 * subtree is the virtual ranks [c, c + 2^i). A gather passes each subtree's blocks up
 * through scratch (TMP, in real coordinates: block b at b * count), a scatter passes them
 * down; the root reads or writes its buffer directly. A subtree's blocks are contiguous in
 * virtual ranks, so in real ones at most two ranges (they may wrap past p - 1): both ends
 * of an edge cut them alike. Every edge carries a header both ways (an ack of zero elements
 * back), so that each end checks the other's call.
 */
#include "algorithms.h"

/* The span of v's subtree: its lowest set bit, or for the root the power of two >= p. */
static int top_of(int v, int p) {
  if (v) return v & -v;
  int t = 1;
  while (t < p) t <<= 1;
  return t;
}

/* Virtual ranks [a, e) (e <= p) as at most two ranges of real coordinates; how many. */
static int ranges(const struct zcoll__sched *s, int a, int e, size_t off[2], size_t len[2]) {
  int p = s->size, wrap = p - s->root, k = 0;
  size_t n = s->count;
  int e1 = e < wrap ? e : wrap;
  if (a < e1) off[k] = (size_t)(a + s->root) * n, len[k++] = (size_t)(e1 - a) * n;
  int a2 = a > wrap ? a : wrap;
  if (a2 < e) off[k] = (size_t)(a2 + s->root - p) * n, len[k++] = (size_t)(e - a2) * n;
  return k;
}

/* The blocks of virtual ranks [a, e), from buffer `buf` to peer, or from peer. */
static void send_span(struct zcoll__sched *s, int peer, int buf, int a, int e) {
  size_t off[2], len[2];
  int k = ranges(s, a, e, off, len), sent = 0;
  for (int i = 0; i < k; i++)
    if (len[i]) zcoll__sched_send(s, peer, buf, off[i], len[i]), sent = 1;
  if (!sent) zcoll__xchg_ack_send(s, peer);
}
static void recv_span(struct zcoll__sched *s, int peer, int a, int e) {
  size_t off[2], len[2];
  int k = ranges(s, a, e, off, len), got = 0;
  for (int i = 0; i < k; i++)
    if (len[i]) zcoll__sched_recv_copy(s, peer, off[i], len[i]), got = 1;
  if (!got) zcoll__xchg_ack_recv(s, peer);
}

static int real(const struct zcoll__sched *s, int v) { return (v + s->root) % s->size; }

static void gather_binomial(struct zcoll__sched *s, const struct zcoll__algo_params *params) {
  (void)params;
  int p = s->size, v = (s->rank - s->root + p) % p, top = top_of(v, p), ip = s->in_place;
  size_t n = s->count;
  s->in_place = 0; /* at the root only: its block is already in place (no copy) */
  s->base[ZCOLL_BUF_SRC] = (size_t)s->rank * n;
  if (v) { /* the subtree's blocks gather in scratch */
    s->tmp_count = (size_t)p * n;
    s->remap_dst = ZCOLL_BUF_TMP;
  }
  if (!ip) zcoll__sched_copy(s, (size_t)s->rank * n, n);
  for (int b = 1; b < top && v + b < p; b <<= 1) zcoll__xchg_ack_send(s, real(s, v + b));
  for (int b = 1; b < top && v + b < p; b <<= 1) {
    int e = v + 2 * b < p ? v + 2 * b : p;
    recv_span(s, real(s, v + b), v + b, e);
  }
  if (v) {
    int e = v + top < p ? v + top : p;
    send_span(s, real(s, v - top), ZCOLL_BUF_DST, v, e);
    zcoll__xchg_ack_recv(s, real(s, v - top));
  }
  s->remap_dst = 0;
}

static void scatter_binomial(struct zcoll__sched *s, const struct zcoll__algo_params *params) {
  (void)params;
  int p = s->size, v = (s->rank - s->root + p) % p, top = top_of(v, p), ip = s->in_place;
  size_t n = s->count, mine = (size_t)s->rank * n;
  s->in_place = 0; /* at the root only: its block stays in sendbuf (no copy) */
  s->base[ZCOLL_BUF_DST] = mine;
  int from = ZCOLL_BUF_SRC; /* the root's sendbuf, in real coordinates */
  if (v) {                  /* the subtree's blocks arrive in scratch */
    s->tmp_count = (size_t)p * n;
    from = ZCOLL_BUF_TMP;
    s->remap_dst = ZCOLL_BUF_TMP;
    recv_span(s, real(s, v - top), v, v + top < p ? v + top : p);
    s->remap_dst = 0;
    zcoll__xchg_ack_send(s, real(s, v - top));
  }
  for (int b = top >> 1; b >= 1; b >>= 1) /* the largest subtree first: the longest path */
    if (v + b < p) {
      int e = v + 2 * b < p ? v + 2 * b : p;
      send_span(s, real(s, v + b), from, v + b, e);
    }
  for (int b = top >> 1; b >= 1; b >>= 1)
    if (v + b < p) zcoll__xchg_ack_recv(s, real(s, v + b));
  if (v)
    zcoll__sched_move(s, ZCOLL_BUF_TMP, ZCOLL_BUF_DST, mine, n);
  else if (!ip)
    zcoll__sched_copy(s, mine, n);
}

const struct zcoll__algo zcoll__gather_binomial = {
    "binomial", "a binomial tree toward the root, subtrees' blocks forwarded through scratch",
    gather_binomial, NULL};
const struct zcoll__algo zcoll__scatter_binomial = {
    "binomial", "a binomial tree from the root, subtrees' blocks forwarded through scratch",
    scatter_binomial, NULL};
