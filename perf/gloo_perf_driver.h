/*
 * gloo_perf_driver.h -- the seam between perf/gloo_allreduce_perf.cc (C++, the Gloo
 * calls) and perf/gloo_perf_driver.c (C, the benchmark loop). The driver is written in C
 * so that it can use the harness's headers (tools/harness/) as they are (C, not C++): the
 * same option parsing, the same check pattern and reference, the same table and the same
 * busbw formula as zcoll_perf and mpi_allreduce_perf.
 *
 * dtype and op values are perf_table.h's enum pt_dtype and enum pt_op (PT_INT8 = 0 ..
 * PT_FLOAT64 = 9; PT_SUM = 0, PT_PROD, PT_MIN, PT_MAX, PT_AVG = 4). Every function
 * returns 0, or -1 after printing its own error message to stderr.
 */
#ifndef GLOO_PERF_DRIVER_H
#define GLOO_PERF_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct gp_backend {
  const char *prog;
  void *ctx;
  /* 1 if the library reduces this dtype / this op (AVG never reaches the backend: the
   * driver asks for SUM and divides, as mpi_allreduce_perf does) */
  int (*has_dtype)(void *ctx, int dtype);
  int (*has_op)(void *ctx, int op);
  /* join the job: rendezvous and connections; sets *rank and *nranks */
  int (*connect)(void *ctx, int *rank, int *nranks);
  /* one line for the banner, e.g. "Gloo 0.5.0, AllreduceRingChunked, tcp 127.0.0.1" */
  const char *(*describe)(void *ctx);
  /* the algorithm's name for the last table column */
  const char *(*algorithm)(void *ctx);
  /* build the allreduce of buf[0..count) (in place, as Gloo always is), outside the
   * timing: Gloo's algorithm objects are made once and run many times */
  int (*prepare)(void *ctx, void *buf, size_t count, int dtype, int op);
  int (*run)(void *ctx); /* one allreduce of the prepared buffer */
  /* wait for every rank (a barrier), then drop the prepared algorithm */
  int (*release)(void *ctx);
  int (*barrier)(void *ctx);
  int (*max_double)(void *ctx, double *v, size_t n); /* in place, over all ranks */
  int (*sum_double)(void *ctx, double *v, size_t n);
  int (*sum_u64)(void *ctx, uint64_t *v, size_t n);
  /* -A NAME, before connect: -1 after a message if Gloo has no such algorithm */
  int (*set_algo)(void *ctx, const char *name);
};

/* Parses argv (perf_opts.h's options; algo_doc is the usage's line for -A, what it takes
 * and its default, extra_usage is printed after the usage on -h), connects, runs every
 * size and prints the nccl-tests table on rank 0. Returns the exit status: 0, 1 on an
 * error or a wrong element, 2 on a bad command line. */
int gp_main(int argc, char **argv, const struct gp_backend *be, const char *algo_doc,
            const char *extra_usage);

#ifdef __cplusplus
}
#endif

#endif /* GLOO_PERF_DRIVER_H */
