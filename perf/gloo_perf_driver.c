/*
 * gloo_perf_driver.c -- the benchmark loop of perf/gloo_allreduce_perf (see
 * gloo_perf_driver.h): the harness's (tools/harness/) options, pattern, check and table,
 * around a library that only reduces in place and only blocks.
 *
 * Gloo's allreduce algorithms reduce the vectors they were built on, in place. So for
 * every size the driver builds the algorithm once on the buffer (outside the timing),
 * runs w warmup iterations, a barrier, then n timed iterations of -m back-to-back runs
 * on that same buffer (the mean per run, and with -C the process's CPU time per run;
 * the ranks' figures combined as -a says, as perf_driver.c does), then refills the
 * buffer with the check pattern, poisons the guard after it and runs once more to count
 * wrong elements against perf_check.c's reference. That one measurement goes in the
 * out-of-place columns (no copy is added: this is what a Gloo user runs); the in-place
 * columns say N/A. AVG is SUM followed by a division by the number of ranks on every
 * rank, inside the timed loop, with the reference's arithmetic (as mpi_allreduce_perf
 * does). Gloo has no non-blocking allreduce: -z is 1, and -z 0 and --overlap are
 * refused, as is -R (Gloo registers its buffers itself); -T is alarm().
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf_check.h"
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

static int one(const struct gp_run *r) {
  if (r->be->run(r->be->ctx)) return -1;
  if (r->op == PT_AVG) pt_divide(r->buf, r->count, r->t, r->nranks);
  return 0;
}

/* n iterations of -m runs. */
static int iterations(const struct pt_opts *o, const struct gp_run *r, long n) {
  for (long k = 0; k < n * o->agg; k++)
    if (one(r)) return -1;
  return 0;
}

/* ---- one row: one size of one dtype and op ------------------------------------------ */

static int row(const struct pt_opts *o, const struct gp_run *r, const struct pt_pattern *pat,
               struct pt_totals *tot) {
  const struct gp_backend *be = r->be;
  const struct pt_reducer red = {be->ctx, r->rank, r->nranks, be->max_double, be->sum_double};
  const enum pt_op lib_op = r->op == PT_AVG ? PT_SUM : r->op;
  struct pt_cell cell = {0.0, 0.0, 0, 0};
  pt_fill(r->buf, pat->input, pat->esize, pat->period, r->count);
  if (be->prepare(be->ctx, r->buf, r->count, (int)r->t, (int)lib_op)) return -1;
  if (iterations(o, r, o->warmup) || be->barrier(be->ctx)) return -1;
  struct pt_clock ck = pt_clock_start();
  if (iterations(o, r, o->iters)) return -1;
  pt_clock_stop(&ck, (double)o->iters * (double)o->agg, &cell.time_us, &cell.cpu_us);
  if (o->check) {
    pt_check_arm(pat, NULL, r->buf, r->count);
    if (one(r)) return -1;
    cell.wrong = pt_check_count(pat, NULL, r->buf, r->count);
  }
  double v[2] = {cell.time_us, cell.cpu_us};
  if (pt_combine(&red, o->average, v, o->cputime ? 2 : 1)) return -1;
  if (o->check && be->sum_u64(be->ctx, &cell.wrong, 1)) return -1;
  if (be->release(be->ctx)) return -1;
  cell.time_us = v[0];
  cell.cpu_us = v[1];
  const size_t bytes = r->count * pat->esize;
  tot->wrong += cell.wrong;
  tot->sum += pt_algbw(bytes, cell.time_us) * pt_bus_factor(PT_COLL_ALLREDUCE, r->nranks);
  tot->n++;
  if (r->rank == 0) {
    pt_print_row_start(stdout, bytes, r->count, r->t, pt_op_names[r->op], -1);
    pt_print_cell(stdout, &cell, bytes, pt_bus_factor(PT_COLL_ALLREDUCE, r->nranks), o->cputime,
                  o->check);
    pt_print_na_cell(stdout, o->cputime);
    const char *algo = be->algorithm(be->ctx);
    printf("  %s\n", algo ? algo : "-");
    fflush(stdout);
  }
  return 0;
}

/* Every size for one dtype and op. On an error the caller exits without tearing Gloo
 * down. */
static int section(const struct pt_opts *o, const struct gp_backend *be, int rank, int nranks,
                   unsigned char *buf, enum pt_dtype t, enum pt_op op, struct pt_totals *tot) {
  struct pt_pattern pat;
  if (pt_pattern_init(&pat, t, op, rank, nranks, o->check != 0)) {
    fprintf(stderr, "%s: rank %d: out of memory for the check pattern\n", be->prog, rank);
    return -1;
  }
  int rc = 0;
  size_t prev = SIZE_MAX;
  for (size_t s = o->minbytes; rc == 0;) {
    size_t count = pt_count_for(s, pat.esize);
    if (count != prev) {
      prev = count;
      struct gp_run r = {be, rank, nranks, buf, count, t, op};
      rc = row(o, &r, &pat, tot);
    }
    if (!pt_next_size(o, &s)) break;
  }
  pt_pattern_free(&pat);
  return rc;
}

/* Drops what Gloo lacks: an error if named (2), a note with "all". */
static int supported(struct pt_opts *o, const struct gp_backend *be, char *notes, size_t len,
                     int *dropped_t, int *dropped_o) {
  int n = 0;
  for (int i = 0; i < o->ndtypes; i++) {
    if (be->has_dtype(be->ctx, (int)o->dtypes[i])) {
      o->dtypes[n++] = o->dtypes[i];
      continue;
    }
    if (!o->all_dtypes) {
      fprintf(stderr, "%s: -d %s: Gloo has no such datatype\n", be->prog,
              pt_dtype_names[o->dtypes[i]]);
      return 2;
    }
    size_t l = strlen(notes);
    snprintf(notes + l, len - l, "%s%s",
             (*dropped_t)++ ? ", " : "# note: skipped (Gloo has no such datatype): ",
             pt_dtype_names[o->dtypes[i]]);
  }
  o->ndtypes = n;
  if (*dropped_t) strncat(notes, "\n", len - strlen(notes) - 1);
  n = 0;
  for (int i = 0; i < o->nops; i++) {
    enum pt_op lib_op = o->ops[i] == PT_AVG ? PT_SUM : o->ops[i];
    if (be->has_op(be->ctx, (int)lib_op)) {
      o->ops[n++] = o->ops[i];
      continue;
    }
    if (!o->all_ops) {
      fprintf(stderr, "%s: -o %s: Gloo has no such reduction\n", be->prog, pt_op_names[o->ops[i]]);
      return 2;
    }
    (*dropped_o)++;
  }
  o->nops = n;
  if (o->ndtypes == 0 || o->nops == 0) {
    fprintf(stderr, "%s: nothing left to run that Gloo supports\n", be->prog);
    return 2;
  }
  return 0;
}

int gp_main(int argc, char **argv, const struct gp_backend *be, const char *algo_doc,
            const char *extra_usage) {
  const struct pt_prog prog = {be->prog, PT_HAS_ALGO, algo_doc};
  struct pt_opts o;
  int rc = pt_parse_args(argc, argv, &prog, &o);
  if (rc == 1) {
    if (extra_usage) fputs(extra_usage, stdout);
    return 0;
  }
  if (rc != 0) return 2;
  if (o.csv) { /* the rows are printed by this driver's own loop, which has no CSV */
    fprintf(stderr, "%s: -F %s: the CSV table is zcoll_perf's and mpi_allreduce_perf's only\n",
            be->prog, o.csv);
    return 2;
  }
  if (o.algo && be->set_algo(be->ctx, o.algo)) return 2;
  int dropped_t = 0, dropped_o = 0;
  char notes[512] = "";
  if ((rc = supported(&o, be, notes, sizeof notes, &dropped_t, &dropped_o)) != 0) return rc;

  if (o.timeout > 0) alarm((unsigned)o.timeout); /* a hang ends the run: SIGALRM */
  int rank = -1, nranks = 0;
  if (be->connect(be->ctx, &rank, &nranks)) return 1;
  if (rank == 0) {
    printf("# %s: %s, ranks %d\n", be->prog, be->describe(be->ctx), nranks);
    pt_print_modes(stdout, be->prog, &o);
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
    fprintf(stderr, "%s: rank %d: cannot allocate %zu bytes: %s\n", be->prog, rank, bytes,
            strerror(err));
    return 1;
  }
  struct pt_totals tot = {0, 0.0, 0, NULL, 0};
  rc = 0;
  for (long cycle = 1; rc == 0 && (o.cycles == 0 || cycle <= o.cycles); cycle++) {
    for (int d = 0; d < o.ndtypes && rc == 0; d++) {
      for (int k = 0; k < o.nops && rc == 0; k++) {
        if (rank == 0) pt_print_section_start(&o, cycle, d, k, true);
        rc = section(&o, be, rank, nranks, buf, o.dtypes[d], o.ops[k], &tot);
      }
    }
  }
  free(buf);
  if (rc) return 1;
  if (rank == 0) {
    pt_print_footer(stdout, tot.wrong, "Avg bus bandwidth", tot.n ? tot.sum / (double)tot.n : 0.0);
    fflush(stdout);
  }
  return tot.wrong ? 1 : 0;
}
