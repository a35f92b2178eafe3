/*
 * perf_xchg.c -- the exchanges' check pattern and uneven counts (perf_xchg.h).
 *
 * A run's input and result are lists of segments, one per peer at most: where in the
 * buffer, how many elements, and which pair (src, dst) they are the data of. Arming
 * fills the input's segments and poisons everything else the run may write (the result
 * and a guard after it); checking compares the result's segments element by element,
 * the guard, and (out of place) that the input and its guard are as they were. The
 * reference is computed here, without the library under test.
 */
#include "perf_xchg.h"

#include <string.h>

#define PT_XCHG_PERIOD 61 /* elements; a prime, as the broadcast's */

bool pt_is_xchg(enum pt_coll coll) {
  return coll == PT_COLL_ALLTOALL || coll == PT_COLL_ALLTOALLV || coll == PT_COLL_ALLGATHERV ||
         coll == PT_COLL_GATHER || coll == PT_COLL_SCATTER || coll == PT_COLL_SENDRECV;
}

bool pt_xchg_has_in_place(enum pt_coll coll) {
  return coll != PT_COLL_ALLTOALLV && coll != PT_COLL_SENDRECV;
}

size_t pt_xchg_count(enum pt_coll coll, int src, int dst, int nranks, size_t count) {
  const size_t h = (count + 1) / 2;
  if (nranks < 2) return count;
  if (coll == PT_COLL_ALLTOALLV) {
    if (dst == src) return count - h;
    if (dst == (src + 1) % nranks) return count + h;
  } else if (coll == PT_COLL_ALLGATHERV) {
    if (src == 0) return count - h;
    if (src == 1) return count + h;
  }
  return count;
}

int pt_pattern_init_xchg(struct pt_pattern *pat, enum pt_dtype t, enum pt_coll coll, int rank,
                         int nranks, int root) {
  memset(pat, 0, sizeof *pat);
  pat->dtype = t;
  pat->op = PT_SUM;
  pat->esize = pt_dtype_size(t);
  pat->period = PT_XCHG_PERIOD;
  pat->coll = coll;
  pat->rank = rank;
  pat->nranks = nranks;
  pat->root = root;
  return 0;
}

/* One period of what src sends dst: 0..60 (unsigned) or -30..30, exact in every type and
 * never the poison. */
static void pt_pair_block(enum pt_dtype t, int src, int dst, unsigned char *blk) {
  const bool is_unsigned = t == PT_UINT8 || t == PT_UINT32 || t == PT_UINT64;
  for (size_t k = 0; k < PT_XCHG_PERIOD; k++) {
    int64_t v = (int64_t)((k * 7 + (size_t)src * 13 + (size_t)dst * 29) % PT_XCHG_PERIOD);
    pt_store_int(t, blk + k * pt_dtype_size(t), is_unsigned ? v : v - 30);
  }
}

struct pt_seg {
  size_t at, n; /* elements */
  int src, dst;
};

/* The elements before peer q's block in a packed v-layout: from src (or to dst) = me. */
static size_t pt_before(const struct pt_pattern *pat, size_t count, int q, bool to_me) {
  size_t at = 0;
  for (int j = 0; j < q; j++)
    at += to_me ? pt_xchg_count(pat->coll, j, pat->rank, pat->nranks, count)
                : pt_xchg_count(pat->coll, pat->rank, j, pat->nranks, count);
  return at;
}

/* The input's segment q (a peer), if there is one. */
static bool pt_input_seg(const struct pt_pattern *pat, size_t count, bool in_place, int q,
                         struct pt_seg *s) {
  const int r = pat->rank, p = pat->nranks;
  switch (pat->coll) {
  case PT_COLL_ALLTOALL: *s = (struct pt_seg){(size_t)q * count, count, r, q}; return true;
  case PT_COLL_ALLTOALLV:
    *s = (struct pt_seg){pt_before(pat, count, q, false), pt_xchg_count(pat->coll, r, q, p, count),
                         r, q};
    return true;
  case PT_COLL_ALLGATHERV:
    /* in place: rank r's block at its displacement, r's blocks packed in rank order */
    *s = (struct pt_seg){in_place ? pt_before(pat, count, r, true) : 0,
                         pt_xchg_count(pat->coll, r, 0, p, count), r, 0};
    return q == 0;
  case PT_COLL_GATHER:
    *s = (struct pt_seg){in_place && r == pat->root ? (size_t)r * count : 0, count, r, 0};
    return q == 0;
  case PT_COLL_SENDRECV: /* out of place only: the message to the next rank */
    *s = (struct pt_seg){0, count, r, (r + 1) % p};
    return q == 0;
  default: /* scatter: the root's block q for rank q */
    *s = (struct pt_seg){(size_t)q * count, count, pat->root, q};
    return r == pat->root;
  }
}

/* The result's segment q, if there is one (what must be there after the run). */
static bool pt_result_seg(const struct pt_pattern *pat, size_t count, bool in_place, int q,
                          struct pt_seg *s) {
  const int r = pat->rank, p = pat->nranks, root = pat->root;
  switch (pat->coll) {
  case PT_COLL_ALLTOALL: *s = (struct pt_seg){(size_t)q * count, count, q, r}; return true;
  case PT_COLL_ALLTOALLV:
    *s = (struct pt_seg){pt_before(pat, count, q, true), pt_xchg_count(pat->coll, q, r, p, count),
                         q, r};
    return true;
  case PT_COLL_ALLGATHERV:
    *s = (struct pt_seg){pt_before(pat, count, q, true), pt_xchg_count(pat->coll, q, 0, p, count),
                         q, 0};
    return true;
  case PT_COLL_GATHER:
    if (r == root) {
      *s = (struct pt_seg){(size_t)q * count, count, q, 0};
      return true;
    }
    return in_place && pt_input_seg(pat, count, true, q, s); /* its input, unchanged */
  case PT_COLL_SENDRECV: /* the message from the previous rank */
    *s = (struct pt_seg){0, count, (r - 1 + p) % p, r};
    return q == 0;
  default:
    if (r == root && in_place) return pt_input_seg(pat, count, true, q, s); /* all of it stays */
    *s = (struct pt_seg){0, count, root, r};
    return q == 0;
  }
}

/* The end of a layout's last segment, in elements. */
static size_t pt_extent(const struct pt_pattern *pat, size_t count, bool in_place, bool result) {
  size_t end = 0;
  struct pt_seg s;
  for (int q = 0; q < pat->nranks; q++) {
    bool has = result ? pt_result_seg(pat, count, in_place, q, &s)
                      : pt_input_seg(pat, count, in_place, q, &s);
    if (has && s.at + s.n > end) end = s.at + s.n;
  }
  return end;
}

void pt_xchg_fill(const struct pt_pattern *pat, unsigned char *sendbuf, unsigned char *recvbuf,
                  size_t count) {
  unsigned char blk[PT_XCHG_PERIOD * 8];
  unsigned char *buf = sendbuf ? sendbuf : recvbuf;
  struct pt_seg s;
  for (int q = 0; q < pat->nranks; q++) {
    if (!pt_input_seg(pat, count, !sendbuf, q, &s)) continue;
    pt_pair_block(pat->dtype, s.src, s.dst, blk);
    pt_fill(buf + s.at * pat->esize, blk, pat->esize, PT_XCHG_PERIOD, s.n);
  }
}

void pt_xchg_arm(const struct pt_pattern *pat, unsigned char *sendbuf, unsigned char *recvbuf,
                 size_t count) {
  const size_t es = pat->esize, in = pt_extent(pat, count, !sendbuf, false),
               out = pt_extent(pat, count, !sendbuf, true);
  if (sendbuf) memset(sendbuf, PT_POISON, in * es + PT_GUARD);
  memset(recvbuf, PT_POISON, (!sendbuf && in > out ? in : out) * es + PT_GUARD);
  pt_xchg_fill(pat, sendbuf, recvbuf, count);
}

/* The wrong elements of a layout's segments in buf. */
static uint64_t pt_segs_wrong(const struct pt_pattern *pat, const unsigned char *buf, size_t count,
                              bool in_place, bool result) {
  unsigned char blk[PT_XCHG_PERIOD * 8];
  uint64_t wrong = 0;
  struct pt_seg s;
  for (int q = 0; q < pat->nranks; q++) {
    if (!(result ? pt_result_seg(pat, count, in_place, q, &s)
                 : pt_input_seg(pat, count, in_place, q, &s)))
      continue;
    pt_pair_block(pat->dtype, s.src, s.dst, blk);
    wrong += pt_count_wrong(buf + s.at * pat->esize, blk, pat->esize, PT_XCHG_PERIOD, s.n);
  }
  return wrong;
}

uint64_t pt_xchg_check(const struct pt_pattern *pat, const unsigned char *sendbuf,
                       const unsigned char *recvbuf, size_t count) {
  const bool in_place = !sendbuf;
  const size_t es = pat->esize, out = pt_extent(pat, count, in_place, true);
  uint64_t wrong = pt_segs_wrong(pat, recvbuf, count, in_place, true) +
                   pt_guard_wrong(recvbuf, es, out);
  if (sendbuf)
    wrong += pt_segs_wrong(pat, sendbuf, count, false, false) +
             pt_guard_wrong(sendbuf, es, pt_extent(pat, count, false, false));
  return wrong;
}
