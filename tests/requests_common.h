/*
 * requests_common.h -- values and their expected sums for the request tests (threads in
 * test_requests.c, processes in progs/requests_check.c): exact in int64, computed here,
 * independently of zcoll.
 */
#ifndef ZCOLL_REQUESTS_COMMON_H
#define ZCOLL_REQUESTS_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "zcoll.h"

/* Rank r's element i in round k. */
static inline int64_t rq_val(int rank, size_t i, int round) {
  return (int64_t)(rank + 1) * 1000003 + (int64_t)(i % 9973) * 7 - (int64_t)round * 13;
}

static inline void rq_fill(int64_t *v, size_t n, int rank, int round) {
  for (size_t i = 0; i < n; i++) v[i] = rq_val(rank, i, round);
}

/* The first wrong element of a SUM or MAX over p ranks, or -1. */
static inline long rq_check(const int64_t *got, size_t n, int p, int round, zcoll_op_t op) {
  for (size_t i = 0; i < n; i++) {
    int64_t want = op == ZCOLL_MAX ? rq_val(p - 1, i, round) : 0;
    for (int q = 0; op == ZCOLL_SUM && q < p; q++) want += rq_val(q, i, round);
    if (got[i] != want) return (long)i;
  }
  return -1;
}

/* A permutation of 0..n-1 of this rank's own (requests completed in its order). */
static inline void rq_shuffle(int *order, int n, int rank) {
  for (int k = 0; k < n; k++) order[k] = k;
  uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(rank + 1);
  for (int k = n - 1; k > 0; k--) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    int j = (int)((s >> 33) % (uint64_t)(k + 1));
    int t = order[k];
    order[k] = order[j];
    order[j] = t;
  }
}

/* Ends a request in flight by polling zcoll_test (poll) or by zcoll_wait; its status. */
static inline zcoll_status_t rq_end(zcoll_request_t *req, int poll) {
  if (!poll) return zcoll_wait(req);
  zcoll_status_t st;
  while ((st = zcoll_test(req)) == ZCOLL_IN_PROGRESS) {
  }
  return st;
}

/* Request k of the "many in flight" tests: every third is a MAX, the others a SUM. */
static inline zcoll_op_t rq_op(int k) { return k % 3 == 2 ? ZCOLL_MAX : ZCOLL_SUM; }

#endif
