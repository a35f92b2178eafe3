/*
 * perf_overlap.c -- --overlap: how much of a non-blocking allreduce proceeds while the
 * caller computes, measured as OSU's osu_iallreduce does. Per size, each the mean of
 * -n iterations:
 *   comm     post + wait, nothing in between (after -w warmups);
 *   compute  a loop of arithmetic on a private array, calibrated to last about comm,
 *            alone; it never calls the library, so only a progress engine of the
 *            library's own (a thread) can move the collective meanwhile. With
 *            --overlap=idle a sleep of that length instead: the core is free, as for an
 *            application that waits for an accelerator or for I/O, so the figure shows
 *            whether the library moves data without calls, apart from whether a core is
 *            there to spare for it;
 *   overall  post, compute, wait;
 *   overlap  100 (1 - (overall - compute) / comm), clamped to 0..100: 100 when the
 *            collective hid entirely behind the computation, 0 when it all happened in
 *            the wait.
 * The times are combined over the ranks as -a says before the overlap is computed, and
 * every rank computes for the same combined comm time.
 */
#include "perf_overlap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PT_COMPUTE_N 1024 /* doubles: 8 KiB stays in L1, so a pass costs the same at any size */

int pt_compute_init(struct pt_compute *c) {
  c->x = malloc(PT_COMPUTE_N * sizeof *c->x);
  if (c->x == NULL) return -1;
  for (size_t i = 0; i < PT_COMPUTE_N; i++) c->x[i] = (double)i;
  c->unit_us = 0.0;
  c->sink = 0.0;
  return 0;
}

void pt_compute_free(struct pt_compute *c) {
  free(c->x);
  c->x = NULL;
}

/* x = 0.999 x + 0.25 tends to 250: no overflow, no subnormal slowing it down. */
static void pt_compute_run(struct pt_compute *c, long units) {
  if (c->idle) {
    struct timespec ts = {units / 1000000, (units % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    return;
  }
  double *x = c->x, s = 0.0;
  for (long u = 0; u < units; u++)
    for (size_t i = 0; i < PT_COMPUTE_N; i++) x[i] = x[i] * 0.999 + 0.25;
  for (size_t i = 0; i < PT_COMPUTE_N; i++) s += x[i];
  c->sink = s;
}

/* The mean time of reps runs of units. */
static double pt_compute_time(struct pt_compute *c, long units, long reps) {
  double t0 = pt_now_us();
  for (long r = 0; r < reps; r++) pt_compute_run(c, units);
  return (pt_now_us() - t0) / (double)reps;
}

/* A positive count, rounded (no libm: the MPI program links without -lm). */
static long pt_units(double v) { return v < 1.0 ? 1 : v > 1e12 ? (long)1e12 : (long)(v + 0.5); }

/* The units that last about target_us, here and now: an estimate from the last measured
 * cost (the first from a run of at least 1 ms), corrected by one timed run at that
 * length (repeated up to 1 ms for short ones), which catches caches, the clock frequency
 * and a busy machine at this size. */
static long pt_compute_calibrate(struct pt_compute *c, double target_us) {
  if (c->idle) return pt_units(target_us);
  if (c->unit_us <= 0.0) {
    long n = 1;
    double el;
    while ((el = pt_compute_time(c, n, 1)) < 1000.0 && n < (1L << 30)) n *= 2;
    c->unit_us = el > 0.0 ? el / (double)n : 1e-3;
  }
  long units = pt_units(target_us / c->unit_us);
  long reps = target_us >= 1000.0 ? 1 : pt_units(1000.0 / (target_us > 1.0 ? target_us : 1.0));
  double el = pt_compute_time(c, units, reps);
  if (el > 0.0) c->unit_us = el / (double)units;
  return pt_units(target_us / c->unit_us);
}

/* Post, compute, wait. */
static int pt_overlapped(const struct pt_backend *be, struct pt_compute *cp, long units,
                         const struct pt_call *c) {
  struct pt_window w = {{NULL}, 0, 0};
  if (pt_post(be, &w, c)) return -1;
  pt_compute_run(cp, units);
  return pt_drain(be, &w);
}

int pt_overlap_size(const struct pt_opts *o, const struct pt_backend *be,
                    const struct pt_pattern *pat, struct pt_compute *cp, const struct pt_call *c,
                    struct pt_overlap_row *row) {
  const struct pt_reducer red = pt_reducer_of(be);
  const double n = (double)o->iters;
  double cpu_unused;
  memset(row, 0, sizeof *row);
  pt_fill(c->sendbuf, pat->input, pat->esize, pat->period, c->count);
  for (long k = 0; k < o->warmup; k++)
    if (pt_one(be, true, c)) return -1;
  if (be->barrier(be->ctx)) return -1;
  struct pt_clock ck = pt_clock_start();
  for (long k = 0; k < o->iters; k++)
    if (pt_one(be, true, c)) return -1;
  pt_clock_stop(&ck, n, &row->comm_us, &cpu_unused);
  if (pt_combine(&red, o->average, &row->comm_us, 1)) return -1;

  long units = pt_compute_calibrate(cp, row->comm_us);
  ck = pt_clock_start();
  for (long k = 0; k < o->iters; k++) pt_compute_run(cp, units);
  pt_clock_stop(&ck, n, &row->compute_us, &cpu_unused);

  if (be->barrier(be->ctx)) return -1;
  ck = pt_clock_start();
  for (long k = 0; k < o->iters; k++)
    if (pt_overlapped(be, cp, units, c)) return -1;
  pt_clock_stop(&ck, n, &row->overall_us, &row->cpu_us);

  if (o->check) {
    pt_check_arm(pat, c->sendbuf, c->recvbuf, c->count);
    if (pt_overlapped(be, cp, units, c)) return -1;
    row->wrong = pt_check_count(pat, c->sendbuf, c->recvbuf, c->count);
    if (be->sum_u64(be->ctx, &row->wrong, 1)) return -1;
  }
  double v[3] = {row->compute_us, row->overall_us, row->cpu_us};
  if (pt_combine(&red, o->average, v, 3)) return -1;
  row->compute_us = v[0];
  row->overall_us = v[1];
  row->cpu_us = v[2];
  double ov = row->comm_us > 0.0
                  ? 100.0 * (1.0 - (row->overall_us - row->compute_us) / row->comm_us)
                  : 0.0;
  row->overlap = ov < 0.0 ? 0.0 : ov > 100.0 ? 100.0 : ov;
  return 0;
}
