/*
 * perf_measure.c -- the clocks, the sweep of sizes and -a's combination (see
 * perf_measure.h).
 */
#include "perf_measure.h"

#include <sys/resource.h>
#include <time.h>

double pt_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* User + system time of the whole process (every thread: a progress thread counts). */
static double pt_cpu_us(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0.0; /* cannot fail with RUSAGE_SELF */
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

struct pt_clock pt_clock_start(void) {
  struct pt_clock c;
  c.cpu0 = pt_cpu_us();
  c.t0 = pt_now_us();
  return c;
}

void pt_clock_stop(const struct pt_clock *c, double n, double *time_us, double *cpu_us) {
  double t1 = pt_now_us(), cpu1 = pt_cpu_us();
  *time_us = (t1 - c->t0) / n;
  *cpu_us = (cpu1 - c->cpu0) / n;
}

size_t pt_count_for(size_t bytes, size_t esize) {
  return bytes == 0 ? 0 : (bytes / esize ? bytes / esize : 1);
}

bool pt_next_size(const struct pt_opts *o, size_t *s) {
  if (o->stepbytes) {
    if (*s > o->maxbytes - o->stepbytes) return false;
    *s += o->stepbytes;
  } else if (*s == 0) {
    *s = 1;
  } else {
    if (*s > o->maxbytes / (size_t)o->stepfactor) return false;
    *s *= (size_t)o->stepfactor;
  }
  return *s <= o->maxbytes;
}

int pt_combine(const struct pt_reducer *r, long average, double *v, size_t n) {
  switch (average) {
  case PT_AVG_RANK0:
    if (r->rank != 0)
      for (size_t i = 0; i < n; i++) v[i] = 0.0;
    return r->sum_double(r->ctx, v, n);
  case PT_AVG_MEAN:
    if (r->sum_double(r->ctx, v, n)) return -1;
    for (size_t i = 0; i < n; i++) v[i] /= (double)r->nranks;
    return 0;
  case PT_AVG_MIN: /* min(x) = -max(-x): no third reduction needed from the backends */
    for (size_t i = 0; i < n; i++) v[i] = -v[i];
    if (r->max_double(r->ctx, v, n)) return -1;
    for (size_t i = 0; i < n; i++) v[i] = -v[i];
    return 0;
  default: return r->max_double(r->ctx, v, n);
  }
}
