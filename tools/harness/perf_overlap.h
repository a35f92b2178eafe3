/*
 * perf_overlap.h -- --overlap: how much of a non-blocking allreduce proceeds while the
 * caller computes, measured as OSU's osu_iallreduce does (perf_overlap.c says how): per
 * size, the comm, compute and overall times and the overlap in percent.
 */
#ifndef ZCOLL_PERF_OVERLAP_H
#define ZCOLL_PERF_OVERLAP_H

#include "perf_backend.h"
#include "perf_check.h"

/* The computation: passes ("units") over a private array. */
struct pt_compute {
  double *x;
  bool idle;            /* a unit is a microsecond of sleep, not a pass */
  double unit_us;       /* the last measured cost of one unit; 0: not measured yet */
  volatile double sink; /* takes each run's result, so that no compiler drops the loop */
};

/* Allocates c's array (c->idle is the caller's): 0, or -1 out of memory. */
int pt_compute_init(struct pt_compute *c);

void pt_compute_free(struct pt_compute *c);

/* One size, out of place (c->sendbuf and c->recvbuf hold count elements and a guard):
 * the three phases, then (o->check) one more overlapped run on fresh buffers checked
 * element by element against pat. The same row on every rank. */
int pt_overlap_size(const struct pt_opts *o, const struct pt_backend *be,
                    const struct pt_pattern *pat, struct pt_compute *cp, const struct pt_call *c,
                    struct pt_overlap_row *row);

#endif /* ZCOLL_PERF_OVERLAP_H */
