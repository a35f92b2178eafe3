/*
 * The task-based vector interface (zcoll_vec_*) as rank threads over the loopback
 * transport, each rank running its tasks as threads of its own that commit: uneven
 * tasks per rank, two keys at once completed in opposite orders on different ranks,
 * rounds reusing a key, both progress modes; every element checked against sums
 * computed here. Then each misuse: more commits than tasks, a key a peer never
 * initializes, keys that differ between ranks, get before init, a non-commutative op.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <stdatomic.h>

#include "vec_bodies.h"

struct vec_case {
  int size;
  char progress[16];
};

ParameterizedTestParameters(vec, two_keys_uneven_tasks) {
  static struct vec_case cases[] = {
      {1, "caller"}, {2, "caller"}, {3, "thread"}, {4, "caller"}, {5, "thread"}};
  return cr_make_param_array(struct vec_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct vec_case *c, vec, two_keys_uneven_tasks, .timeout = 300) {
  struct rt_job job = {.size = c->size, .body = two_keys_body};
  job.settings[0][0] = "PROGRESS", job.settings[0][1] = c->progress;
  job.settings[1][0] = "CHUNK_BYTES", job.settings[1][1] = "16384";
  cr_assert_eq(rt_run(&job), 0, "p=%d %s: %s", c->size, c->progress, job.first);
}

/* ---- misuse ---- */

/* Rank 0 commits its one task twice before the others commit theirs (so the round
 * cannot be done yet): the second is one too many. */
static atomic_int overcommitted;
static void overcommit_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  zcoll_vec_t *v;
  double x[4] = {1, 2, 3, 4}, out[4];
  if (zcoll_vec_init(comm, "k", 1, 4, ZCOLL_FLOAT64, ZCOLL_SUM, &v)) {
    rt_fail(job, rank, zcoll_comm_last_error(comm));
    return;
  }
  if (rank != 0)
    while (!atomic_load(&overcommitted)) usleep(1000);
  if (zcoll_vec_commit(v, x) != ZCOLL_OK) rt_fail(job, rank, zcoll_last_error());
  if (rank == 0) {
    if (zcoll_vec_commit(v, x) != ZCOLL_ERR_INVALID_ARG ||
        !strstr(zcoll_last_error(), "more commits than tasks"))
      rt_fail(job, rank, "a second commit of a one-task round was accepted");
    atomic_store(&overcommitted, 1);
  }
  if (zcoll_vec_get(v, out) != ZCOLL_OK || out[3] != 4.0 * job->size)
    rt_fail(job, rank, "the round after a refused commit is wrong");
  /* and the key goes on */
  if (zcoll_vec_commit(v, x) != ZCOLL_OK || zcoll_vec_get(v, out) != ZCOLL_OK ||
      out[0] != 1.0 * job->size)
    rt_fail(job, rank, "the round after the refused commit's is wrong");
  zcoll_vec_free(v);
}

/* Rank 1 never initializes "ghost": rank 0's get times out naming it. (Rank 1 waits for
 * that before it leaves: its final barrier has the same short timeout.) */
static atomic_int ghost_done;
static void unknown_key_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  if (rank != 0) {
    while (!atomic_load(&ghost_done)) usleep(1000);
    return;
  }
  zcoll_vec_t *v;
  double x = 1, out;
  if (zcoll_vec_init(comm, "ghost", 1, 1, ZCOLL_FLOAT64, ZCOLL_SUM, &v) ||
      zcoll_vec_commit(v, &x)) {
    rt_fail(job, rank, zcoll_last_error());
    return;
  }
  zcoll_status_t st = zcoll_vec_get(v, &out);
  if (st != ZCOLL_ERR_TIMEOUT || !strstr(zcoll_last_error(), "rank 1 has not initialized it"))
    rt_fail(job, rank, zcoll_last_error());
  atomic_store(&ghost_done, 1);
}

static void differ_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  zcoll_vec_t *v;
  double x[8] = {0}, out[8];
  if (zcoll_vec_init(comm, "d", 1, rank ? 8 : 4, ZCOLL_FLOAT64, ZCOLL_SUM, &v) ||
      zcoll_vec_commit(v, x)) {
    rt_fail(job, rank, zcoll_last_error());
    return;
  }
  if (zcoll_vec_get(v, out) != ZCOLL_ERR_MISMATCH || !strstr(zcoll_last_error(), "differs"))
    rt_fail(job, rank, zcoll_last_error());
}

static void noncommutative(const void *in, void *inout, size_t n, zcoll_dtype_t dt, void *u) {
  (void)in, (void)inout, (void)n, (void)dt, (void)u;
}

Test(vec, misuse, .timeout = 300) {
  struct rt_job job = {.size = 3, .body = overcommit_body};
  cr_expect_eq(rt_run(&job), 0, "%s", job.first);
  job = (struct rt_job){.size = 2, .body = unknown_key_body};
  job.settings[0][0] = "TIMEOUT", job.settings[0][1] = "2";
  cr_expect_eq(rt_run(&job), 0, "%s", job.first);
  job = (struct rt_job){.size = 2, .body = differ_body};
  cr_expect_eq(rt_run(&job), 0, "%s", job.first);
  double out;
  cr_expect_eq(zcoll_vec_get(NULL, &out), ZCOLL_ERR_INVALID_ARG); /* get before init */
  cr_expect_eq(zcoll_vec_commit(NULL, &out), ZCOLL_ERR_INVALID_ARG);
}

static void bad_init_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  zcoll_vec_t *v, *w;
  zcoll_op_t op = (zcoll_op_t)(intptr_t)job->arg;
  if (zcoll_vec_init(comm, "nc", 1, 4, ZCOLL_UINT8, op, &v) != ZCOLL_ERR_INVALID_ARG ||
      !strstr(zcoll_comm_last_error(comm), "commutative"))
    rt_fail(job, rank, "a non-commutative op was accepted");
  if (zcoll_vec_init(comm, "", 1, 4, ZCOLL_UINT8, ZCOLL_SUM, &v) != ZCOLL_ERR_INVALID_ARG ||
      zcoll_vec_init(comm, "t", 0, 4, ZCOLL_UINT8, ZCOLL_SUM, &v) != ZCOLL_ERR_INVALID_ARG)
    rt_fail(job, rank, "an empty key or 0 tasks was accepted");
  if (zcoll_vec_init(comm, "dup", 1, 4, ZCOLL_UINT8, ZCOLL_SUM, &v) != ZCOLL_OK ||
      zcoll_vec_init(comm, "dup", 1, 4, ZCOLL_UINT8, ZCOLL_SUM, &w) != ZCOLL_ERR_INVALID_ARG)
    rt_fail(job, rank, "a key initialized twice on a rank was accepted");
  zcoll_vec_free(v);
}

Test(vec, init_errors, .timeout = 120) {
  zcoll_op_t op;
  cr_assert_eq(zcoll_op_create(noncommutative, NULL, 0, 0, &op), ZCOLL_OK);
  struct rt_job job = {.size = 2, .body = bad_init_body, .arg = (void *)(intptr_t)op};
  cr_expect_eq(rt_run(&job), 0, "%s", job.first);
  zcoll_op_free(op);
}

/* A vector of no elements: commit and get accept NULL buffers for 0 bytes, so the first
 * commit must not hand NULL to memcpy, even for 0 bytes (UBSan's nonnull check, which
 * CI's ASan+UBSan pass runs). */
static void empty_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  zcoll_vec_t *v;
  if (zcoll_vec_init(comm, "empty", 2, 0, ZCOLL_FLOAT32, ZCOLL_SUM, &v)) {
    rt_fail(job, rank, zcoll_last_error());
    return;
  }
  for (int round = 0; round < 2; round++)
    if (zcoll_vec_commit(v, NULL) || zcoll_vec_commit(v, NULL) || zcoll_vec_get(v, NULL))
      rt_fail(job, rank, zcoll_last_error());
  zcoll_vec_free(v);
}

Test(vec, empty_vector_null_buffers, .timeout = 120) {
  struct rt_job job = {.size = 2, .body = empty_body};
  cr_assert_eq(rt_run(&job), 0, "%s", job.first);
}

/* ---- found by review: each once a bug ---- */

/* A key's name used again once every rank freed it, rank 1 freeing late (so rank 0's
 * new INIT reaches the sequencer before rank 1's FREE of the old key). */
static pthread_barrier_t reuse_bar;
static void reuse_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  double x = rank + 1, out;
  for (int it = 0; it < 3 && !job->failures; it++) {
    zcoll_vec_t *v;
    if (zcoll_vec_init(comm, "k", 1, 1, ZCOLL_FLOAT64, ZCOLL_SUM, &v) != ZCOLL_OK ||
        zcoll_vec_commit(v, &x) != ZCOLL_OK || zcoll_vec_get(v, &out) != ZCOLL_OK ||
        out != job->size * (job->size + 1) / 2.0) {
      rt_fail(job, rank, zcoll_last_error());
      break;
    }
    if (rank == 1) usleep(100000);
    if (zcoll_vec_free(v) != ZCOLL_OK) rt_fail(job, rank, zcoll_comm_last_error(comm));
    pthread_barrier_wait(&reuse_bar);
  }
}

Test(vec, key_reused_after_every_rank_freed_it, .timeout = 120) {
  for (int p = 2; p <= 3; p++) {
    pthread_barrier_init(&reuse_bar, NULL, (unsigned)p);
    struct rt_job job = {.size = p, .body = reuse_body};
    job.settings[0][0] = "TIMEOUT", job.settings[0][1] = "10";
    cr_expect_eq(rt_run(&job), 0, "p=%d: %s", p, job.first);
    pthread_barrier_destroy(&reuse_bar);
  }
}

/* A key's round and an allreduce of the same shape meet: a mismatch, never ZCOLL_OK with
 * the sum of the two. */
static void mixed_call_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  zcoll_vec_t *v;
  double ones[4] = {1, 1, 1, 1}, hundreds[4] = {100, 100, 100, 100}, out[4];
  if (zcoll_vec_init(comm, "k", 1, 4, ZCOLL_FLOAT64, ZCOLL_SUM, &v) != ZCOLL_OK ||
      zcoll_vec_commit(v, ones) != ZCOLL_OK) {
    rt_fail(job, rank, zcoll_last_error());
    return;
  }
  zcoll_status_t st = rank == 1 ? zcoll_allreduce(comm, ZCOLL_IN_PLACE, hundreds, 4, ZCOLL_FLOAT64,
                                                  ZCOLL_SUM)
                                : zcoll_vec_get(v, out);
  if (st == ZCOLL_OK)
    rt_fail(job, rank, "a key's round paired with an allreduce of the same shape");
  else if (rank == 0 && !strstr(zcoll_last_error(), "a vector key's round"))
    rt_fail(job, rank, zcoll_last_error());
}

Test(vec, a_collective_meeting_a_round_is_a_mismatch, .timeout = 120) {
  struct rt_job job = {.size = 2, .body = mixed_call_body};
  job.settings[0][0] = "TIMEOUT", job.settings[0][1] = "10";
  cr_expect_eq(rt_run(&job), 0, "%s", job.first);
}

/* A watchdog aborts the communicator while zcoll_vec_get waits (rank 1 never commits):
 * get returns ZCOLL_ERR_PEER_FAILED and abort frees nothing under it. */
struct watchdog {
  zcoll_comm_t *comm;
  zcoll_status_t st;
};
static void *watchdog_main(void *p) {
  struct watchdog *w = p;
  usleep(200000);
  w->st = zcoll_comm_abort(w->comm);
  return NULL;
}
static pthread_barrier_t abort_bar;
static void abort_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  zcoll_vec_t *v;
  double x = 1, out;
  if (zcoll_vec_init(comm, "k", 1, 1, ZCOLL_FLOAT64, ZCOLL_SUM, &v) != ZCOLL_OK) {
    rt_fail(job, rank, zcoll_comm_last_error(comm));
    return;
  }
  if (rank == 1) { /* never commits; leaves once rank 0 has aborted */
    pthread_barrier_wait(&abort_bar);
    return;
  }
  zcoll_vec_commit(v, &x);
  struct watchdog w = {comm, ZCOLL_OK};
  pthread_t t;
  pthread_create(&t, NULL, watchdog_main, &w);
  zcoll_status_t st = zcoll_vec_get(v, &out);
  pthread_join(t, NULL);
  if (st != ZCOLL_ERR_PEER_FAILED || w.st != ZCOLL_OK)
    rt_fail(job, rank, "get under an abort did not end with ZCOLL_ERR_PEER_FAILED");
  job->released[0] = 1;
  pthread_barrier_wait(&abort_bar);
}

Test(vec, abort_from_a_watchdog_while_get_waits, .timeout = 120) {
  static const char *const modes[] = {"caller", "thread"};
  for (int m = 0; m < 2; m++) {
    pthread_barrier_init(&abort_bar, NULL, 2);
    struct rt_job job = {.size = 2, .body = abort_body};
    job.settings[0][0] = "PROGRESS", job.settings[0][1] = modes[m];
    job.settings[1][0] = "TIMEOUT", job.settings[1][1] = "10";
    rt_run(&job); /* rank 1's destroy fails: its peer aborted */
    cr_expect(!strstr(job.all, "get under an abort"), "%s: %s", modes[m], job.all);
    pthread_barrier_destroy(&abort_bar);
  }
}
