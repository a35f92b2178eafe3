/* zcoll_perf: the allreduce benchmark, in the manner of nccl-tests' all_reduce_perf.
 *
 *   zcoll_run -np 4 zcoll_perf -b 8 -e 64M -f 2 -d float -o sum
 *
 * For every size it times out-of-place and in-place zcoll_allreduce (w warmups, then
 * the mean of n back-to-back iterations on each rank; the table shows the slowest
 * rank), then checks one more run of each on freshly filled buffers against a reference
 * computed without zcoll. The options, table, pattern and driver live in tools/perf_*.h,
 * shared with perf/mpi_allreduce_perf.c so that both measure exactly the same thing.
 * Only the public API (zcoll.h) is used. Exit status: 0, 1 on an error or a wrong
 * element, 2 on a bad command line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zcoll.h"
#include "perf_driver.h"

#define PROG "zcoll_perf"

_Static_assert((int)PT_DTYPE_COUNT == (int)ZCOLL_DTYPE_COUNT, "dtype lists differ");
_Static_assert((int)PT_OP_COUNT == (int)ZCOLL_OP_COUNT, "op lists differ");

static const zcoll_dtype_t dtype_map[PT_DTYPE_COUNT] = {
    [PT_INT8] = ZCOLL_INT8,         [PT_UINT8] = ZCOLL_UINT8,     [PT_INT32] = ZCOLL_INT32,
    [PT_UINT32] = ZCOLL_UINT32,     [PT_INT64] = ZCOLL_INT64,     [PT_UINT64] = ZCOLL_UINT64,
    [PT_FLOAT16] = ZCOLL_FLOAT16,   [PT_BFLOAT16] = ZCOLL_BFLOAT16, [PT_FLOAT32] = ZCOLL_FLOAT32,
    [PT_FLOAT64] = ZCOLL_FLOAT64};
static const zcoll_op_t op_map[PT_OP_COUNT] = {[PT_SUM] = ZCOLL_SUM, [PT_PROD] = ZCOLL_PROD,
                                               [PT_MIN] = ZCOLL_MIN, [PT_MAX] = ZCOLL_MAX,
                                               [PT_AVG] = ZCOLL_AVG};

struct perf_ctx {
  zcoll_comm_t *comm;
  int rank;
};

/* "zcoll_perf: <what>: <strerror>: <detail>" */
static void report(const struct perf_ctx *c, const char *what, zcoll_status_t st)
{
  const char *detail = c && c->comm ? zcoll_comm_last_error(c->comm) : zcoll_last_error();
  fprintf(stderr, PROG ": %s: %s: %s\n", what, zcoll_strerror(st),
          detail && *detail ? detail : "(no details)");
}

static int perf_allreduce(void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                          enum pt_dtype t, enum pt_op op)
{
  struct perf_ctx *c = ctx;
  zcoll_status_t st = zcoll_allreduce(c->comm, sendbuf ? sendbuf : ZCOLL_IN_PLACE, recvbuf, count,
                                      dtype_map[t], op_map[op]);
  if (st == ZCOLL_OK) return 0;
  char what[160];
  snprintf(what, sizeof what, "zcoll_allreduce (rank %d, %zu x %s, %s, %s)", c->rank, count,
           pt_dtype_names[t], pt_op_names[op], sendbuf ? "out-of-place" : "in-place");
  report(c, what, st);
  return -1;
}

/* zcoll has no barrier: a one-element allreduce is one. */
static int perf_barrier(void *ctx)
{
  struct perf_ctx *c = ctx;
  int32_t one = 1;
  zcoll_status_t st = zcoll_allreduce(c->comm, ZCOLL_IN_PLACE, &one, 1, ZCOLL_INT32, ZCOLL_SUM);
  if (st == ZCOLL_OK) return 0;
  char what[96];
  snprintf(what, sizeof what, "zcoll_allreduce (rank %d, barrier)", c->rank);
  report(c, what, st);
  return -1;
}

static int perf_max_double(void *ctx, double *v, size_t n)
{
  struct perf_ctx *c = ctx;
  zcoll_status_t st = zcoll_allreduce(c->comm, ZCOLL_IN_PLACE, v, n, ZCOLL_FLOAT64, ZCOLL_MAX);
  if (st == ZCOLL_OK) return 0;
  char what[96];
  snprintf(what, sizeof what, "zcoll_allreduce (rank %d, max of the times)", c->rank);
  report(c, what, st);
  return -1;
}

static int perf_sum_u64(void *ctx, uint64_t *v, size_t n)
{
  struct perf_ctx *c = ctx;
  zcoll_status_t st = zcoll_allreduce(c->comm, ZCOLL_IN_PLACE, v, n, ZCOLL_UINT64, ZCOLL_SUM);
  if (st == ZCOLL_OK) return 0;
  char what[96];
  snprintf(what, sizeof what, "zcoll_allreduce (rank %d, sum of the wrong counts)", c->rank);
  report(c, what, st);
  return -1;
}

static int perf_algorithm(void *ctx, size_t count, enum pt_dtype t, enum pt_op op,
                          const char **name)
{
  struct perf_ctx *c = ctx;
  zcoll_status_t st = zcoll_allreduce_algorithm(c->comm, count, dtype_map[t], op_map[op], name);
  if (st == ZCOLL_OK) return 0;
  char what[128];
  snprintf(what, sizeof what, "zcoll_allreduce_algorithm (rank %d, %zu x %s, %s)", c->rank, count,
           pt_dtype_names[t], pt_op_names[op]);
  report(c, what, st);
  return -1;
}

int main(int argc, char **argv)
{
  struct pt_opts o;
  int rc = pt_parse_args(argc, argv, PROG, true, &o);
  if (rc == 1) return 0;
  if (rc != 0) return 2;

  zcoll_config_t *cfg = NULL;
  zcoll_status_t st = zcoll_config_create(&cfg);
  if (st != ZCOLL_OK) {
    report(NULL, "zcoll_config_create", st);
    return 1;
  }
  if (o.algo != NULL && (st = zcoll_config_set(cfg, "ALGO", o.algo)) != ZCOLL_OK) {
    char what[96];
    snprintf(what, sizeof what, "-a %.64s", o.algo);
    report(NULL, what, st);
    zcoll_config_free(cfg);
    return 2;
  }
  char algo[64];
  if ((st = zcoll_config_get(cfg, "ALGO", algo, sizeof algo)) != ZCOLL_OK) {
    report(NULL, "zcoll_config_get(ALGO)", st);
    zcoll_config_free(cfg);
    return 1;
  }

  struct perf_ctx ctx = {NULL, -1};
  st = zcoll_comm_init(&ctx.comm, cfg);
  zcoll_config_free(cfg);
  if (st != ZCOLL_OK) {
    ctx.comm = NULL;
    report(NULL, "zcoll_comm_init", st);
    return 1;
  }
  ctx.rank = zcoll_comm_rank(ctx.comm);
  struct pt_backend be = {
      .prog = PROG,
      .rank = ctx.rank,
      .nranks = zcoll_comm_size(ctx.comm),
      .ctx = &ctx,
      .allreduce = perf_allreduce,
      .barrier = perf_barrier,
      .max_double = perf_max_double,
      .sum_u64 = perf_sum_u64,
      .algorithm = perf_algorithm,
  };
  if (be.rank == 0) {
    const char *tl = zcoll_comm_transport(ctx.comm);
    printf("# " PROG ": transport %s, algorithm %s, ranks %d, zcoll %s\n", tl ? tl : "?", algo,
           be.nranks, zcoll_version_string());
    pt_print_params(stdout, &o);
    fflush(stdout);
  }

  rc = pt_run(&o, &be);
  if (rc < 0) {
    /* tell the peers at once rather than letting them wait for a timeout */
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
