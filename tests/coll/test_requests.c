/*
 * Non-blocking and persistent allreduce (lib/coll/request.c) as threads over the loopback
 * transport: many requests in flight completed in any order by test and wait, a
 * blocking call among them, persistent requests restarted with new contents and
 * double-buffered, misuse refused, and errors that end every request in flight.
 * Results are checked element by element against sums computed here.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "requests_bodies.h"

static void run_many(const char *algo, int p) {
  struct rt_job job = {.size = p, .body = many_body};
  job.settings[0][0] = "ALGO";
  job.settings[0][1] = algo;
  job.settings[1][0] = "CHUNK_BYTES"; /* many pieces per request, writers wait for credits */
  job.settings[1][1] = "1024";
  job.settings[2][0] = "PIPELINE_DEPTH";
  job.settings[2][1] = "2";
  job.settings[3][0] = "TIMEOUT";
  job.settings[3][1] = "60";
  cr_assert_eq(rt_run(&job), 0, "ALGO=%s p=%d: %s", algo, p, job.first);
}

Test(requests, many_in_flight_any_order, .timeout = 300) {
  static const char *const algos[] = {"auto", "ring", "butterfly", "rhd", "tree"};
  for (int a = 0; a < 5; a++)
    for (int p = 1; p <= 5; p++) run_many(algos[a], p);
}

Test(requests, persistent_double_buffered, .timeout = 120) {
  static const char *const algos[] = {"ring", "butterfly", "rhd", "tree"};
  for (int a = 0; a < 4; a++)
    for (int p = 2; p <= 4; p++) {
      struct rt_job job = {.size = p, .body = persistent_body};
      job.settings[0][0] = "ALGO";
      job.settings[0][1] = algos[a];
      job.settings[1][0] = "CHUNK_BYTES";
      job.settings[1][1] = "4096";
      job.settings[2][0] = "TIMEOUT";
      job.settings[2][1] = "60";
      cr_assert_eq(rt_run(&job), 0, "ALGO=%s p=%d: %s", algos[a], p, job.first);
    }
}

Test(requests, an_error_ends_every_request, .timeout = 120) {
  for (int p = 2; p <= 4; p++) {
    struct rt_job job = {.size = p, .body = poison_body};
    job.settings[0][0] = "TIMEOUT";
    job.settings[0][1] = "30";
    double t0 = sp_now_();
    cr_assert_eq(rt_run(&job), 0, "p=%d: %s", p, job.first);
    cr_assert_lt(sp_now_() - t0, 20.0, "p=%d: noticed by timeout, not by the news", p);
  }
}

/* zcoll_wait_timeout: while the last rank is late, rank 0's wait comes back with
 * ZCOLL_IN_PROGRESS after about its bound; called again it ends with the right sum. */
static atomic_int slices_seen;
static void wait_timeout_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  enum { N = 1000 };
  static _Thread_local int64_t v[N];
  for (int k = 0; k < N; k++) v[k] = rank * 1000 + k;
  if (rank == job->size - 1) {
    struct timespec late = {0, 300 * 1000 * 1000};
    nanosleep(&late, NULL);
  }
  zcoll_request_t *req;
  if (zcoll_iallreduce(comm, ZCOLL_IN_PLACE, v, N, ZCOLL_INT64, ZCOLL_SUM, &req) != ZCOLL_OK) {
    rt_fail(job, rank, zcoll_comm_last_error(comm));
    return;
  }
  zcoll_status_t st;
  int slices = 0;
  double t0 = sp_now_();
  while ((st = zcoll_wait_timeout(req, 20)) == ZCOLL_IN_PROGRESS) slices++;
  if (rank == 0) atomic_store(&slices_seen, slices);
  if (rank == 0 && (slices < 2 || sp_now_() - t0 < 0.2))
    rt_fail(job, rank, "zcoll_wait_timeout did not come back while the last rank was late");
  int64_t p = job->size;
  for (int k = 0; st == ZCOLL_OK && k < N; k++)
    if (v[k] != 1000 * p * (p - 1) / 2 + p * k) st = ZCOLL_ERR_INVALID_ARG;
  if (st != ZCOLL_OK) rt_fail(job, rank, "zcoll_wait_timeout: failed, or a wrong sum");
  if (zcoll_request_free(req) != ZCOLL_OK) rt_fail(job, rank, "request_free after the wait");
}

Test(requests, wait_timeout_in_slices, .timeout = 120) {
  for (int p = 2; p <= 3; p++) {
    struct rt_job job = {.size = p, .body = wait_timeout_body};
    cr_assert_eq(rt_run(&job), 0, "p=%d: %s", p, job.first);
    cr_expect_gt(atomic_load(&slices_seen), 1);
  }
}

/* ---- ZCOLL_PROGRESS=thread ------------------------------------------------------------ */

Test(requests, progress_thread_many_in_flight, .timeout = 300) {
  static const char *const algos[] = {"ring", "butterfly", "tree"};
  for (int a = 0; a < 3; a++)
    for (int p = 2; p <= 4; p++) {
      struct rt_job job = {.size = p, .body = many_body};
      job.settings[0][0] = "ALGO";
      job.settings[0][1] = algos[a];
      job.settings[1][0] = "CHUNK_BYTES";
      job.settings[1][1] = "1024";
      job.settings[2][0] = "PROGRESS";
      job.settings[2][1] = "thread";
      job.settings[3][0] = "TIMEOUT";
      job.settings[3][1] = "60";
      cr_assert_eq(rt_run(&job), 0, "thread ALGO=%s p=%d: %s", algos[a], p, job.first);
    }
}

Test(requests, progress_thread_moves_while_the_rank_computes, .timeout = 120) {
  for (int thread = 0; thread < 2; thread++) {
    struct rt_job job = {.size = 3, .body = overlap_body, .arg = thread ? (void *)1 : NULL};
    job.settings[0][0] = "PROGRESS";
    job.settings[0][1] = thread ? "thread" : "caller";
    job.settings[1][0] = "CHUNK_BYTES";
    job.settings[1][1] = "4096";
    job.settings[2][0] = "ALGO";
    job.settings[2][1] = "ring";
    cr_assert_eq(rt_run(&job), 0, "PROGRESS=%s: %s", thread ? "thread" : "caller", job.first);
  }
}
