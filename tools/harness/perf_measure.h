/*
 * perf_measure.h -- what every benchmark loop measures with: the clocks (wall and the
 * process's CPU time), the sweep of sizes, and -a's combination of one measurement
 * over the ranks. Shared by perf_driver.c, perf_overlap.c and perf/gloo_perf_driver.c,
 * which reach their libraries through different backend tables: combining takes the
 * two reductions it needs as a struct of its own.
 */
#ifndef ZCOLL_PERF_MEASURE_H
#define ZCOLL_PERF_MEASURE_H

#include "perf_opts.h"

/* The monotonic clock, in microseconds. */
double pt_now_us(void);

/* A wall-clock and CPU-time stopwatch over a timed loop. */
struct pt_clock {
  double t0, cpu0;
};

struct pt_clock pt_clock_start(void);

/* The mean wall time and CPU time per unit since start, over n units. */
void pt_clock_stop(const struct pt_clock *c, double n, double *time_us, double *cpu_us);

/* The element count for a size in bytes: rounded down, at least one unless size is 0. */
size_t pt_count_for(size_t bytes, size_t esize);

/* The next size of the sweep after *s, without overflowing; false after the last. */
bool pt_next_size(const struct pt_opts *o, size_t *s);

/* The reductions over all ranks that -a needs, in place; 0 or -1 (message printed). */
struct pt_reducer {
  void *ctx;
  int rank, nranks;
  int (*max_double)(void *ctx, double *v, size_t n);
  int (*sum_double)(void *ctx, double *v, size_t n);
};

/* v[0..n) of every rank becomes the same -a combination on every rank (one collective). */
int pt_combine(const struct pt_reducer *r, long average, double *v, size_t n);

#endif /* ZCOLL_PERF_MEASURE_H */
