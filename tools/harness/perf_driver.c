/*
 * perf_driver.c -- the benchmark driver shared by zcoll_perf and perf/mpi_allreduce_perf.
 * For every cycle (-N), dtype, op and size it times out-of-place and in-place runs of the
 * collective -t chose (a broadcast: in-place only, and -o does not apply; a barrier: one
 * 0-byte row, in place, whatever the sizes, dtypes and ops),
 * checks one more run of each against perf_check.h's reference and prints perf_table.h's
 * row; with --overlap, perf_overlap.h's row instead. The library is reached only through
 * perf_backend.h's table.
 *
 * A timed iteration is -m collectives. -z 1: each iteration ends before the next begins
 * (one blocking call with -m 1; else -m posted, then all waited). -z 0: every collective
 * is posted non-blocking, at most PT_WINDOW in flight (when full, the oldest is waited
 * for), and whatever is in flight is waited for at the end of the timed loop, inside the
 * timing. Either way the time is the loop's over iterations x -m, per rank; the ranks'
 * times are combined as -a says (the timed loop itself is perf_backend.c's).
 */
#include "perf_driver.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "perf_overlap.h"
#include "perf_xchg.h"

/* One placement (c->sendbuf NULL: in place): timed, then one more run on fresh buffers
 * checked, made the way the timed ones were (non-blocking with -z 0). */
static int pt_measure(const struct pt_opts *o, const struct pt_backend *be,
                      const struct pt_pattern *pat, const struct pt_call *c, struct pt_cell *cell) {
  const bool xchg = pt_is_xchg(c->coll);
  if (xchg)
    pt_xchg_fill(pat, c->sendbuf, c->recvbuf, c->count);
  else
    pt_fill_input(pat, c->sendbuf, c->recvbuf, c->count);
  if (pt_time_one(o, be, c, cell)) return -1;
  cell->wrong = 0;
  if (!o->check) return 0;
  if (xchg)
    pt_xchg_arm(pat, c->sendbuf, c->recvbuf, c->count);
  else
    pt_check_arm(pat, c->sendbuf, c->recvbuf, c->count);
  if (pt_one(be, o->blocking == 0, c)) return -1;
  cell->wrong = xchg ? pt_xchg_check(pat, c->sendbuf, c->recvbuf, c->count)
                     : pt_check_count(pat, c->sendbuf, c->recvbuf, c->count);
  return 0;
}

/* Whether count is one rank's block of the row: allgather, reduce-scatter, the exchanges
 * (not a sendrecv: its one message is the row's size, as in sendrecv_perf). */
static bool pt_per_rank(enum pt_coll coll) {
  return coll == PT_COLL_ALLGATHER || coll == PT_COLL_REDUCE_SCATTER ||
         (pt_is_xchg(coll) && coll != PT_COLL_SENDRECV);
}

/* Whether the root column holds a root. */
static bool pt_rooted(enum pt_coll coll) {
  return coll == PT_COLL_BROADCAST || coll == PT_COLL_REDUCE || coll == PT_COLL_GATHER ||
         coll == PT_COLL_SCATTER;
}

/* The size column: the vector, or (allgather, reduce-scatter, exchanges) all ranks' blocks. */
static size_t pt_row_bytes(const struct pt_call *c, size_t esize, int nranks) {
  bool blocks = pt_per_rank(c->coll);
  return c->count * esize * (blocks ? (size_t)nranks : 1);
}

static const char *pt_algorithm(const struct pt_backend *be, const struct pt_call *c, int *rc) {
  const char *algo = NULL;
  *rc = be->algorithm ? be->algorithm(be->ctx, c->coll, c->count, c->t, c->op, c->root, &algo) : 0;
  return algo ? algo : "-";
}

/* -v: every rank's own times (out of place, in place; c[] before -a combined them) and
 * the collectives its timed loops issued, gathered (each rank fills its entries, the
 * others are 0, one sum each) and printed by rank 0 under the row. */
static int pt_rank_times(const struct pt_backend *be, const struct pt_cell c[2], bool first_na) {
  const size_t p = (size_t)be->nranks, me = (size_t)be->rank;
  double *v = calloc(2 * p, sizeof *v);
  uint64_t *n = calloc(2 * p, sizeof *n);
  int rc = -1;
  if (!v || !n) {
    fprintf(stderr, "%s: rank %d: out of memory for -v\n", be->prog, be->rank);
    goto out;
  }
  for (size_t k = 0; k < 2; k++) {
    v[2 * me + k] = c[k].time_us;
    n[2 * me + k] = c[k].timed;
  }
  if (be->sum_double(be->ctx, v, 2 * p) || be->sum_u64(be->ctx, n, 2 * p)) goto out;
  rc = 0;
  for (size_t r = 0; be->rank == 0 && r < p; r++) {
    printf("#   rank %3zu: time", r);
    if (first_na)
      printf(" N/A");
    else
      printf(" %.3f", v[2 * r]);
    printf(" %.3f us (out of place, in place)", v[2 * r + 1]);
    if (be->collectives) printf(", timed collectives %" PRIu64 " %" PRIu64, n[2 * r], n[2 * r + 1]);
    printf("\n");
  }
out:
  free(v);
  free(n);
  return rc;
}

/* One row of the table: both placements, combined over the ranks, printed on rank 0. A
 * broadcast has one buffer, a barrier none: only the in-place cell is measured, the other
 * says N/A; alltoallv's and sendrecv's in-place cells are N/A (pt_xchg_has_in_place). */
static int pt_table_row(const struct pt_opts *o, const struct pt_backend *be,
                        const struct pt_pattern *pat, const struct pt_call *call,
                        struct pt_totals *tot) {
  const struct pt_reducer red = pt_reducer_of(be);
  const bool bcast = call->coll == PT_COLL_BROADCAST;
  const bool reduces = call->coll == PT_COLL_ALLREDUCE || call->coll == PT_COLL_REDUCE_SCATTER ||
                       call->coll == PT_COLL_REDUCE;
  /* the first cell measured: 0 out of place, 1 in place (one buffer, or none) */
  const int first = bcast || call->coll == PT_COLL_BARRIER;
  /* past the last cell measured */
  const int last = pt_is_xchg(call->coll) && !pt_xchg_has_in_place(call->coll) ? 1 : 2;
  struct pt_cell c[2] = {{0.0, 0.0, 0, 0}, {0.0, 0.0, 0, 0}};
  for (int k = first; k < last; k++) {
    struct pt_call kc = *call;
    if (k == 1) kc.sendbuf = NULL;
    if (pt_measure(o, be, pat, &kc, &c[k])) return -1;
  }
  const struct pt_cell own[2] = {c[0], c[1]}; /* this rank's, for -v */
  double v[4] = {c[0].time_us, c[1].time_us, c[0].cpu_us, c[1].cpu_us};
  uint64_t wrong[2] = {c[0].wrong, c[1].wrong};
  if (pt_combine(&red, o->average, v, o->cputime ? 4 : 2)) return -1;
  if (o->check && be->sum_u64(be->ctx, wrong, 2)) return -1;
  int rc;
  const char *algo = pt_algorithm(be, call, &rc);
  if (rc) return -1;
  const size_t bytes = pt_row_bytes(call, pat->esize, be->nranks);
  const double factor = pt_bus_factor(call->coll, be->nranks);
  for (int k = first; k < last; k++) {
    c[k].time_us = v[k];
    c[k].cpu_us = v[2 + k];
    c[k].wrong = wrong[k];
    tot->wrong += wrong[k];
    tot->sum += pt_algbw(bytes, v[k]) * factor;
    tot->n++;
  }
  if (be->rank == 0) {
    pt_print_row_start(stdout, bytes, call->count, call->t,
                       reduces ? pt_op_names[call->op] : "none",
                       pt_rooted(call->coll) ? call->root : -1);
    if (first) pt_print_na_cell(stdout, o->cputime);
    for (int k = first; k < last; k++)
      pt_print_cell(stdout, &c[k], bytes, factor, o->cputime, o->check);
    if (last < 2) pt_print_na_cell(stdout, o->cputime);
    if (be->algorithm) printf("  %s", algo);
    printf("\n");
    fflush(stdout);
  }
  if (o->verbose && pt_rank_times(be, own, first)) return -1;
  if (tot->csv) {
    const bool measured[2] = {!first, last == 2};
    pt_csv_row(tot->csv, bytes, call->count, call->t, reduces ? pt_op_names[call->op] : "none",
               bcast || call->coll == PT_COLL_GATHER || call->coll == PT_COLL_SCATTER ? call->root
                                                                                      : -1,
               c, measured, factor, o->cputime, o->check, be->algorithm ? algo : NULL);
    /* Whole rows on disk as they come (-N 0 ends by a signal); a write error ends the run
     * there and then, as any error does (the caller aborts the job). */
    if (fflush(tot->csv) != 0) {
      tot->csv_err = errno ? errno : EIO;
      fprintf(stderr, "%s: -F %s: %s\n", be->prog, o->csv, strerror(tot->csv_err));
      return -1;
    }
  }
  return 0;
}

/* One row of the overlap table. */
static int pt_overlap_row(const struct pt_opts *o, const struct pt_backend *be,
                          const struct pt_pattern *pat, struct pt_compute *cp,
                          const struct pt_call *c, struct pt_totals *tot) {
  struct pt_overlap_row r;
  if (pt_overlap_size(o, be, pat, cp, c, &r)) return -1;
  int rc;
  const char *algo = pt_algorithm(be, c, &rc);
  if (rc) return -1;
  tot->wrong += r.wrong;
  tot->sum += r.overlap;
  tot->n++;
  if (be->rank == 0) {
    pt_print_overlap_row(stdout, c->count * pat->esize, c->count, c->t, c->op, &r, o->cputime,
                         o->check);
    if (be->algorithm) printf("  %s", algo);
    printf("\n");
    fflush(stdout);
  }
  return 0;
}

/* The section's pattern: an allreduce's for its dtype and op, a broadcast's for its dtype
 * (renewed for every row by pt_run_section). */
static int pt_section_pattern(const struct pt_opts *o, const struct pt_backend *be,
                              struct pt_pattern *pat, enum pt_dtype t, enum pt_op op) {
  int rc = o->coll == PT_COLL_ALLREDUCE
               ? pt_pattern_init(pat, t, op, be->rank, be->nranks, o->check != 0)
           : o->coll == PT_COLL_REDUCE_SCATTER
               ? pt_pattern_init_scatter(pat, t, op, be->rank, be->nranks, o->check != 0)
           : o->coll == PT_COLL_REDUCE    ? pt_pattern_init_reduce(pat, t, op, be->rank, be->nranks,
                                                                   (int)o->root, o->check != 0)
           : o->coll == PT_COLL_ALLGATHER ? pt_pattern_init_gather(pat, t, be->rank, be->nranks)
           : pt_is_xchg(o->coll)
               ? pt_pattern_init_xchg(pat, t, o->coll, be->rank, be->nranks, (int)o->root)
               : pt_pattern_init_bcast(pat, t); /* a barrier too */
  if (rc) fprintf(stderr, "%s: rank %d: out of memory for the check pattern\n", be->prog, be->rank);
  return rc;
}

/* One table section: every size for one dtype and op (a broadcast: for one dtype). */
static int pt_run_section(const struct pt_opts *o, const struct pt_backend *be,
                          unsigned char *sendbuf, unsigned char *recvbuf, enum pt_dtype t,
                          enum pt_op op, struct pt_compute *cp, struct pt_totals *tot) {
  struct pt_pattern pat;
  if (pt_section_pattern(o, be, &pat, t, op)) return -1;
  int rc = 0;
  size_t prev = SIZE_MAX;
  for (size_t s = o->minbytes; rc == 0;) {
    size_t count = o->coll == PT_COLL_BARRIER ? 0 : pt_count_for(s, pat.esize);
    /* nccl-tests' sizes: all ranks' blocks, each the same whole number of elements */
    if (pt_per_rank(o->coll)) count /= (size_t)be->nranks;
    if (count != prev) {
      prev = count;
      struct pt_call c = {o->coll, sendbuf, recvbuf, count, t, op, (int)o->root};
      /* a new broadcast pattern for every row: one row's data cannot pass the next check */
      if (o->coll == PT_COLL_BROADCAST) pt_pattern_bcast(&pat, c.root, be->rank, (uint64_t)tot->n);
      rc = o->overlap ? pt_overlap_row(o, be, &pat, cp, &c, tot)
                      : pt_table_row(o, be, &pat, &c, tot);
    }
    if (o->coll == PT_COLL_BARRIER || !pt_next_size(o, &s)) break;
  }
  pt_pattern_free(&pat);
  return rc;
}

void pt_print_section_start(const struct pt_opts *o, long cycle, int d, int k, bool algo_column) {
  if (cycle + d + k > 1) printf("#\n");
  if (o->cycles == 0 && d + k == 0) printf("# cycle %ld (until interrupted)\n", cycle);
  if (o->cycles > 1 && d + k == 0) printf("# cycle %ld of %ld\n", cycle, o->cycles);
  if (o->overlap)
    pt_print_overlap_header(stdout, algo_column, o->cputime, o->idle);
  else
    pt_print_header(stdout, algo_column, o->cputime);
}

/* Every dtype x op section, once per cycle, a table each. A broadcast ignores -o: one
 * section per dtype; a barrier -d too: one section. */
static int pt_run_cycles(const struct pt_opts *o, const struct pt_backend *be,
                         unsigned char *sendbuf, unsigned char *recvbuf, struct pt_compute *cp,
                         struct pt_totals *tot) {
  const int nops = o->coll == PT_COLL_ALLREDUCE || o->coll == PT_COLL_REDUCE_SCATTER ||
                           o->coll == PT_COLL_REDUCE
                       ? o->nops
                       : 1;
  const int ndtypes = o->coll == PT_COLL_BARRIER ? 1 : o->ndtypes;
  for (long cycle = 1; o->cycles == 0 || cycle <= o->cycles; cycle++) {
    for (int d = 0; d < ndtypes; d++) {
      for (int k = 0; k < nops; k++) {
        if (be->rank == 0) pt_print_section_start(o, cycle, d, k, be->algorithm != NULL);
        if (pt_run_section(o, be, sendbuf, recvbuf, o->dtypes[d], o->ops[k], cp, tot)) return -1;
      }
    }
  }
  return 0;
}

/* -F: rank 0 creates the file and writes the header; every rank learns whether it could
 * (one sum), so that all stop before timing anything. Returns 0, or -2 after rank 0's
 * message (a bad command line: exit 2), -1 if the sum failed. */
static int pt_csv_open(const struct pt_opts *o, const struct pt_backend *be, FILE **csv) {
  *csv = NULL;
  if (!o->csv || o->overlap) return 0;
  uint64_t failed = 0;
  if (be->rank == 0) {
    *csv = fopen(o->csv, "w");
    if (*csv)
      pt_csv_header(*csv, be->algorithm != NULL, o->cputime);
    else {
      fprintf(stderr, "%s: -F %s: cannot create the CSV file: %s\n", be->prog, o->csv,
              strerror(errno));
      failed = 1;
    }
  }
  if (be->sum_u64(be->ctx, &failed, 1)) return -1;
  return failed ? -2 : 0;
}

int pt_run(const struct pt_opts *o, const struct pt_backend *be) {
  size_t bytes = (o->maxbytes > 8 ? o->maxbytes : 8) + PT_ALIGN; /* room for the guard */
  void *sendbuf = NULL, *recvbuf = NULL;
  int err = 0;
  if (o->mem) { /* page-aligned, past PT_ALIGN */
    if (!(sendbuf = be->mem_alloc(be->ctx, bytes)) || !(recvbuf = be->mem_alloc(be->ctx, bytes))) {
      if (sendbuf) be->mem_free(be->ctx, sendbuf);
      return -1;
    }
  } else {
    err = posix_memalign(&sendbuf, PT_ALIGN, bytes);
    if (err == 0) err = posix_memalign(&recvbuf, PT_ALIGN, bytes);
  }
  if (err != 0) {
    fprintf(stderr, "%s: rank %d: cannot allocate 2 x %zu bytes: %s\n", be->prog, be->rank, bytes,
            strerror(err));
    free(sendbuf);
    return -1;
  }
  struct pt_compute cp = {NULL, o->idle, 0.0, 0.0};
  struct pt_totals tot = {0, 0.0, 0, NULL, 0};
  int rc = pt_csv_open(o, be, &tot.csv);
  if (o->overlap && pt_compute_init(&cp)) {
    fprintf(stderr, "%s: rank %d: out of memory for the computation\n", be->prog, be->rank);
    rc = -1;
  }
  if (rc == 0 && o->reg &&
      (be->register_mem(be->ctx, sendbuf, bytes) || be->register_mem(be->ctx, recvbuf, bytes)))
    rc = -1;
  if (rc == 0) rc = pt_run_cycles(o, be, sendbuf, recvbuf, &cp, &tot);
  if (rc == 0 && o->reg && be->deregister_all(be->ctx)) rc = -1;
  pt_compute_free(&cp);
  if (o->mem) {
    be->mem_free(be->ctx, sendbuf);
    be->mem_free(be->ctx, recvbuf);
  } else {
    free(sendbuf);
    free(recvbuf);
  }
  if (rc == -2) return -2;
  if (tot.csv && fclose(tot.csv) != 0 && rc == 0) {
    fprintf(stderr, "%s: -F %s: %s\n", be->prog, o->csv, strerror(errno));
    rc = -1;
  }
  if (rc) return -1;
  if (be->rank == 0) {
    pt_print_footer(stdout, tot.wrong, o->overlap ? "Avg overlap (%)" : "Avg bus bandwidth",
                    tot.n ? tot.sum / (double)tot.n : 0.0);
    fflush(stdout);
  }
  return tot.wrong ? 1 : 0;
}
