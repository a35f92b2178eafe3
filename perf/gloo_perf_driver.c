/*
 * gloo_perf_driver.c -- the benchmark loop of perf/gloo_allreduce_perf (see
 * gloo_perf_driver.h): tools/perf_*.h's options, pattern, check and table, around a
 * library that only reduces in place.
 *
 * Gloo's allreduce algorithms reduce the vectors they were built on, in place. So for
 * every size the driver builds the algorithm once on the buffer (outside the timing),
 * runs w warmups, a barrier, then n timed back-to-back runs on that same buffer (the mean
 * per iteration; the table shows the slowest rank, as perf_driver.h's pt_time_one does),
 * then refills the buffer with the check pattern, poisons the guard after it and runs
 * once more to count wrong elements against perf_check.h's reference. That one
 * measurement goes in the out-of-place columns (no copy is added: this is what a Gloo
 * user runs); the in-place columns say N/A. AVG is SUM followed by a division by the
 * number of ranks on every rank, inside the timed loop, with the reference's arithmetic
 * (as mpi_allreduce_perf does).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_driver.h"
#include "gloo_perf_driver.h"

/* gloo_allreduce_perf.cc repeats these values (it cannot include perf_table.h) */
_Static_assert(PT_INT8 == 0 && PT_FLOAT16 == 6 && PT_BFLOAT16 == 7 && PT_FLOAT32 == 8 &&
                   PT_FLOAT64 == 9 && PT_SUM == 0 && PT_PROD == 1 && PT_MIN == 2 && PT_MAX == 3 &&
                   PT_AVG == 4,
               "perf_table.h's enums moved: update gloo_allreduce_perf.cc");

struct gp_run {
  const struct gp_backend *be;
  int rank, nranks;
  void *buf;
  size_t count;
  enum pt_dtype t;
  enum pt_op op;
};

static int one(const struct gp_run *r)
{
  if (r->be->run(r->be->ctx)) return -1;
  if (r->op == PT_AVG) pt_divide(r->buf, r->count, r->t, r->nranks);
  return 0;
}

/* ---- one table section: every size for one dtype and op ---------------------------- */

static int section(const struct pt_opts *o, const struct gp_backend *be, int rank, int nranks,
                   unsigned char *buf, enum pt_dtype t, enum pt_op op, uint64_t *wrong_total,
                   double *bw_sum, long *bw_n)
{
  struct pt_pattern pat;
  if (pt_pattern_init(&pat, t, op, rank, nranks, o->check != 0)) {
    fprintf(stderr, "%s: rank %d: out of memory for the check pattern\n", be->prog, rank);
    return -1;
  }
  const size_t es = pat.esize, per = pat.period;
  const enum pt_op lib_op = op == PT_AVG ? PT_SUM : op;
  int rc = 0;
  size_t prev = SIZE_MAX;
  for (size_t s = o->minbytes;;) {
    size_t count = pt_count_for(s, es);
    if (count != prev) {
      prev = count;
      struct gp_run r = {be, rank, nranks, buf, count, t, op};
      double tm = 0.0;
      uint64_t wrong = 0;
      pt_fill(buf, pat.input, es, per, count);
      if (be->prepare(be->ctx, buf, count, (int)t, (int)lib_op)) goto fail;
      for (long k = 0; k < o->warmup; k++)
        if (one(&r)) goto fail;
      if (be->barrier(be->ctx)) goto fail;
      double t0 = pt_now_us();
      for (long k = 0; k < o->iters; k++)
        if (one(&r)) goto fail;
      tm = (pt_now_us() - t0) / (double)o->iters;
      if (o->check) {
        pt_fill(buf, pat.input, es, per, count);
        memset(buf + count * es, PT_POISON, PT_GUARD);
        if (one(&r)) goto fail;
        wrong = pt_count_wrong(buf, pat.ref, es, per, count) + pt_guard_wrong(buf, es, count);
      }
      if (be->max_double(be->ctx, &tm, 1)) goto fail;
      if (o->check && be->sum_u64(be->ctx, &wrong, 1)) goto fail;
      if (be->release(be->ctx)) goto fail;
      *wrong_total += wrong;
      *bw_sum += pt_busbw(pt_algbw(count * es, tm), nranks);
      *bw_n += 1;
      if (rank == 0) {
        pt_print_row_start(stdout, count * es, count, t, op);
        pt_print_cell(stdout, tm, count * es, nranks, o->check, wrong);
        printf("  %7s  %6s  %6s  %5s", "N/A", "N/A", "N/A", "N/A");
        const char *algo = be->algorithm(be->ctx);
        printf("  %s\n", algo ? algo : "-");
        fflush(stdout);
      }
    }
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
fail: /* the caller exits without tearing Gloo down */
  rc = -1;
out:
  pt_pattern_free(&pat);
  return rc;
}

int gp_main(int argc, char **argv, const struct gp_backend *be, const char *extra_usage)
{
  struct pt_opts o;
  int rc = pt_parse_args(argc, argv, be->prog, false, &o);
  if (rc == 1) {
    if (extra_usage) fputs(extra_usage, stdout);
    return 0;
  }
  if (rc != 0) return 2;

  /* drop what Gloo lacks: an error if named, a note with "all" */
  int n = 0, dropped_t = 0, dropped_o = 0;
  char notes[512] = "";
  for (int i = 0; i < o.ndtypes; i++) {
    if (be->has_dtype(be->ctx, (int)o.dtypes[i])) {
      o.dtypes[n++] = o.dtypes[i];
      continue;
    }
    if (!o.all_dtypes) {
      fprintf(stderr, "%s: -d %s: Gloo has no such datatype\n", be->prog, pt_dtype_names[o.dtypes[i]]);
      return 2;
    }
    size_t l = strlen(notes);
    snprintf(notes + l, sizeof notes - l, "%s%s", dropped_t++ ? ", " : "# note: skipped (Gloo has no such datatype): ",
             pt_dtype_names[o.dtypes[i]]);
  }
  o.ndtypes = n;
  if (dropped_t) strncat(notes, "\n", sizeof notes - strlen(notes) - 1);
  n = 0;
  for (int i = 0; i < o.nops; i++) {
    enum pt_op lib_op = o.ops[i] == PT_AVG ? PT_SUM : o.ops[i];
    if (be->has_op(be->ctx, (int)lib_op)) {
      o.ops[n++] = o.ops[i];
      continue;
    }
    if (!o.all_ops) {
      fprintf(stderr, "%s: -o %s: Gloo has no such reduction\n", be->prog, pt_op_names[o.ops[i]]);
      return 2;
    }
    dropped_o++;
  }
  o.nops = n;
  if (o.ndtypes == 0 || o.nops == 0) {
    fprintf(stderr, "%s: nothing left to run that Gloo supports\n", be->prog);
    return 2;
  }

  int rank = -1, nranks = 0;
  if (be->connect(be->ctx, &rank, &nranks)) return 1;
  if (rank == 0) {
    printf("# %s: %s, ranks %d\n", be->prog, be->describe(be->ctx), nranks);
    printf("# note: Gloo reduces in place: the out-of-place columns time the in-place run on the\n"
           "#       input buffer (no copy added); the in-place columns are N/A\n");
    if (dropped_t) fputs(notes, stdout);
    if (dropped_o) printf("# note: %d op(s) skipped: Gloo has no such reduction\n", dropped_o);
    if (o.all_ops || o.ops[0] == PT_AVG)
      printf("# note: avg is Gloo's sum, then a division by the number of ranks on every rank\n");
    pt_print_params(stdout, &o);
    fflush(stdout);
  }

  size_t bytes = (o.maxbytes > 8 ? o.maxbytes : 8) + PT_ALIGN;
  void *buf = NULL;
  int err = posix_memalign(&buf, PT_ALIGN, bytes);
  if (err != 0) {
    fprintf(stderr, "%s: rank %d: cannot allocate %zu bytes: %s\n", be->prog, rank, bytes, strerror(err));
    return 1;
  }
  uint64_t wrong_total = 0;
  double bw_sum = 0.0;
  long bw_n = 0;
  rc = 0;
  for (int d = 0; d < o.ndtypes && rc == 0; d++) {
    for (int k = 0; k < o.nops && rc == 0; k++) {
      if (rank == 0) {
        if (d + k > 0) printf("#\n");
        pt_print_header(stdout, true);
      }
      rc = section(&o, be, rank, nranks, buf, o.dtypes[d], o.ops[k], &wrong_total, &bw_sum, &bw_n);
    }
  }
  free(buf);
  if (rc) return 1;
  if (rank == 0) {
    pt_print_footer(stdout, wrong_total, bw_n ? bw_sum / (double)bw_n : 0.0);
    fflush(stdout);
  }
  return wrong_total ? 1 : 0;
}
