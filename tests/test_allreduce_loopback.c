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

/* ZCOLL_TEST_SAMPLE=1 (CI's sanitizer pass): the first 6 cases below, p = 2, 3, 4, 6, 9
 * and one registered; the plain pass runs all 11. */
ParameterizedTestParameters(loopback, matrix) {
  static struct matrix_case cases[] = {
      {2, 4096, 4}, {3, 4096, 2},  {4, 65536, 8}, {6, 1024, 2}, {9, 4096, 4}, {5, 65536, 4, 1},
      {1, 4096, 4}, {5, 4096, 3}, {7, 65536, 8}, {8, 8192, 4}, {3, 4096, 3, 1},
  };
  return cr_make_param_array(struct matrix_case, cases,
                             zt_sampled() ? 6 : sizeof(cases) / sizeof(cases[0]));
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
