/*
 * Allgather, reduce-scatter and reduce as threads over the loopback transport: p = 1..9,
 * every dtype, every op (the reductions), in place and not, blocking and not, counts from
 * 0 to ones that cross many pieces and switch the algorithm (recursive doubling/halving
 * below 256 KiB for a power-of-two p, the ring above and for any other p); created ops
 * (a commutative one, a non-commutative one in rank order, a premul sum); the kinds
 * mismatched. Every element is checked against check_common.h's reference
 * (sg_check.h). Between processes over shm and UCX: progs/sg_check.c.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "ops_check.h"
#include "rank_threads.h"
#include "sample.h"
#include "sg_check.h"
#include "spawn.h"

static void fail_case(struct rt_job *job, int rank, const char *msg) { rt_fail(job, rank, msg); }

/* Every kind x dtype x op x placement at small counts; a large count (over 256 KiB of
 * input or result at p >= 4, so the ring) for the pairs with (dtype + op) % 5 == 0. */
static void matrix_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  static const size_t counts[] = {0, 1, 5, 300};
  char msg[400];
  unsigned salt = 0;
  for (int kind = 0; kind < SG_NKINDS; kind++)
    for (int dt = 0; dt < ZCOLL_DTYPE_COUNT; dt++)
      for (int op = 0; op < ZCOLL_OP_COUNT; op++) {
        if (kind == SG_ALLGATHER && op) continue;
        for (int ip = 0; ip < 2; ip++)
          for (size_t k = 0; k <= sizeof(counts) / sizeof(counts[0]); k++) {
            size_t n = k < 4 ? counts[k] : 9000;
            if (k == 4 && (dt + op) % 5) continue;
            salt++;
            struct sg_case c = {kind,
                                (zcoll_dtype_t)dt,
                                (zcoll_op_t)op,
                                ip,
                                n,
                                (int)(salt % (unsigned)job->size),
                                (int)(salt % 3 == 1),
                                salt};
            if (c.kind == SG_REDUCE && ip && rank != c.root) c.in_place = 0;
            if (sg_run(comm, &c, msg, sizeof(msg))) {
              fail_case(job, rank, msg);
              return;
            }
          }
      }
}

ParameterizedTestParameters(scatter_gather, loopback) {
  static int sizes[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  return cr_make_param_array(int, sizes, sizeof(sizes) / sizeof(sizes[0]));
}

ParameterizedTest(int *p, scatter_gather, loopback, .timeout = 300) {
  struct rt_job job = {.size = *p, .body = matrix_body};
  cr_assert_eq(rt_run(&job), 0, "p=%d: %s", *p, job.first);
}

/* ---- created ops ---- */

static zcoll_op_t op_affine, op_maxloc, op_premul;

static struct oc_affine compose(int p, size_t gk) {
  struct oc_affine want = oc_affine_in(0, gk);
  for (int r = 1; r < p; r++) {
    struct oc_affine y = oc_affine_in(r, gk);
    want = (struct oc_affine){want.a * y.a, y.a * want.b + y.b};
  }
  return want;
}

/* Reduce-scatter and reduce of n affine maps per block (non-commutative: rank order
 * only), a maxloc reduce-scatter, and a premul-sum reduce-scatter. */
static void ops_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  static const size_t counts[] = {0, 1, 3, 200};
  int p = job->size;
  char msg[400];
  for (int ip = 0; ip < 2; ip++)
    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
      size_t n = counts[ci], P = (size_t)p;
      struct oc_affine *in = malloc((P * n + 1) * sizeof(*in));
      struct oc_affine *out = malloc((P * n + 1) * sizeof(*out));
      for (size_t k = 0; k < P * n; k++) in[k] = out[k] = oc_affine_in(rank, k);
      zcoll_status_t st = zcoll_reduce_scatter(comm, ip ? ZCOLL_IN_PLACE : in, out, 2 * n,
                                               ZCOLL_UINT64, op_affine);
      size_t bad = 0;
      for (size_t k = 0; st == ZCOLL_OK && k < n; k++) {
        struct oc_affine w = compose(p, (size_t)rank * n + k);
        bad += out[k].a != w.a || out[k].b != w.b;
      }
      if (st != ZCOLL_OK || bad) {
        snprintf(msg, sizeof(msg), "affine reduce_scatter n=%zu ip=%d: %s, %zu wrong: %s", n, ip,
                 zcoll_strerror(st), bad, st ? zcoll_comm_last_error(comm) : "");
        fail_case(job, rank, msg);
      }
      int root = (int)(ci % P);
      for (size_t k = 0; k < n; k++) in[k] = out[k] = oc_affine_in(rank, k);
      st = zcoll_reduce(comm, ip && rank == root ? ZCOLL_IN_PLACE : in, out, 2 * n, ZCOLL_UINT64,
                        op_affine, root);
      bad = 0;
      for (size_t k = 0; st == ZCOLL_OK && rank == root && k < n; k++) {
        struct oc_affine w = compose(p, k);
        bad += out[k].a != w.a || out[k].b != w.b;
      }
      if (st != ZCOLL_OK || bad) {
        snprintf(msg, sizeof(msg), "affine reduce n=%zu root %d: %s, %zu wrong: %s", n, root,
                 zcoll_strerror(st), bad, st ? zcoll_comm_last_error(comm) : "");
        fail_case(job, rank, msg);
      }
      free(in), free(out);
      /* maxloc: each block's winner is the highest value, the lowest rank on ties */
      struct oc_maxloc *mi = malloc((P * n + 1) * sizeof(*mi)),
                       *mo = malloc((P * n + 1) * sizeof(*mo));
      for (size_t k = 0; k < P * n; k++) mi[k] = mo[k] = oc_maxloc_in(rank, k);
      st = zcoll_reduce_scatter(comm, ip ? ZCOLL_IN_PLACE : mi, mo, n * sizeof(*mi), ZCOLL_UINT8,
                                op_maxloc);
      bad = 0;
      for (size_t k = 0; st == ZCOLL_OK && k < n; k++) {
        size_t g = (size_t)rank * n + k;
        struct oc_maxloc w = oc_maxloc_in(0, g);
        for (int r = 1; r < p; r++) {
          struct oc_maxloc x = oc_maxloc_in(r, g);
          if (x.v > w.v) w = x;
        }
        bad += mo[k].v != w.v || mo[k].i != w.i;
      }
      if (st != ZCOLL_OK || bad) {
        snprintf(msg, sizeof(msg), "maxloc reduce_scatter n=%zu ip=%d: %s, %zu wrong", n, ip,
                 zcoll_strerror(st), bad);
        fail_case(job, rank, msg);
      }
      free(mi), free(mo);
      /* premul sum (0.75 on every rank): inputs are small multiples of 1/4, exact */
      double *di = malloc((P * n + 1) * sizeof(double)),
             *dout = malloc((P * n + 1) * sizeof(double));
      for (size_t k = 0; k < P * n; k++) di[k] = dout[k] = oc_premul_in(rank, k);
      st = zcoll_reduce_scatter(comm, ip ? ZCOLL_IN_PLACE : di, dout, n, ZCOLL_FLOAT64, op_premul);
      bad = 0;
      for (size_t k = 0; st == ZCOLL_OK && k < n; k++) {
        double w = 0;
        for (int r = 0; r < p; r++) w += 0.75 * oc_premul_in(r, (size_t)rank * n + k);
        bad += dout[k] != w;
      }
      if (st != ZCOLL_OK || bad) {
        snprintf(msg, sizeof(msg), "premul reduce_scatter n=%zu ip=%d: %s, %zu wrong", n, ip,
                 zcoll_strerror(st), bad);
        fail_case(job, rank, msg);
      }
      free(di), free(dout);
      if (job->failures) return;
    }
}

Test(scatter_gather, created_ops, .timeout = 300) {
  cr_assert_eq(zcoll_op_create(oc_affine_fn, NULL, 0, 16, &op_affine), ZCOLL_OK);
  cr_assert_eq(zcoll_op_create(oc_maxloc_fn, NULL, 1, 8, &op_maxloc), ZCOLL_OK);
  cr_assert_eq(zcoll_op_create_premul_sum(0.75, &op_premul), ZCOLL_OK);
  for (int p = 1; p <= 9; p++) {
    struct rt_job job = {.size = p, .body = ops_body};
    cr_expect_eq(rt_run(&job), 0, "p=%d: %s", p, job.first);
  }
  zcoll_op_free(op_affine), zcoll_op_free(op_maxloc), zcoll_op_free(op_premul);
}

/* ---- mismatches: every rank fails; whoever sees the difference names both calls ---- */

static void kinds_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  int p = job->size, which = *(int *)job->arg;
  int32_t in[64] = {0}, out[64 * 9];
  zcoll_status_t st;
  const char *mine;
  if (rank == 0 || which == 3) { /* rank 0's call: always an allgather of 4 */
    st = zcoll_allgather(comm, in, out, which == 3 && rank ? 5 : 4, ZCOLL_INT32);
    mine = "allgather(";
  } else if (which == 0) {
    st = zcoll_reduce_scatter(comm, in, out, 4, ZCOLL_INT32, ZCOLL_SUM);
    mine = "reduce_scatter(";
  } else if (which == 1) {
    st = zcoll_reduce(comm, in, out, 4 * (size_t)p, ZCOLL_INT32, ZCOLL_SUM, 0);
    mine = "reduce(";
  } else {
    st = zcoll_allreduce(comm, in, out, 4 * (size_t)p, ZCOLL_INT32, ZCOLL_SUM);
    mine = "allreduce(";
  }
  /* A reduce's non-root that only sends (a leaf of the tree toward the root) has nothing
   * to check the others' calls against: it may return before the root sees the difference,
   * whose failure then reaches it at its next call. */
  if (st == ZCOLL_OK && which == 1 && rank != 0) {
    st = zcoll_barrier(comm);
    if (st == ZCOLL_OK) rt_fail(job, rank, "the call after a mismatched reduce succeeded");
    return;
  }
  const char *why = zcoll_comm_last_error(comm);
  if (st != ZCOLL_ERR_MISMATCH && st != ZCOLL_ERR_PEER_FAILED) {
    char msg[200];
    snprintf(msg, sizeof(msg), "mismatch %d: %s", which, zcoll_strerror(st));
    rt_fail(job, rank, msg);
  } else if (st == ZCOLL_ERR_MISMATCH && !(strstr(why, "allgather(") && strstr(why, mine) &&
                                           (which != 3 || strstr(why, "count 5")))) {
    rt_fail(job, rank, why);
  }
}

/* Rank 0 in an allgather, the others in a reduce-scatter, a reduce, an allreduce, or an
 * allgather of another count. */
Test(scatter_gather, mismatches, .timeout = 120) {
  for (int which = 0; which < 4; which++)
    for (int p = 2; p <= 3; p++) {
      struct rt_job job = {.size = p, .body = kinds_body, .arg = &which};
      cr_expect_eq(rt_run(&job), 0, "case %d p=%d: %s", which, p, job.first);
    }
}

/* ---- bad arguments: a clear error, the communicator broken for every rank ---- */

static void args_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  int which = *(int *)job->arg;
  int32_t buf[32] = {0};
  zcoll_status_t st;
  const char *want;
  switch (which) {
  case 0:
    st = zcoll_allgather(comm, buf, buf + 1, 4, ZCOLL_INT32);
    want = "overlap";
    break;
  case 1:
    st = zcoll_reduce(comm, ZCOLL_IN_PLACE, buf, 4, ZCOLL_INT32, ZCOLL_SUM, 0);
    want = rank ? "the root's only" : NULL;
    break;
  case 2:
    st = zcoll_reduce(comm, buf, buf + 8, 4, ZCOLL_INT32, ZCOLL_SUM, 7);
    want = "root 7 is not a rank";
    break;
  default:
    st = zcoll_reduce_scatter(comm, buf, NULL, 4, ZCOLL_INT32, ZCOLL_SUM);
    want = "recvbuf is NULL";
    break;
  }
  const char *why = zcoll_comm_last_error(comm);
  if (st == ZCOLL_OK)
    rt_fail(job, rank, "a bad argument passed");
  else if (want && st == ZCOLL_ERR_INVALID_ARG && !strstr(why, want))
    rt_fail(job, rank, why);
}

Test(scatter_gather, bad_arguments, .timeout = 120) {
  for (int which = 0; which < 4; which++) {
    struct rt_job job = {.size = 2, .body = args_body, .arg = &which};
    cr_expect_eq(rt_run(&job), 0, "case %d: %s", which, job.first);
  }
}

/* ---- between processes ---- */

/* p = 2 and 4 (a power of two: recursive doubling/halving below 256 KiB, the ring above)
 * and 7 (the ring); ZCOLL_TEST_SAMPLE=1 (CI's sanitizer pass) runs p = 4, the plain pass
 * the others. */
static void run_procs(const char *tl) {
  static const char *const sizes[] = {"2", "4", "7"};
  for (int k = 0; k < 3; k++) {
    if (!zt_keep(k == 1)) continue;
    char transport[64];
    snprintf(transport, sizeof(transport), "ZCOLL_TRANSPORT=%s", tl);
    const char *argv[] = {SP_BIN("zcoll_run"), "-np", sizes[k], SP_PROG("sg_check"), NULL};
    const char *env[] = {transport, NULL};
    struct sp_result r = sp_run(argv, env, 240);
    cr_expect_eq(r.status, 0, "%s p=%s: exit %d\n%s", tl, sizes[k], r.status, r.out);
    cr_expect(strstr(r.out, "sg_check: 110 cases over") != NULL, "%s p=%s:\n%s", tl, sizes[k],
              r.out);
    free(r.out);
  }
}

Test(scatter_gather, processes_shm, .timeout = 600) { run_procs("shm"); }
Test(scatter_gather, processes_ucx, .timeout = 600) { run_procs("ucx"); }

/* zcoll_perf -t allgather / reduce_scatter: nccl-tests' all_gather_perf and
 * reduce_scatter_perf tables (size: all ranks' blocks, count: one rank's), every result
 * checked by the harness, blocking and not, at p = 3 (the ring) and 4 (recursive
 * doubling / halving below 256 KiB, the ring above). */
/* zcoll_perf on np ranks over shm: 5 timed iterations, 1 warm-up, non-blocking at p = 3 and
 * blocking at 4, then `more` (NULL-terminated). */
static struct sp_result run_zcoll_perf(int np, const char *const *more) {
  char nps[8];
  snprintf(nps, sizeof(nps), "%d", np);
  const char *argv[40] = {
      SP_BIN("zcoll_run"), "-np", nps, SP_BIN("zcoll_perf"), "-n", "5", "-w", "1", "-z",
      np == 3 ? "0" : "1"};
  int k = 10;
  while (*more && k < 39) argv[k++] = *more++;
  argv[k] = NULL;
  const char *env[] = {"ZCOLL_TRANSPORT=shm", NULL};
  return sp_run(argv, env, 240);
}

Test(scatter_gather, zcoll_perf_tables, .timeout = 300) {
  static const char *const colls[] = {"allgather", "reduce_scatter"};
  static const char *const algos[] = {"recursive_doubling", "recursive_halving"};
  for (int c = 0; c < 2; c++)
    for (int np = 3; np <= 4; np++) {
      const char *more[] = {"-t", colls[c], "-b", "96", "-e", "1536K", "-f", "16", NULL};
      struct sp_result r = run_zcoll_perf(np, more);
      cr_expect_eq(r.status, 0, "%s np=%d: exit %d\n%s", colls[c], np, r.status, r.out);
      /* 96 B of float: 24 elements, np=3: 8 each; np=4: 6 each (4-byte floats) */
      char row[96];
      snprintf(row, sizeof(row), "          96  %12d     float  %6s      -1", 24 / np,
               c ? "sum" : "none");
      cr_expect(strstr(r.out, row) != NULL, "%s np=%d: no row '%s'\n%s", colls[c], np, row, r.out);
      cr_expect(strstr(r.out, "Out of bounds values : 0 OK") != NULL, "%s\n%s", colls[c], r.out);
      cr_expect(strstr(r.out, np == 3 ? "  ring\n" : algos[c]) != NULL, "%s np=%d\n%s", colls[c],
                np, r.out);
      free(r.out);
    }
}

/* zcoll_perf -t reduce: nccl-tests' reduce_perf table (busbw = algbw), to a root that is not
 * rank 0, every op; the harness checks the root's result and that the others' inputs stay
 * (and, out of place, that nothing is written to their receive buffers: they pass NULL). */
Test(scatter_gather, zcoll_perf_reduce_table, .timeout = 300) {
  for (int np = 3; np <= 4; np++) {
    char root[8];
    snprintf(root, sizeof(root), "%d", np - 1);
    const char *more[] = {"-t", "reduce", "-r",  root, "-o", "all", "-b",
                          "96", "-e",     "96K", "-f", "32", NULL};
    struct sp_result r = run_zcoll_perf(np, more);
    cr_expect_eq(r.status, 0, "np=%d: exit %d\n%s", np, r.status, r.out);
    const char *ops[] = {"sum", "prod", "min", "max", "avg"};
    for (int o = 0; o < 5; o++) {
      char row[96];
      snprintf(row, sizeof(row), "          96            24     float  %6s  %6d", ops[o], np - 1);
      cr_expect(strstr(r.out, row) != NULL, "np=%d: no row '%s'\n%s", np, row, r.out);
    }
    cr_expect(strstr(r.out, "# zcoll_perf: reduce to root") != NULL, "np=%d\n%s", np, r.out);
    cr_expect(strstr(r.out, "Out of bounds values : 0 OK") != NULL, "np=%d\n%s", np, r.out);
    free(r.out);
  }
}
