/*
 * vec_bodies.h -- the vector interface's rank-thread scenario, shared by test_vec.c and
 * the ThreadSanitizer program (progs/requests_tsan.c): each rank runs its tasks as
 * threads that commit (uneven: 1, 2, 3, 1, ... tasks per rank) to two keys, which even
 * and odd ranks complete in opposite orders, three rounds each; every element checked.
 */
#ifndef ZCOLL_VEC_BODIES_H
#define ZCOLL_VEC_BODIES_H

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
static void commit_tasks(zcoll_vec_t *vec, int rank, int round, size_t count, struct task_arg *args,
                         pthread_t *th) {
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

static int check(struct rt_job *job, int rank, const double *out, size_t count, int round, int avg,
                 const char *key) {
  int total = 0;
  for (int r = 0; r < job->size; r++) total += tasks_of(r);
  for (size_t k = 0; k < count; k++) {
    double want = 0;
    for (int r = 0; r < job->size; r++)
      for (int t = 0; t < tasks_of(r); t++) want += task_value(r, t, round, k);
    if (avg) want /= total;
    if (out[k] != want) {
      char msg[200];
      snprintf(msg, sizeof(msg), "key %s round %d element %zu: %g, want %g", key, round, k, out[k],
               want);
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

#endif
