/*
 * Non-blocking and persistent allreduce (lib/request.c) as threads over the loopback
 * transport: many requests in flight completed in any order by test and wait, a
 * blocking call among them, persistent requests restarted with new contents and
 * double-buffered, misuse refused, and errors that end every request in flight.
 * Results are checked element by element against sums computed here.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rank_threads.h"
#include "requests_common.h"

#define NREQ 12
static const size_t counts[NREQ] = {1, 7, 1000, 0, 5000, 33, 20000, 2, 4097, 64, 12345, 3};

static void many_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  int p = zcoll_comm_size(comm);
  int64_t *in[NREQ], *out[NREQ];
  zcoll_request_t *req[NREQ];
  char msg[300];
  for (int k = 0; k < NREQ; k++) {
    in[k] = malloc((counts[k] + 1) * sizeof(int64_t));
    out[k] = malloc((counts[k] + 1) * sizeof(int64_t));
    rq_fill(in[k], counts[k], rank, k);
    zcoll_op_t op = rq_op(k);
    /* Every third in place, so both kinds are in flight together. */
    const void *src = in[k];
    if (k % 3 == 1) {
      memcpy(out[k], in[k], counts[k] * sizeof(int64_t));
      src = ZCOLL_IN_PLACE;
    }
    zcoll_status_t st = zcoll_iallreduce(comm, src, out[k], counts[k], ZCOLL_INT64, op, &req[k]);
    if (st != ZCOLL_OK) {
      snprintf(msg, sizeof(msg), "iallreduce %d: %s", k, zcoll_comm_last_error(comm));
      rt_fail(job, rank, msg);
      return;
    }
    if (k == NREQ / 2) { /* a blocking call among them: it waits for the ones before */
      int64_t b[5], bo[5];
      rq_fill(b, 5, rank, 99);
      if (zcoll_allreduce(comm, b, bo, 5, ZCOLL_INT64, ZCOLL_SUM) != ZCOLL_OK ||
          rq_check(bo, 5, p, 99, ZCOLL_SUM) >= 0)
        rt_fail(job, rank, "the blocking call among requests failed or was wrong");
    }
  }
  /* Complete them in an order of this rank's own: some by polling test, some by wait. */
  int order[NREQ];
  rq_shuffle(order, NREQ, rank);
  for (int n = 0; n < NREQ; n++) {
    int k = order[n];
    zcoll_status_t st = rq_end(req[k], n % 2);
    long bad = st == ZCOLL_OK ? rq_check(out[k], counts[k], p, k, rq_op(k))
                              : -2;
    if (bad != -1) {
      snprintf(msg, sizeof(msg), "request %d (count %zu): %s, first wrong element %ld", k,
               counts[k], zcoll_strerror(st), bad);
      rt_fail(job, rank, msg);
    }
    /* Done means done: test and wait say so again, and free releases it. */
    if (zcoll_test(req[k]) != ZCOLL_OK || zcoll_wait(req[k]) != ZCOLL_OK ||
        zcoll_request_free(req[k]) != ZCOLL_OK)
      rt_fail(job, rank, "a completed request did not stay complete, or could not be freed");
    free(in[k]);
    free(out[k]);
  }
}

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

/* Two persistent requests used in turns (one computes while the other is in flight),
 * their buffers refilled between starts, one of them in place. */
static void persistent_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  int p = zcoll_comm_size(comm);
  enum { N = 3000, ROUNDS = 20 };
  int64_t *a_in = malloc(N * sizeof(int64_t)), *a_out = malloc(N * sizeof(int64_t));
  int64_t *b = malloc(N * sizeof(int64_t));
  zcoll_request_t *ra, *rb;
  rq_fill(a_in, N, rank, 0);
  if (zcoll_allreduce_init(comm, a_in, a_out, N, ZCOLL_INT64, ZCOLL_SUM, &ra) != ZCOLL_OK ||
      zcoll_allreduce_init(comm, ZCOLL_IN_PLACE, b, N, ZCOLL_INT64, ZCOLL_MAX, &rb) != ZCOLL_OK) {
    rt_fail(job, rank, zcoll_comm_last_error(comm));
    return;
  }
  /* Inactive requests are complete. */
  if (zcoll_test(ra) != ZCOLL_OK || zcoll_wait(rb) != ZCOLL_OK)
    rt_fail(job, rank, "an inactive persistent request is not complete");
  zcoll_start(ra);
  for (int round = 0; round < ROUNDS; round++) {
    rq_fill(b, N, rank, 1000 + round);
    if (zcoll_start(rb) != ZCOLL_OK) rt_fail(job, rank, "start b");
    if (zcoll_wait(ra) != ZCOLL_OK || rq_check(a_out, N, p, round, ZCOLL_SUM) >= 0) {
      rt_fail(job, rank, "persistent a: wrong or failed");
      break;
    }
    rq_fill(a_in, N, rank, round + 1);
    if (round + 1 < ROUNDS && zcoll_start(ra) != ZCOLL_OK) rt_fail(job, rank, "start a");
    if (zcoll_wait(rb) != ZCOLL_OK || rq_check(b, N, p, 1000 + round, ZCOLL_MAX) >= 0) {
      rt_fail(job, rank, "persistent b: wrong or failed");
      break;
    }
  }
  if (zcoll_request_free(ra) != ZCOLL_OK || zcoll_request_free(rb) != ZCOLL_OK)
    rt_fail(job, rank, "free");
  free(a_in);
  free(a_out);
  free(b);
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

/* Rank 1 makes an argument error while requests are in flight everywhere: every request
 * on every rank ends with an error (none hangs, none says OK), and so does what follows. */
static void poison_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  enum { N = 2000, K = 4 };
  int64_t in[K][N], out[K][N];
  zcoll_request_t *req[K];
  for (int k = 0; k < K; k++) {
    rq_fill(in[k], N, rank, k);
    if (zcoll_iallreduce(comm, in[k], out[k], N, ZCOLL_INT64, ZCOLL_SUM, &req[k]) != ZCOLL_OK)
      rt_fail(job, rank, "iallreduce");
  }
  if (rank == 1 &&
      zcoll_allreduce(comm, in[0], NULL, N, ZCOLL_INT64, ZCOLL_SUM) != ZCOLL_ERR_INVALID_ARG)
    rt_fail(job, rank, "recvbuf NULL was not an argument error");
  for (int k = 0; k < K; k++) {
    zcoll_status_t st = zcoll_wait(req[k]);
    if (st == ZCOLL_OK || st == ZCOLL_IN_PROGRESS) {
      char msg[200];
      snprintf(msg, sizeof(msg), "request %d ended with %s after rank 1's error", k,
               zcoll_strerror(st));
      rt_fail(job, rank, msg);
    }
    zcoll_request_free(req[k]);
  }
  if (zcoll_allreduce(comm, in[0], out[0], 1, ZCOLL_INT64, ZCOLL_SUM) == ZCOLL_OK)
    rt_fail(job, rank, "the communicator went on after the error");
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
