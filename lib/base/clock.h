/*
 * clock.h -- the library's one monotonic clock, in the units its callers count in.
 *
 * Everything that times or waits reads CLOCK_MONOTONIC through here (a deadline must not
 * jump with the wall clock). The flight recorder alone reads the coarse clock: see
 * zcoll__now_us_coarse.
 */
#ifndef ZCOLL_CLOCK_H
#define ZCOLL_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Monotonic nanoseconds. */
static inline int64_t zcoll__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Monotonic milliseconds. */
static inline int64_t zcoll__now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A deadline `seconds` from now in zcoll__now_ms() terms; INT64_MAX (none) for 0 or less. */
static inline int64_t zcoll__deadline(double seconds) {
  if (seconds <= 0) return INT64_MAX;
  return zcoll__now_ms() + (int64_t)(seconds * 1000.0);
}

/* Microseconds of the coarse clock (a tick of 1-4 ms): it reads a variable the kernel
 * keeps, a third of what the precise one costs (15 ns against 60 in a VM). For records
 * of events that last seconds (a hang), read on every collective. */
static inline int64_t zcoll__now_us_coarse(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

#endif
