/* mpi_allreduce_perf: zcoll_perf's benchmark over MPI_Allreduce, for side-by-side runs.
 *
 *   cmake -S perf -B perf/build && cmake --build perf/build --target mpi_allreduce_perf
 *   mpirun -np 4 --mca pml ob1 --mca btl self,vader perf/build/mpi_allreduce_perf -b 8 -e 64M
 *
 * Same flags, same table, same timing statistic and the same check as zcoll_perf: the
 * driver, the pattern and the reference are the harness (tools/harness/, the static
 * library zcoll_perf_harness); this file is its MPI ops table. Less -A (MPI picks its own
 * algorithm) and -R (MPI registers memory by itself); -z 0 and --overlap use
 * MPI_Iallreduce and MPI_Wait (Open MPI progresses a request only inside MPI calls, so
 * expect little overlap); -T is alarm(). In-place runs pass MPI_IN_PLACE. MPI has no AVG:
 * it runs as MPI_SUM followed by the division by the number of ranks on every rank,
 * inside the timed loop (at MPI_Wait for a non-blocking one; the same arithmetic as the
 * reference: C's truncating integer division, float / (float)p, double / p).
 * Open MPI 4.1 has no float16 or bfloat16 type: naming one is an error, and `-d all`
 * skips them with a note. Needs no libzcoll.
 *
 * Beware: Open MPI 4.1's op/avx component saturates 8- and 16-bit integer sums instead of
 * wrapping (open-mpi/ompi#8045, "wontfix"). The check counts those elements wrong once a
 * sum overflows (uint8 sum on 64 ranks does); `--mca op ^avx` gives the wrapping result. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf_check.h"
#include "perf_driver.h"
#include "perf_xchg.h"

#define PROG "mpi_allreduce_perf"

static MPI_Datatype mpi_dtype(enum pt_dtype t) {
  switch (t) {
  case PT_INT8: return MPI_INT8_T;
  case PT_UINT8: return MPI_UINT8_T;
  case PT_INT32: return MPI_INT32_T;
  case PT_UINT32: return MPI_UINT32_T;
  case PT_INT64: return MPI_INT64_T;
  case PT_UINT64: return MPI_UINT64_T;
  case PT_FLOAT32: return MPI_FLOAT;
  case PT_FLOAT64: return MPI_DOUBLE;
  default: return MPI_DATATYPE_NULL; /* float16, bfloat16 */
  }
}

static MPI_Op mpi_op(enum pt_op op) {
  switch (op) {
  case PT_PROD: return MPI_PROD;
  case PT_MIN: return MPI_MIN;
  case PT_MAX: return MPI_MAX;
  default: return MPI_SUM; /* SUM, and AVG before the division */
  }
}

/* A non-blocking allreduce, and what MPI_Wait must still do for AVG. */
struct mpi_req {
  MPI_Request r;
  void *buf;
  size_t count;
  enum pt_dtype t;
  bool avg, used;
};

struct mpi_ctx {
  int rank, nranks;
  struct mpi_req pool[PT_WINDOW]; /* the driver keeps at most PT_WINDOW in flight */
  int *v; /* the v-forms' sendcounts, sdispls, recvcounts, rdispls: p each */
};

static int mpi_fail(const struct mpi_ctx *c, const char *what, int err) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(err, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "error %d", err);
  fprintf(stderr, PROG ": %s (rank %d): %s\n", what, c->rank, msg);
  return -1;
}

static int mpi_count(size_t count) {
  if (count <= INT_MAX) return 0;
  fprintf(stderr, PROG ": %zu elements is more than MPI's int count\n", count);
  return -1;
}

/* A free request of the pool for a non-blocking call of count elements, or NULL (said). */
static struct mpi_req *mpi_req_take(struct mpi_ctx *c, size_t count) {
  if (mpi_count(count)) return NULL;
  for (int i = 0; i < PT_WINDOW; i++)
    if (!c->pool[i].used) return &c->pool[i];
  fprintf(stderr, PROG ": rank %d: more than %d requests in flight\n", c->rank, PT_WINDOW);
  return NULL;
}

static int mpi_allreduce(void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                         enum pt_dtype t, enum pt_op op) {
  struct mpi_ctx *c = ctx;
  if (mpi_count(count)) return -1;
  int err = MPI_Allreduce(sendbuf ? sendbuf : MPI_IN_PLACE, recvbuf, (int)count, mpi_dtype(t),
                          mpi_op(op), MPI_COMM_WORLD);
  if (err != MPI_SUCCESS) return mpi_fail(c, "MPI_Allreduce", err);
  if (op == PT_AVG) pt_divide(recvbuf, count, t, c->nranks);
  return 0;
}

static int mpi_iallreduce(void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                          enum pt_dtype t, enum pt_op op, struct pt_req **req) {
  struct mpi_ctx *c = ctx;
  struct mpi_req *q = mpi_req_take(c, count);
  if (q == NULL) return -1;
  int err = MPI_Iallreduce(sendbuf ? sendbuf : MPI_IN_PLACE, recvbuf, (int)count, mpi_dtype(t),
                           mpi_op(op), MPI_COMM_WORLD, &q->r);
  if (err != MPI_SUCCESS) return mpi_fail(c, "MPI_Iallreduce", err);
  *q = (struct mpi_req){q->r, recvbuf, count, t, op == PT_AVG, true};
  *req = (struct pt_req *)q;
  return 0;
}

static int mpi_broadcast(void *ctx, void *buf, size_t count, enum pt_dtype t, int root) {
  struct mpi_ctx *c = ctx;
  if (mpi_count(count)) return -1;
  int err = MPI_Bcast(buf, (int)count, mpi_dtype(t), root, MPI_COMM_WORLD);
  return err == MPI_SUCCESS ? 0 : mpi_fail(c, "MPI_Bcast", err);
}

static int mpi_ibroadcast(void *ctx, void *buf, size_t count, enum pt_dtype t, int root,
                          struct pt_req **req) {
  struct mpi_ctx *c = ctx;
  struct mpi_req *q = mpi_req_take(c, count);
  if (q == NULL) return -1;
  int err = MPI_Ibcast(buf, (int)count, mpi_dtype(t), root, MPI_COMM_WORLD, &q->r);
  if (err != MPI_SUCCESS) return mpi_fail(c, "MPI_Ibcast", err);
  *q = (struct mpi_req){q->r, buf, count, t, false, true};
  *req = (struct pt_req *)q;
  return 0;
}

static int mpi_wait(void *ctx, struct pt_req *req) {
  struct mpi_ctx *c = ctx;
  struct mpi_req *q = (struct mpi_req *)req;
  q->used = false;
  int err = MPI_Wait(&q->r, MPI_STATUS_IGNORE);
  if (err != MPI_SUCCESS) return mpi_fail(c, "MPI_Wait", err);
  if (q->avg) pt_divide(q->buf, q->count, q->t, c->nranks);
  return 0;
}

/* MPI_Allgather's in-place form has the rank's block in recvbuf already. */
static int mpi_allgather(void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                         enum pt_dtype t) {
  struct mpi_ctx *c = ctx;
  if (mpi_count(count * (size_t)c->nranks)) return -1;
  int err = sendbuf ? MPI_Allgather(sendbuf, (int)count, mpi_dtype(t), recvbuf, (int)count,
                                    mpi_dtype(t), MPI_COMM_WORLD)
                    : MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recvbuf, (int)count,
                                    mpi_dtype(t), MPI_COMM_WORLD);
  return err == MPI_SUCCESS ? 0 : mpi_fail(c, "MPI_Allgather", err);
}

static int mpi_iallgather(void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                          enum pt_dtype t, struct pt_req **req) {
  struct mpi_ctx *c = ctx;
  struct mpi_req *q = mpi_req_take(c, count * (size_t)c->nranks);
  if (q == NULL) return -1;
  int err = sendbuf ? MPI_Iallgather(sendbuf, (int)count, mpi_dtype(t), recvbuf, (int)count,
                                     mpi_dtype(t), MPI_COMM_WORLD, &q->r)
                    : MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recvbuf, (int)count,
                                     mpi_dtype(t), MPI_COMM_WORLD, &q->r);
  if (err != MPI_SUCCESS) return mpi_fail(c, "MPI_Iallgather", err);
  *q = (struct mpi_req){q->r, recvbuf, 0, t, false, true};
  *req = (struct pt_req *)q;
  return 0;
}

/* MPI_Reduce_scatter_block: in place, the input is recvbuf and the block lands at its start. */
static int mpi_reduce_scatter(void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                              enum pt_dtype t, enum pt_op op) {
  struct mpi_ctx *c = ctx;
  if (mpi_count(count * (size_t)c->nranks)) return -1;
  int err = MPI_Reduce_scatter_block(sendbuf ? sendbuf : MPI_IN_PLACE, recvbuf, (int)count,
                                     mpi_dtype(t), mpi_op(op), MPI_COMM_WORLD);
  if (err != MPI_SUCCESS) return mpi_fail(c, "MPI_Reduce_scatter_block", err);
  if (op == PT_AVG) pt_divide(recvbuf, count, t, c->nranks);
  return 0;
}

static int mpi_ireduce_scatter(void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                               enum pt_dtype t, enum pt_op op, struct pt_req **req) {
  struct mpi_ctx *c = ctx;
  struct mpi_req *q = mpi_req_take(c, count * (size_t)c->nranks);
  if (q == NULL) return -1;
  int err = MPI_Ireduce_scatter_block(sendbuf ? sendbuf : MPI_IN_PLACE, recvbuf, (int)count,
                                      mpi_dtype(t), mpi_op(op), MPI_COMM_WORLD, &q->r);
  if (err != MPI_SUCCESS) return mpi_fail(c, "MPI_Ireduce_scatter_block", err);
  *q = (struct mpi_req){q->r, recvbuf, count, t, op == PT_AVG, true};
  *req = (struct pt_req *)q;
  return 0;
}

/* MPI_Reduce: MPI_IN_PLACE is the root's only, so in place a non-root sends recvbuf (its
 * input, which it keeps). AVG: the root divides the sum. */
static int mpi_reduce(void *ctx, const void *sendbuf, void *recvbuf, size_t count, enum pt_dtype t,
                      enum pt_op op, int root) {
  struct mpi_ctx *c = ctx;
  if (mpi_count(count)) return -1;
  const int mine = c->rank == root;
  int err = MPI_Reduce(sendbuf ? sendbuf
                       : mine  ? MPI_IN_PLACE
                               : recvbuf,
                       mine ? recvbuf : NULL, (int)count, mpi_dtype(t), mpi_op(op), root,
                       MPI_COMM_WORLD);
  if (err != MPI_SUCCESS) return mpi_fail(c, "MPI_Reduce", err);
  if (op == PT_AVG && mine) pt_divide(recvbuf, count, t, c->nranks);
  return 0;
}

static int mpi_ireduce(void *ctx, const void *sendbuf, void *recvbuf, size_t count, enum pt_dtype t,
                       enum pt_op op, int root, struct pt_req **req) {
  struct mpi_ctx *c = ctx;
  struct mpi_req *q = mpi_req_take(c, count);
  if (q == NULL) return -1;
  const int mine = c->rank == root;
  int err = MPI_Ireduce(sendbuf ? sendbuf
                        : mine  ? MPI_IN_PLACE
                                : recvbuf,
                        mine ? recvbuf : NULL, (int)count, mpi_dtype(t), mpi_op(op), root,
                        MPI_COMM_WORLD, &q->r);
  if (err != MPI_SUCCESS) return mpi_fail(c, "MPI_Ireduce", err);
  *q = (struct mpi_req){q->r, recvbuf, count, t, op == PT_AVG && mine, true};
  *req = (struct pt_req *)q;
  return 0;
}

/* The exchanges (perf_xchg.h), blocking only: coll_compare.sh times -z 1. alltoallv and
 * allgatherv over the harness's uneven counts, packed; in place as MPI has it (a gather's
 * non-root sends recvbuf, a scatter's root sends recvbuf and keeps its block there); a
 * sendrecv is MPI_Sendrecv to rank + 1 from rank - 1 (out of place only). */
static int mpi_xchg(void *ctx, enum pt_coll coll, const void *sendbuf, void *recvbuf, size_t count,
                    enum pt_dtype t, int root) {
  struct mpi_ctx *c = ctx;
  const int p = c->nranks, mine = c->rank == root, n = (int)count;
  if (coll == PT_COLL_SENDRECV) { /* first: no counts to build, as zcoll_perf has none */
    if (mpi_count(count)) return -1;
    int err = MPI_Sendrecv(sendbuf, n, mpi_dtype(t), (c->rank + 1) % p, 0, recvbuf, n, mpi_dtype(t),
                           (c->rank - 1 + p) % p, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return err == MPI_SUCCESS ? 0 : mpi_fail(c, "MPI_Sendrecv", err);
  }
  if (mpi_count(2 * count * (size_t)p)) return -1;
  if (!c->v && !(c->v = calloc(4 * (size_t)p, sizeof *c->v))) {
    fprintf(stderr, PROG ": rank %d: out of memory for the counts\n", c->rank);
    return -1;
  }
  int *sc = c->v, *sd = sc + p, *rc = sd + p, *rd = rc + p, sat = 0, rat = 0;
  for (int q = 0; q < p; q++) {
    sc[q] = (int)pt_xchg_count(coll, c->rank, q, p, count);
    rc[q] = (int)pt_xchg_count(coll, q, coll == PT_COLL_ALLGATHERV ? 0 : c->rank, p, count);
    sd[q] = sat;
    rd[q] = rat;
    sat += sc[q];
    rat += rc[q];
  }
  const MPI_Datatype dt = mpi_dtype(t);
  const void *in = sendbuf ? sendbuf : MPI_IN_PLACE;
  int err;
  switch (coll) {
  case PT_COLL_ALLTOALL: err = MPI_Alltoall(in, n, dt, recvbuf, n, dt, MPI_COMM_WORLD); break;
  case PT_COLL_ALLTOALLV:
    err = MPI_Alltoallv(in, sc, sd, dt, recvbuf, rc, rd, dt, MPI_COMM_WORLD);
    break;
  case PT_COLL_ALLGATHERV:
    err = MPI_Allgatherv(in, rc[c->rank], dt, recvbuf, rc, rd, dt, MPI_COMM_WORLD);
    break;
  case PT_COLL_GATHER:
    err = MPI_Gather(sendbuf ? sendbuf
                     : mine  ? MPI_IN_PLACE
                             : recvbuf,
                     n, dt, mine ? recvbuf : NULL, n, dt, root, MPI_COMM_WORLD);
    break;
  default:
    err = MPI_Scatter(!mine     ? NULL
                      : sendbuf ? sendbuf
                                : recvbuf,
                      n, dt, mine && !sendbuf ? MPI_IN_PLACE : recvbuf, n, dt, root,
                      MPI_COMM_WORLD);
    break;
  }
  return err == MPI_SUCCESS ? 0 : mpi_fail(c, pt_coll_names[coll], err);
}

static int mpi_barrier(void *ctx) {
  int err = MPI_Barrier(MPI_COMM_WORLD);
  return err == MPI_SUCCESS ? 0 : mpi_fail(ctx, "MPI_Barrier", err);
}

static int mpi_ibarrier(void *ctx, struct pt_req **req) {
  struct mpi_ctx *c = ctx;
  struct mpi_req *q = mpi_req_take(c, 0);
  if (q == NULL) return -1;
  int err = MPI_Ibarrier(MPI_COMM_WORLD, &q->r);
  if (err != MPI_SUCCESS) return mpi_fail(c, "MPI_Ibarrier", err);
  *q = (struct mpi_req){q->r, NULL, 0, PT_FLOAT32, false, true};
  *req = (struct pt_req *)q;
  return 0;
}

static int mpi_max_double(void *ctx, double *v, size_t n) {
  int err = MPI_Allreduce(MPI_IN_PLACE, v, (int)n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return err == MPI_SUCCESS ? 0 : mpi_fail(ctx, "MPI_Allreduce (max of the times)", err);
}

static int mpi_sum_double(void *ctx, double *v, size_t n) {
  int err = MPI_Allreduce(MPI_IN_PLACE, v, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return err == MPI_SUCCESS ? 0 : mpi_fail(ctx, "MPI_Allreduce (sum of the times)", err);
}

static int mpi_sum_u64(void *ctx, uint64_t *v, size_t n) {
  int err = MPI_Allreduce(MPI_IN_PLACE, v, (int)n, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  return err == MPI_SUCCESS ? 0 : mpi_fail(ctx, "MPI_Allreduce (sum of the wrong counts)", err);
}

int main(int argc, char **argv) {
  static const struct pt_prog prog = {PROG,
                                      PT_HAS_NONBLOCKING | PT_HAS_BROADCAST | PT_HAS_BARRIER |
                                          PT_HAS_GATHER | PT_HAS_REDUCE | PT_HAS_XCHG,
                                      NULL};
  struct pt_opts o;
  int rc = pt_parse_args(argc, argv, &prog, &o);
  if (rc == 1) return 0;
  if (rc != 0) return 2;
  /* drop the types MPI lacks: an error if named, a note with -d all */
  int n = 0;
  for (int i = 0; i < o.ndtypes; i++) {
    if (mpi_dtype(o.dtypes[i]) != MPI_DATATYPE_NULL) {
      o.dtypes[n++] = o.dtypes[i];
    } else if (!o.all_dtypes) {
      fprintf(stderr, PROG ": -d %s: MPI (Open MPI 4.1) has no such datatype\n",
              pt_dtype_names[o.dtypes[i]]);
      return 2;
    }
  }
  int dropped = o.ndtypes - n;
  o.ndtypes = n;

  MPI_Init(&argc, &argv);
  if (o.timeout > 0) alarm((unsigned)o.timeout); /* a hang ends the job: SIGALRM */
  static struct mpi_ctx ctx; /* static: every request of the pool starts unused */
  MPI_Comm_rank(MPI_COMM_WORLD, &ctx.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ctx.nranks);
  if (pt_check_root(PROG, &o, ctx.rank, ctx.nranks)) {
    MPI_Finalize(); /* every rank stops here: nothing has run */
    return 2;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  struct pt_backend be = {
      .prog = PROG,
      .rank = ctx.rank,
      .nranks = ctx.nranks,
      .ctx = &ctx,
      .allreduce = mpi_allreduce,
      .barrier = mpi_barrier,
      .max_double = mpi_max_double,
      .sum_double = mpi_sum_double,
      .sum_u64 = mpi_sum_u64,
      .iallreduce = mpi_iallreduce,
      .wait = mpi_wait,
      .broadcast = mpi_broadcast,
      .ibroadcast = mpi_ibroadcast,
      .ibarrier = mpi_ibarrier,
      .allgather = mpi_allgather,
      .iallgather = mpi_iallgather,
      .reduce_scatter = mpi_reduce_scatter,
      .ireduce_scatter = mpi_ireduce_scatter,
      .reduce = mpi_reduce,
      .ireduce = mpi_ireduce,
      .xchg = mpi_xchg,
  };
  if (ctx.rank == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    version[strcspn(version, ",\n")] = '\0'; /* "Open MPI v4.1.4" */
    printf("# " PROG ": %s, ranks %d\n", version, ctx.nranks);
    pt_print_modes(stdout, PROG, &o);
    if (dropped) printf("# note: half and bfloat16 skipped: MPI has no such datatypes\n");
    if (o.all_ops || o.ops[0] == PT_AVG)
      printf("# note: avg is MPI_SUM, then a division by the number of ranks on every rank\n");
    pt_print_params(stdout, &o);
    fflush(stdout);
  }
  rc = pt_run(&o, &be);
  free(ctx.v);
  if (rc == -1) MPI_Abort(MPI_COMM_WORLD, 1);
  MPI_Finalize();
  return rc == -2 ? 2 : rc ? 1 : 0;
}
