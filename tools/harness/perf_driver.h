/*
 * perf_driver.h -- the benchmark driver shared by zcoll_perf and perf/mpi_allreduce_perf:
 * pt_run times, checks and prints every row of the table through a library's ops table
 * (perf_backend.h); perf_driver.c says how. perf/gloo_perf_driver.c, whose library only
 * reduces in place and only blocks, runs a loop of its own with the same pieces: the
 * totals, the section headers and the buffer alignment below.
 */
#ifndef ZCOLL_PERF_DRIVER_H
#define ZCOLL_PERF_DRIVER_H

#include "perf_backend.h"

#define PT_ALIGN 4096 /* the buffers' alignment, and the room after them for the guard */

/* What the footer sums up over every row. */
struct pt_totals {
  uint64_t wrong;
  double sum; /* of busbw, or of the overlap with --overlap */
  long n;
  FILE *csv;   /* -F, on rank 0: the rows go there too */
  int csv_err; /* the errno that ended writing them */
};

/* Rank 0, before the section of dtype d and op k in a cycle: a separator, the cycle's
 * number (-N), the column headers. */
void pt_print_section_start(const struct pt_opts *o, long cycle, int d, int k, bool algo_column);

/* Runs the whole benchmark and prints the table on rank 0 (the caller prints the banner
 * first). Returns 0, 1 if any element was wrong, -2 if rank 0 cannot create -F's file
 * (printed; nothing ran, every rank returns it: exit 2), or -1 on an error (printed;
 * requests may be left in flight: the caller aborts the job). */
int pt_run(const struct pt_opts *o, const struct pt_backend *be);

#endif /* ZCOLL_PERF_DRIVER_H */
