/* zcoll_perf: the allreduce benchmark, in the manner of nccl-tests' all_reduce_perf, and
 * with -t broadcast the broadcast's, in the manner of its broadcast_perf (-t allgather,
 * -t reduce_scatter, -t reduce: its all_gather_perf, reduce_scatter_perf and reduce_perf;
 * -t alltoall, -t gather, -t scatter: its alltoall_perf, gather_perf, scatter_perf, and
 * -t alltoallv, -t allgatherv with perf_xchg.h's uneven counts; -t sendrecv: its
 * sendrecv_perf, zcoll_perf_pair.h; -t barrier).
 *
 *   zcoll_run -np 4 zcoll_perf -b 8 -e 64M -f 2 -d float -o sum
 *   zcoll_run -np 4 zcoll_perf -t broadcast -r 1 -b 8 -e 64M
 *
 * For every size it times out-of-place and in-place allreduces (w warmups, then the mean
 * of n iterations on each rank, non-blocking zcoll_iallreduce by default, blocking
 * zcoll_allreduce with -z 1; the table combines the ranks' times as -a says), then
 * checks one more run of each on freshly filled buffers against a reference computed
 * without zcoll; --overlap measures instead how much of a zcoll_iallreduce overlaps a
 * computation. A broadcast (zcoll_ibroadcast, zcoll_broadcast) is timed in place only:
 * zcoll's has one buffer. The options, table, pattern and driver are the harness
 * (tools/harness/, the static library zcoll_perf_harness), shared with
 * perf/mpi_allreduce_perf.c so that both measure exactly the same thing; this file is the
 * zcoll backend of that driver, its ops table. Only the public API (zcoll.h) is used.
 * Exit status: 0, 1 on an error or a wrong element, 2 on a bad command line. */
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zcoll.h"
#include "perf_driver.h"
#include "perf_xchg.h"
#include "zcoll_perf_pair.h"

#define PROG "zcoll_perf"

_Static_assert((int)PT_DTYPE_COUNT == (int)ZCOLL_DTYPE_COUNT, "dtype lists differ");
_Static_assert((int)PT_OP_COUNT == (int)ZCOLL_OP_COUNT, "op lists differ");

static const zcoll_dtype_t dtype_map[PT_DTYPE_COUNT] = {
    [PT_INT8] = ZCOLL_INT8,       [PT_UINT8] = ZCOLL_UINT8,       [PT_INT32] = ZCOLL_INT32,
    [PT_UINT32] = ZCOLL_UINT32,   [PT_INT64] = ZCOLL_INT64,       [PT_UINT64] = ZCOLL_UINT64,
    [PT_FLOAT16] = ZCOLL_FLOAT16, [PT_BFLOAT16] = ZCOLL_BFLOAT16, [PT_FLOAT32] = ZCOLL_FLOAT32,
    [PT_FLOAT64] = ZCOLL_FLOAT64};
static const zcoll_op_t op_map[PT_OP_COUNT] = {[PT_SUM] = ZCOLL_SUM,
                                               [PT_PROD] = ZCOLL_PROD,
                                               [PT_MIN] = ZCOLL_MIN,
                                               [PT_MAX] = ZCOLL_MAX,
                                               [PT_AVG] = ZCOLL_AVG};

struct perf_ctx {
  zcoll_comm_t *comm;
  int rank;
  zcoll_mr_t *mr[2]; /* -R 1: the send and receive buffers */
  int nmr;
  int nranks;
  /* alltoallv's and allgatherv's sendcounts, sdispls, recvcounts, rdispls (p each), built
   * for vcoll and vcount (a row's), once per row */
  size_t *v;
  enum pt_coll vcoll;
  size_t vcount;
  struct perf_pairs pairs; /* -t sendrecv -z 0: the sends of the receives in the window */
  int in_group;            /* --group 1: between perf_group_start and perf_group_end */
};

/* "zcoll_perf: <what>: <strerror>: <detail>" */
static void report(const struct perf_ctx *c, const char *what, zcoll_status_t st) {
  const char *detail = c && c->comm ? zcoll_comm_last_error(c->comm) : zcoll_last_error();
  fprintf(stderr, PROG ": %s: %s: %s\n", what, zcoll_strerror(st),
          detail && *detail ? detail : "(no details)");
}

/* 0 if st is ZCOLL_OK, else -1 after reporting what failed (a printf format). */
__attribute__((format(printf, 3, 4))) static int check(const struct perf_ctx *c, zcoll_status_t st,
                                                       const char *fmt, ...) {
  if (st == ZCOLL_OK) return 0;
  char what[192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  report(c, what, st);
  return -1;
}

static const char *placement(const void *sendbuf) { return sendbuf ? "out-of-place" : "in-place"; }

static int perf_allreduce(void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                          enum pt_dtype t, enum pt_op op) {
  struct perf_ctx *c = ctx;
  zcoll_status_t st = zcoll_allreduce(c->comm, sendbuf ? sendbuf : ZCOLL_IN_PLACE, recvbuf, count,
                                      dtype_map[t], op_map[op]);
  return check(c, st, "zcoll_allreduce (rank %d, %zu x %s, %s, %s)", c->rank, count,
               pt_dtype_names[t], pt_op_names[op], placement(sendbuf));
}

static int perf_iallreduce(void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                           enum pt_dtype t, enum pt_op op, struct pt_req **req) {
  struct perf_ctx *c = ctx;
  zcoll_request_t *r = NULL;
  zcoll_status_t st = zcoll_iallreduce(c->comm, sendbuf ? sendbuf : ZCOLL_IN_PLACE, recvbuf, count,
                                       dtype_map[t], op_map[op], &r);
  if (check(c, st, "zcoll_iallreduce (rank %d, %zu x %s, %s, %s)", c->rank, count,
            pt_dtype_names[t], pt_op_names[op], placement(sendbuf)))
    return -1;
  *req = (struct pt_req *)r;
  return 0;
}

static int perf_broadcast(void *ctx, void *buf, size_t count, enum pt_dtype t, int root) {
  struct perf_ctx *c = ctx;
  zcoll_status_t st = zcoll_broadcast(c->comm, buf, count, dtype_map[t], root);
  return check(c, st, "zcoll_broadcast (rank %d, %zu x %s, root %d)", c->rank, count,
               pt_dtype_names[t], root);
}

static int perf_ibroadcast(void *ctx, void *buf, size_t count, enum pt_dtype t, int root,
                           struct pt_req **req) {
  struct perf_ctx *c = ctx;
  zcoll_request_t *r = NULL;
  zcoll_status_t st = zcoll_ibroadcast(c->comm, buf, count, dtype_map[t], root, &r);
  if (check(c, st, "zcoll_ibroadcast (rank %d, %zu x %s, root %d)", c->rank, count,
            pt_dtype_names[t], root))
    return -1;
  *req = (struct pt_req *)r;
  return 0;
}

static int perf_allgather(void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                          enum pt_dtype t) {
  struct perf_ctx *c = ctx;
  zcoll_status_t st = zcoll_allgather(c->comm, sendbuf ? sendbuf : ZCOLL_IN_PLACE, recvbuf, count,
                                      dtype_map[t]);
  return check(c, st, "zcoll_allgather (rank %d, %zu x %s, %s)", c->rank, count, pt_dtype_names[t],
               placement(sendbuf));
}

static int perf_iallgather(void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                           enum pt_dtype t, struct pt_req **req) {
  struct perf_ctx *c = ctx;
  zcoll_request_t *r = NULL;
  zcoll_status_t st = zcoll_iallgather(c->comm, sendbuf ? sendbuf : ZCOLL_IN_PLACE, recvbuf, count,
                                       dtype_map[t], &r);
  if (check(c, st, "zcoll_iallgather (rank %d, %zu x %s, %s)", c->rank, count, pt_dtype_names[t],
            placement(sendbuf)))
    return -1;
  *req = (struct pt_req *)r;
  return 0;
}

static int perf_reduce_scatter(void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                               enum pt_dtype t, enum pt_op op) {
  struct perf_ctx *c = ctx;
  zcoll_status_t st = zcoll_reduce_scatter(c->comm, sendbuf ? sendbuf : ZCOLL_IN_PLACE, recvbuf,
                                           count, dtype_map[t], op_map[op]);
  return check(c, st, "zcoll_reduce_scatter (rank %d, %zu x %s, %s, %s)", c->rank, count,
               pt_dtype_names[t], pt_op_names[op], placement(sendbuf));
}

static int perf_ireduce_scatter(void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                                enum pt_dtype t, enum pt_op op, struct pt_req **req) {
  struct perf_ctx *c = ctx;
  zcoll_request_t *r = NULL;
  zcoll_status_t st = zcoll_ireduce_scatter(c->comm, sendbuf ? sendbuf : ZCOLL_IN_PLACE, recvbuf,
                                            count, dtype_map[t], op_map[op], &r);
  if (check(c, st, "zcoll_ireduce_scatter (rank %d, %zu x %s, %s, %s)", c->rank, count,
            pt_dtype_names[t], pt_op_names[op], placement(sendbuf)))
    return -1;
  *req = (struct pt_req *)r;
  return 0;
}

/* In place, ZCOLL_IN_PLACE is the root's only: a non-root's input is recvbuf, and it needs
 * no result buffer (NULL: the library must not write there). */
static int perf_reduce(void *ctx, const void *sendbuf, void *recvbuf, size_t count, enum pt_dtype t,
                       enum pt_op op, int root) {
  struct perf_ctx *c = ctx;
  const int mine = c->rank == root;
  zcoll_status_t st = zcoll_reduce(c->comm,
                                   sendbuf ? sendbuf
                                   : mine  ? ZCOLL_IN_PLACE
                                           : recvbuf,
                                   mine ? recvbuf : NULL, count, dtype_map[t], op_map[op], root);
  return check(c, st, "zcoll_reduce (rank %d, %zu x %s, %s, root %d, %s)", c->rank, count,
               pt_dtype_names[t], pt_op_names[op], root, placement(sendbuf));
}

static int perf_ireduce(void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                        enum pt_dtype t, enum pt_op op, int root, struct pt_req **req) {
  struct perf_ctx *c = ctx;
  const int mine = c->rank == root;
  zcoll_request_t *r = NULL;
  zcoll_status_t st = zcoll_ireduce(c->comm,
                                    sendbuf ? sendbuf
                                    : mine  ? ZCOLL_IN_PLACE
                                            : recvbuf,
                                    mine ? recvbuf : NULL, count, dtype_map[t], op_map[op], root,
                                    &r);
  if (check(c, st, "zcoll_ireduce (rank %d, %zu x %s, %s, root %d, %s)", c->rank, count,
            pt_dtype_names[t], pt_op_names[op], root, placement(sendbuf)))
    return -1;
  *req = (struct pt_req *)r;
  return 0;
}

/* The v-forms' arrays for a row (perf_xchg.h's counts, packed); -1 out of memory. */
static int perf_vlayout(struct perf_ctx *c, enum pt_coll coll, size_t count) {
  const int p = c->nranks;
  if (!c->v && !(c->v = calloc(4 * (size_t)p, sizeof *c->v))) {
    fprintf(stderr, PROG ": rank %d: out of memory for the counts\n", c->rank);
    return -1;
  }
  if (c->vcoll == coll && c->vcount == count) return 0;
  size_t *sc = c->v, *sd = sc + p, *rc = sd + p, *rd = rc + p, sat = 0, rat = 0;
  for (int q = 0; q < p; q++) {
    sc[q] = pt_xchg_count(coll, c->rank, q, p, count);
    rc[q] = pt_xchg_count(coll, q, coll == PT_COLL_ALLGATHERV ? 0 : c->rank, p, count);
    sd[q] = sat;
    rd[q] = rat;
    sat += sc[q];
    rat += rc[q];
  }
  c->vcoll = coll;
  c->vcount = count;
  return 0;
}

/* One exchange, blocking (req NULL) or posted. In place (sendbuf NULL) as perf_backend.h
 * says: ZCOLL_IN_PLACE where MPI has it; a gather's non-root sends from recvbuf, a
 * scatter's root from recvbuf, keeping its block there. */
static int perf_exchange(struct perf_ctx *c, enum pt_coll coll, const void *sendbuf, void *recvbuf,
                         size_t count, enum pt_dtype t, int root, zcoll_request_t **req) {
  const zcoll_dtype_t dt = dtype_map[t];
  const int mine = c->rank == root;
  const void *in = sendbuf ? sendbuf : ZCOLL_IN_PLACE;
  zcoll_status_t st;
  if (coll == PT_COLL_SENDRECV)
    return check(
        c, perf_pair_run(&c->pairs, c->comm, sendbuf, recvbuf, count, dt, c->in_group, req),
        "zcoll_%ssendrecv (rank %d, %zu x %s)", req ? "i" : "", c->rank, count, pt_dtype_names[t]);
  if ((coll == PT_COLL_ALLTOALLV || coll == PT_COLL_ALLGATHERV) && perf_vlayout(c, coll, count))
    return -1;
  const size_t p = (size_t)c->nranks, *sc = c->v, *sd = sc + p, *rc = sd + p, *rd = rc + p;
  switch (coll) {
  case PT_COLL_ALLTOALL:
    st = req ? zcoll_ialltoall(c->comm, in, recvbuf, count, dt, req)
             : zcoll_alltoall(c->comm, in, recvbuf, count, dt);
    break;
  case PT_COLL_ALLTOALLV:
    st = req ? zcoll_ialltoallv(c->comm, in, sc, sd, recvbuf, rc, rd, dt, req)
             : zcoll_alltoallv(c->comm, in, sc, sd, recvbuf, rc, rd, dt);
    break;
  case PT_COLL_ALLGATHERV:
    st = req ? zcoll_iallgatherv(c->comm, in, rc[c->rank], recvbuf, rc, rd, dt, req)
             : zcoll_allgatherv(c->comm, in, rc[c->rank], recvbuf, rc, rd, dt);
    break;
  case PT_COLL_GATHER:
    in = sendbuf ? sendbuf : mine ? ZCOLL_IN_PLACE : recvbuf;
    st = req ? zcoll_igather(c->comm, in, mine ? recvbuf : NULL, count, dt, root, req)
             : zcoll_gather(c->comm, in, mine ? recvbuf : NULL, count, dt, root);
    break;
  default: { /* scatter */
    const void *from = !mine ? NULL : sendbuf ? sendbuf : recvbuf;
    void *to = mine && !sendbuf ? (void *)ZCOLL_IN_PLACE : recvbuf; /* the API's marker */
    st = req ? zcoll_iscatter(c->comm, from, to, count, dt, root, req)
             : zcoll_scatter(c->comm, from, to, count, dt, root);
  } break;
  }
  return check(c, st, "zcoll_%s%s (rank %d, %zu x %s, root %d, %s)", req ? "i" : "",
               pt_coll_names[coll], c->rank, count, pt_dtype_names[t], root, placement(sendbuf));
}

static int perf_xchg(void *ctx, enum pt_coll coll, const void *sendbuf, void *recvbuf, size_t count,
                     enum pt_dtype t, int root) {
  return perf_exchange(ctx, coll, sendbuf, recvbuf, count, t, root, NULL);
}

static int perf_ixchg(void *ctx, enum pt_coll coll, const void *sendbuf, void *recvbuf,
                      size_t count, enum pt_dtype t, int root, struct pt_req **req) {
  zcoll_request_t *r = NULL;
  if (perf_exchange(ctx, coll, sendbuf, recvbuf, count, t, root, &r)) return -1;
  *req = (struct pt_req *)r;
  return 0;
}

/* A request that ended, well or not, is freed here: completion does not free it. */
static int perf_wait(void *ctx, struct pt_req *req) {
  struct perf_ctx *c = ctx;
  zcoll_request_t *r = (zcoll_request_t *)req;
  if (check(c, perf_pair_end(&c->pairs, r), "zcoll_wait (rank %d, a sendrecv's send)", c->rank))
    return -1;
  zcoll_status_t st = zcoll_wait(r);
  zcoll_status_t fst = zcoll_request_free(r);
  if (check(c, st, "zcoll_wait (rank %d)", c->rank)) return -1;
  return check(c, fst, "zcoll_request_free (rank %d)", c->rank);
}

/* The driver's own small allreduces: the barrier, the times, the wrong counts. */
static int small(struct perf_ctx *c, void *v, size_t n, zcoll_dtype_t t, zcoll_op_t op,
                 const char *what) {
  zcoll_status_t st = zcoll_allreduce(c->comm, ZCOLL_IN_PLACE, v, n, t, op);
  return check(c, st, "zcoll_allreduce (rank %d, %s)", c->rank, what);
}

static int perf_barrier(void *ctx) {
  struct perf_ctx *c = ctx;
  return check(c, zcoll_barrier(c->comm), "zcoll_barrier (rank %d)", c->rank);
}

static int perf_ibarrier(void *ctx, struct pt_req **req) {
  struct perf_ctx *c = ctx;
  zcoll_request_t *r = NULL;
  if (check(c, zcoll_ibarrier(c->comm, &r), "zcoll_ibarrier (rank %d)", c->rank)) return -1;
  *req = (struct pt_req *)r;
  return 0;
}

static int perf_max_double(void *ctx, double *v, size_t n) {
  return small(ctx, v, n, ZCOLL_FLOAT64, ZCOLL_MAX, "max of the times");
}

static int perf_sum_double(void *ctx, double *v, size_t n) {
  return small(ctx, v, n, ZCOLL_FLOAT64, ZCOLL_SUM, "sum of the times");
}

static int perf_sum_u64(void *ctx, uint64_t *v, size_t n) {
  return small(ctx, v, n, ZCOLL_UINT64, ZCOLL_SUM, "sum of the wrong counts");
}

static int perf_algorithm(void *ctx, enum pt_coll coll, size_t count, enum pt_dtype t,
                          enum pt_op op, int root, const char **name) {
  struct perf_ctx *c = ctx;
  if (coll == PT_COLL_BARRIER) { /* lib/coll/barrier.c: the butterfly's schedule, one byte */
    *name = "butterfly";
    return 0;
  }
  if (coll == PT_COLL_SENDRECV) { /* two messages, no algorithm to choose: "-" */
    *name = NULL;
    return 0;
  }
  if (coll == PT_COLL_BROADCAST) {
    zcoll_status_t st = zcoll_broadcast_algorithm(c->comm, count, dtype_map[t], root, name);
    return check(c, st, "zcoll_broadcast_algorithm (rank %d, %zu x %s)", c->rank, count,
                 pt_dtype_names[t]);
  }
  /* The exchanges: the selector's choice for the out-of-place call (count is one block;
   * alltoallv and allgatherv have one algorithm each, which it names). In place, alltoall
   * runs pairwise whatever the size (zcoll_info -s -t alltoall says why). */
  if (coll == PT_COLL_ALLGATHER || coll == PT_COLL_REDUCE_SCATTER || coll == PT_COLL_REDUCE ||
      pt_is_xchg(coll)) {
    zcoll_status_t st = zcoll_collective_algorithm(c->comm, pt_coll_names[coll], count,
                                                   dtype_map[t], op_map[op], root, name);
    return check(c, st, "zcoll_collective_algorithm (rank %d, %s)", c->rank, pt_coll_names[coll]);
  }
  zcoll_status_t st = zcoll_allreduce_algorithm(c->comm, count, dtype_map[t], op_map[op], name);
  return check(c, st, "zcoll_allreduce_algorithm (rank %d, %zu x %s, %s)", c->rank, count,
               pt_dtype_names[t], pt_op_names[op]);
}

static uint64_t perf_collectives(void *ctx) {
  zcoll_comm_stats_t s;
  struct perf_ctx *c = ctx;
  return zcoll_comm_stats(c->comm, &s, sizeof s) == ZCOLL_OK ? s.collectives : 0;
}

static int perf_group_start(void *ctx) {
  struct perf_ctx *c = ctx;
  c->in_group = 1;
  return check(c, zcoll_group_start(c->comm), "zcoll_group_start (rank %d)", c->rank);
}

static int perf_group_end(void *ctx) {
  struct perf_ctx *c = ctx;
  c->in_group = 0;
  return check(c, zcoll_group_end(c->comm), "zcoll_group_end (rank %d)", c->rank);
}

static int perf_register(void *ctx, void *addr, size_t len) {
  struct perf_ctx *c = ctx;
  zcoll_mr_t *mr = NULL;
  if (c->nmr == 2) return check(c, ZCOLL_ERR_INVALID_ARG, "rank %d: a third registration", c->rank);
  if (check(c, zcoll_mem_register(c->comm, addr, len, &mr),
            "zcoll_mem_register (rank %d, %zu bytes)", c->rank, len))
    return -1;
  c->mr[c->nmr++] = mr;
  return 0;
}

static void *perf_mem_alloc(void *ctx, size_t len) {
  struct perf_ctx *c = ctx;
  void *p = NULL;
  if (check(c, zcoll_mem_alloc(c->comm, len, &p), "zcoll_mem_alloc (rank %d, %zu bytes)", c->rank,
            len))
    return NULL;
  return p;
}

static void perf_mem_free(void *ctx, void *ptr) {
  struct perf_ctx *c = ctx;
  check(c, zcoll_mem_free(c->comm, ptr), "zcoll_mem_free (rank %d)", c->rank);
}

static int perf_deregister_all(void *ctx) {
  struct perf_ctx *c = ctx;
  int rc = 0;
  while (c->nmr > 0) {
    zcoll_mr_t *mr = c->mr[--c->nmr];
    rc |= check(c, zcoll_mem_deregister(mr), "zcoll_mem_deregister (rank %d)", c->rank);
  }
  return rc;
}

/* The configuration: the environment's, then -A (the ALGO field, or BCAST_ALGO for a
 * broadcast) and -T. Returns NULL after a message, with *exit_code 2 for a bad value
 * (still before zcoll_comm_init) and 1 otherwise. algo: the timed collective's algorithm
 * field in effect. */
static zcoll_config_t *configure(const struct pt_opts *o, char *algo, size_t algo_len,
                                 char *progress, size_t progress_len, int *exit_code) {
  const char *field = o->coll == PT_COLL_BROADCAST ? "BCAST_ALGO" : "ALGO";
  zcoll_config_t *cfg = NULL;
  zcoll_status_t st = zcoll_config_create(&cfg);
  *exit_code = 1;
  if (check(NULL, st, "zcoll_config_create")) return NULL;
  char timeout[32];
  snprintf(timeout, sizeof timeout, "%ld", o->timeout);
  if ((o->algo && check(NULL, zcoll_config_set(cfg, field, o->algo), "-A %.64s", o->algo)) ||
      (o->timeout >= 0 &&
       check(NULL, zcoll_config_set(cfg, "TIMEOUT", timeout), "-T %s", timeout))) {
    *exit_code = 2;
    zcoll_config_free(cfg);
    return NULL;
  }
  /* the values in effect, whether from the environment, the command line or defaults */
  if (check(NULL, zcoll_config_get(cfg, field, algo, algo_len), "zcoll_config_get(%s)", field) ||
      check(NULL, zcoll_config_get(cfg, "PROGRESS", progress, progress_len),
            "zcoll_config_get(PROGRESS)")) {
    zcoll_config_free(cfg);
    return NULL;
  }
  return cfg;
}

/* The communicator's counters, summed over the ranks, where they say something: over
 * verbs, what the registration cache cost and saved; bytes within and between hosts; per
 * rail; and how many allreduces read the vectors where they lie. */
static int print_counters(const struct perf_ctx *c, const struct pt_backend *be) {
  zcoll_comm_stats_t s;
  zcoll_status_t st = zcoll_comm_stats(c->comm, &s, sizeof s);
  if (st != ZCOLL_OK) {
    report(c, "zcoll_comm_stats", st);
    return -1;
  }
  uint64_t v[12] = {s.rcache_misses,        s.rcache_hits,          s.rcache_reg_ns,
                    s.rcache_invalidations, s.bytes_sent_same_host, s.bytes_sent_other_hosts,
                    s.rail_bytes[0],        s.rail_bytes[1],        s.rail_bytes[2],
                    s.rail_bytes[3],        s.mapped_collectives,   s.collectives};
  if (be->sum_u64(be->ctx, v, 12)) return -1;
  if (be->rank == 0 && v[0] + v[1] > 0)
    printf("# %-20s : %" PRIu64 " registrations in %.3f ms (%.1f us each, first use), %" PRIu64
           " later uses hit, %" PRIu64 " invalidated (all ranks)\n#\n",
           "Registration cache", v[0], (double)v[2] * 1e-6,
           v[0] ? (double)v[2] * 1e-3 / (double)v[0] : 0.0, v[1], v[3]);
  /* Where the bytes went: a hierarchical algorithm should cut what crosses hosts. */
  if (be->rank == 0 && v[5] > 0)
    printf("# %-20s : %.1f MiB within hosts, %.1f MiB between hosts (payload, all ranks, "
           "the whole run)\n#\n",
           "Bytes sent", (double)v[4] / 1048576.0, (double)v[5] / 1048576.0);
  /* Over several RDMA ports (ZCOLL_IB_HCA), what each carried: striping should even them. */
  if (be->rank == 0 && v[7] > 0) {
    printf("# %-20s :", "Bytes per rail");
    for (int r = 0; r < 4 && v[6 + r]; r++)
      printf("%s rail %d %.1f MiB", r ? "," : "", r, (double)v[6 + r] / 1048576.0);
    printf(" (payload, all ranks, the whole run; rails as each rank's device names them)\n#\n");
  }
  /* With -M 1 on one host, large allreduces should read the vectors where they lie. */
  if (be->rank == 0 && v[10] > 0)
    printf("# %-20s : %" PRIu64 " of %" PRIu64 " collectives read every rank's vector where it "
           "lies (all ranks, the whole run)\n#\n",
           "Mapped allreduces", v[10], v[11]);
  return 0;
}

/* nccl-tests' "# Using devices" block: one line per rank, gathered to rank 0 (each rank
 * fills its slot, the rest stay 0, a max over bytes puts them together), so that an
 * operator sees where each rank ran and over what without a log. */
#define RANK_LINE 192
static int print_ranks(struct perf_ctx *c, int nranks) {
  char host[64] = "?";
  if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "?");
  host[sizeof host - 1] = '\0';
  const char *tl = zcoll_comm_transport(c->comm), *dev = zcoll_comm_device(c->comm);
  size_t len = (size_t)nranks * RANK_LINE;
  char *all = calloc(len, 1);
  if (!all) {
    fprintf(stderr, PROG ": rank %d: out of memory for the rank list\n", c->rank);
    return -1;
  }
  snprintf(all + (size_t)c->rank * RANK_LINE, RANK_LINE,
           "#  Rank %3d Pid %7ld on %10s transport %s device %s", c->rank, (long)getpid(), host,
           tl ? tl : "?", dev ? dev : "?");
  zcoll_status_t st = zcoll_allreduce(c->comm, ZCOLL_IN_PLACE, all, len, ZCOLL_UINT8, ZCOLL_MAX);
  int rc = check(c, st, "zcoll_allreduce (rank %d, the rank list)", c->rank);
  if (rc == 0 && c->rank == 0) {
    printf("# Using devices\n");
    for (int r = 0; r < nranks; r++) printf("%.*s\n", RANK_LINE - 1, all + (size_t)r * RANK_LINE);
  }
  free(all);
  return rc;
}

int main(int argc, char **argv) {
  static const struct pt_prog prog = {
      PROG,
      PT_HAS_ALGO | PT_HAS_NONBLOCKING | PT_HAS_REGISTER | PT_HAS_MEM_ALLOC | PT_HAS_STALL_TIMEOUT |
          PT_HAS_BROADCAST | PT_HAS_BARRIER | PT_HAS_GATHER | PT_HAS_REDUCE | PT_HAS_XCHG |
          PT_HAS_GROUP,
      "force the allreduce algorithm (the ALGO configuration field; zcoll_info\n"
      "                          lists the names; default: ZCOLL_ALGO, else auto); with\n"
      "                          -t broadcast the BCAST_ALGO field: auto (tree below\n"
      "                          256 KiB, chain from there), tree or chain"};
  struct pt_opts o;
  int rc = pt_parse_args(argc, argv, &prog, &o);
  if (rc == 1) return 0;
  if (rc != 0) return 2;

  char algo[64], progress[16];
  zcoll_config_t *cfg = configure(&o, algo, sizeof algo, progress, sizeof progress, &rc);
  if (cfg == NULL) return rc;
  struct perf_ctx ctx = {NULL,          -1, {NULL, NULL},           0, 0, NULL,
                         PT_COLL_COUNT, 0,  {{{NULL, NULL}}, 0, 0}, 0};
  zcoll_status_t st = zcoll_comm_init(&ctx.comm, cfg);
  zcoll_config_free(cfg);
  if (st != ZCOLL_OK) {
    ctx.comm = NULL;
    report(NULL, "zcoll_comm_init", st);
    return 1;
  }
  ctx.rank = zcoll_comm_rank(ctx.comm);
  ctx.nranks = zcoll_comm_size(ctx.comm);
  if (pt_check_root(PROG, &o, ctx.rank, zcoll_comm_size(ctx.comm))) {
    zcoll_comm_destroy(ctx.comm); /* every rank stops here: nothing has run */
    return 2;
  }
  struct pt_backend be = {
      .prog = PROG,
      .rank = ctx.rank,
      .nranks = zcoll_comm_size(ctx.comm),
      .ctx = &ctx,
      .allreduce = perf_allreduce,
      .barrier = perf_barrier,
      .max_double = perf_max_double,
      .sum_double = perf_sum_double,
      .sum_u64 = perf_sum_u64,
      .algorithm = perf_algorithm,
      .iallreduce = perf_iallreduce,
      .wait = perf_wait,
      .broadcast = perf_broadcast,
      .ibroadcast = perf_ibroadcast,
      .ibarrier = perf_ibarrier,
      .allgather = perf_allgather,
      .iallgather = perf_iallgather,
      .reduce_scatter = perf_reduce_scatter,
      .ireduce_scatter = perf_ireduce_scatter,
      .reduce = perf_reduce,
      .ireduce = perf_ireduce,
      .xchg = perf_xchg,
      .ixchg = perf_ixchg,
      .register_mem = perf_register,
      .deregister_all = perf_deregister_all,
      .mem_alloc = perf_mem_alloc,
      .mem_free = perf_mem_free,
      .collectives = perf_collectives,
      .group_start = perf_group_start,
      .group_end = perf_group_end,
  };
  if (be.rank == 0) {
    const char *tl = zcoll_comm_transport(ctx.comm);
    printf("# " PROG ": transport %s, algorithm %s, ranks %d, progress %s, zcoll %s, "
           "launcher %s\n",
           tl ? tl : "?", algo, be.nranks, progress, zcoll_version_string(),
           zcoll_comm_launcher(ctx.comm));
    pt_print_modes(stdout, PROG, &o);
    pt_print_params(stdout, &o);
  }
  if (print_ranks(&ctx, be.nranks)) {
    zcoll_comm_abort(ctx.comm);
    return 1;
  }
  if (be.rank == 0) {
    printf("#\n");
    fflush(stdout);
  }

  rc = pt_run(&o, &be);
  free(ctx.v);
  if (rc == -2) { /* -F: a file rank 0 cannot create; every rank stops before timing */
    zcoll_comm_destroy(ctx.comm);
    return 2;
  }
  if (rc >= 0 && print_counters(&ctx, &be)) rc = -1;
  if (rc < 0) {
    /* tell the peers at once rather than letting them wait for a timeout; this also
     * frees the requests and registrations left behind */
    zcoll_comm_abort(ctx.comm);
    return 1;
  }
  if ((st = zcoll_comm_destroy(ctx.comm)) != ZCOLL_OK) {
    ctx.comm = NULL; /* the detail can no longer be read from it */
    report(NULL, "zcoll_comm_destroy", st);
    return 1;
  }
  return rc ? 1 : 0;
}
