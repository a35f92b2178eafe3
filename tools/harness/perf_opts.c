/*
 * perf_opts.c -- the benchmarks' command line (see perf_opts.h): the parsers of sizes,
 * numbers and names, nccl-tests' options with getopt_long, the usage text, and the
 * banner lines that say what the table measured.
 */
#include "perf_opts.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *const pt_average_names[4] = {"rank 0's", "mean over ranks", "min over ranks",
                                                "max over ranks"};

/* Returns the dtype, or -1. Accepts nccl-tests' names and zcoll's. */
static int pt_parse_dtype(const char *s) {
  static const struct {
    const char *name;
    enum pt_dtype t;
  } alias[] = {{"int", PT_INT32},       {"float16", PT_FLOAT16}, {"fp16", PT_FLOAT16},
               {"bf16", PT_BFLOAT16},   {"float32", PT_FLOAT32}, {"fp32", PT_FLOAT32},
               {"float64", PT_FLOAT64}, {"fp64", PT_FLOAT64}};
  for (int i = 0; i < PT_DTYPE_COUNT; i++)
    if (strcmp(s, pt_dtype_names[i]) == 0) return i;
  for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
    if (strcmp(s, alias[i].name) == 0) return (int)alias[i].t;
  return -1;
}

static int pt_parse_op(const char *s) {
  for (int i = 0; i < PT_OP_COUNT; i++)
    if (strcmp(s, pt_op_names[i]) == 0) return i;
  return -1;
}

int pt_parse_size(const char *s, size_t *out) {
  if (s == NULL || *s < '0' || *s > '9') return -1; /* no sign, no blank, not empty */
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0) return -1;
  unsigned shift = 0;
  switch (*end) {
  case 'k':
  case 'K':
    shift = 10;
    end++;
    break;
  case 'm':
  case 'M':
    shift = 20;
    end++;
    break;
  case 'g':
  case 'G':
    shift = 30;
    end++;
    break;
  default: break;
  }
  if (*end == 'b' || *end == 'B') end++;
  if (*end != '\0') return -1;
  if (v > (unsigned long long)SIZE_MAX >> shift) return -1;
  *out = (size_t)(v << shift);
  return 0;
}

int pt_parse_long(const char *s, long lo, long hi, long *out) {
  if (s == NULL || *s == '\0') return -1;
  errno = 0;
  char *end;
  long v = strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

static void pt_usage(FILE *f, const struct pt_prog *p) {
  const bool nb = p->features & PT_HAS_NONBLOCKING;
  const bool bc = p->features & PT_HAS_BROADCAST;
  fprintf(f, "usage: %s [options]   (nccl-tests' all_reduce_perf%s flags, short or long)\n",
          p->name, bc ? "\n                          and broadcast_perf" : "");
  if (bc)
    fputs("  -t, --coll NAME         the collective: allreduce (default) or broadcast\n"
          "                          (nccl-tests' broadcast_perf). -t N is nccl-tests'\n"
          "                          nthreads (also --nthreads N): one thread per rank here,\n"
          "                          so only -t 1 is accepted; --coll takes names only\n"
          "  -r, --root N            the broadcast's root rank (default 0; it must be a rank)\n",
          f);
  if (p->features & PT_HAS_BARRIER)
    fputs("  -t barrier              time the barrier instead: one 0-byte row, its latency\n", f);
  if (p->features & PT_HAS_REDUCE)
    fputs("  -t reduce               time the reduce to the root (-r) instead (nccl-tests'\n"
          "                          reduce_perf)\n",
          f);
  if (p->features & PT_HAS_GATHER)
    fputs("  -t allgather, -t reduce_scatter\n"
          "                          time those instead (nccl-tests' all_gather_perf and\n"
          "                          reduce_scatter_perf: sizes are all ranks' blocks)\n",
          f);
  if (p->features & PT_HAS_XCHG)
    fputs("  -t alltoall, -t alltoallv, -t allgatherv, -t gather, -t scatter\n"
          "                          time those instead (nccl-tests' alltoall_perf,\n"
          "                          gather_perf, scatter_perf: the size is the total per\n"
          "                          rank, count one block; gather to and scatter from -r;\n"
          "                          alltoallv: rank i sends itself count - ceil(count/2),\n"
          "                          rank i+1 count + ceil(count/2), the others count;\n"
          "                          allgatherv: rank 0's block count - ceil(count/2), rank\n"
          "                          1's count + ceil(count/2); -c 1 checks every element;\n"
          "                          alltoallv's in-place columns are N/A)\n"
          "  -t sendrecv             time point to point instead (nccl-tests' sendrecv_perf:\n"
          "                          each rank sends to rank+1 and receives from rank-1\n"
          "                          (mod p) at once; size and count are the one message's,\n"
          "                          busbw = algbw; -c 1 checks every element; no in-place\n"
          "                          form: those columns are N/A)\n",
          f);
  if (!bc)
    fputs("  -t, --nthreads 1        nccl-tests' threads per process: one thread per rank\n"
          "                          here, only 1 is accepted (-t allreduce is too)\n"
          "  -r, --root N            accepted for nccl-tests' scripts; an allreduce has none\n",
          f);
  fputs("  -b, --minbytes SIZE     smallest vector in bytes (default 8); sizes take K, M, G\n"
        "  -e, --maxbytes SIZE     largest vector in bytes (default 64M)\n"
        "  -f, --stepfactor N      multiply the size by N at each step (default 2)\n"
        "  -i, --stepbytes SIZE    add SIZE at each step instead (default 0: use -f)\n"
        "  -n, --iters N           timed iterations per size (default 20)\n"
        "  -w, --warmup_iters N    warmup iterations per size (default 5)\n"
        "  -m, --agg_iters N       collectives per iteration (default 1); times are per\n"
        "                          collective: the iteration's time / N\n"
        "  -N, --run_cycles N      run the whole sweep N times, a table each (default 1;\n"
        "                          0: until interrupted)\n"
        "  -c, --check 0|1         check every element against an independent reference\n"
        "                          (default 1)\n"
        "  -d, --datatype TYPE     int8 uint8 int32 uint32 int64 uint64 half|float16\n"
        "                          bfloat16 float|float32 double|float64, or all\n"
        "                          (default float)\n"
        "  -o, --op OP             sum prod min max avg, or all (default sum); a broadcast\n"
        "                          ignores it (one table, redop none), as nccl-tests does\n",
        f);
  if (nb)
    fputs("  -z, --blocking 0|1      0 (default): the timed collectives are posted non-blocking\n"
          "                          one after the other, at most 32 in flight (when full, wait\n"
          "                          for the oldest), all waited at the end: consecutive ones\n"
          "                          may overlap. 1: an iteration ends before the next starts:\n"
          "                          one blocking call (the latency of a blocking call); with\n"
          "                          -m N, N non-blocking ones posted, then all waited\n",
          f);
  else
    fprintf(f,
            "  -z, --blocking 1        each collective is a blocking call; -m N: N back-to-back\n"
            "                          calls per iteration (default 1: %s has no\n"
            "                          non-blocking allreduce, -z 0 is refused)\n",
            p->name);
  if (p->features & PT_HAS_GROUP)
    fputs("      --group 0|1         1: each iteration's -m collectives are blocking calls\n"
          "                          between zcoll_group_start and zcoll_group_end, issued\n"
          "                          together (small allreduces fused), as nccl-tests groups\n"
          "                          its -m calls; default 0 (the MPI peers have no groups)\n",
          f);
  fputs("  -F, --output_file FILE  rank 0 also writes the table to FILE as CSV: three header\n"
        "                          rows (group, name, unit, as the table's; pandas:\n"
        "                          read_csv(FILE, header=[0, 1, 2])), then one row per size,\n"
        "                          every section in one table; unmeasured cells are empty\n"
        "  -g, --ngpus 1           nccl-tests' GPUs per thread: zcoll moves host memory, one\n"
        "                          rank per process, so only 1 is accepted\n"
        "  -p, --parallel_init 0|1  nccl-tests' threads initialising in parallel: one thread\n"
        "                          per process here, either value means the same\n"
        "  -G, --cudagraph 0       nccl-tests' CUDA graph launches: no GPUs, only 0\n"
        "  -a, --average 0|1|2|3   how the ranks' times combine into the table's: 0 rank 0's,\n"
        "                          1 the mean over ranks (default), 2 the min, 3 the max\n"
        "  -C, --report_cputime 0|1  1: also print cpu(us) after each time column: the\n"
        "                          process's CPU time (user + sys, getrusage; a progress\n"
        "                          thread of the library counts too) over the timed loop per\n"
        "                          collective, combined as -a (default 0)\n",
        f);
  if (p->features & PT_HAS_REGISTER)
    fputs("  -R, --local_register 0|1  1: register the send and receive buffers with the\n"
          "                          library (zcoll_mem_register) before timing (default 0)\n",
          f);
  if (p->features & PT_HAS_MEM_ALLOC)
    fputs("  -M, --mem_alloc 0|1     1: the send and receive buffers from zcoll_mem_alloc\n"
          "                          (memory this host's ranks can map; default 0: malloc).\n"
          "                          Blocking allreduces (-z 1) of 1 MiB and up on one host\n"
          "                          then read them where they lie (\"# Mapped allreduces\"\n"
          "                          counts them)\n",
          f);
  if (p->features & PT_HAS_STALL_TIMEOUT)
    fputs("  -T, --timeout SECONDS   the library's deadline for a stalled collective (the\n"
          "                          TIMEOUT configuration field), so that a hang is an error\n"
          "                          (default: the library's, ZCOLL_TIMEOUT or 120; 0: none)\n",
          f);
  else
    fputs("  -T, --timeout SECONDS   end the whole run with SIGALRM after SECONDS (alarm(),\n"
          "                          so that a hang is an error; default 0: none)\n",
          f);
  if (p->features & PT_HAS_ALGO)
    fprintf(f,
            "  -A, --algo, --algorithm NAME\n"
            "                          %s\n",
            p->algo_doc);
  if (nb)
    fputs("      --overlap           instead of the table above, per size and out of place, as\n"
          "                          OSU's osu_iallreduce: comm = post + wait; compute = a\n"
          "                          loop of arithmetic calibrated to last about comm, alone\n"
          "                          (it never calls the library); overall = post, compute,\n"
          "                          wait; overlap% = 100 (1 - (overall - compute) / comm),\n"
          "                          in 0..100. Each the mean of -n iterations, combined as -a.\n"
          "                          -C adds the CPU time of the overall phase. (-m 1, -z 0)\n"
          "      --overlap=idle      the same, but the compute phase sleeps as long instead:\n"
          "                          an application waiting for an accelerator or for I/O.\n"
          "                          The core is free then, so it measures whether the\n"
          "                          library moves data without calls; busy (the default)\n"
          "                          also needs a core to spare for that movement\n",
          f);
  fputs("  -v, --verbose           under each row, each rank's own times before -a combined\n"
        "                          them (and the collectives it issued for the row, where the\n"
        "                          library counts them)\n"
        "  -h, --help              print this help\n"
        "Sizes are rounded down to whole elements (at least one; -b 0 gives a 0-count row).\n"
        "time: each rank's mean per collective, combined as -a; busbw = algbw * 2(p-1)/p\n"
        "for an allreduce",
        f);
  if (bc)
    fputs(", busbw = algbw (factor 1) for a broadcast. A broadcast has one\n"
          "buffer (zcoll_broadcast is in place): its in-place columns are measured, its\n"
          "out-of-place columns say N/A. -c 1: the root fills a pattern of the root, the index\n"
          "and the row, the others a sentinel; afterwards every element of every rank must\n"
          "equal the pattern. --overlap measures the allreduce only",
          f);
  fputs(".\n", f);
}

__attribute__((format(printf, 2, 3))) static int pt_opt_error(const char *prog, const char *fmt,
                                                              ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", prog);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (try -h)\n");
  va_end(ap);
  return 2;
}

/* The options that take a whole number: where it goes, its range and what it must be. */
struct pt_num_opt {
  int c;
  long lo, hi;
  size_t off;
  const char *need;
};

#define PT_OPT_GROUP 0x103 /* long-only, a number: in pt_num_opts */

static const struct pt_num_opt pt_num_opts[] = {
    {'f', 0, 1L << 20, offsetof(struct pt_opts, stepfactor), "a step factor"},
    {'n', 1, INT_MAX, offsetof(struct pt_opts, iters), "an iteration count >= 1"},
    {'w', 0, INT_MAX, offsetof(struct pt_opts, warmup), "a warmup count >= 0"},
    {'m', 1, 1L << 20, offsetof(struct pt_opts, agg), "a count of collectives in 1..1048576"},
    {'N', 0, INT_MAX, offsetof(struct pt_opts, cycles), "a cycle count >= 0"},
    {'c', 0, 1, offsetof(struct pt_opts, check), "0 or 1"},
    {'z', 0, 1, offsetof(struct pt_opts, blocking), "0 or 1"},
    {PT_OPT_GROUP, 0, 1, offsetof(struct pt_opts, group), "0 or 1"},
    {'C', 0, 1, offsetof(struct pt_opts, cputime), "0 or 1"},
    {'R', 0, 1, offsetof(struct pt_opts, reg), "0 or 1"},
    {'M', 0, 1, offsetof(struct pt_opts, mem), "0 or 1"},
    {'T', 0, 1000000000L, offsetof(struct pt_opts, timeout), "a whole number of seconds >= 0"},
    {'r', 0, INT_MAX, offsetof(struct pt_opts, root), "a rank number >= 0"},
    {'p', 0, 1, offsetof(struct pt_opts, parallel_init), "0 or 1"},
    {'a', 0, 3, offsetof(struct pt_opts, average),
     "0..3 (0 rank 0's time, 1 the mean over ranks, 2 the min, 3 the max)"},
};

#define PT_OPT_OVERLAP 0x100 /* long-only options */
#define PT_OPT_COLL 0x101
#define PT_OPT_NTHREADS 0x102

#define PT_COLL_LIST                                                                        \
  "allreduce, broadcast, barrier, allgather, reduce_scatter, reduce, alltoall, alltoallv, " \
  "allgatherv, gather, scatter, sendrecv"

/* -t takes a collective's name or nccl-tests' thread count, --coll only a name and
 * --nthreads only a count; a count must be 1 (zcoll runs one thread per rank). */
static int pt_set_coll(const struct pt_prog *p, struct pt_opts *o, int c, const char *arg) {
  const char *opt = c == 't' ? "-t" : c == PT_OPT_COLL ? "--coll" : "--nthreads";
  for (int i = 0; c != PT_OPT_NTHREADS && i < PT_COLL_COUNT; i++) {
    if (strcmp(arg, pt_coll_names[i]) != 0) continue;
    o->coll = (enum pt_coll)i;
    return 0;
  }
  long n;
  if (c != PT_OPT_COLL && pt_parse_long(arg, LONG_MIN, LONG_MAX, &n) == 0)
    return n == 1 ? 0
                  : pt_opt_error(p->name,
                                 "%s %s: %s runs one thread per rank, so nccl-tests' thread "
                                 "count (nthreads) can only be 1",
                                 opt, arg, p->name);
  return pt_opt_error(p->name, "%s '%s': not %s", opt, arg,
                      c == PT_OPT_COLL       ? "a collective (" PT_COLL_LIST ")"
                      : c == PT_OPT_NTHREADS ? "a thread count (only 1)"
                                             : "a collective (" PT_COLL_LIST
                                               ") or 1 (nccl-tests' nthreads)");
}

/* -g and -G: nccl-tests' GPU counts. A whole number is checked against the only value
 * that means something without GPUs, and the message names the flag. */
static int pt_set_gpu(const struct pt_prog *p, struct pt_opts *o, int c, const char *arg) {
  const long want = c == 'g' ? 1 : 0;
  long v;
  if (pt_parse_long(arg, 0, INT_MAX, &v) != 0)
    return pt_opt_error(p->name, "-%c: '%s' is not a count (only %ld is accepted)", c, arg, want);
  if (v != want)
    return pt_opt_error(p->name,
                        c == 'g' ? "-g %s: %s runs one rank per process on host memory: "
                                   "nccl-tests' GPUs per thread (ngpus) can only be 1"
                                 : "-G %s: %s uses no GPUs, so no CUDA graphs (cudagraph): "
                                   "only -G 0 is accepted",
                        arg, p->name);
  *(c == 'g' ? &o->ngpus : &o->graphs) = v;
  return 0;
}

/* Sets a whole-number option; 2 after a message if the value is not one. */
static int pt_set_num(const struct pt_prog *p, struct pt_opts *o, int c, const char *arg) {
  for (size_t i = 0; i < sizeof pt_num_opts / sizeof pt_num_opts[0]; i++) {
    const struct pt_num_opt *n = &pt_num_opts[i];
    if (n->c != c) continue;
    if (pt_parse_long(arg, n->lo, n->hi, (long *)((char *)o + n->off)) == 0) return 0;
    if (c == 'a' && (*arg < '0' || *arg > '9'))
      return pt_opt_error(p->name,
                          "-a '%s': -a now takes 0..3 as in nccl-tests (how the ranks' times "
                          "combine: 0 rank 0's, 1 mean, 2 min, 3 max)%s",
                          arg,
                          p->features & PT_HAS_ALGO ? "; the algorithm is -A/--algo NAME" : "");
    if (c == PT_OPT_GROUP) return pt_opt_error(p->name, "--group: '%s' is not %s", arg, n->need);
    return pt_opt_error(p->name, "-%c: '%s' is not %s", c, arg, n->need);
  }
  return pt_opt_error(p->name, "-%c: no such option", c); /* not reached */
}

/* -d all / -o all, or one name. */
static int pt_set_list(const struct pt_prog *p, struct pt_opts *o, int c, const char *arg) {
  const bool all = strcmp(arg, "all") == 0;
  const int n = c == 'd' ? PT_DTYPE_COUNT : PT_OP_COUNT;
  int v = all ? 0 : c == 'd' ? pt_parse_dtype(arg) : pt_parse_op(arg);
  if (v < 0)
    return pt_opt_error(p->name, "-%c: unknown %s '%s'", c, c == 'd' ? "dtype" : "op", arg);
  for (int i = 0; i < (all ? n : 1); i++) {
    if (c == 'd')
      o->dtypes[i] = (enum pt_dtype)(all ? i : v);
    else
      o->ops[i] = (enum pt_op)(all ? i : v);
  }
  if (c == 'd') {
    o->all_dtypes = all;
    o->ndtypes = all ? n : 1;
  } else {
    o->all_ops = all;
    o->nops = all ? n : 1;
  }
  return 0;
}

/* The options the program has not got, and those that contradict each other. */
static int pt_check_opts(const struct pt_prog *p, const struct pt_opts *o, bool z_given) {
  if (o->minbytes > o->maxbytes)
    return pt_opt_error(p->name, "minbytes (-b %zu) is larger than maxbytes (-e %zu)", o->minbytes,
                        o->maxbytes);
  if (o->stepbytes == 0 && o->stepfactor < 2)
    return pt_opt_error(p->name, "-f: step factor %ld must be >= 2 when -i is 0", o->stepfactor);
  if (o->algo && !(p->features & PT_HAS_ALGO))
    return pt_opt_error(p->name, "-A %s: %s has no algorithm choice", o->algo, p->name);
  if (o->algo && *o->algo == '\0') return pt_opt_error(p->name, "-A: empty algorithm name");
  if (!(p->features & PT_HAS_NONBLOCKING) && (o->blocking == 0 || o->overlap))
    return pt_opt_error(p->name, "%s: %s has no non-blocking allreduce",
                        o->overlap ? "--overlap" : "-z 0", p->name);
  if (o->mem && !(p->features & PT_HAS_MEM_ALLOC))
    return pt_opt_error(p->name, "-M 1: %s has no allocator of its own", p->name);
  if (o->reg && !(p->features & PT_HAS_REGISTER))
    return pt_opt_error(p->name, "-R 1: %s has no explicit memory registration", p->name);
  if (o->coll == PT_COLL_BROADCAST && !(p->features & PT_HAS_BROADCAST))
    return pt_opt_error(p->name, "-t broadcast: %s times the allreduce only", p->name);
  if (o->coll == PT_COLL_BARRIER && !(p->features & PT_HAS_BARRIER))
    return pt_opt_error(p->name, "-t barrier: %s times the allreduce only", p->name);
  if ((o->coll == PT_COLL_ALLGATHER || o->coll == PT_COLL_REDUCE_SCATTER) &&
      !(p->features & PT_HAS_GATHER))
    return pt_opt_error(p->name, "-t %s: %s has no such collective", pt_coll_names[o->coll],
                        p->name);
  if (o->coll == PT_COLL_REDUCE && !(p->features & PT_HAS_REDUCE))
    return pt_opt_error(p->name, "-t reduce: %s has no such collective", p->name);
  if (o->coll >= PT_COLL_ALLTOALL && !(p->features & PT_HAS_XCHG))
    return pt_opt_error(p->name, "-t %s: %s has no such collective", pt_coll_names[o->coll],
                        p->name);
  if (o->coll != PT_COLL_ALLREDUCE && o->overlap)
    return pt_opt_error(p->name, "--overlap measures the allreduce only, not -t %s",
                        pt_coll_names[o->coll]);
  if (o->verbose && o->overlap)
    return pt_opt_error(p->name, "-v: per-rank times are printed under the table of times; "
                                 "--overlap's table has none");
  if (o->csv && o->overlap)
    return pt_opt_error(p->name,
                        "-F %s: the CSV file holds the table of times; --overlap's "
                        "table is printed only",
                        o->csv);
  if (o->group && !(p->features & PT_HAS_GROUP))
    return pt_opt_error(p->name, "--group 1: %s has no groups", p->name);
  if (o->group && o->overlap)
    return pt_opt_error(p->name, "--group 1: --overlap times one non-blocking collective alone");
  if (o->group && z_given && !o->blocking)
    return pt_opt_error(p->name, "--group 1: a group's calls are its blocking forms, queued; "
                                 "-z 0 does not apply");
  if (o->overlap && (o->agg != 1 || (z_given && o->blocking)))
    return pt_opt_error(p->name,
                        "--overlap times one non-blocking collective at a time: "
                        "it takes neither -m %ld nor -z 1",
                        o->agg);
  return 0;
}

int pt_parse_args(int argc, char **argv, const struct pt_prog *p, struct pt_opts *o) {
  static const struct option longs[] = {{"minbytes", required_argument, NULL, 'b'},
                                        {"maxbytes", required_argument, NULL, 'e'},
                                        {"stepbytes", required_argument, NULL, 'i'},
                                        {"stepfactor", required_argument, NULL, 'f'},
                                        {"iters", required_argument, NULL, 'n'},
                                        {"warmup_iters", required_argument, NULL, 'w'},
                                        {"agg_iters", required_argument, NULL, 'm'},
                                        {"run_cycles", required_argument, NULL, 'N'},
                                        {"check", required_argument, NULL, 'c'},
                                        {"datatype", required_argument, NULL, 'd'},
                                        {"op", required_argument, NULL, 'o'},
                                        {"blocking", required_argument, NULL, 'z'},
                                        {"group", required_argument, NULL, PT_OPT_GROUP},
                                        {"average", required_argument, NULL, 'a'},
                                        {"report_cputime", required_argument, NULL, 'C'},
                                        {"local_register", required_argument, NULL, 'R'},
                                        {"mem_alloc", required_argument, NULL, 'M'},
                                        {"timeout", required_argument, NULL, 'T'},
                                        {"algo", required_argument, NULL, 'A'},
                                        {"algorithm", required_argument, NULL, 'A'},
                                        {"overlap", optional_argument, NULL, PT_OPT_OVERLAP},
                                        {"coll", required_argument, NULL, PT_OPT_COLL},
                                        {"nthreads", required_argument, NULL, PT_OPT_NTHREADS},
                                        {"root", required_argument, NULL, 'r'},
                                        {"output_file", required_argument, NULL, 'F'},
                                        {"ngpus", required_argument, NULL, 'g'},
                                        {"parallel_init", required_argument, NULL, 'p'},
                                        {"cudagraph", required_argument, NULL, 'G'},
                                        {"verbose", no_argument, NULL, 'v'},
                                        {"help", no_argument, NULL, 'h'},
                                        {NULL, 0, NULL, 0}};
  memset(o, 0, sizeof *o);
  o->minbytes = 8;
  o->maxbytes = (size_t)64 << 20;
  o->stepfactor = 2;
  o->iters = 20;
  o->warmup = 5;
  o->agg = 1;
  o->cycles = 1;
  o->check = 1;
  o->blocking = (p->features & PT_HAS_NONBLOCKING) ? 0 : 1; /* nccl-tests' default is 0 */
  o->average = PT_AVG_MEAN;                                 /* nccl-tests' default */
  o->timeout = -1;
  o->ngpus = 1;
  o->ndtypes = 1;
  o->dtypes[0] = PT_FLOAT32;
  o->nops = 1;
  o->ops[0] = PT_SUM;
  bool z_given = false, help = false;
  opterr = 0;
  optind = 1;
  int c;
  const char *shorts = ":b:e:f:i:n:w:m:N:c:d:o:z:a:C:R:M:T:A:t:r:F:g:p:G:vh";
  while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
    int rc = 0;
    switch (c) {
    case 'b':
    case 'e':
    case 'i': {
      size_t *dst = c == 'b' ? &o->minbytes : c == 'e' ? &o->maxbytes : &o->stepbytes;
      if (pt_parse_size(optarg, dst)) rc = pt_opt_error(p->name, "-%c: bad size '%s'", c, optarg);
    } break;
    case 'd':
    case 'o': rc = pt_set_list(p, o, c, optarg); break;
    case 'A': o->algo = optarg; break;
    case 'F':
      o->csv = optarg;
      if (*optarg == '\0') rc = pt_opt_error(p->name, "-F: empty file name");
      break;
    case 'g':
    case 'G': rc = pt_set_gpu(p, o, c, optarg); break;
    case 't':
    case PT_OPT_COLL:
    case PT_OPT_NTHREADS: rc = pt_set_coll(p, o, c, optarg); break;
    case PT_OPT_OVERLAP:
      o->overlap = true;
      o->idle = optarg && strcmp(optarg, "idle") == 0;
      if (optarg && !o->idle && strcmp(optarg, "busy") != 0)
        rc = pt_opt_error(p->name, "--overlap=%s: busy or idle", optarg);
      break;
    case 'v': o->verbose = true; break;
    case 'h': help = true; break;
    case ':':
      if (optopt > ' ' && optopt < 127 && strncmp(argv[optind - 1], "--", 2) != 0)
        return pt_opt_error(p->name, "option -%c needs a value", optopt);
      return pt_opt_error(p->name, "option '%s' needs a value", argv[optind - 1]);
    case '?':
      if (optopt > ' ' && optopt < 127) return pt_opt_error(p->name, "unknown option -%c", optopt);
      return pt_opt_error(p->name, "unknown option '%s'", argv[optind - 1]);
    default:
      z_given |= c == 'z';
      rc = pt_set_num(p, o, c, optarg);
      break;
    }
    if (rc) return rc;
  }
  if (optind < argc) return pt_opt_error(p->name, "unexpected argument '%s'", argv[optind]);
  int rc = pt_check_opts(p, o, z_given);
  if (rc == 0 && help) {
    pt_usage(stdout, p);
    return 1;
  }
  return rc;
}

/* nccl-tests' parameters line; graph is its CUDA-graph count, always 0 here, kept so that
 * what reads nccl-tests' output reads this too. */
void pt_print_params(FILE *f, const struct pt_opts *o) {
  if (o->stepbytes)
    fprintf(f, "# minBytes %zu maxBytes %zu step: %zu(bytes)", o->minbytes, o->maxbytes,
            o->stepbytes);
  else
    fprintf(f, "# minBytes %zu maxBytes %zu step: %ld(factor)", o->minbytes, o->maxbytes,
            o->stepfactor);
  fprintf(f, " warmup iters: %ld iters: %ld agg iters: %ld validation: %ld graph: 0\n#\n",
          o->warmup, o->iters, o->agg, o->check);
}

void pt_print_modes(FILE *f, const char *prog, const struct pt_opts *o) {
  fprintf(f, "# %s: %s", prog,
          o->overlap ? (o->idle ? "overlap mode (idle: compute sleeps)"
                                : "overlap mode (busy: compute computes)")
                     : pt_coll_names[o->coll]);
  if (o->coll == PT_COLL_BROADCAST) fprintf(f, " from root %ld (-r)", o->root);
  if (o->coll == PT_COLL_REDUCE || o->coll == PT_COLL_GATHER)
    fprintf(f, " to root %ld (-r)", o->root);
  if (o->coll == PT_COLL_SCATTER) fprintf(f, " from root %ld (-r)", o->root);
  fprintf(f, ", blocking %ld (-z), agg %ld (-m), average %ld: %s (-a), registered %ld (-R)",
          o->blocking, o->agg, o->average, pt_average_names[o->average], o->reg);
  if (o->mem) fprintf(f, ", buffers from zcoll_mem_alloc (-M)");
  if (o->group) fprintf(f, ", each iteration one group (--group)");
  fprintf(f, ", cputime %ld (-C), cycles %ld (-N)\n", o->cputime, o->cycles);
  if (o->coll == PT_COLL_BROADCAST)
    fprintf(f, "# note: a broadcast has one buffer (in place): out-of-place columns are N/A;"
               " busbw = algbw\n");
  if (o->coll == PT_COLL_ALLGATHER || o->coll == PT_COLL_REDUCE_SCATTER)
    fprintf(f, "# note: size is all ranks' blocks, count one rank's; busbw = algbw * (p-1)/p\n");
  if (o->coll == PT_COLL_SENDRECV)
    fprintf(f, "# note: each rank sends to rank+1 and receives from rank-1 (mod p) at once;"
               " size is the one message; busbw = algbw; no in-place form\n");
  else if (o->coll >= PT_COLL_ALLTOALL)
    fprintf(f,
            "# note: size is one rank's total (all its blocks), count one block; busbw ="
            " algbw * (p-1)/p%s\n",
            o->coll == PT_COLL_ALLTOALLV ? "; no in-place form (uneven counts)" : "");
  if (o->coll == PT_COLL_REDUCE)
    fprintf(f, "# note: the root's result is checked, and that the others' inputs stay; busbw"
               " = algbw\n");
  if (o->coll == PT_COLL_BARRIER)
    fprintf(f, "# note: a barrier moves no data: one 0-byte row (-b, -e, -d, -o do not apply),"
               " in place; its time is the latency of a barrier\n");
}

int pt_check_root(const char *prog, const struct pt_opts *o, int rank, int nranks) {
  const bool rooted = o->coll == PT_COLL_BROADCAST || o->coll == PT_COLL_REDUCE ||
                      o->coll == PT_COLL_GATHER || o->coll == PT_COLL_SCATTER;
  if (!rooted || o->root < nranks) return 0;
  if (rank == 0)
    fprintf(stderr, "%s: -r %ld: the root must be a rank of the job, 0..%d\n", prog, o->root,
            nranks - 1);
  return 2;
}
