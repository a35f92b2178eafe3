/*
 * check_matrix.h -- one rank's side of the allreduce correctness matrix: every dtype x
 * op x placement over a list of counts, with misaligned buffers, each element checked
 * against the independent reference of check_common.h, the send buffer checked
 * unmodified and guard bytes around the result checked untouched. Every rank of a job
 * runs the same sequence. Public API only: it runs in threads and in processes.
 */
#ifndef ZCOLL_CHECK_MATRIX_H
#define ZCOLL_CHECK_MATRIX_H

#include <stdlib.h>

#include "check_common.h"

#define CHK_GUARD 64

struct chk_stats {
  unsigned long cases, failures;
  char first[512];
  int register_buffers; /* register both buffers with zcoll_mem_register around each call */
};

/* The counts every test uses for a job of `size` ranks: 0, 1, p-1, p+1, an odd one,
 * and `large_bytes` worth of elements (plus an odd tail). */
static inline int chk_counts(int size, zcoll_dtype_t dt, size_t large_bytes, size_t *out) {
  int n = 0;
  out[n++] = 0;
  out[n++] = 1;
  if (size > 2) out[n++] = (size_t)size - 1;
  out[n++] = (size_t)size + 1;
  out[n++] = 1001;
  if (large_bytes) out[n++] = large_bytes / zcoll_dtype_size(dt) + 3;
  return n;
}

static inline void chk_fail(struct chk_stats *st, const char *fmt, const char *what) {
  if (!st->failures) snprintf(st->first, sizeof(st->first), fmt, what);
  st->failures++;
}

/* One allreduce, checked. Returns non-zero if the call itself failed (the matrix
 * stops: the communicator is unusable). */
static inline int chk_one(zcoll_comm_t *comm, zcoll_dtype_t dt, zcoll_op_t op, size_t count,
                          int in_place, unsigned misalign, unsigned salt, struct chk_stats *st) {
  int size = zcoll_comm_size(comm), rank = zcoll_comm_rank(comm);
  size_t bytes = count * zcoll_dtype_size(dt), total = bytes + 2 * CHK_GUARD + 16;
  unsigned char *sraw = malloc(total), *rraw = malloc(total), *copy = malloc(bytes + 1);
  char why[400];
  if (!sraw || !rraw || !copy) {
    free(sraw), free(rraw), free(copy);
    chk_fail(st, "%s", "out of memory in the test");
    return 1;
  }
  unsigned char *sbuf = sraw + CHK_GUARD + misalign, *rbuf = rraw + CHK_GUARD + (misalign * 3) % 8;
  memset(sraw, 0xa5, total);
  memset(rraw, 0x5a, total);
  chk_fill(op, dt, in_place ? rbuf : sbuf, count, rank, salt);
  memcpy(copy, sbuf, bytes);
  st->cases++;
  zcoll_mr_t *smr = NULL, *rmr = NULL;
  if (st->register_buffers && (zcoll_mem_register(comm, sraw, total, &smr) != ZCOLL_OK ||
                               zcoll_mem_register(comm, rraw, total, &rmr) != ZCOLL_OK)) {
    snprintf(why, sizeof(why), "zcoll_mem_register: %s", zcoll_comm_last_error(comm));
    chk_fail(st, "%s", why);
  }
  zcoll_status_t rc = zcoll_allreduce(comm, in_place ? ZCOLL_IN_PLACE : sbuf, rbuf, count, dt, op);
  if ((smr && zcoll_mem_deregister(smr) != ZCOLL_OK) ||
      (rmr && zcoll_mem_deregister(rmr) != ZCOLL_OK))
    chk_fail(st, "%s", "zcoll_mem_deregister failed");
  int stop = 0;
  if (rc != ZCOLL_OK) {
    snprintf(why, sizeof(why), "%s %s count %zu %s: %s: %s", zcoll_dtype_name(dt),
             zcoll_op_name(op), count, in_place ? "in place" : "out of place", zcoll_strerror(rc),
             zcoll_comm_last_error(comm));
    chk_fail(st, "%s", why);
    stop = 1;
  } else {
    if (chk_verify(op, dt, size, rbuf, count, salt, why, sizeof(why))) chk_fail(st, "%s", why);
    if (!in_place && memcmp(copy, sbuf, bytes) != 0) {
      snprintf(why, sizeof(why), "%s %s count %zu: the send buffer was modified",
               zcoll_dtype_name(dt), zcoll_op_name(op), count);
      chk_fail(st, "%s", why);
    }
    for (unsigned char *g = rraw; g < rraw + total; g++)
      if ((g < rbuf || g >= rbuf + bytes) && *g != 0x5a) {
        snprintf(why, sizeof(why), "%s %s count %zu: wrote outside the result buffer",
                 zcoll_dtype_name(dt), zcoll_op_name(op), count);
        chk_fail(st, "%s", why);
        break;
      }
  }
  free(sraw), free(rraw), free(copy);
  return stop;
}

/* The whole matrix for this rank: every dtype x op x count x placement, except that the
 * large count (large_bytes, megabytes: most of the matrix's time) runs each dtype x op in
 * one placement, in place where (dtype + op + p) is odd -- so the jobs of even and of odd
 * rank counts between them meet every dtype x op x placement at the large count too, and
 * every other count runs both. Returns the number of failed checks. */
static inline unsigned long chk_run_matrix(zcoll_comm_t *comm, size_t large_bytes,
                                           struct chk_stats *st) {
  unsigned salt = 0;
  int p = zcoll_comm_size(comm);
  for (int dt = 0; dt < ZCOLL_DTYPE_COUNT; dt++) {
    size_t counts[8];
    int nc = chk_counts(p, (zcoll_dtype_t)dt, large_bytes, counts);
    for (int op = 0; op < ZCOLL_OP_COUNT; op++)
      for (int c = 0; c < nc; c++)
        for (int in_place = 0; in_place < 2; in_place++, salt++) {
          if (large_bytes && c == nc - 1 && in_place != (dt + op + p) % 2) continue;
          if (chk_one(comm, (zcoll_dtype_t)dt, (zcoll_op_t)op, counts[c], in_place, salt % 8, salt,
                      st))
            return st->failures;
        }
  }
  return st->failures;
}

#endif
