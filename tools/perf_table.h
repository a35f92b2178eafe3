/*
 * perf_table.h -- the names and the table shared by zcoll_perf, perf/mpi_allreduce_perf
 * and perf/gloo_allreduce_perf: the dtype and op enums with their names, the busbw
 * formula and nccl-tests' all_reduce_perf table (header, rows, footer).
 *
 * Header-only (static inline functions) and free of anything zcoll-specific, so that
 * the MPI program builds with plain mpicc and no libzcoll. The dtype and op enums
 * below list the same values in the same order as zcoll.h's public enums. The other
 * parts: perf_opts.h (the command line), perf_check.h (the check pattern and its
 * reference), perf_driver.h (the benchmark loop, through a backend table).
 */
#ifndef ZCOLL_PERF_TABLE_H
#define ZCOLL_PERF_TABLE_H

#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#error "perf_table.h needs POSIX (getopt, posix_memalign, clock_gettime): define _POSIX_C_SOURCE"
#endif

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum pt_dtype {
  PT_INT8, PT_UINT8, PT_INT32, PT_UINT32, PT_INT64, PT_UINT64,
  PT_FLOAT16, PT_BFLOAT16, PT_FLOAT32, PT_FLOAT64, PT_DTYPE_COUNT
};
enum pt_op { PT_SUM, PT_PROD, PT_MIN, PT_MAX, PT_AVG, PT_OP_COUNT };

/* ---- names and sizes ------------------------------------------------------------- */

static const char *const pt_dtype_names[PT_DTYPE_COUNT] = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "bfloat16", "float", "double"};
static const char *const pt_op_names[PT_OP_COUNT] = {"sum", "prod", "min", "max", "avg"};
static const size_t pt_dtype_sizes[PT_DTYPE_COUNT] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};

static inline size_t pt_dtype_size(enum pt_dtype t) { return pt_dtype_sizes[t]; }

static inline bool pt_is_float(enum pt_dtype t) { return t >= PT_FLOAT16; }

static inline bool pt_is_unsigned(enum pt_dtype t)
{
  return t == PT_UINT8 || t == PT_UINT32 || t == PT_UINT64;
}


/* ---- the table ------------------------------------------------------------------- */

static inline double pt_busbw(double algbw, int nranks)
{
  return nranks > 0 ? algbw * 2.0 * (nranks - 1) / nranks : 0.0;
}

/* bytes per microsecond / 1e3 = GB/s (1e9 B/s). */
static inline double pt_algbw(size_t bytes, double time_us)
{
  return time_us > 0.0 ? (double)bytes / time_us / 1.0e3 : 0.0;
}

static inline void pt_print_header(FILE *f, bool algo_column)
{
  fprintf(f, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place\n",
          "", "", "", "", "");
  fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s%s\n", "size", "count",
          "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
          "#wrong", algo_column ? "  algorithm" : "");
  fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s\n", "(B)",
          "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)");
}

static inline void pt_print_row_start(FILE *f, size_t bytes, size_t count, enum pt_dtype t,
                                      enum pt_op op)
{
  fprintf(f, "%12zu  %12zu  %8s  %6s  %6i", bytes, count, pt_dtype_names[t], pt_op_names[op], -1);
}

static inline void pt_print_cell(FILE *f, double time_us, size_t bytes, int nranks, bool checked,
                                 uint64_t wrong)
{
  char tbuf[32];
  snprintf(tbuf, sizeof tbuf, time_us >= 10000.0 ? "%7.0f" : time_us >= 100.0 ? "%7.1f" : "%7.2f",
           time_us);
  double algbw = pt_algbw(bytes, time_us);
  fprintf(f, "  %7s  %6.2f  %6.2f", tbuf, algbw, pt_busbw(algbw, nranks));
  if (checked)
    fprintf(f, "  %5" PRIu64, wrong);
  else
    fprintf(f, "  %5s", "N/A");
}

static inline void pt_print_footer(FILE *f, uint64_t wrong, double avg_busbw)
{
  fprintf(f, "# %-20s : %" PRIu64 " %s\n", "Out of bounds values", wrong, wrong ? "FAILED" : "OK");
  fprintf(f, "# %-20s : %g\n#\n", "Avg bus bandwidth", avg_busbw);
}
#endif /* ZCOLL_PERF_TABLE_H */
