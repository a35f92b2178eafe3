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

#include "rank_threads.h"

/* Task t of rank r, round n, element k: small integers, exact in float64 sums. */
static double task_value(int r, int t, int n, size_t k) {
  return (double)((r * 7 + t * 3 + n * 5 + (int)(k % 13)) % 17) - 8;
}
static int tasks_of(int r) { return 1 + r % 3; } /* uneven: 1, 2, 3, 1, ... */

struct task_arg {
  zcoll_vec_t *vec;
  int rank, task, round;
  size_t count;
  zcoll_status_t st;
};

static void *task_main(void *p) {
  struct task_arg *a = p;
  double *x = malloc(a->count * sizeof(double) + 1);
  for (size_t k = 0; k < a->count; k++) x[k] = task_value(a->rank, a->task, a->round, k);
  a->st = zcoll_vec_commit(a->vec, x);
  free(x); /* the vector is folded in: the task may reuse it at once */
  return NULL;
}

/* The round's tasks of this rank, as threads. */
static void commit_tasks(zcoll_vec_t *vec, int rank, int round, size_t count,
                         struct task_arg *args, pthread_t *th) {
  for (int t = 0; t < tasks_of(rank); t++) {
    args[t] = (struct task_arg){vec, rank, t, round, count, ZCOLL_OK};
    pthread_create(&th[t], NULL, task_main, &args[t]);
  }
}

static int join_tasks(struct rt_job *job, int rank, struct task_arg *args, pthread_t *th) {
  int ok = 1;
  for (int t = 0; t < tasks_of(rank); t++) {
    pthread_join(th[t], NULL);
    if (args[t].st != ZCOLL_OK) {
      rt_fail(job, rank, zcoll_last_error());
      ok = 0;
    }
  }
  return ok;
}

static int check(struct rt_job *job, int rank, const double *out, size_t count, int round,
                 int avg, const char *key) {
  int total = 0;
  for (int r = 0; r < job->size; r++) total += tasks_of(r);
  for (size_t k = 0; k < count; k++) {
    double want = 0;
    for (int r = 0; r < job->size; r++)
      for (int t = 0; t < tasks_of(r); t++) want += task_value(r, t, round, k);
    if (avg) want /= total;
    if (out[k] != want) {
      char msg[200];
      snprintf(msg, sizeof(msg), "key %s round %d element %zu: %g, want %g", key, round, k,
               out[k], want);
      rt_fail(job, rank, msg);
      return 0;
    }
  }
  return 1;
}

/* Keys "sum" (sum of 100003 doubles) and "avg" (the average of 7), three rounds each;
 * even ranks commit and get "sum" first, odd ranks "avg" first. */
static void two_keys_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  enum { NA = 100003, NB = 7 };
  zcoll_vec_t *a, *b;
  if (zcoll_vec_init(comm, "sum", tasks_of(rank), NA, ZCOLL_FLOAT64, ZCOLL_SUM, &a) ||
      zcoll_vec_init(comm, "avg", tasks_of(rank), NB, ZCOLL_FLOAT64, ZCOLL_AVG, &b)) {
    rt_fail(job, rank, zcoll_comm_last_error(comm));
    return;
  }
  double *out = malloc(NA * sizeof(double));
  struct task_arg args[2][3];
  pthread_t th[2][3];
  for (int round = 0; round < 3 && !job->failures; round++) {
    zcoll_vec_t *first = rank % 2 ? b : a, *second = rank % 2 ? a : b;
    size_t n1 = rank % 2 ? NB : NA, n2 = rank % 2 ? NA : NB;
    commit_tasks(first, rank, round, n1, args[0], th[0]);
    commit_tasks(second, rank, round, n2, args[1], th[1]);
    if (!join_tasks(job, rank, args[0], th[0]) || !join_tasks(job, rank, args[1], th[1])) break;
    zcoll_vec_t *keys[2] = {first, second};
    for (int i = 0; i < 2; i++) {
      size_t n = keys[i] == a ? NA : NB;
      if (zcoll_vec_get(keys[i], out) != ZCOLL_OK) {
        rt_fail(job, rank, zcoll_last_error());
        break;
      }
      if (!check(job, rank, out, n, round, keys[i] == b, keys[i] == a ? "sum" : "avg")) break;
    }
  }
  free(out);
  if (zcoll_vec_free(a) || zcoll_vec_free(b)) rt_fail(job, rank, zcoll_comm_last_error(comm));
}

struct vec_case {
  int size;
  char progress[16];
};

ParameterizedTestParameters(vec, two_keys_uneven_tasks) {
  static struct vec_case cases[] = {{1, "caller"}, {2, "caller"}, {3, "thread"},
                                    {4, "caller"}, {5, "thread"}};
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
