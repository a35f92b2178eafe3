/*
 * Every algorithm x dtype x op x placement x count, p = 1..9, as threads over the
 * loopback transport: the executor and the schedules, checked element by element.
 * Small chunks and a shallow pipeline make every vector cross many pieces and make
 * writers wait for credits.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "check_matrix.h"
#include "rank_threads.h"
#include "sample.h"

/* Plain values only: Criterion runs each test in a fresh process, where pointers
 * into the parent's data would dangle. */
struct matrix_case {
  int size, chunk, depth, reg; /* reg: buffers registered (sent without staging) */
};

static int registered;

static void matrix_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  struct chk_stats st = {0, 0, "", registered};
  chk_run_matrix(comm, (size_t)job->arg, &st);
  if (st.failures) rt_fail(job, rank, st.first);
}

/* ZCOLL_TEST_SAMPLE=1 (CI's sanitizer pass): the first 3 cases below -- an even p, the
 * smallest chunks (most pieces in flight) and the registered path at an odd p; a case
 * costs about p threads' work, 2-3 times more under ASan. CI's plain pass runs the other
 * 8 (sample.h). */
ParameterizedTestParameters(loopback, matrix) {
  static struct matrix_case cases[] = {
      {2, 4096, 4}, {6, 1024, 2}, {5, 65536, 4, 1}, {3, 4096, 2}, {4, 65536, 8},   {9, 4096, 4},
      {1, 4096, 4}, {5, 4096, 3}, {7, 65536, 8},    {8, 8192, 4}, {3, 4096, 3, 1},
  };
  return cr_make_param_array(struct matrix_case, cases + zt_from(3),
                             zt_count(3, sizeof(cases) / sizeof(cases[0])));
}

ParameterizedTest(struct matrix_case *c, loopback, matrix, .timeout = 600) {
  registered = c->reg;
  struct rt_job job = {.size = c->size, .body = matrix_body, .arg = (void *)((size_t)3 << 20)};
  char chunk[16], depth[16];
  snprintf(chunk, sizeof(chunk), "%d", c->chunk);
  snprintf(depth, sizeof(depth), "%d", c->depth);
  job.settings[0][0] = "CHUNK_BYTES";
  job.settings[0][1] = chunk;
  job.settings[1][0] = "PIPELINE_DEPTH";
  job.settings[1][1] = depth;
  unsigned long f = rt_run(&job);
  cr_assert_eq(f, 0, "p=%d chunk=%d depth=%d%s: %lu failures; first: %s", c->size, c->chunk,
               c->depth, c->reg ? " registered" : "", f, job.first);
}

/* More pieces on a channel than the 16-bit sequence field of the notification holds:
 * numbering must wrap cleanly, with credits, slots and checks all in step. */
static void wrap_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  int p = zcoll_comm_size(comm);
  for (long it = 0; it < 140000; it++) {
    int64_t v[3] = {rank + it, -rank, it % 7}, out[3];
    zcoll_status_t st = zcoll_allreduce(comm, v, out, 3, ZCOLL_INT64, ZCOLL_SUM);
    int64_t want0 = (int64_t)p * (p - 1) / 2 + (int64_t)p * it;
    if (st != ZCOLL_OK || out[0] != want0 || out[1] != -(int64_t)p * (p - 1) / 2 ||
        out[2] != p * (it % 7)) {
      char msg[200];
      snprintf(msg, sizeof(msg), "iteration %ld: %s, got %lld", it, zcoll_strerror(st),
               (long long)out[0]);
      rt_fail(job, rank, msg);
      return;
    }
  }
}

Test(loopback, sequence_numbers_wrap, .timeout = 600) {
  struct rt_job job = {.size = 2, .body = wrap_body};
  job.settings[0][0] = "PIPELINE_DEPTH";
  job.settings[0][1] = "3"; /* not a divisor of 65536: a wrong wrap shows at once */
  cr_assert_eq(rt_run(&job), 0, "%s", job.first);
}

/* The plan memo (allreduce.c): one shape repeated between more other shapes than the
 * schedule cache holds (so its entry is evicted and rebuilt for another shape), the
 * same count with another op, dtype or placement, and the memo's shape with a bad
 * buffer, which must still be refused. */
/* One allreduce of n int32 (rank r holds 3r + i + it), checked element by element. */
static int memo_call(struct rt_job *job, int rank, zcoll_comm_t *comm, int it, size_t n,
                     zcoll_op_t op, int in_place) {
  int p = zcoll_comm_size(comm);
  int32_t in[40], out[40];
  char msg[200];
  for (size_t i = 0; i < n; i++) in[i] = out[i] = rank * 3 + (int)i + it;
  zcoll_status_t st = zcoll_allreduce(comm, in_place ? ZCOLL_IN_PLACE : in, out, n, ZCOLL_INT32,
                                      op);
  for (size_t i = 0; i < n; i++) {
    /* the sum is 3p(p-1)/2 + p(i + it), the max 3(p-1) + i + it */
    int32_t want = op == ZCOLL_MAX ? 3 * (p - 1) + (int)i + it
                                   : 3 * p * (p - 1) / 2 + p * ((int)i + it);
    if (st != ZCOLL_OK || out[i] != want) {
      snprintf(msg, sizeof(msg), "call %d (n %zu, %s%s): %s, [%zu] = %d, want %d", it, n,
               op == ZCOLL_MAX ? "max" : "sum", in_place ? ", in place" : "", zcoll_strerror(st), i,
               out[i], want);
      rt_fail(job, rank, msg);
      return -1;
    }
  }
  return 0;
}

/* The plan memo (allreduce.c): shapes repeated between more other shapes than the
 * schedule cache holds, the same count right after with another op, placement or dtype,
 * and the memo's shape with bad buffers, which must still be refused. */
static void memo_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  int p = zcoll_comm_size(comm);
  char msg[200];
  for (int it = 0; it < 60; it++) {
    size_t n = (it % 2) ? 5 : (size_t)(6 + (it / 2) % 13); /* 13 shapes > the cache's 8 */
    if (memo_call(job, rank, comm, it, n, ZCOLL_SUM, 0) ||
        memo_call(job, rank, comm, it, n, ZCOLL_SUM, 0) ||
        memo_call(job, rank, comm, it, n, ZCOLL_MAX, 0) ||
        memo_call(job, rank, comm, it, n, ZCOLL_MAX, 1) ||
        memo_call(job, rank, comm, it, n, ZCOLL_SUM, 1))
      return;
    float g[40]; /* in place, as the call before: only the dtype differs */
    for (size_t i = 0; i < n; i++) g[i] = 0.5f + (float)rank;
    zcoll_status_t st = zcoll_allreduce(comm, ZCOLL_IN_PLACE, g, n, ZCOLL_FLOAT32, ZCOLL_SUM);
    float want = 0.5f * (float)p + (float)(p * (p - 1) / 2);
    if (st != ZCOLL_OK || g[n - 1] != want) {
      snprintf(msg, sizeof(msg), "float call %d: %s, [%zu] = %g, want %g", it, zcoll_strerror(st),
               n - 1, (double)g[n - 1], (double)want);
      rt_fail(job, rank, msg);
      return;
    }
    if (memo_call(job, rank, comm, it, n, ZCOLL_SUM, 1)) return;
  }
  /* The memo's shape (5 x int32 sum, out of place) with overlapping buffers on rank 0
   * only: refused there, and the communicator breaks everywhere, never a result. */
  if (memo_call(job, rank, comm, 0, 5, ZCOLL_SUM, 0)) return;
  int32_t b[16] = {0};
  zcoll_status_t st = zcoll_allreduce(comm, b, rank == 0 ? b + 1 : b + 8, 5, ZCOLL_INT32,
                                      ZCOLL_SUM);
  if (rank == 0 ? st != ZCOLL_ERR_INVALID_ARG : st == ZCOLL_OK) {
    snprintf(msg, sizeof(msg), "overlapping buffers on rank 0 after the memo: %s",
             zcoll_strerror(st));
    rt_fail(job, rank, msg);
  }
}

Test(loopback, plan_memo, .timeout = 300) {
  struct rt_job job = {.size = 3, .body = memo_body};
  cr_assert_eq(rt_run(&job), 0, "%s", job.first);
}
