/*
 * perf_table.h -- the pieces shared by zcoll_perf and perf/mpi_allreduce_perf: command
 * line parsing (sizes "64K", dtype and op names), the nccl-tests style table, the busbw
 * formula, the check data pattern with its independent reference, and the benchmark
 * driver itself, which reaches the collective only through a small backend table.
 *
 * Header-only (static inline functions) and free of anything zcoll-specific, so that
 * the MPI program builds with plain mpicc and no libzcoll. The dtype and op enums
 * below list the same values in the same order as zcoll.h's public enums.
 *
 * The check pattern makes every reference value exact, for every dtype and op, for any
 * number of ranks: at most 64 ranks contribute a non-zero value to any element of a
 * sum-like op (|sum| <= 256, exact in float16 and bfloat16 and in every partial sum,
 * whatever the reduction order), a product is +-1, +-2 or +-0.5 for floating types and
 * wraps modulo 2^bits for integers, and 8-bit AVG uses small enough values that the sum
 * never wraps. The reference is computed here, element by element, without the
 * library under test.
 */
#ifndef ZCOLL_PERF_TABLE_H
#define ZCOLL_PERF_TABLE_H

#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#error "perf_table.h needs POSIX (getopt, posix_memalign, clock_gettime): define _POSIX_C_SOURCE"
#endif

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum pt_dtype {
  PT_INT8, PT_UINT8, PT_INT32, PT_UINT32, PT_INT64, PT_UINT64,
  PT_FLOAT16, PT_BFLOAT16, PT_FLOAT32, PT_FLOAT64, PT_DTYPE_COUNT
};
enum pt_op { PT_SUM, PT_PROD, PT_MIN, PT_MAX, PT_AVG, PT_OP_COUNT };

#define PT_GUARD 256      /* bytes after the vector that must stay untouched */
#define PT_POISON 0xA5    /* what the receive buffer and the guard hold before a check */
#define PT_ALIGN 4096
#define PT_MAX_CONTRIB 64 /* at most this many ranks give a non-zero sum-like value */

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

/* Returns the dtype, or -1. Accepts nccl-tests' names and zcoll's. */
static inline int pt_parse_dtype(const char *s)
{
  static const struct { const char *name; enum pt_dtype t; } alias[] = {
      {"int", PT_INT32}, {"float16", PT_FLOAT16}, {"fp16", PT_FLOAT16},
      {"bf16", PT_BFLOAT16}, {"float32", PT_FLOAT32}, {"fp32", PT_FLOAT32},
      {"float64", PT_FLOAT64}, {"fp64", PT_FLOAT64}};
  for (int i = 0; i < PT_DTYPE_COUNT; i++)
    if (strcmp(s, pt_dtype_names[i]) == 0) return i;
  for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
    if (strcmp(s, alias[i].name) == 0) return (int)alias[i].t;
  return -1;
}

static inline int pt_parse_op(const char *s)
{
  for (int i = 0; i < PT_OP_COUNT; i++)
    if (strcmp(s, pt_op_names[i]) == 0) return i;
  return -1;
}

/* "8", "64K", "1M", "64M", "1G" (binary multiples, case-insensitive, an optional
 * trailing "B"). Returns 0, or -1 on anything malformed or out of range. */
static inline int pt_parse_size(const char *s, size_t *out)
{
  if (s == NULL || *s < '0' || *s > '9') return -1; /* no sign, no blank, not empty */
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0) return -1;
  unsigned shift = 0;
  switch (*end) {
  case 'k': case 'K': shift = 10; end++; break;
  case 'm': case 'M': shift = 20; end++; break;
  case 'g': case 'G': shift = 30; end++; break;
  default: break;
  }
  if (*end == 'b' || *end == 'B') end++;
  if (*end != '\0') return -1;
  if (v > (unsigned long long)SIZE_MAX >> shift) return -1;
  *out = (size_t)(v << shift);
  return 0;
}

/* A whole decimal number in [lo, hi]. */
static inline int pt_parse_long(const char *s, long lo, long hi, long *out)
{
  if (s == NULL || *s == '\0') return -1;
  errno = 0;
  char *end;
  long v = strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

/* ---- options --------------------------------------------------------------------- */

struct pt_opts {
  size_t minbytes, maxbytes;
  size_t stepbytes;  /* > 0: add this; 0: multiply by stepfactor */
  long stepfactor;
  long iters, warmup, check;
  int ndtypes, nops;
  bool all_dtypes, all_ops;
  enum pt_dtype dtypes[PT_DTYPE_COUNT];
  enum pt_op ops[PT_OP_COUNT];
  const char *algo; /* -a, or NULL */
};

static inline void pt_usage(FILE *f, const char *prog, bool with_algo)
{
  fprintf(f,
          "usage: %s [-b minbytes] [-e maxbytes] [-f stepfactor | -i stepbytes] [-n iters]\n"
          "       %*s [-w warmup] [-c 0|1] [-d dtype] [-o op]%s [-h]\n"
          "  -b SIZE   smallest vector in bytes (default 8); sizes take K, M, G suffixes\n"
          "  -e SIZE   largest vector in bytes (default 64M)\n"
          "  -f N      multiply the size by N at each step (default 2)\n"
          "  -i SIZE   add SIZE at each step instead (default 0: use -f)\n"
          "  -n N      timed iterations per size (default 20)\n"
          "  -w N      warmup iterations per size (default 5)\n"
          "  -c 0|1    check every element against an independent reference (default 1)\n"
          "  -d TYPE   int8 uint8 int32 uint32 int64 uint64 half|float16 bfloat16\n"
          "            float|float32 double|float64, or all (default float)\n"
          "  -o OP     sum prod min max avg, or all (default sum)\n"
          "%s"
          "  -h        print this help\n"
          "Sizes are rounded down to whole elements (at least one; -b 0 gives a 0-count row).\n"
          "time is the slowest rank's mean per iteration; busbw = algbw * 2(p-1)/p.\n",
          prog, (int)strlen(prog), "", with_algo ? " [-a algorithm]" : "",
          with_algo ? "  -a NAME   force the allreduce algorithm (the ALGO configuration field)\n"
                    : "");
}

__attribute__((format(printf, 2, 3))) static inline int pt_opt_error(const char *prog,
                                                                      const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", prog);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (try -h)\n");
  va_end(ap);
  return 2;
}

/* Returns 0 to run, 1 when -h printed the usage (exit 0), 2 on a bad command line (a
 * message was printed; exit 2). */
static inline int pt_parse_args(int argc, char **argv, const char *prog, bool with_algo,
                                struct pt_opts *o)
{
  memset(o, 0, sizeof *o);
  o->minbytes = 8;
  o->maxbytes = (size_t)64 << 20;
  o->stepfactor = 2;
  o->iters = 20;
  o->warmup = 5;
  o->check = 1;
  o->ndtypes = 1;
  o->dtypes[0] = PT_FLOAT32;
  o->nops = 1;
  o->ops[0] = PT_SUM;
  const char *optstring = with_algo ? ":b:e:f:i:n:w:c:d:o:a:h" : ":b:e:f:i:n:w:c:d:o:h";
  opterr = 0;
  optind = 1;
  int c;
  while ((c = getopt(argc, argv, optstring)) != -1) {
    int v;
    switch (c) {
    case 'b':
      if (pt_parse_size(optarg, &o->minbytes)) return pt_opt_error(prog, "-b: bad size '%s'", optarg);
      break;
    case 'e':
      if (pt_parse_size(optarg, &o->maxbytes)) return pt_opt_error(prog, "-e: bad size '%s'", optarg);
      break;
    case 'i':
      if (pt_parse_size(optarg, &o->stepbytes)) return pt_opt_error(prog, "-i: bad size '%s'", optarg);
      break;
    case 'f':
      if (pt_parse_long(optarg, 0, 1L << 20, &o->stepfactor))
        return pt_opt_error(prog, "-f: bad step factor '%s'", optarg);
      break;
    case 'n':
      if (pt_parse_long(optarg, 1, INT_MAX, &o->iters))
        return pt_opt_error(prog, "-n: bad iteration count '%s' (need >= 1)", optarg);
      break;
    case 'w':
      if (pt_parse_long(optarg, 0, INT_MAX, &o->warmup))
        return pt_opt_error(prog, "-w: bad warmup count '%s'", optarg);
      break;
    case 'c':
      if (pt_parse_long(optarg, 0, 1, &o->check)) return pt_opt_error(prog, "-c: '%s' is not 0 or 1", optarg);
      break;
    case 'd':
      o->all_dtypes = strcmp(optarg, "all") == 0;
      if (o->all_dtypes) {
        o->ndtypes = PT_DTYPE_COUNT;
        for (int i = 0; i < PT_DTYPE_COUNT; i++) o->dtypes[i] = (enum pt_dtype)i;
      } else {
        if ((v = pt_parse_dtype(optarg)) < 0) return pt_opt_error(prog, "-d: unknown dtype '%s'", optarg);
        o->ndtypes = 1;
        o->dtypes[0] = (enum pt_dtype)v;
      }
      break;
    case 'o':
      o->all_ops = strcmp(optarg, "all") == 0;
      if (o->all_ops) {
        o->nops = PT_OP_COUNT;
        for (int i = 0; i < PT_OP_COUNT; i++) o->ops[i] = (enum pt_op)i;
      } else {
        if ((v = pt_parse_op(optarg)) < 0) return pt_opt_error(prog, "-o: unknown op '%s'", optarg);
        o->nops = 1;
        o->ops[0] = (enum pt_op)v;
      }
      break;
    case 'a':
      if (*optarg == '\0') return pt_opt_error(prog, "-a: empty algorithm name");
      o->algo = optarg;
      break;
    case 'h':
      pt_usage(stdout, prog, with_algo);
      return 1;
    case ':':
      return pt_opt_error(prog, "option -%c needs a value", optopt);
    default:
      if (optopt > ' ' && optopt < 127) return pt_opt_error(prog, "unknown option -%c", optopt);
      return pt_opt_error(prog, "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc) return pt_opt_error(prog, "unexpected argument '%s'", argv[optind]);
  if (o->minbytes > o->maxbytes)
    return pt_opt_error(prog, "minbytes (-b %zu) is larger than maxbytes (-e %zu)", o->minbytes, o->maxbytes);
  if (o->stepbytes == 0 && o->stepfactor < 2)
    return pt_opt_error(prog, "-f: step factor %ld must be >= 2 when -i is 0", o->stepfactor);
  return 0;
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

static inline void pt_print_params(FILE *f, const struct pt_opts *o)
{
  if (o->stepbytes)
    fprintf(f, "# minBytes %zu maxBytes %zu step: %zu(bytes)", o->minbytes, o->maxbytes, o->stepbytes);
  else
    fprintf(f, "# minBytes %zu maxBytes %zu step: %ld(factor)", o->minbytes, o->maxbytes, o->stepfactor);
  fprintf(f, " warmup iters: %ld iters: %ld validation: %ld\n#\n", o->warmup, o->iters, o->check);
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

#include "perf_check.h"

/* ---- the driver ------------------------------------------------------------------ */

/* What the driver needs from a collective library. Every function returns 0, or -1
 * after printing its own error message. */
struct pt_backend {
  const char *prog;
  int rank, nranks;
  void *ctx;
  /* sendbuf NULL: in place, the data is in recvbuf */
  int (*allreduce)(void *ctx, const void *sendbuf, void *recvbuf, size_t count, enum pt_dtype t,
                   enum pt_op op);
  int (*barrier)(void *ctx);
  int (*max_double)(void *ctx, double *v, size_t n); /* in place, over all ranks */
  int (*sum_u64)(void *ctx, uint64_t *v, size_t n);
  /* optional: the algorithm name for the last column */
  int (*algorithm)(void *ctx, size_t count, enum pt_dtype t, enum pt_op op, const char **name);
};

static inline double pt_now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* w warmups, a barrier, then the mean time of n back-to-back iterations (us). */
static inline int pt_time_one(const struct pt_opts *o, const struct pt_backend *be,
                              const void *sendbuf, void *recvbuf, size_t count, enum pt_dtype t,
                              enum pt_op op, double *mean_us)
{
  for (long k = 0; k < o->warmup; k++)
    if (be->allreduce(be->ctx, sendbuf, recvbuf, count, t, op)) return -1;
  if (be->barrier(be->ctx)) return -1;
  double t0 = pt_now_us();
  for (long k = 0; k < o->iters; k++)
    if (be->allreduce(be->ctx, sendbuf, recvbuf, count, t, op)) return -1;
  *mean_us = (pt_now_us() - t0) / (double)o->iters;
  return 0;
}

/* The element count for a size in bytes: rounded down, at least one unless size is 0. */
static inline size_t pt_count_for(size_t bytes, size_t esize)
{
  return bytes == 0 ? 0 : (bytes / esize ? bytes / esize : 1);
}

/* One table section: every size for one dtype and op. */
static inline int pt_run_section(const struct pt_opts *o, const struct pt_backend *be,
                                 unsigned char *sendbuf, unsigned char *recvbuf, enum pt_dtype t,
                                 enum pt_op op, uint64_t *wrong_total, double *bw_sum, long *bw_n)
{
  struct pt_pattern pat;
  if (pt_pattern_init(&pat, t, op, be->rank, be->nranks, o->check != 0)) {
    fprintf(stderr, "%s: rank %d: out of memory for the check pattern\n", be->prog, be->rank);
    return -1;
  }
  const size_t es = pat.esize, per = pat.period;
  int rc = 0;
  size_t prev = SIZE_MAX;
  for (size_t s = o->minbytes;;) {
    size_t count = pt_count_for(s, es);
    if (count != prev) {
      prev = count;
      double tm[2];
      uint64_t wrong[2] = {0, 0};
      /* out of place: time, then one checked run on fresh buffers */
      pt_fill(sendbuf, pat.input, es, per, count);
      if (pt_time_one(o, be, sendbuf, recvbuf, count, t, op, &tm[0])) goto fail;
      if (o->check) {
        pt_fill(sendbuf, pat.input, es, per, count);
        memset(sendbuf + count * es, PT_POISON, PT_GUARD);
        memset(recvbuf, PT_POISON, count * es + PT_GUARD);
        if (be->allreduce(be->ctx, sendbuf, recvbuf, count, t, op)) goto fail;
        wrong[0] = pt_count_wrong(recvbuf, pat.ref, es, per, count) +
                   pt_count_wrong(sendbuf, pat.input, es, per, count) +
                   pt_guard_wrong(recvbuf, es, count) + pt_guard_wrong(sendbuf, es, count);
      }
      /* in place */
      pt_fill(recvbuf, pat.input, es, per, count);
      if (pt_time_one(o, be, NULL, recvbuf, count, t, op, &tm[1])) goto fail;
      if (o->check) {
        pt_fill(recvbuf, pat.input, es, per, count);
        memset(recvbuf + count * es, PT_POISON, PT_GUARD);
        if (be->allreduce(be->ctx, NULL, recvbuf, count, t, op)) goto fail;
        wrong[1] = pt_count_wrong(recvbuf, pat.ref, es, per, count) + pt_guard_wrong(recvbuf, es, count);
      }
      if (be->max_double(be->ctx, tm, 2)) goto fail;
      if (o->check && be->sum_u64(be->ctx, wrong, 2)) goto fail;
      const char *algo = NULL;
      if (be->algorithm && be->algorithm(be->ctx, count, t, op, &algo)) goto fail;
      *wrong_total += wrong[0] + wrong[1];
      for (int k = 0; k < 2; k++) *bw_sum += pt_busbw(pt_algbw(count * es, tm[k]), be->nranks);
      *bw_n += 2;
      if (be->rank == 0) {
        pt_print_row_start(stdout, count * es, count, t, op);
        for (int k = 0; k < 2; k++) pt_print_cell(stdout, tm[k], count * es, be->nranks, o->check, wrong[k]);
        if (be->algorithm) printf("  %s", algo ? algo : "-");
        printf("\n");
        fflush(stdout);
      }
    }
    /* the next size, without overflowing */
    if (o->stepbytes) {
      if (s > o->maxbytes - o->stepbytes) break;
      s += o->stepbytes;
    } else if (s == 0) {
      s = 1;
    } else {
      if (s > o->maxbytes / (size_t)o->stepfactor) break;
      s *= (size_t)o->stepfactor;
    }
    if (s > o->maxbytes) break;
  }
  goto out;
fail:
  rc = -1;
out:
  pt_pattern_free(&pat);
  return rc;
}

/* Runs every dtype x op section and prints the table on rank 0 (the caller prints the
 * banner first). Returns 0, 1 if any element was wrong, or -1 on an error (printed). */
static inline int pt_run(const struct pt_opts *o, const struct pt_backend *be)
{
  size_t bytes = (o->maxbytes > 8 ? o->maxbytes : 8) + PT_ALIGN; /* room for the guard */
  void *sendbuf = NULL, *recvbuf = NULL;
  int err = posix_memalign(&sendbuf, PT_ALIGN, bytes);
  if (err == 0) err = posix_memalign(&recvbuf, PT_ALIGN, bytes);
  if (err != 0) {
    fprintf(stderr, "%s: rank %d: cannot allocate 2 x %zu bytes: %s\n", be->prog, be->rank, bytes,
            strerror(err));
    free(sendbuf);
    return -1;
  }
  uint64_t wrong_total = 0;
  double bw_sum = 0.0;
  long bw_n = 0;
  int rc = 0;
  for (int d = 0; d < o->ndtypes && rc == 0; d++) {
    for (int k = 0; k < o->nops && rc == 0; k++) {
      if (be->rank == 0) {
        if (d + k > 0) printf("#\n");
        pt_print_header(stdout, be->algorithm != NULL);
      }
      rc = pt_run_section(o, be, sendbuf, recvbuf, o->dtypes[d], o->ops[k], &wrong_total, &bw_sum,
                          &bw_n);
    }
  }
  free(sendbuf);
  free(recvbuf);
  if (rc) return -1;
  if (be->rank == 0) {
    pt_print_footer(stdout, wrong_total, bw_n ? bw_sum / (double)bw_n : 0.0);
    fflush(stdout);
  }
  return wrong_total ? 1 : 0;
}

#endif /* ZCOLL_PERF_TABLE_H */
