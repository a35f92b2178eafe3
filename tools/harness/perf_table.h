/*
 * perf_table.h -- the names and the table shared by zcoll_perf, perf/mpi_allreduce_perf
 * and perf/gloo_allreduce_perf: the dtype and op enums with their names, the busbw
 * formula and nccl-tests' all_reduce_perf / broadcast_perf table (header, rows, footer),
 * its CSV form (-F) and the overlap table (--overlap).
 *
 * Part of the benchmark harness (tools/harness/, the static library
 * zcoll_perf_harness), which is free of anything zcoll-specific so that the peers build
 * with plain mpicc or g++ and no libzcoll. The dtype and op enums below list the same
 * values in the same order as zcoll.h's public enums. The other parts: perf_opts.h (the
 * command line), perf_measure.h (clocks, sizes, -a), perf_check.h (the check pattern and
 * its reference), perf_backend.h (the ops table a library supplies), perf_overlap.h and
 * perf_driver.h (the benchmark loop).
 */
#ifndef ZCOLL_PERF_TABLE_H
#define ZCOLL_PERF_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum pt_dtype {
  PT_INT8,
  PT_UINT8,
  PT_INT32,
  PT_UINT32,
  PT_INT64,
  PT_UINT64,
  PT_FLOAT16,
  PT_BFLOAT16,
  PT_FLOAT32,
  PT_FLOAT64,
  PT_DTYPE_COUNT
};
enum pt_op { PT_SUM, PT_PROD, PT_MIN, PT_MAX, PT_AVG, PT_OP_COUNT };
/* The collectives a benchmark may time (-t NAME). */
enum pt_coll {
  PT_COLL_ALLREDUCE,
  PT_COLL_BROADCAST,
  PT_COLL_BARRIER,
  PT_COLL_ALLGATHER,      /* count: each rank's block; size: all of them (nccl-tests) */
  PT_COLL_REDUCE_SCATTER, /* count: each rank's block of the result; size: the input */
  PT_COLL_REDUCE,         /* to the root (-r): the allreduce's sizes, busbw = algbw */
  /* the exchanges (perf_xchg.h): count is each rank's block, size all of them, as in
   * nccl-tests' alltoall_perf, gather_perf and scatter_perf: what one rank sends
   * (alltoall, scatter's root) or receives (allgatherv, gather's root) in all */
  PT_COLL_ALLTOALL,
  PT_COLL_ALLTOALLV,  /* perf_xchg.h's uneven counts, packed */
  PT_COLL_ALLGATHERV, /* perf_xchg.h's uneven counts, packed */
  PT_COLL_GATHER,     /* to the root (-r) */
  PT_COLL_SCATTER,    /* from the root (-r) */
  /* nccl-tests' sendrecv_perf: each rank sends to rank + 1 and receives from rank - 1
   * (mod p) at once; count and size are the one message's, busbw = algbw */
  PT_COLL_SENDRECV,
  PT_COLL_COUNT
};

extern const char *const pt_dtype_names[PT_DTYPE_COUNT];
extern const char *const pt_op_names[PT_OP_COUNT];
extern const char *const pt_coll_names[PT_COLL_COUNT];

size_t pt_dtype_size(enum pt_dtype t);

/* busbw = algbw * this, as nccl-tests: 2(p-1)/p for an allreduce, (p-1)/p for an allgather,
 * a reduce-scatter and the exchanges, 1 for a broadcast and a sendrecv. */
double pt_bus_factor(enum pt_coll coll, int nranks);

/* bytes per microsecond / 1e3 = GB/s (1e9 B/s). */
double pt_algbw(size_t bytes, double time_us);

/* cpu: a cpu(us) column after each time column (-C 1). Without it the header is
 * nccl-tests' to the byte. */
void pt_print_header(FILE *f, bool algo_column, bool cpu);

/* redop: the op's name, "none" for a broadcast; root -1 where there is none. */
void pt_print_row_start(FILE *f, size_t bytes, size_t count, enum pt_dtype t, const char *redop,
                        int root);

/* One measured column group of a row: out-of-place or in-place. */
struct pt_cell {
  double time_us, cpu_us;
  uint64_t wrong;
  uint64_t timed; /* collectives in the timed loop, as the library counted them (-v) */
};

/* bus_factor: pt_bus_factor's. */
void pt_print_cell(FILE *f, const struct pt_cell *c, size_t bytes, double bus_factor, bool cpu,
                   bool checked);

/* A column group that was not measured. */
void pt_print_na_cell(FILE *f, bool cpu);

/* avg_name: "Avg bus bandwidth" (nccl-tests'), or what else the rows average. */
void pt_print_footer(FILE *f, uint64_t wrong, const char *avg_name, double avg);

/* The table as CSV (-F): three header rows, as the printed table's (the column group,
 * the name, the unit); pandas reads them with read_csv(f, header=[0, 1, 2]). */
void pt_csv_header(FILE *f, bool algo_column, bool cpu);

/* One row: c[0] out of place, c[1] in place; measured[k] false leaves that group empty
 * (the table's N/A), as does an unchecked #wrong. algo NULL: no algorithm column. Full
 * precision, unlike the table's rounded columns. */
void pt_csv_row(FILE *f, size_t bytes, size_t count, enum pt_dtype t, const char *redop, int root,
                const struct pt_cell c[2], const bool measured[2], double bus_factor, bool cpu,
                bool checked, const char *algo);

/* One size of the overlap mode (--overlap): times in us, overlap in %. */
struct pt_overlap_row {
  double comm_us, compute_us, overall_us, cpu_us, overlap;
  uint64_t wrong;
};

void pt_print_overlap_header(FILE *f, bool algo_column, bool cpu, bool idle);

void pt_print_overlap_row(FILE *f, size_t bytes, size_t count, enum pt_dtype t, enum pt_op op,
                          const struct pt_overlap_row *r, bool cpu, bool checked);

#endif /* ZCOLL_PERF_TABLE_H */
