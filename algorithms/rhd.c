/*
 * rhd.c -- recursive halving-doubling (Rabenseifner): a reduce-scatter by recursive
 * halving, then an allgather by recursive doubling. 2 log2(p) steps moving 2(p-1)/p of
 * the vector in all: nearly ring's bandwidth with log p latencies.
 *
 * With p2 = 2^floor(log2 p) the vector is cut into p2 blocks. Virtual rank v starts
 * with all of them; in halving step i, at distance d = p2/2^(i+1), it sends the half of
 * its blocks that partner v^d keeps and reduces the half it keeps itself (the upper
 * one if bit d of v is set), so it ends with block v complete -- reduced (and divided,
 * for AVG) there and nowhere else. Doubling replays the steps backwards with copies.
 *
 * p not a power of two: ranks below 2*extra (extra = p - p2) pair up, the odd one a
 * helper of its even neighbour, which stands in as virtual rank r/2. The helper's
 * input travels in the order the neighbour forwards it (the half given away first,
 * its own block last), and the result comes back in the order the doubling completes
 * it, so that both transfers overlap the steps instead of preceding and following them.
 * Empty ranges (count < p) are still exchanged, as empty pieces: every rank's program
 * has the same shape whatever the count, so ranks that disagree on the count are caught
 * by the length check on the first piece that differs instead of waiting forever.
 */
#include "algorithms.h"
#include "fold.h"

/* Elements of blocks [b, b + nb) of p2. */
static void span(size_t count, int p2, int b, int nb, size_t *off, size_t *len) {
  size_t end, l;
  zcoll__block(count, p2, b, off, &l);
  zcoll__block(count, p2, b + nb - 1, &end, &l);
  *len = end + l - *off;
}

/* Halving step i of virtual rank v: what it keeps and what it gives (element ranges). */
struct halves {
  size_t keep_off, keep_len, give_off, give_len;
};

static struct halves halves_of(size_t count, const struct zcoll__fold *f, int v, int i) {
  int nb = f->p2 >> (i + 1), d = nb; /* blocks per half == the partner distance */
  int lo = v & ~(2 * nb - 1), keep = lo + (v & d ? nb : 0), give = lo + (v & d ? 0 : nb);
  struct halves h;
  span(count, f->p2, keep, nb, &h.keep_off, &h.keep_len);
  span(count, f->p2, give, nb, &h.give_off, &h.give_len);
  return h;
}

/* The helper's side: its input out in forwarding order, the result back. */
static void helper_build(struct zcoll__sched *s, const struct zcoll__fold *f, int even) {
  int v = even / 2;
  size_t off, len;
  for (int i = 0; i < f->steps; i++) {
    struct halves h = halves_of(s->count, f, v, i);
    zcoll__sched_send(s, even, ZCOLL_BUF_SRC, h.give_off, h.give_len);
  }
  zcoll__block(s->count, f->p2, v, &off, &len);
  zcoll__sched_send(s, even, ZCOLL_BUF_SRC, off, len);
  zcoll__sched_recv_copy(s, even, off, len);
  for (int i = f->steps - 1; i >= 0; i--) {
    struct halves h = halves_of(s->count, f, v, i);
    zcoll__sched_recv_copy(s, even, h.give_off, h.give_len);
  }
}

void zcoll__rh_rs(struct zcoll__sched *s, const struct zcoll__fold *f, int v, int acc, int partial,
                  int final_buf) {
  for (int i = 0; i < f->steps; i++) {
    struct halves h = halves_of(s->count, f, v, i);
    int q = zcoll__fold_real(f, v ^ (f->p2 >> (i + 1))), last = i == f->steps - 1;
    zcoll__sched_send(s, q, i ? partial : acc, h.give_off, h.give_len);
    zcoll__sched_recv_reduce_to(s, q, last ? final_buf : partial, i ? partial : acc, h.keep_off,
                                h.keep_len, last);
  }
}

void zcoll__rd_ag(struct zcoll__sched *s, const struct zcoll__fold *f, int v, int first,
                  int helper) {
  for (int i = f->steps - 1; i >= 0; i--) {
    struct halves h = halves_of(s->count, f, v, i);
    int q = zcoll__fold_real(f, v ^ (f->p2 >> (i + 1)));
    zcoll__sched_send(s, q, i == f->steps - 1 ? first : ZCOLL_BUF_DST, h.keep_off, h.keep_len);
    zcoll__sched_recv_copy(s, q, h.give_off, h.give_len);
    if (helper >= 0) zcoll__sched_send(s, helper, ZCOLL_BUF_DST, h.give_off, h.give_len);
  }
}

static void rhd_build(struct zcoll__sched *s, const struct zcoll__algo_params *params) {
  (void)params;
  struct zcoll__fold f = zcoll__fold_of(s->size);
  int r = s->rank;
  if (s->size == 1) {
    zcoll__sched_copy(s, 0, s->count);
    return;
  }
  if (r < 2 * f.extra && r % 2) {
    helper_build(s, &f, r - 1);
    return;
  }
  int v = r < 2 * f.extra ? r / 2 : r - f.extra, helper = v < f.extra ? r + 1 : -1;
  int acc = ZCOLL_BUF_SRC;
  size_t off, len;
  if (helper >= 0) {
    for (int i = 0; i < f.steps; i++) {
      struct halves h = halves_of(s->count, &f, v, i);
      zcoll__sched_recv_reduce(s, helper, ZCOLL_BUF_SRC, h.give_off, h.give_len, 0);
    }
    zcoll__block(s->count, f.p2, v, &off, &len);
    zcoll__sched_recv_reduce(s, helper, ZCOLL_BUF_SRC, off, len, 0);
    acc = ZCOLL_BUF_DST;
  }
  zcoll__rh_rs(s, &f, v, acc, ZCOLL_BUF_DST, ZCOLL_BUF_DST);
  zcoll__block(s->count, f.p2, v, &off, &len);
  if (helper >= 0) zcoll__sched_send(s, helper, ZCOLL_BUF_DST, off, len);
  zcoll__rd_ag(s, &f, v, ZCOLL_BUF_DST, helper);
}

static int rhd_peers(int rank, int size, const struct zcoll__algo_params *params, int *out,
                     int max) {
  (void)params;
  struct zcoll__fold f = zcoll__fold_of(size);
  int n = 0;
  if (rank < 2 * f.extra) {
    if (n < max) out[n++] = rank ^ 1;
    if (rank % 2) return n;
  }
  int v = rank < 2 * f.extra ? rank / 2 : rank - f.extra;
  for (int i = 0; i < f.steps && n < max; i++) out[n++] = zcoll__fold_real(&f, v ^ (1 << i));
  return n;
}

const struct zcoll__algo zcoll__algo_rhd = {
    "rhd", "recursive halving-doubling (Rabenseifner); log p steps, near ring's bandwidth",
    rhd_build, rhd_peers};
