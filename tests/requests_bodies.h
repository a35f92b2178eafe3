/*
 * requests_bodies.h -- what each rank does in the request tests over rank threads: shared
 * by test_requests.c (Criterion) and progs/requests_tsan.c (the same under
 * ThreadSanitizer, which Criterion's runner cannot host: Snaipe/Criterion#274).
 */
#ifndef ZCOLL_REQUESTS_BODIES_H
#define ZCOLL_REQUESTS_BODIES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rank_threads.h"
#include "requests_common.h"

#define NREQ 12
static const size_t counts[NREQ] = {1, 7, 1000, 0, 5000, 33, 20000, 2, 4097, 64, 12345, 3};

static inline void many_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
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
    long bad = st == ZCOLL_OK ? rq_check(out[k], counts[k], p, k, rq_op(k)) : -2;
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

/* Two persistent requests used in turns (one computes while the other is in flight),
 * their buffers refilled between starts, one of them in place. */
static inline void persistent_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
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

/* Rank 1 makes an argument error while requests are in flight everywhere: none hangs,
 * every request that was still in flight when the news came ends with an error, and so
 * does what follows. One that had finished before (a progress thread can finish request 0
 * on every rank before rank 1's main thread makes its error) keeps its success, and then
 * its result must be exact: a success is never wrong data. */
static inline void poison_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  enum { N = 2000, K = 4 };
  int64_t in[K][N], out[K][N];
  zcoll_request_t *req[K];
  for (int k = 0; k < K; k++) {
    rq_fill(in[k], N, rank, k);
    memset(out[k], 0x5a, sizeof(out[k]));
    /* Rank 1 may have run ahead and made its error before this rank posts: then the post
     * itself reports the failed communicator, and there is no request to wait for. */
    if (zcoll_iallreduce(comm, in[k], out[k], N, ZCOLL_INT64, ZCOLL_SUM, &req[k]) != ZCOLL_OK)
      req[k] = NULL;
  }
  if (rank == 1 &&
      zcoll_allreduce(comm, in[0], NULL, N, ZCOLL_INT64, ZCOLL_SUM) != ZCOLL_ERR_INVALID_ARG)
    rt_fail(job, rank, "recvbuf NULL was not an argument error");
  for (int k = 0; k < K; k++) {
    if (req[k] == NULL) continue;
    zcoll_status_t st = zcoll_wait(req[k]);
    long bad = st == ZCOLL_OK ? rq_check(out[k], N, zcoll_comm_size(comm), k, ZCOLL_SUM) : -1;
    if (st == ZCOLL_IN_PROGRESS || bad >= 0) {
      char msg[200];
      snprintf(msg, sizeof(msg), "request %d ended with %s after rank 1's error%s", k,
               zcoll_strerror(st), bad >= 0 ? " and wrong data" : "");
      rt_fail(job, rank, msg);
    }
    zcoll_request_free(req[k]);
  }
  if (zcoll_allreduce(comm, in[0], out[0], 1, ZCOLL_INT64, ZCOLL_SUM) == ZCOLL_OK)
    rt_fail(job, rank, "the communicator went on after the error");
  /* A post that failed never touches its buffer, then or later. */
  for (int k = 0; k < K; k++)
    for (int i = 0; req[k] == NULL && i < N; i++)
      if (out[k][i] != (int64_t)0x5a5a5a5a5a5a5a5aULL) {
        rt_fail(job, rank, "a failed post wrote into its receive buffer");
        break;
      }
}

/* Posted, then no zcoll call for a second: with a progress thread the collective is done
 * by then (one zcoll_test says so); with caller progress nothing moved meanwhile, and one
 * test -- one pass over a vector of many pieces -- cannot finish it. */
static inline void overlap_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  int thread = job->arg != NULL;
  enum { N = 1 << 17 };
  int64_t *in = malloc(N * sizeof(int64_t)), *out = malloc(N * sizeof(int64_t));
  rq_fill(in, N, rank, 5);
  zcoll_request_t *req;
  if (zcoll_iallreduce(comm, in, out, N, ZCOLL_INT64, ZCOLL_SUM, &req) != ZCOLL_OK) {
    rt_fail(job, rank, zcoll_comm_last_error(comm));
    return;
  }
  struct timespec compute = {1, 0};
  nanosleep(&compute, NULL); /* the application computing, not calling zcoll */
  zcoll_status_t st = zcoll_test(req);
  if (thread && st != ZCOLL_OK)
    rt_fail(job, rank, "the progress thread did not finish it while the rank computed");
  if (!thread && st != ZCOLL_IN_PROGRESS)
    rt_fail(job, rank, "caller progress finished it without calls (the test proves nothing)");
  if (zcoll_wait(req) != ZCOLL_OK || rq_check(out, N, zcoll_comm_size(comm), 5, ZCOLL_SUM) >= 0)
    rt_fail(job, rank, "wrong result");
  zcoll_request_free(req);
  free(in);
  free(out);
}

#endif
