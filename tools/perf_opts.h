/*
 * perf_opts.h -- the command line of the benchmarks: sizes ("64K"), dtype and op names,
 * the options, their usage text and the parameters line of the table.
 */
#ifndef ZCOLL_PERF_OPTS_H
#define ZCOLL_PERF_OPTS_H

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "perf_table.h"

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

static inline void pt_print_params(FILE *f, const struct pt_opts *o)
{
  if (o->stepbytes)
    fprintf(f, "# minBytes %zu maxBytes %zu step: %zu(bytes)", o->minbytes, o->maxbytes, o->stepbytes);
  else
    fprintf(f, "# minBytes %zu maxBytes %zu step: %ld(factor)", o->minbytes, o->maxbytes, o->stepfactor);
  fprintf(f, " warmup iters: %ld iters: %ld validation: %ld\n#\n", o->warmup, o->iters, o->check);
}
#endif /* ZCOLL_PERF_OPTS_H */
