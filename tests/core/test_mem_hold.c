/*
 * zcoll_mem_free refuses memory a collective in flight uses -- any byte of it, whichever
 * communicator runs the collective -- with INVALID_ARG naming the collective, and frees it
 * once the collective has ended (done or failed). The three ways it once freed memory in use
 * (issue 38): an iallreduce on a split child of the communicator that made the memory, a
 * partial request's start, a buffer that starts in one region and runs into the next.
 * Ranks are threads (rank_threads.h); rank 1 joins each collective only once rank 0 has
 * tried the free, so the collective is surely in flight then.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "rank_threads.h"
#include "zcoll.h"

#define N 1000

/* Rank 0 tells rank 1 that it may go on (a number per step). */
static atomic_int step_done;

static void go(int step) { atomic_store(&step_done, step); }
static void await(int step) {
  while (atomic_load(&step_done) < step) usleep(1000);
}

static void fill(float *x, int rank) {
  for (int i = 0; i < N; i++) x[i] = (float)(i + 1000 * rank);
}

static void run_pair(rt_body body) {
  atomic_store(&step_done, 0);
  struct rt_job job = {.size = 2, .body = body};
  cr_expect_eq(rt_run(&job), 0, "%s", job.all);
}

/* Every element of out is the sum of both ranks' fill. */
static int sum_ok(const float *out) {
  for (int i = 0; i < N; i++)
    if (out[i] != (float)(2 * i + 1000)) return 0;
  return 1;
}

/* Rank 0's free of p (on comm) is refused, naming `kind` and the memory; a message else. */
static void expect_refused(struct rt_job *job, zcoll_comm_t *comm, void *p, const char *kind) {
  zcoll_status_t st = zcoll_mem_free(comm, p);
  const char *msg = zcoll_comm_last_error(comm);
  char what[400];
  if (st != ZCOLL_ERR_INVALID_ARG || !strstr(msg, kind) || !strstr(msg, "in flight")) {
    snprintf(what, sizeof(what),
             "free of memory in use: %s, \"%.300s\" (expected INVALID_ARG naming %s)",
             zcoll_strerror(st), st == ZCOLL_OK ? "" : msg, kind);
    rt_fail(job, 0, what);
  }
}

/* Rank 1's side: joins the allreduce once told. */
static void join(struct rt_job *job, zcoll_comm_t *comm) {
  float mine[N], res[N];
  await(1);
  fill(mine, 1);
  if (zcoll_allreduce(comm, mine, res, N, ZCOLL_FLOAT32, ZCOLL_SUM) != ZCOLL_OK)
    rt_fail(job, 1, zcoll_comm_last_error(comm));
  else if (!sum_ok(res))
    rt_fail(job, 1, "wrong sum");
}

/* Rank 0's side after its refused frees: lets rank 1 join, waits, checks, and frees a and b
 * (allocated on mcomm), which must go through now that the collective has ended. */
static void finish(struct rt_job *job, zcoll_comm_t *comm, zcoll_request_t *req, const float *res,
                   zcoll_comm_t *mcomm, void *a, void *b) {
  go(1);
  if (zcoll_wait(req) != ZCOLL_OK) rt_fail(job, 0, zcoll_comm_last_error(comm));
  zcoll_request_free(req);
  if (!sum_ok(res)) rt_fail(job, 0, "wrong sum");
  if (zcoll_mem_free(mcomm, a) != ZCOLL_OK || zcoll_mem_free(mcomm, b) != ZCOLL_OK)
    rt_fail(job, 0, zcoll_comm_last_error(mcomm));
}

static void child_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  zcoll_comm_t *child = NULL;
  if (zcoll_comm_split(comm, 0, rank, &child) != ZCOLL_OK || !child) {
    rt_fail(job, rank, zcoll_last_error());
    return;
  }
  float *x = NULL, *out = NULL;
  if (rank == 0) {
    if (zcoll_mem_alloc(comm, N * sizeof(float), (void **)&x) != ZCOLL_OK ||
        zcoll_mem_alloc(comm, N * sizeof(float), (void **)&out) != ZCOLL_OK) {
      rt_fail(job, rank, zcoll_comm_last_error(comm));
      return;
    }
    fill(x, 0);
    zcoll_request_t *req = NULL;
    if (zcoll_iallreduce(child, x, out, N, ZCOLL_FLOAT32, ZCOLL_SUM, &req) != ZCOLL_OK) {
      rt_fail(job, rank, zcoll_comm_last_error(child));
      return;
    }
    expect_refused(job, comm, x, "allreduce");   /* its input, on the parent */
    expect_refused(job, comm, out, "allreduce"); /* its result */
    finish(job, child, req, out, comm, x, out);
  } else {
    join(job, child);
  }
  if (zcoll_comm_destroy(child) != ZCOLL_OK) rt_fail(job, rank, "the child's destroy failed");
}

Test(mem_hold, a_split_childs_iallreduce_holds_the_parents_memory) { run_pair(child_body); }

static void partial_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  float *x = NULL, *out = NULL;
  if (zcoll_mem_alloc(comm, N * sizeof(float), (void **)&x) != ZCOLL_OK ||
      zcoll_mem_alloc(comm, N * sizeof(float), (void **)&out) != ZCOLL_OK) {
    rt_fail(job, rank, zcoll_comm_last_error(comm));
    return;
  }
  fill(x, rank);
  zcoll_request_t *req = NULL;
  if (zcoll_allreduce_partial_init(comm, x, out, N, ZCOLL_FLOAT32, ZCOLL_SUM, 2, &req) !=
      ZCOLL_OK) {
    rt_fail(job, rank, zcoll_comm_last_error(comm));
    return;
  }
  if (rank == 1) await(1);
  if (zcoll_start(req) != ZCOLL_OK) rt_fail(job, rank, zcoll_comm_last_error(comm));
  if (rank == 0) {
    /* Offered, its round not decided (quorum 2): the request holds both buffers. */
    expect_refused(job, comm, x, "partial");
    expect_refused(job, comm, out, "partial");
    go(1);
  }
  if (zcoll_wait(req) != ZCOLL_OK) rt_fail(job, rank, zcoll_comm_last_error(comm));
  if (!sum_ok(out)) rt_fail(job, rank, "wrong sum");
  if (zcoll_partial_flush(req) != ZCOLL_OK || zcoll_request_free(req) != ZCOLL_OK)
    rt_fail(job, rank, zcoll_comm_last_error(comm));
  if (zcoll_mem_free(comm, x) != ZCOLL_OK || zcoll_mem_free(comm, out) != ZCOLL_OK)
    rt_fail(job, rank, zcoll_comm_last_error(comm));
}

Test(mem_hold, a_partial_requests_offer_holds_its_buffers) { run_pair(partial_body); }

/* Rank 0's iallreduce of x (filled here) into res; NULL (and rank 1 let go) if refused. */
static zcoll_request_t *start(struct rt_job *job, zcoll_comm_t *comm, float *x, float *res) {
  fill(x, 0);
  zcoll_request_t *req = NULL;
  if (zcoll_iallreduce(comm, x, res, N, ZCOLL_FLOAT32, ZCOLL_SUM, &req) != ZCOLL_OK) {
    rt_fail(job, 0, zcoll_comm_last_error(comm));
    go(1);
    return NULL;
  }
  return req;
}

/* Two regions one right after the other (the kernel maps new memory below the last):
 * *lo and *hi, each `len` bytes; 0 if none of a few tries were adjacent. */
static int adjacent_pair(zcoll_comm_t *comm, size_t len, char **lo, char **hi) {
  char *r[8];
  int n = 0;
  for (; n < 8; n++) {
    if (zcoll_mem_alloc(comm, len, (void **)&r[n]) != ZCOLL_OK) break;
    for (int k = 0; k < n; k++)
      if (r[k] + len == r[n] || r[n] + len == r[k]) {
        *lo = r[k] < r[n] ? r[k] : r[n];
        *hi = r[k] < r[n] ? r[n] : r[k];
        for (int j = 0; j < n; j++)
          if (j != k) zcoll_mem_free(comm, r[j]);
        return 1;
      }
  }
  for (int j = 0; j < n; j++) zcoll_mem_free(comm, r[j]);
  return 0;
}

static void span_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  float res[N];
  if (rank == 1) {
    join(job, comm);
    return;
  }
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  char *lo = NULL, *hi = NULL;
  if (!adjacent_pair(comm, page, &lo, &hi)) {
    rt_fail(job, rank, "no two zcoll_mem_alloc regions were adjacent in 8 tries");
    go(1);
    return;
  }
  /* The input starts in lo and runs 200 floats into hi. */
  float *x = (float *)(hi - (N - 200) * sizeof(float));
  zcoll_request_t *req = start(job, comm, x, res);
  if (!req) return;
  expect_refused(job, comm, hi, "allreduce"); /* not where the buffer starts */
  expect_refused(job, comm, lo, "allreduce");
  finish(job, comm, req, res, comm, lo, hi);
}

Test(mem_hold, a_buffer_over_two_regions_holds_both) { run_pair(span_body); }

/* Rank 0: *x in a region of mcomm, an iallreduce of it on comm, and a free refused while
 * it is in flight; NULL (and rank 1 let go) if something failed first. */
static zcoll_request_t *started_on_memory(struct rt_job *job, zcoll_comm_t *mcomm,
                                          zcoll_comm_t *comm, float **x, float *res) {
  if (zcoll_mem_alloc(mcomm, N * sizeof(float), (void **)x) != ZCOLL_OK) {
    rt_fail(job, 0, zcoll_comm_last_error(mcomm));
    go(1);
    return NULL;
  }
  zcoll_request_t *req = start(job, comm, *x, res);
  if (req) expect_refused(job, mcomm, *x, "allreduce");
  return req;
}

/* A collective that failed lets go too: rank 1 aborts instead of joining. */
static void failed_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  if (rank == 1) {
    await(1);
    zcoll_comm_abort(comm);
    job->released[1] = 1;
    return;
  }
  float *x = NULL, res[N];
  zcoll_request_t *req = started_on_memory(job, comm, comm, &x, res);
  if (!req) return;
  go(1);
  zcoll_status_t st = zcoll_wait(req);
  if (st != ZCOLL_ERR_PEER_FAILED) rt_fail(job, rank, "the wait did not fail with PEER_FAILED");
  zcoll_request_free(req);
  if (zcoll_mem_free(comm, x) != ZCOLL_OK) rt_fail(job, rank, zcoll_comm_last_error(comm));
}

Test(mem_hold, a_failed_collective_lets_go) { run_pair(failed_body); }

/* In place, and broadcasts (one buffer, read and written): held as well. Rank 0's buffer is
 * in a region; each step is one collective, rank 1 joining it once the free was refused. */
static void in_place_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  float *x = NULL, mine[N];
  if (rank == 0 && zcoll_mem_alloc(comm, N * sizeof(float), (void **)&x) != ZCOLL_OK) {
    rt_fail(job, rank, zcoll_comm_last_error(comm));
    go(3);
    return;
  }
  for (int step = 1; step <= 3; step++) {
    float *buf = rank == 0 ? x : mine;
    fill(buf, rank);
    int root = step - 2; /* step 1: an allreduce in place; 2, 3: broadcasts from 0, 1 */
    zcoll_request_t *req = NULL;
    if (rank == 1) await(step);
    zcoll_status_t st = step == 1 ? zcoll_iallreduce(comm, ZCOLL_IN_PLACE, buf, N, ZCOLL_FLOAT32,
                                                     ZCOLL_SUM, &req)
                                  : zcoll_ibroadcast(comm, buf, N, ZCOLL_FLOAT32, root, &req);
    if (st != ZCOLL_OK) {
      rt_fail(job, rank, zcoll_comm_last_error(comm));
      go(3);
      return;
    }
    if (rank == 0) {
      expect_refused(job, comm, x, step == 1 ? "allreduce" : "broadcast");
      go(step);
    }
    if (zcoll_wait(req) != ZCOLL_OK) rt_fail(job, rank, zcoll_comm_last_error(comm));
    zcoll_request_free(req);
    float want0 = step == 1 ? 1000.0f : step == 2 ? 0.0f : 1000.0f; /* element 0 */
    if (buf[0] != want0 || (step == 1 && !sum_ok(buf))) rt_fail(job, rank, "wrong result");
  }
  if (rank == 0 && zcoll_mem_free(comm, x) != ZCOLL_OK)
    rt_fail(job, rank, zcoll_comm_last_error(comm));
}

Test(mem_hold, in_place_and_broadcasts_hold_their_buffer) { run_pair(in_place_body); }

/* An abort with a request in flight on a split child: the parent's memory it used is
 * freeable after, though the request is gone with the child. */
static void abort_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  zcoll_comm_t *child = NULL;
  if (zcoll_comm_split(comm, 0, rank, &child) != ZCOLL_OK || !child) {
    rt_fail(job, rank, zcoll_last_error());
    return;
  }
  if (rank == 1) { /* the child's collective fails: its peer aborted */
    float mine[N], res[N];
    await(1);
    fill(mine, 1);
    zcoll_allreduce(child, mine, res, N, ZCOLL_FLOAT32, ZCOLL_SUM);
    zcoll_comm_destroy(child);
    return;
  }
  float *x = NULL, res[N];
  zcoll_request_t *req = started_on_memory(job, comm, child, &x, res);
  if (!req) return;
  zcoll_comm_abort(child); /* frees the child and its request */
  go(1);
  if (zcoll_mem_free(comm, x) != ZCOLL_OK) rt_fail(job, rank, zcoll_comm_last_error(comm));
}

Test(mem_hold, an_abort_with_a_request_in_flight_lets_go) { run_pair(abort_body); }
