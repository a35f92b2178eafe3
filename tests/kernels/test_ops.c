/*
 * Created ops (zcoll_op_create, zcoll_op_create_premul_sum) as threads over the loopback
 * transport: every algorithm, p = 1..9, in place and not, counts that cross many small
 * pieces; and their misuse. Ops are process-wide, so the rank threads share one op each
 * (a premul sum here has one scalar for every rank; progs/ops_check.c, run by the
 * process tests below, gives each rank its own).
 */
#include <stdatomic.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "ops_check.h"
#include "rank_threads.h"
#include "sample.h"
#include "spawn.h"

struct ops_case {
  int size;
  char algo[16];
};

static zcoll_op_t op_maxloc, op_affine, op_premul;

static void record(struct rt_job *job, int rank, const char *what, size_t n, int in_place,
                   zcoll_status_t st, size_t bad, zcoll_comm_t *comm) {
  if (st == ZCOLL_OK && !bad) return;
  char msg[400];
  snprintf(msg, sizeof(msg), "%s n=%zu %s: %s, %zu wrong: %s", what, n,
           in_place ? "in place" : "out of place", zcoll_strerror(st), bad,
           st == ZCOLL_OK ? "" : zcoll_comm_last_error(comm));
  rt_fail(job, rank, msg);
}

static void ops_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  static const size_t counts[] = {0, 1, 3, 200, 1000};
  static const zcoll_dtype_t floats[] = {ZCOLL_FLOAT16, ZCOLL_BFLOAT16, ZCOLL_FLOAT32,
                                         ZCOLL_FLOAT64};
  double scalar[RT_MAX_RANKS];
  for (int r = 0; r < job->size; r++) scalar[r] = 0.75;
  zcoll_status_t st;
  size_t bad;
  for (int ip = 0; ip < 2; ip++)
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
      size_t n = counts[c];
      bad = oc_maxloc_check(comm, op_maxloc, n, ip, &st);
      record(job, rank, "maxloc", n, ip, st, bad, comm);
      bad = oc_affine_check(comm, op_affine, n, ip, &st);
      record(job, rank, "affine (non-commutative)", n, ip, st, bad, comm);
      for (size_t d = 0; d < sizeof(floats) / sizeof(floats[0]); d++) {
        bad = oc_premul_check(comm, op_premul, floats[d], n, ip, scalar, &st);
        record(job, rank, zcoll_dtype_name(floats[d]), n, ip, st, bad, comm);
      }
      if (job->failures) return;
    }
  const char *name = NULL;
  if (zcoll_allreduce_algorithm(comm, 100, ZCOLL_UINT64, op_affine, &name) != ZCOLL_OK ||
      strcmp(name, "chain") != 0)
    rt_fail(job, rank, "a non-commutative op is not said to run on chain");
}

static void make_ops(void) {
  cr_assert_eq(zcoll_op_create(oc_maxloc_fn, NULL, 1, sizeof(struct oc_maxloc), &op_maxloc),
               ZCOLL_OK, "%s", zcoll_last_error());
  cr_assert_eq(zcoll_op_create(oc_affine_fn, NULL, 0, sizeof(struct oc_affine), &op_affine),
               ZCOLL_OK, "%s", zcoll_last_error());
  cr_assert_eq(zcoll_op_create_premul_sum(0.75, &op_premul), ZCOLL_OK, "%s", zcoll_last_error());
}

/* ZCOLL_TEST_SAMPLE=1: the first 8 cases (every algorithm, p = 1..9 but 7); CI's plain
 * pass the other 9 (sample.h). */
ParameterizedTestParameters(ops, algorithms) {
  static struct ops_case cases[] = {
      {2, "ring"}, {5, "butterfly"}, {6, "rhd"},       {9, "tree"}, {4, "chain"}, {3, "auto"},
      {1, "auto"}, {8, "ring"},      {7, "butterfly"}, {3, "rhd"},  {5, "tree"},  {9, "chain"},
      {6, "ring"}, {2, "chain"},     {4, "rhd"},       {7, "tree"}, {9, "auto"},
  };
  return cr_make_param_array(struct ops_case, cases + zt_from(8),
                             zt_count(8, sizeof(cases) / sizeof(cases[0])));
}

ParameterizedTest(struct ops_case *c, ops, algorithms, .timeout = 600) {
  make_ops();
  struct rt_job job = {.size = c->size, .body = ops_body};
  /* Small pieces: the 1000-element vectors cross dozens, and wait for credits. */
  job.settings[0][0] = "CHUNK_BYTES", job.settings[0][1] = "256";
  job.settings[1][0] = "PIPELINE_DEPTH", job.settings[1][1] = "3";
  job.settings[2][0] = "ALGO", job.settings[2][1] = c->algo;
  cr_assert_eq(rt_run(&job), 0, "p=%d %s: %s", c->size, c->algo, job.first);
}

/* ---- between processes: each rank its own premul scalar ---- */

static void run_procs(const char *tl) {
  static const int nps[] = {2, 3, 5};
  for (size_t i = 0; i < sizeof(nps) / sizeof(nps[0]); i++) {
    char np[16], transport[64];
    snprintf(np, sizeof(np), "%d", nps[i]);
    snprintf(transport, sizeof(transport), "ZCOLL_TRANSPORT=%s", tl);
    const char *argv[] = {SP_BIN("zcoll_run"), "-np", np, SP_PROG("ops_check"), NULL};
    const char *env[] = {transport, "ZCOLL_CHUNK_BYTES=16384", NULL};
    struct sp_result r = sp_run(argv, env, 300);
    cr_expect_eq(r.status, 0, "%s p=%s: exit %d\n%s", tl, np, r.status, r.out);
    cr_expect(strstr(r.out, "every element exact on every rank over") != NULL, "%s", r.out);
    free(r.out);
  }
}

Test(ops, processes_shm, .timeout = 600) { run_procs("shm"); }
Test(ops, processes_ucx, .timeout = 600) { run_procs("ucx"); }

/* ---- misuse ---- */

static void noop_fn(const void *in, void *inout, size_t n, zcoll_dtype_t dt, void *u) {
  (void)in, (void)inout, (void)n, (void)dt, (void)u;
}

Test(ops, create_and_free_misuse) {
  zcoll_op_t op;
  cr_expect_eq(zcoll_op_free(ZCOLL_SUM), ZCOLL_ERR_INVALID_ARG);
  cr_expect(strstr(zcoll_last_error(), "built-in") != NULL, "%s", zcoll_last_error());
  cr_expect_eq(zcoll_op_free((zcoll_op_t)99), ZCOLL_ERR_INVALID_ARG);
  cr_expect_eq(zcoll_op_create(NULL, NULL, 1, 0, &op), ZCOLL_ERR_INVALID_ARG);
  cr_expect_eq(zcoll_op_create(noop_fn, NULL, 1, 3, &op), ZCOLL_ERR_INVALID_ARG);
  cr_expect(strstr(zcoll_last_error(), "power of two") != NULL, "%s", zcoll_last_error());
  cr_expect_eq(zcoll_op_create(noop_fn, NULL, 1, 8192, &op), ZCOLL_ERR_INVALID_ARG);
  cr_expect_eq(zcoll_op_create_premul_sum(0.0 / 0.0, &op), ZCOLL_ERR_INVALID_ARG);
  cr_expect_eq(zcoll_op_create_premul_sum(1.0, NULL), ZCOLL_ERR_INVALID_ARG);
  cr_assert_eq(zcoll_op_create(noop_fn, NULL, 1, 0, &op), ZCOLL_OK);
  cr_expect_str_eq(zcoll_op_name(op), "user");
  cr_expect_eq(zcoll_op_free(op), ZCOLL_OK);
  cr_expect_null(zcoll_op_name(op));
  cr_expect_eq(zcoll_op_free(op), ZCOLL_ERR_INVALID_ARG); /* twice */
  cr_assert_eq(zcoll_op_create_premul_sum(0.5, &op), ZCOLL_OK);
  cr_expect_str_eq(zcoll_op_name(op), "premul_sum");
  cr_expect_eq(zcoll_op_free(op), ZCOLL_OK);
  /* The registry is bounded; a full one says so, and frees make room again. */
  zcoll_op_t all[ZCOLL_OP_MAX_USER];
  int n = 0;
  while (n < ZCOLL_OP_MAX_USER && zcoll_op_create(noop_fn, NULL, 1, 0, &all[n]) == ZCOLL_OK) n++;
  cr_expect_eq(n, ZCOLL_OP_MAX_USER);
  cr_expect_eq(zcoll_op_create(noop_fn, NULL, 1, 0, &op), ZCOLL_ERR_NO_MEMORY);
  while (n) cr_expect_eq(zcoll_op_free(all[--n]), ZCOLL_OK);
}

/* A persistent request holds its op: freeing it is refused until the request goes; each
 * start uses the op anew. Then the argument errors a created op adds, each breaking
 * the communicator as any argument error does (its own communicator each). */
static void persistent_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  size_t n = 300;
  struct oc_affine *buf = calloc(n, sizeof(*buf)), *out = calloc(n, sizeof(*out));
  zcoll_request_t *req;
  if (zcoll_allreduce_init(comm, buf, out, 2 * n, ZCOLL_UINT64, op_affine, &req) != ZCOLL_OK) {
    rt_fail(job, rank, zcoll_comm_last_error(comm));
    return;
  }
  if (zcoll_op_free(op_affine) != ZCOLL_ERR_INVALID_ARG || !strstr(zcoll_last_error(), "in use"))
    rt_fail(job, rank, "an op in use by a request was freed");
  for (int round = 0; round < 3 && !job->failures; round++) {
    for (size_t k = 0; k < n; k++) buf[k] = oc_affine_in(rank + round, k);
    zcoll_status_t st = zcoll_start(req);
    if (st == ZCOLL_OK) st = zcoll_wait(req);
    if (st != ZCOLL_OK) rt_fail(job, rank, zcoll_comm_last_error(comm));
    for (size_t k = 0; st == ZCOLL_OK && k < n; k++) {
      struct oc_affine want = oc_affine_in(round, k);
      for (int r = 1; r < job->size; r++) {
        struct oc_affine y = oc_affine_in(r + round, k);
        want = (struct oc_affine){want.a * y.a, y.a * want.b + y.b};
      }
      if (out[k].a != want.a || out[k].b != want.b) {
        rt_fail(job, rank, "persistent affine: wrong element");
        break;
      }
    }
  }
  zcoll_request_free(req);
  free(buf), free(out);
}

static void bad_dtype_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  int32_t v[8] = {0};
  if (zcoll_allreduce(comm, v, v + 4, 4, ZCOLL_INT32, op_premul) != ZCOLL_ERR_INVALID_ARG ||
      !strstr(zcoll_comm_last_error(comm), "floating-point"))
    rt_fail(job, rank, "a premul sum of int32 was not refused");
}

static void bad_count_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  uint8_t v[24] = {0};
  zcoll_status_t st = zcoll_allreduce(comm, ZCOLL_IN_PLACE, v, 12, ZCOLL_UINT8, op_maxloc);
  if (st != ZCOLL_ERR_INVALID_ARG || !strstr(zcoll_comm_last_error(comm), "whole number"))
    rt_fail(job, rank, "12 bytes of 8-byte elements were not refused");
}

/* Rank 0 passes one op, rank 1 another: neither gets ZCOLL_OK. */
static zcoll_op_t op_other;
static void mismatch_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  uint8_t v[64] = {0};
  zcoll_op_t ops[] = {op_maxloc, rank ? op_other : op_maxloc};
  for (int i = 0; i < 2; i++) {
    zcoll_status_t st = zcoll_allreduce(comm, ZCOLL_IN_PLACE, v, sizeof(v), ZCOLL_UINT8, ops[i]);
    if (i == 0 && st != ZCOLL_OK) rt_fail(job, rank, zcoll_comm_last_error(comm));
    if (i == 1 && st != ZCOLL_ERR_MISMATCH && st != ZCOLL_ERR_PEER_FAILED)
      rt_fail(job, rank, "different ops were not a mismatch");
    if (i == 1 && st == ZCOLL_ERR_MISMATCH && !strstr(zcoll_comm_last_error(comm), "user op"))
      rt_fail(job, rank, zcoll_comm_last_error(comm));
  }
}

Test(ops, requests_and_argument_errors, .timeout = 300) {
  make_ops();
  struct rt_job job = {.size = 3, .body = persistent_body};
  cr_assert_eq(rt_run(&job), 0, "%s", job.first);
  cr_expect_eq(zcoll_op_free(op_affine), ZCOLL_OK, "%s", zcoll_last_error());
  job = (struct rt_job){.size = 2, .body = bad_dtype_body};
  cr_expect_eq(rt_run(&job), 0, "%s", job.first);
  job = (struct rt_job){.size = 2, .body = bad_count_body};
  cr_expect_eq(rt_run(&job), 0, "%s", job.first);
  /* the same element size and commutativity: only the op's value tells them apart */
  cr_assert_eq(zcoll_op_create(oc_maxloc_fn, NULL, 1, sizeof(struct oc_maxloc), &op_other),
               ZCOLL_OK);
  job = (struct rt_job){.size = 2, .body = mismatch_body};
  cr_expect_eq(rt_run(&job), 0, "%s", job.first);
}

/* ---- an op's function that fails (zcoll_op_fail) ---- */

static _Thread_local int fails_here, called;
static void failing_fn(const void *in, void *inout, size_t n, zcoll_dtype_t dt, void *u) {
  (void)u, (void)dt;
  called = 1;
  const int64_t *x = in;
  int64_t *y = inout;
  for (size_t k = 0; k < n; k++) y[k] += x[k];
  if (fails_here) {
    memset(inout, 0x5a, n * sizeof(int64_t)); /* garbage that must never leave the rank */
    zcoll_op_fail("this rank's function refuses its input");
  }
}

/* How failing_body calls the collective: each form ends with the agreement. */
enum { CALL_BLOCKING, CALL_NONBLOCKING, CALL_PERSISTENT, CALL_TWO_IN_FLIGHT, CALL_FORMS };
static const char *const call_names[] = {"blocking", "non-blocking", "persistent (2nd start)",
                                         "two requests in flight"};
static int call_form;

/* The collective with op over v, in call_form's way; a persistent request first runs
 * once with no rank failing (its agreement's word must start clean each time). */
static zcoll_status_t call_failing(zcoll_comm_t *comm, int64_t *v, int n, zcoll_op_t op) {
  zcoll_request_t *q = NULL, *other = NULL;
  zcoll_status_t st = ZCOLL_OK;
  int64_t one = 1;
  switch (call_form) {
  case CALL_BLOCKING: return zcoll_allreduce(comm, ZCOLL_IN_PLACE, v, n, ZCOLL_INT64, op);
  case CALL_NONBLOCKING:
    if ((st = zcoll_iallreduce(comm, ZCOLL_IN_PLACE, v, n, ZCOLL_INT64, op, &q)) != ZCOLL_OK)
      return st;
    break;
  case CALL_PERSISTENT: {
    static _Thread_local int64_t w[64];
    int f = fails_here;
    fails_here = 0;
    if ((st = zcoll_allreduce_init(comm, ZCOLL_IN_PLACE, w, 64, ZCOLL_INT64, op, &q)) ||
        (st = zcoll_start(q)) || (st = zcoll_wait(q)))
      return st;
    fails_here = f;
    zcoll_request_free(q);
    if ((st = zcoll_allreduce_init(comm, ZCOLL_IN_PLACE, v, n, ZCOLL_INT64, op, &q)) ||
        (st = zcoll_start(q)) != ZCOLL_OK)
      return st;
    break;
  }
  default: /* a second request queued behind the first: the fenced agreement between */
    if ((st = zcoll_iallreduce(comm, ZCOLL_IN_PLACE, v, n, ZCOLL_INT64, op, &q)) != ZCOLL_OK)
      return st;
    st = zcoll_iallreduce(comm, ZCOLL_IN_PLACE, &one, 1, ZCOLL_INT64, ZCOLL_SUM, &other);
    break;
  }
  zcoll_status_t end = zcoll_wait(q);
  if (other) {
    zcoll_wait(other);
    zcoll_request_free(other);
  }
  zcoll_request_free(q);
  return end != ZCOLL_OK ? end : st;
}

/* Rank 1's function fails (where rank 1 combines anything: not a tree's leaf or a
 * folded rank): it gets the error with the reason, nobody gets ZCOLL_OK from that
 * collective (the agreement that ends it), and the next call fails everywhere. */
static atomic_int rank1_failed;
static zcoll_status_t first_st[3];
static void failing_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  enum { N = 5000 };
  static _Thread_local int64_t v[N];
  for (int k = 0; k < N; k++) v[k] = rank + k;
  fails_here = rank == 1;
  zcoll_op_t op = (zcoll_op_t)(intptr_t)job->arg;
  called = 0;
  zcoll_status_t st = call_failing(comm, v, N, op);
  first_st[rank] = st;
  if (rank == 1 && called) {
    atomic_store(&rank1_failed, 1);
    if (st != ZCOLL_ERR_INVALID_ARG ||
        !strstr(zcoll_comm_last_error(comm),
                "this rank's function refuses its input (the function of op"))
      rt_fail(job, rank, "the failing rank did not get its function's error");
  }
  for (int k = 0; st == ZCOLL_OK && k < N; k++)
    if (v[k] != (int64_t)job->size * (job->size - 1) / 2 + (int64_t)job->size * k) {
      rt_fail(job, rank, "ZCOLL_OK with a wrong element after a peer's op failed");
      break;
    }
  st = zcoll_allreduce(comm, ZCOLL_IN_PLACE, v, 1, ZCOLL_INT64, ZCOLL_SUM);
  if (st == ZCOLL_OK && atomic_load(&rank1_failed))
    rt_fail(job, rank, "the communicator still works after an op failed");
}

/* Every form of call, every algorithm. (Not with the progress thread: the function would
 * run there, where failing_fn's thread-local switch is off.) */
Test(ops, function_fails, .timeout = 300) {
  zcoll_op_t op;
  cr_assert_eq(zcoll_op_create(failing_fn, NULL, 1, 0, &op), ZCOLL_OK);
  static const char *const algos[] = {"ring", "butterfly", "tree", "rhd"};
  for (int form = 0; form < CALL_FORMS; form++)
    for (int a = 0; a < 4; a++) {
      call_form = form;
      atomic_store(&rank1_failed, 0);
      struct rt_job job = {.size = 3, .body = failing_body, .arg = (void *)(intptr_t)op};
      job.settings[0][0] = "ALGO", job.settings[0][1] = algos[a];
      job.settings[1][0] = "CHUNK_BYTES", job.settings[1][1] = "4096";
      cr_expect_eq(rt_run(&job), 0, "%s, %s: %s", call_names[form], algos[a], job.first);
      cr_expect(a >= 2 || atomic_load(&rank1_failed), "%s, %s: rank 1 never combined",
                call_names[form], algos[a]);
      for (int r = 0; r < 3 && atomic_load(&rank1_failed); r++)
        cr_expect_neq(first_st[r], ZCOLL_OK,
                      "%s, %s: rank %d got ZCOLL_OK from the collective in "
                      "which rank 1's function failed",
                      call_names[form], algos[a], r);
    }
  zcoll_op_free(op);
}
