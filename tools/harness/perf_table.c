/*
 * perf_table.c -- nccl-tests' table as the benchmarks print it (see perf_table.h): the
 * names, the busbw formula, the header, rows and footer, the CSV form and the overlap
 * table. Only stdio: the columns must stay byte for byte what nccl-tests' readers parse.
 */
#include "perf_table.h"

#include <inttypes.h>
#include <string.h>

/* ---- names and sizes ------------------------------------------------------------- */

const char *const pt_dtype_names[PT_DTYPE_COUNT] = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "bfloat16", "float", "double"};
const char *const pt_op_names[PT_OP_COUNT] = {"sum", "prod", "min", "max", "avg"};
const char *const pt_coll_names[PT_COLL_COUNT] = {
    "allreduce", "broadcast", "barrier",    "allgather", "reduce_scatter", "reduce",
    "alltoall",  "alltoallv", "allgatherv", "gather",    "scatter",        "sendrecv"};
static const size_t pt_dtype_sizes[PT_DTYPE_COUNT] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};

size_t pt_dtype_size(enum pt_dtype t) { return pt_dtype_sizes[t]; }

/* ---- the table ------------------------------------------------------------------- */

/* busbw = algbw * this, as nccl-tests: 2(p-1)/p for an allreduce (each rank sends and
 * receives that share of the vector), (p-1)/p for an allgather and a reduce-scatter
 * (their size is all ranks' blocks, of which each rank receives all but its own), 1 for
 * a broadcast and a reduce (each byte crosses a link once per receiving rank, and the
 * slowest link carries the whole vector); (p-1)/p for alltoall(v), allgatherv, gather and
 * scatter too (nccl-tests' doc/PERFORMANCE.md: of the size, all but the rank's own block
 * crosses its link); 1 for a sendrecv (its one message crosses one link, as
 * sendrecv_perf has it). */
double pt_bus_factor(enum pt_coll coll, int nranks) {
  if (nranks <= 0) return 0.0;
  if (coll == PT_COLL_SENDRECV) return 1.0;
  if (coll == PT_COLL_ALLGATHER || coll == PT_COLL_REDUCE_SCATTER || coll >= PT_COLL_ALLTOALL)
    return (double)(nranks - 1) / nranks;
  if (coll != PT_COLL_ALLREDUCE) return 1.0; /* a barrier moves no bytes: 0 either way */
  return 2.0 * (nranks - 1) / nranks;
}

double pt_algbw(size_t bytes, double time_us) {
  return time_us > 0.0 ? (double)bytes / time_us / 1.0e3 : 0.0;
}

/* A time or CPU time in a 7-wide column, with fewer decimals as it grows. */
static const char *pt_fmt_us(char buf[32], double us) {
  snprintf(buf, 32, us >= 10000.0 ? "%7.0f" : us >= 100.0 ? "%7.1f" : "%7.2f", us);
  return buf;
}

void pt_print_header(FILE *f, bool algo_column, bool cpu) {
  const char *c = cpu ? "  %7s" : "%.0s"; /* the cpu column, or nothing */
  char fmt[160];
  fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %*sout-of-place%*sin-place\n", "", "", "", "", "",
          cpu ? 13 : 9, "", cpu ? 32 : 23, "");
  snprintf(
      fmt, sizeof fmt,
      "# %%10s  %%12s  %%8s  %%6s  %%6s  %%7s%s  %%6s  %%6s %%6s  %%7s%s  %%6s  %%6s %%6s%%s\n", c,
      c);
  fprintf(f, fmt, "size", "count", "type", "redop", "root", "time", "cpu", "algbw", "busbw",
          "#wrong", "time", "cpu", "algbw", "busbw", "#wrong", algo_column ? "  algorithm" : "");
  snprintf(fmt, sizeof fmt,
           "# %%10s  %%12s  %%8s  %%6s  %%6s  %%7s%s  %%6s  %%6s  %%5s  %%7s%s  %%6s  %%6s\n", c,
           c);
  fprintf(f, fmt, "(B)", "(elements)", "", "", "", "(us)", "(us)", "(GB/s)", "(GB/s)", "", "(us)",
          "(us)", "(GB/s)", "(GB/s)");
}

void pt_print_row_start(FILE *f, size_t bytes, size_t count, enum pt_dtype t, const char *redop,
                        int root) {
  fprintf(f, "%12zu  %12zu  %8s  %6s  %6i", bytes, count, pt_dtype_names[t], redop, root);
}

void pt_print_cell(FILE *f, const struct pt_cell *c, size_t bytes, double bus_factor, bool cpu,
                   bool checked) {
  char tbuf[32], cbuf[32];
  double algbw = pt_algbw(bytes, c->time_us);
  fprintf(f, "  %7s", pt_fmt_us(tbuf, c->time_us));
  if (cpu) fprintf(f, "  %7s", pt_fmt_us(cbuf, c->cpu_us));
  fprintf(f, "  %6.2f  %6.2f", algbw, algbw * bus_factor);
  if (checked)
    fprintf(f, "  %5" PRIu64, c->wrong);
  else
    fprintf(f, "  %5s", "N/A");
}

void pt_print_na_cell(FILE *f, bool cpu) {
  fprintf(f, "  %7s%s  %6s  %6s  %5s", "N/A", cpu ? "      N/A" : "", "N/A", "N/A", "N/A");
}

void pt_print_footer(FILE *f, uint64_t wrong, const char *avg_name, double avg) {
  fprintf(f, "# %-20s : %" PRIu64 " %s\n", "Out of bounds values", wrong, wrong ? "FAILED" : "OK");
  fprintf(f, "# %-20s : %g\n#\n", avg_name, avg);
}

/* ---- the table as CSV (-F) ------------------------------------------------------- */

/* Three header rows, as the printed table's: the column group (out-of-place, in-place),
 * the name, the unit; pandas reads them with read_csv(f, header=[0, 1, 2]). */
void pt_csv_header(FILE *f, bool algo_column, bool cpu) {
  static const char *const group_cols[] = {"time", "cpu", "algbw", "busbw", "#wrong"};
  static const char *const group_units[] = {"(us)", "(us)", "(GB/s)", "(GB/s)", ""};
  fputs(",,,,", f);
  for (int g = 0; g < 2; g++)
    for (int i = 0; i < 5; i++)
      if (i != 1 || cpu) fprintf(f, ",%s", g ? "in-place" : "out-of-place");
  fputs(algo_column ? ",\n" : "\n", f);
  fputs("size,count,type,redop,root", f);
  for (int g = 0; g < 2; g++)
    for (int i = 0; i < 5; i++)
      if (i != 1 || cpu) fprintf(f, ",%s", group_cols[i]);
  fputs(algo_column ? ",algorithm\n" : "\n", f);
  fputs("(B),(elements),,,", f);
  for (int g = 0; g < 2; g++)
    for (int i = 0; i < 5; i++)
      if (i != 1 || cpu) fprintf(f, ",%s", group_units[i]);
  fputs(algo_column ? ",\n" : "\n", f);
}

void pt_csv_row(FILE *f, size_t bytes, size_t count, enum pt_dtype t, const char *redop, int root,
                const struct pt_cell c[2], const bool measured[2], double bus_factor, bool cpu,
                bool checked, const char *algo) {
  fprintf(f, "%zu,%zu,%s,%s,%d", bytes, count, pt_dtype_names[t], redop, root);
  for (int k = 0; k < 2; k++) {
    if (!measured[k]) {
      fputs(cpu ? ",,,,," : ",,,,", f);
      continue;
    }
    double algbw = pt_algbw(bytes, c[k].time_us);
    fprintf(f, ",%.3f", c[k].time_us);
    if (cpu) fprintf(f, ",%.3f", c[k].cpu_us);
    fprintf(f, ",%.6f,%.6f,", algbw, algbw * bus_factor);
    if (checked) fprintf(f, "%" PRIu64, c[k].wrong);
  }
  if (algo) fprintf(f, ",%s", algo);
  fputc('\n', f);
}

/* ---- the overlap table (--overlap) ------------------------------------------------ */

void pt_print_overlap_header(FILE *f, bool algo_column, bool cpu, bool idle) {
  fprintf(f, "# %10s  %12s  %8s  %6s  out-of-place, overlapped with %s\n", "", "", "", "",
          idle ? "an idle wait (compute = sleep)" : "computation");
  fprintf(f, "# %10s  %12s  %8s  %6s  %7s  %7s  %7s%s  %7s  %6s%s\n", "size", "count", "type",
          "redop", "comm", "compute", "overall", cpu ? "      cpu" : "", "overlap", "#wrong",
          algo_column ? "  algorithm" : "");
  fprintf(f, "# %10s  %12s  %8s  %6s  %7s  %7s  %7s%s  %7s\n", "(B)", "(elements)", "", "", "(us)",
          "(us)", "(us)", cpu ? "     (us)" : "", "(%)");
}

void pt_print_overlap_row(FILE *f, size_t bytes, size_t count, enum pt_dtype t, enum pt_op op,
                          const struct pt_overlap_row *r, bool cpu, bool checked) {
  char b[4][32];
  fprintf(f, "%12zu  %12zu  %8s  %6s  %7s  %7s  %7s", bytes, count, pt_dtype_names[t],
          pt_op_names[op], pt_fmt_us(b[0], r->comm_us), pt_fmt_us(b[1], r->compute_us),
          pt_fmt_us(b[2], r->overall_us));
  if (cpu) fprintf(f, "  %7s", pt_fmt_us(b[3], r->cpu_us));
  fprintf(f, "  %7.2f", r->overlap);
  if (checked)
    fprintf(f, "  %6" PRIu64, r->wrong);
  else
    fprintf(f, "  %6s", "N/A");
}
