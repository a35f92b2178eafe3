/*
 * perf_driver.h -- the benchmark driver shared by zcoll_perf and perf/mpi_allreduce_perf:
 * for every dtype, op and size it times out-of-place and in-place runs, checks one more
 * run of each against perf_check.h's reference and prints perf_table.h's rows. It
 * reaches the collective only through a small backend table.
 */
#ifndef ZCOLL_PERF_DRIVER_H
#define ZCOLL_PERF_DRIVER_H

#include <time.h>

#include "perf_opts.h"
#include "perf_check.h"

#define PT_ALIGN 4096

/* ---- the driver ------------------------------------------------------------------ */

/* What the driver needs from a collective library. Every function returns 0, or -1
 * after printing its own error message. */
struct pt_backend {
  const char *prog;
  int rank, nranks;
  void *ctx;
  /* sendbuf NULL: in place, the data is in recvbuf */
  int (*allreduce)(void *ctx, const void *sendbuf, void *recvbuf, size_t count, enum pt_dtype t,
                   enum pt_op op);
  int (*barrier)(void *ctx);
  int (*max_double)(void *ctx, double *v, size_t n); /* in place, over all ranks */
  int (*sum_u64)(void *ctx, uint64_t *v, size_t n);
  /* optional: the algorithm name for the last column */
  int (*algorithm)(void *ctx, size_t count, enum pt_dtype t, enum pt_op op, const char **name);
};

static inline double pt_now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* w warmups, a barrier, then the mean time of n back-to-back iterations (us). */
static inline int pt_time_one(const struct pt_opts *o, const struct pt_backend *be,
                              const void *sendbuf, void *recvbuf, size_t count, enum pt_dtype t,
                              enum pt_op op, double *mean_us)
{
  for (long k = 0; k < o->warmup; k++)
    if (be->allreduce(be->ctx, sendbuf, recvbuf, count, t, op)) return -1;
  if (be->barrier(be->ctx)) return -1;
  double t0 = pt_now_us();
  for (long k = 0; k < o->iters; k++)
    if (be->allreduce(be->ctx, sendbuf, recvbuf, count, t, op)) return -1;
  *mean_us = (pt_now_us() - t0) / (double)o->iters;
  return 0;
}

/* The element count for a size in bytes: rounded down, at least one unless size is 0. */
static inline size_t pt_count_for(size_t bytes, size_t esize)
{
  return bytes == 0 ? 0 : (bytes / esize ? bytes / esize : 1);
}

/* One table section: every size for one dtype and op. */
static inline int pt_run_section(const struct pt_opts *o, const struct pt_backend *be,
                                 unsigned char *sendbuf, unsigned char *recvbuf, enum pt_dtype t,
                                 enum pt_op op, uint64_t *wrong_total, double *bw_sum, long *bw_n)
{
  struct pt_pattern pat;
  if (pt_pattern_init(&pat, t, op, be->rank, be->nranks, o->check != 0)) {
    fprintf(stderr, "%s: rank %d: out of memory for the check pattern\n", be->prog, be->rank);
    return -1;
  }
  const size_t es = pat.esize, per = pat.period;
  int rc = 0;
  size_t prev = SIZE_MAX;
  for (size_t s = o->minbytes;;) {
    size_t count = pt_count_for(s, es);
    if (count != prev) {
      prev = count;
      double tm[2];
      uint64_t wrong[2] = {0, 0};
      /* out of place: time, then one checked run on fresh buffers */
      pt_fill(sendbuf, pat.input, es, per, count);
      if (pt_time_one(o, be, sendbuf, recvbuf, count, t, op, &tm[0])) goto fail;
      if (o->check) {
        pt_fill(sendbuf, pat.input, es, per, count);
        memset(sendbuf + count * es, PT_POISON, PT_GUARD);
        memset(recvbuf, PT_POISON, count * es + PT_GUARD);
        if (be->allreduce(be->ctx, sendbuf, recvbuf, count, t, op)) goto fail;
        wrong[0] = pt_count_wrong(recvbuf, pat.ref, es, per, count) +
                   pt_count_wrong(sendbuf, pat.input, es, per, count) +
                   pt_guard_wrong(recvbuf, es, count) + pt_guard_wrong(sendbuf, es, count);
      }
      /* in place */
      pt_fill(recvbuf, pat.input, es, per, count);
      if (pt_time_one(o, be, NULL, recvbuf, count, t, op, &tm[1])) goto fail;
      if (o->check) {
        pt_fill(recvbuf, pat.input, es, per, count);
        memset(recvbuf + count * es, PT_POISON, PT_GUARD);
        if (be->allreduce(be->ctx, NULL, recvbuf, count, t, op)) goto fail;
        wrong[1] = pt_count_wrong(recvbuf, pat.ref, es, per, count) + pt_guard_wrong(recvbuf, es, count);
      }
      if (be->max_double(be->ctx, tm, 2)) goto fail;
      if (o->check && be->sum_u64(be->ctx, wrong, 2)) goto fail;
      const char *algo = NULL;
      if (be->algorithm && be->algorithm(be->ctx, count, t, op, &algo)) goto fail;
      *wrong_total += wrong[0] + wrong[1];
      for (int k = 0; k < 2; k++) *bw_sum += pt_busbw(pt_algbw(count * es, tm[k]), be->nranks);
      *bw_n += 2;
      if (be->rank == 0) {
        pt_print_row_start(stdout, count * es, count, t, op);
        for (int k = 0; k < 2; k++) pt_print_cell(stdout, tm[k], count * es, be->nranks, o->check, wrong[k]);
        if (be->algorithm) printf("  %s", algo ? algo : "-");
        printf("\n");
        fflush(stdout);
      }
    }
    /* the next size, without overflowing */
    if (o->stepbytes) {
      if (s > o->maxbytes - o->stepbytes) break;
      s += o->stepbytes;
    } else if (s == 0) {
      s = 1;
    } else {
      if (s > o->maxbytes / (size_t)o->stepfactor) break;
      s *= (size_t)o->stepfactor;
    }
    if (s > o->maxbytes) break;
  }
  goto out;
fail:
  rc = -1;
out:
  pt_pattern_free(&pat);
  return rc;
}

/* Runs every dtype x op section and prints the table on rank 0 (the caller prints the
 * banner first). Returns 0, 1 if any element was wrong, or -1 on an error (printed). */
static inline int pt_run(const struct pt_opts *o, const struct pt_backend *be)
{
  size_t bytes = (o->maxbytes > 8 ? o->maxbytes : 8) + PT_ALIGN; /* room for the guard */
  void *sendbuf = NULL, *recvbuf = NULL;
  int err = posix_memalign(&sendbuf, PT_ALIGN, bytes);
  if (err == 0) err = posix_memalign(&recvbuf, PT_ALIGN, bytes);
  if (err != 0) {
    fprintf(stderr, "%s: rank %d: cannot allocate 2 x %zu bytes: %s\n", be->prog, be->rank, bytes,
            strerror(err));
    free(sendbuf);
    return -1;
  }
  uint64_t wrong_total = 0;
  double bw_sum = 0.0;
  long bw_n = 0;
  int rc = 0;
  for (int d = 0; d < o->ndtypes && rc == 0; d++) {
    for (int k = 0; k < o->nops && rc == 0; k++) {
      if (be->rank == 0) {
        if (d + k > 0) printf("#\n");
        pt_print_header(stdout, be->algorithm != NULL);
      }
      rc = pt_run_section(o, be, sendbuf, recvbuf, o->dtypes[d], o->ops[k], &wrong_total, &bw_sum,
                          &bw_n);
    }
  }
  free(sendbuf);
  free(recvbuf);
  if (rc) return -1;
  if (be->rank == 0) {
    pt_print_footer(stdout, wrong_total, bw_n ? bw_sum / (double)bw_n : 0.0);
    fflush(stdout);
  }
  return wrong_total ? 1 : 0;
}
#endif /* ZCOLL_PERF_DRIVER_H */
