/*
 * exchange.c -- alltoall(v), gather(v) and scatter(v) as one exchange over a layout
 * (algorithms.h): each rank sends each peer its block and receives the peer's, every pair
 * at once, the executor pipelining them. Gather and scatter are the layouts where only the
 * root's pairs move data ("direct": every rank straight to or from the root).
 *
 * Coordinates: SRC and DST are shifted so that the local block sits at one coordinate in
 * both (the local copy is a COPY, which keeps the coordinate): SRC's base is the block's
 * place in DST, DST's its place in SRC. In place the input is in DST: what leaves is first
 * moved to TMP (same coordinates), since DST receives over it.
 *
 * Pairs that move nothing in one direction still put a header that way (an ack of zero
 * elements), so that both ends of every pair see the other's description and a count they
 * disagree on is a mismatch at both, never a rank that returns while the other fails.
 */
#include <stdlib.h>
#include <string.h>

#include "algorithms.h"
#include "base/log.h"

void zcoll__xchg_ack_send(struct zcoll__sched *s, int peer) {
  zcoll__sched_send(s, peer, ZCOLL_BUF_TMP, s->base[ZCOLL_BUF_TMP], 0);
}

void zcoll__xchg_ack_recv(struct zcoll__sched *s, int peer) {
  int was = s->remap_dst;
  s->remap_dst = ZCOLL_BUF_TMP;
  zcoll__sched_recv_copy(s, peer, s->base[ZCOLL_BUF_TMP], 0);
  s->remap_dst = was;
}

static int mod(int a, int p) { return ((a % p) + p) % p; }

void zcoll__xchg_pairwise(struct zcoll__sched *s, const struct zcoll__layout *l) {
  int p = s->size, r = s->rank;
  int own = l->scount[r] != ZCOLL_LAYOUT_NONE && l->rcount[r] != ZCOLL_LAYOUT_NONE;
  int stash = 0; /* in place with data to send: it leaves from TMP */
  for (int q = 0; q < p && s->in_place; q++)
    if (q != r && l->scount[q] != ZCOLL_LAYOUT_NONE && l->scount[q]) stash = 1;
  if (own && !s->in_place) {
    s->base[ZCOLL_BUF_SRC] = l->rdispl[r];
    s->base[ZCOLL_BUF_DST] = l->sdispl[r];
    zcoll__sched_copy(s, l->rdispl[r] + l->sdispl[r], l->scount[r]);
  }
  size_t sb = s->base[ZCOLL_BUF_SRC], db = s->base[ZCOLL_BUF_DST];
  if (stash) {
    for (int q = 0; q < p; q++)
      if (q != r && l->scount[q] != ZCOLL_LAYOUT_NONE && l->scount[q]) {
        size_t end = l->sdispl[q] + l->scount[q];
        if (end > s->tmp_count) s->tmp_count = end;
        zcoll__sched_move(s, ZCOLL_BUF_DST, ZCOLL_BUF_TMP, l->sdispl[q], l->scount[q]);
      }
  }
  for (int k = 1; k < p; k++) {
    int to = mod(r + k, p), from = mod(r - k, p);
    size_t n = l->scount[to];
    if (n == 0)
      zcoll__xchg_ack_send(s, to);
    else if (n != ZCOLL_LAYOUT_NONE)
      zcoll__sched_send(s, to, stash ? ZCOLL_BUF_TMP : ZCOLL_BUF_SRC, l->sdispl[to] + sb, n);
    n = l->rcount[from];
    if (n == 0)
      zcoll__xchg_ack_recv(s, from);
    else if (n != ZCOLL_LAYOUT_NONE)
      zcoll__sched_recv_copy(s, from, l->rdispl[from] + db, n);
  }
}

/* ---- the uniform kinds' layouts, from s->count (a block) and s->root ---- */

static int layout_alloc(struct zcoll__sched *s, struct zcoll__layout *l) {
  size_t p = (size_t)s->size;
  size_t *a = malloc(4 * p * sizeof(*a));
  if (!a) {
    if (s->error == ZCOLL_OK)
      s->error = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory building a schedule");
    return -1;
  }
  for (size_t i = 0; i < 4 * p; i++) a[i] = ZCOLL_LAYOUT_NONE;
  *l = (struct zcoll__layout){a, a + p, a + 2 * p, a + 3 * p};
  return 0;
}

static void set_pair(const struct zcoll__layout *l, int q, size_t sn, size_t sd, size_t rn,
                     size_t rd) {
  l->scount[q] = sn, l->sdispl[q] = sd, l->rcount[q] = rn, l->rdispl[q] = rd;
}

/* kind: 0 alltoall, 1 gather (to the root), 2 scatter (from it). */
static void uniform(struct zcoll__sched *s, int kind) {
  struct zcoll__layout l;
  if (layout_alloc(s, &l)) return;
  size_t n = s->count;
  int r = s->rank, root = s->root;
  for (int q = 0; q < s->size; q++) {
    size_t at = (size_t)q * n;
    if (kind == 0)
      set_pair(&l, q, n, at, n, at);
    else if (r == root) /* the root's own block: in place, it stays */
      set_pair(&l, q, kind == 1 ? (q == r ? n : 0) : n, kind == 1 ? 0 : at,
               kind == 1 ? n : (q == r ? n : 0), kind == 1 ? at : 0);
    else if (q == root)
      set_pair(&l, q, kind == 1 ? n : 0, 0, kind == 1 ? 0 : n, 0);
  }
  if (r == root && kind && s->in_place)
    l.scount[r] = l.rcount[r] = ZCOLL_LAYOUT_NONE; /* nothing to copy */
  if (kind) s->in_place = 0; /* at the root only: its block is where it belongs */
  zcoll__xchg_pairwise(s, &l);
  free(l.scount);
}

static void a2a_pairwise(struct zcoll__sched *s, const struct zcoll__algo_params *params) {
  (void)params;
  uniform(s, 0);
}
static void a2a_bruck(struct zcoll__sched *s, const struct zcoll__algo_params *params) {
  (void)params;
  if (s->in_place)
    uniform(s, 0);
  else
    zcoll__bruck(s);
}
static void gather_direct(struct zcoll__sched *s, const struct zcoll__algo_params *params) {
  (void)params;
  uniform(s, 1);
}
static void scatter_direct(struct zcoll__sched *s, const struct zcoll__algo_params *params) {
  (void)params;
  uniform(s, 2);
}
/* The v-forms: the planner made the layout. */
static void v_pairwise(struct zcoll__sched *s, const struct zcoll__algo_params *params) {
  (void)params;
  if (s->lay) zcoll__xchg_pairwise(s, s->lay);
}

static const struct zcoll__algo a2a_pw = {
    "pairwise", "p - 1 exchanges, step k to rank + k and from rank - k, all pipelined",
    a2a_pairwise, NULL};
static const struct zcoll__algo a2a_br = {
    "bruck",
    "ceil(log2 p) steps, step k to rank + 2^k with every block whose distance has bit k "
    "(out of place; in place: pairwise)",
    a2a_bruck, NULL};
static const struct zcoll__algo v_pw = {
    "pairwise", "p - 1 exchanges of uneven blocks, step k to rank + k and from rank - k",
    v_pairwise, NULL};
static const struct zcoll__algo gather_dir = {
    "direct", "every rank straight to the root, pipelined", gather_direct, NULL};
static const struct zcoll__algo scatter_dir = {
    "direct", "the root straight to every rank, pipelined", scatter_direct, NULL};
static const struct zcoll__algo v_dir = {
    "direct", "every rank straight to or from the root, pipelined", v_pairwise, NULL};

const struct zcoll__algo *const zcoll__a2a_algos[] = {&a2a_pw, &a2a_br};
const int zcoll__na2a_algos = (int)(sizeof(zcoll__a2a_algos) / sizeof(zcoll__a2a_algos[0]));
const struct zcoll__algo *const zcoll__a2av_algos[] = {&v_pw};
const int zcoll__na2av_algos = 1;
const struct zcoll__algo *const zcoll__gather_algos[] = {&gather_dir, &zcoll__gather_binomial};
const int zcoll__ngather_algos = (int)(sizeof(zcoll__gather_algos) /
                                       sizeof(zcoll__gather_algos[0]));
const struct zcoll__algo *const zcoll__gatherv_algos[] = {&v_dir};
const int zcoll__ngatherv_algos = 1;
const struct zcoll__algo *const zcoll__scatter_algos[] = {&scatter_dir, &zcoll__scatter_binomial};
const int zcoll__nscatter_algos = (int)(sizeof(zcoll__scatter_algos) /
                                        sizeof(zcoll__scatter_algos[0]));
const struct zcoll__algo *const zcoll__scatterv_algos[] = {&v_dir};
const int zcoll__nscatterv_algos = 1;
