/*
 * trace.h -- the per-rank pipeline timeline (ZCOLL_TRACE=prefix).
 *
 * Each rank writes <prefix>.<rank>.json in Chrome's trace-event format (viewable in
 * Perfetto or chrome://tracing): one complete event per piece and stage -- copy-in to
 * staging, transfer (put issued until its source is released), reduction, copy-out --
 * on one lane per stage, so that their overlap (or its absence) is visible.
 * perf/trace_plot.py draws the same as a PNG.
 */
#ifndef ZCOLL_TRACE_H
#define ZCOLL_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "clock.h"
#include "zcoll.h"

enum {
  ZCOLL_STAGE_COPY_IN,
  ZCOLL_STAGE_TRANSFER,
  ZCOLL_STAGE_REDUCE,
  ZCOLL_STAGE_COPY_OUT,
  ZCOLL_STAGE_COLLECTIVE,
  ZCOLL_NSTAGES
};

struct zcoll__trace {
  FILE *f;
  int rank;
  int64_t t0_ns;
  unsigned long events;
};

zcoll_status_t zcoll__trace_open(struct zcoll__trace *t, const char *prefix, int rank);
void zcoll__trace_close(struct zcoll__trace *t);
/* One event on `stage`'s lane from start to end (monotonic ns). */
void zcoll__trace_event(struct zcoll__trace *t, int stage, int64_t start_ns, int64_t end_ns,
                        int peer, size_t bytes);

#endif
