/*
 * xchg_check.h -- alltoall, alltoallv, allgatherv, gather, gatherv, scatter and scatterv, one
 * case at a time, every element checked against values computed here without zcoll (what
 * rank i sends rank j, element k, is xc_val(i, j, k)); shared by the thread tests
 * (coll/test_xchg.c) and the process program (progs/xchg_check.c).
 *
 * Counts differ per pair in the v-forms (some zero), displacements leave gaps (and the send
 * side's run in reverse rank order), and everything of a result buffer that no block covers
 * -- gaps, and a guard past its end -- must keep its fill byte.
 */
#ifndef ZCOLL_XCHG_CHECK_H
#define ZCOLL_XCHG_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zcoll.h"

enum {
  XC_ALLTOALL,
  XC_ALLTOALLV,
  XC_ALLGATHERV,
  XC_GATHER,
  XC_GATHERV,
  XC_SCATTER,
  XC_SCATTERV,
  XC_NKINDS
};
static const char *const xc_kind_names[XC_NKINDS] = {
    "alltoall", "alltoallv", "allgatherv", "gather", "gatherv", "scatter", "scatterv"};

#define XC_GUARD 16 /* elements past the extent */
#define XC_FILL 0xa5

struct xc_case {
  int kind;
  zcoll_dtype_t dt;
  size_t n; /* the block (uniform kinds), the v-forms' typical count */
  int root;
  int in_place;
  int nonblocking;
  size_t gap; /* elements between blocks (v-forms) */
  unsigned salt;
};

static inline uint64_t xc_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Element k of what rank i sends rank j, as dsize bytes. */
static inline void xc_val(const struct xc_case *c, int i, int j, size_t k, void *out) {
  uint64_t v = xc_mix(((uint64_t)c->salt << 48) ^ ((uint64_t)i << 40) ^ ((uint64_t)j << 32) ^ k);
  if (v % 251 == 0) v |= 0xff; /* never the fill byte throughout */
  memcpy(out, &v, zcoll_dtype_size(c->dt));
}

static inline int xc_v(const struct xc_case *c) {
  return c->kind == XC_ALLTOALLV || c->kind == XC_ALLGATHERV || c->kind == XC_GATHERV ||
         c->kind == XC_SCATTERV;
}

/* How many elements rank i sends rank j. */
static inline size_t xc_count(const struct xc_case *c, int i, int j) {
  if (!xc_v(c)) return c->n;
  if (c->kind == XC_ALLGATHERV) j = 0; /* a rank's block is the same for all */
  /* in place, alltoallv sends with its recvcounts: the counts must then be symmetric */
  unsigned h = c->kind == XC_ALLTOALLV && c->in_place ? (unsigned)((i + j) * 5 + i * j) + c->salt
                                                      : (unsigned)(i * 7 + j * 3) + c->salt;
  if (h % 4 == 1 || c->n == 0) return 0;
  return c->n + h % (c->n + 1);
}

/* A layout of p blocks with counts[q] (gaps between them; reversed: block p-1 first). */
static inline size_t xc_layout(const struct xc_case *c, int p, const size_t *counts, int reversed,
                               size_t *displs) {
  size_t at = c->gap;
  for (int k = 0; k < p; k++) {
    int q = reversed ? p - 1 - k : k;
    displs[q] = at;
    at += counts[q] + c->gap;
  }
  return at;
}

struct xc_bufs {
  size_t scount[128], sdispl[128], rcount[128], rdispl[128];
  size_t sext, rext; /* elements */
  unsigned char *send, *recv;
};

/* The layout of rank r's call, by kind (uniform ones: packed blocks; displacements are
 * not passed for them). */
static inline void xc_plan(const struct xc_case *c, int p, int r, struct xc_bufs *b) {
  int v = xc_v(c);
  for (int q = 0; q < p; q++) b->scount[q] = b->rcount[q] = 0;
  switch (c->kind) {
  case XC_ALLTOALL:
  case XC_ALLTOALLV:
    for (int q = 0; q < p; q++) b->scount[q] = xc_count(c, r, q), b->rcount[q] = xc_count(c, q, r);
    break;
  case XC_ALLGATHERV:
    for (int q = 0; q < p; q++) b->rcount[q] = xc_count(c, q, 0);
    b->scount[0] = b->rcount[r];
    break;
  case XC_GATHER:
  case XC_GATHERV:
    b->scount[0] = xc_count(c, r, c->root);
    if (r == c->root)
      for (int q = 0; q < p; q++) b->rcount[q] = xc_count(c, q, r);
    break;
  default: /* scatter(v) */
    b->rcount[0] = xc_count(c, c->root, r);
    if (r == c->root)
      for (int q = 0; q < p; q++) b->scount[q] = xc_count(c, r, q);
  }
  struct xc_case packed = *c;
  packed.gap = 0;
  const struct xc_case *lc = v ? c : &packed;
  int many_s = c->kind == XC_ALLTOALL || c->kind == XC_ALLTOALLV || c->kind == XC_SCATTER ||
               c->kind == XC_SCATTERV;
  int many_r = c->kind != XC_SCATTER && c->kind != XC_SCATTERV;
  b->sext = many_s ? xc_layout(lc, p, b->scount, v && (c->salt & 1), b->sdispl)
                   : (b->sdispl[0] = 0, b->scount[0]);
  b->rext = many_r ? xc_layout(lc, p, b->rcount, 0, b->rdispl) : (b->rdispl[0] = 0, b->rcount[0]);
}

/* Which block of my result holds what rank q sent me (-1: none) -- and the sender's view. */
static inline void xc_fill_send(const struct xc_case *c, int p, int r, struct xc_bufs *b) {
  size_t ds = zcoll_dtype_size(c->dt);
  int many_s = c->kind == XC_ALLTOALL || c->kind == XC_ALLTOALLV || c->kind == XC_SCATTER ||
               c->kind == XC_SCATTERV;
  for (int q = 0; q < (many_s ? p : 1); q++) {
    int to = many_s ? q : (c->kind == XC_ALLGATHERV ? 0 : c->root);
    for (size_t k = 0; k < b->scount[q]; k++)
      xc_val(c, r, to, k, b->send + (b->sdispl[q] + k) * ds);
  }
}

/* Allocates and fills rank r's buffers (the in-place forms: the input where it goes). */
static inline int xc_prepare(const struct xc_case *c, int p, int r, struct xc_bufs *b) {
  size_t ds = zcoll_dtype_size(c->dt);
  xc_plan(c, p, r, b);
  b->send = malloc((b->sext + XC_GUARD) * ds);
  b->recv = malloc((b->rext + XC_GUARD) * ds);
  if (!b->send || !b->recv) return -1;
  memset(b->send, XC_FILL, (b->sext + XC_GUARD) * ds);
  memset(b->recv, XC_FILL, (b->rext + XC_GUARD) * ds);
  xc_fill_send(c, p, r, b);
  if (!c->in_place) return 0;
  size_t k0 = 0;
  switch (c->kind) {
  case XC_ALLTOALL:
  case XC_ALLTOALLV: /* the input is recvbuf, laid out as the result */
    for (int q = 0; q < p; q++)
      for (size_t k = 0; k < b->rcount[q]; k++)
        xc_val(c, r, q, k, b->recv + (b->rdispl[q] + k) * ds);
    break;
  case XC_ALLGATHERV:
    for (size_t k = 0; k < b->rcount[r]; k++) xc_val(c, r, 0, k, b->recv + (b->rdispl[r] + k) * ds);
    break;
  case XC_GATHER:
  case XC_GATHERV: /* the root's own block already in place */
    for (size_t k = 0; k < b->rcount[r]; k++) xc_val(c, r, r, k, b->recv + (b->rdispl[r] + k) * ds);
    break;
  default: (void)k0; break; /* scatter: the root's block stays in sendbuf */
  }
  return 0;
}

/* Checks rank r's result: every block, and the fill everywhere else. 0 if right. */
static inline int xc_verify(const struct xc_case *c, int p, int r, const struct xc_bufs *b,
                            char *msg, size_t len) {
  size_t ds = zcoll_dtype_size(c->dt), bad = 0, first = SIZE_MAX;
  int receives = c->kind == XC_ALLTOALL || c->kind == XC_ALLTOALLV || c->kind == XC_ALLGATHERV ||
                 ((c->kind == XC_GATHER || c->kind == XC_GATHERV) && r == c->root) ||
                 ((c->kind == XC_SCATTER || c->kind == XC_SCATTERV) &&
                  !(c->in_place && r == c->root));
  unsigned char *want = malloc((b->rext + XC_GUARD) * ds);
  if (!want) return -1;
  memset(want, XC_FILL, (b->rext + XC_GUARD) * ds);
  int many_r = c->kind != XC_SCATTER && c->kind != XC_SCATTERV;
  for (int q = 0; receives && q < (many_r ? p : 1); q++) {
    int from = many_r ? q : c->root;
    int to = c->kind == XC_ALLGATHERV ? 0 : r;
    for (size_t k = 0; k < b->rcount[q]; k++)
      xc_val(c, from, to, k, want + (b->rdispl[q] + k) * ds);
  }
  for (size_t e = 0; e < b->rext + XC_GUARD; e++)
    if (memcmp(want + e * ds, b->recv + e * ds, ds)) {
      if (!bad++) first = e;
    }
  if (bad)
    snprintf(msg, len,
             "%s dt=%s n=%zu root=%d ip=%d nb=%d gap=%zu salt=%u p=%d rank %d: %zu of %zu "
             "elements wrong, the first at %zu",
             xc_kind_names[c->kind], zcoll_dtype_name(c->dt), c->n, c->root, c->in_place,
             c->nonblocking, c->gap, c->salt, p, r, bad, b->rext + XC_GUARD, first);
  free(want);
  return bad ? 1 : 0;
}

static inline zcoll_status_t xc_call(zcoll_comm_t *comm, const struct xc_case *c, struct xc_bufs *b,
                                     int r) {
  const void *sb = b->send;
  void *rb = b->recv;
  int root = r == c->root;
  if (c->in_place) {
    if (c->kind == XC_SCATTER || c->kind == XC_SCATTERV)
      rb = (void *)ZCOLL_IN_PLACE;
    else
      sb = ZCOLL_IN_PLACE;
  }
  (void)root;
  zcoll_request_t *req = NULL;
  int nb = c->nonblocking;
  zcoll_status_t st;
  switch (c->kind) {
  case XC_ALLTOALL:
    st = nb ? zcoll_ialltoall(comm, sb, rb, c->n, c->dt, &req)
            : zcoll_alltoall(comm, sb, rb, c->n, c->dt);
    break;
  case XC_ALLTOALLV:
    st = nb ? zcoll_ialltoallv(comm, sb, b->scount, b->sdispl, rb, b->rcount, b->rdispl, c->dt,
                               &req)
            : zcoll_alltoallv(comm, sb, b->scount, b->sdispl, rb, b->rcount, b->rdispl, c->dt);
    break;
  case XC_ALLGATHERV:
    st = nb ? zcoll_iallgatherv(comm, sb, b->scount[0], rb, b->rcount, b->rdispl, c->dt, &req)
            : zcoll_allgatherv(comm, sb, b->scount[0], rb, b->rcount, b->rdispl, c->dt);
    break;
  case XC_GATHER:
    st = nb ? zcoll_igather(comm, sb, rb, c->n, c->dt, c->root, &req)
            : zcoll_gather(comm, sb, rb, c->n, c->dt, c->root);
    break;
  case XC_GATHERV:
    st = nb ? zcoll_igatherv(comm, sb, b->scount[0], rb, b->rcount, b->rdispl, c->dt, c->root, &req)
            : zcoll_gatherv(comm, sb, b->scount[0], rb, b->rcount, b->rdispl, c->dt, c->root);
    break;
  case XC_SCATTER:
    st = nb ? zcoll_iscatter(comm, sb, rb, c->n, c->dt, c->root, &req)
            : zcoll_scatter(comm, sb, rb, c->n, c->dt, c->root);
    break;
  default:
    st = nb ? zcoll_iscatterv(comm, sb, b->scount, b->sdispl, rb, b->rcount[0], c->dt, c->root,
                              &req)
            : zcoll_scatterv(comm, sb, b->scount, b->sdispl, rb, b->rcount[0], c->dt, c->root);
  }
  if (st == ZCOLL_OK && req) {
    st = zcoll_wait(req);
    zcoll_request_free(req);
  }
  return st;
}

/* One case on rank r: 0 if right, else 1 with msg. */
static inline int xc_run(zcoll_comm_t *comm, const struct xc_case *cin, char *msg, size_t len) {
  int p = zcoll_comm_size(comm), r = zcoll_comm_rank(comm);
  struct xc_case cc = *cin, *c = &cc;
  if (c->kind >= XC_GATHER && r != c->root) c->in_place = 0; /* the root's only */
  struct xc_bufs b;
  if (xc_prepare(c, p, r, &b)) {
    snprintf(msg, len, "out of memory");
    return 1;
  }
  zcoll_status_t st = xc_call(comm, c, &b, r);
  int bad = 0;
  if (st != ZCOLL_OK) {
    snprintf(msg, len, "%s dt=%s n=%zu root=%d ip=%d nb=%d p=%d rank %d: %s: %s",
             xc_kind_names[c->kind], zcoll_dtype_name(c->dt), c->n, c->root, c->in_place,
             c->nonblocking, p, r, zcoll_strerror(st), zcoll_comm_last_error(comm));
    bad = 1;
  } else {
    bad = xc_verify(c, p, r, &b, msg, len) != 0;
  }
  free(b.send);
  free(b.recv);
  return bad;
}

#endif
