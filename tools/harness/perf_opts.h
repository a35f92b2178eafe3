/*
 * perf_opts.h -- the command line of the benchmarks, nccl-tests' all_reduce_perf's and
 * broadcast_perf's flags (short and long forms, the same defaults where the meaning is the
 * same), the collective chosen with -t NAME as one program stands for both: sizes
 * ("64K"), dtype and op names, the options, their usage text and the parameters line
 * of the table. Everything is checked here, before any program starts a job, so that a
 * bad command line exits 2 without having touched the network.
 */
#ifndef ZCOLL_PERF_OPTS_H
#define ZCOLL_PERF_OPTS_H

#include "perf_table.h"

/* "8", "64K", "1M", "64M", "1G" (binary multiples, case-insensitive, an optional
 * trailing "B"). Returns 0, or -1 on anything malformed or out of range. */
int pt_parse_size(const char *s, size_t *out);

/* A whole decimal number in [lo, hi]: 0, or -1. */
int pt_parse_long(const char *s, long lo, long hi, long *out);

/* What a program can do beyond the common options. The parser refuses, with a reason,
 * an option that needs what the program lacks. */
enum pt_feature {
  PT_HAS_ALGO = 1u << 0,          /* -A NAME chooses among the library's algorithms */
  PT_HAS_NONBLOCKING = 1u << 1,   /* a non-blocking allreduce: -z 0 and --overlap */
  PT_HAS_REGISTER = 1u << 2,      /* -R 1: explicit memory registration */
  PT_HAS_STALL_TIMEOUT = 1u << 3, /* -T is the library's own deadline, else alarm() */
  PT_HAS_BROADCAST = 1u << 4,     /* -t broadcast, with -r ROOT */
  PT_HAS_BARRIER = 1u << 5,       /* -t barrier: the backend's barrier, timed */
  PT_HAS_GATHER = 1u << 6,        /* -t allgather and -t reduce_scatter */
  PT_HAS_REDUCE = 1u << 7,        /* -t reduce, with -r ROOT */
  PT_HAS_MEM_ALLOC = 1u << 8,     /* -M 1: buffers from the library's allocator */
  PT_HAS_XCHG = 1u << 9,          /* -t alltoall|alltoallv|allgatherv|gather|scatter|sendrecv, -r */
  PT_HAS_GROUP = 1u << 10,        /* --group 1: -m's collectives issued as one group */
};

struct pt_prog {
  const char *name;
  unsigned features;    /* enum pt_feature */
  const char *algo_doc; /* PT_HAS_ALGO: what -A takes and its default, one line */
};

/* How times (and CPU times) of the ranks become the one number of the table: -a. */
enum pt_average { PT_AVG_RANK0, PT_AVG_MEAN, PT_AVG_MIN, PT_AVG_MAX };

struct pt_opts {
  size_t minbytes, maxbytes;
  size_t stepbytes; /* > 0: add this; 0: multiply by stepfactor */
  long stepfactor;
  long iters, warmup, check;
  long agg;      /* -m: collectives per timed iteration */
  long group;    /* --group: an iteration's -m collectives queued in one group */
  long cycles;   /* -N: sweeps; 0 = until interrupted */
  long blocking; /* -z */
  long average;  /* -a: enum pt_average */
  long cputime;  /* -C */
  long reg;      /* -R */
  long mem;      /* -M: the buffers from the backend's mem_alloc */
  long timeout;  /* -T seconds; -1 = not given (the library's default, no alarm) */
  bool overlap;  /* --overlap */
  bool idle;     /* --overlap=idle: the compute phase sleeps */
  int ndtypes, nops;
  bool all_dtypes, all_ops;
  enum pt_dtype dtypes[PT_DTYPE_COUNT];
  enum pt_op ops[PT_OP_COUNT];
  const char *algo;                  /* -A, or NULL */
  const char *csv;                   /* -F: rank 0 also writes the table there as CSV, or NULL */
  long ngpus, parallel_init, graphs; /* -g, -p, -G: nccl-tests' GPU options, checked only */
  bool verbose;      /* -v: each rank's own times (and collectives) under each row */
  enum pt_coll coll; /* -t NAME, --coll NAME */
  long root;         /* -r: a broadcast's root; checked against the ranks by pt_check_root */
};

/* Returns 0 to run, 1 when -h printed the usage (exit 0), 2 on a bad command line (a
 * message was printed; exit 2). -h prints the usage only once the rest of the line has
 * passed every check, so that `... -h` says whether the line would run. */
int pt_parse_args(int argc, char **argv, const struct pt_prog *p, struct pt_opts *o);

/* nccl-tests' parameters line. */
void pt_print_params(FILE *f, const struct pt_opts *o);

/* The second banner line: how the table was measured (and, for a broadcast, a note on
 * its columns). */
void pt_print_modes(FILE *f, const char *prog, const struct pt_opts *o);

/* What the command line could not know: whether -r names a rank. Returns 0, or 2 after a
 * message on rank 0 (every rank gets the same answer, so all can stop before a
 * collective). */
int pt_check_root(const char *prog, const struct pt_opts *o, int rank, int nranks);

#endif /* ZCOLL_PERF_OPTS_H */
