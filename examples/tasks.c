/*
 * tasks -- the task-based vector interface (zcoll_vec_*) as a task framework uses it:
 * every rank runs its tasks as threads (2 on even ranks, 3 on odd ones: ranks need not
 * host the same number); each task computes a contribution to two shared variables and
 * commits it, without waiting; the rank's main thread gets each variable's reduction
 * over every task of every rank, and the next round reuses the keys.
 *
 *   zcoll_run -np 4 build/tasks [--rounds N] [--count N]
 *
 * "grad" is the average over all tasks of a vector of --count doubles (ZCOLL_AVG divides
 * by the global number of tasks); "seen" sums how many samples every task saw (int64).
 * Each task's values follow from (rank, task, round), so rank 0 checks every element
 * against the closed form and prints, per round, the first elements and the task count.
 * Exit status: 0, 1 on an error or a wrong element.
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zcoll.h"

static int tasks_on(int rank) { return 2 + rank % 2; }
static double grad_of(int rank, int task, int round, size_t k) {
  return (double)((rank * 5 + task * 3 + round * 7 + (int)(k % 11)) % 13);
}
static int64_t seen_of(int rank, int task, int round) { return 100 + rank * 10 + task + round; }

struct task {
  zcoll_vec_t *grad, *seen;
  int rank, id, round;
  size_t count;
  int failed;
};

static void *task_main(void *arg) {
  struct task *t = arg;
  double *g = malloc(t->count * sizeof(double) + 1);
  for (size_t k = 0; k < t->count; k++) g[k] = grad_of(t->rank, t->id, t->round, k);
  int64_t seen = seen_of(t->rank, t->id, t->round);
  /* Commit returns at once: the vector is folded into the key's buffer already. */
  if (zcoll_vec_commit(t->grad, g) != ZCOLL_OK || zcoll_vec_commit(t->seen, &seen) != ZCOLL_OK) {
    fprintf(stderr, "rank %d task %d: %s\n", t->rank, t->id, zcoll_last_error());
    t->failed = 1;
  }
  free(g);
  return NULL;
}

int main(int argc, char **argv) {
  int rounds = 3;
  size_t count = 100000;
  static const struct option longopts[] = {
      {"rounds", required_argument, NULL, 'r'}, {"count", required_argument, NULL, 'c'}, {0}};
  for (int c; (c = getopt_long(argc, argv, "", longopts, NULL)) != -1;) {
    if (c == 'r')
      rounds = atoi(optarg);
    else if (c == 'c')
      count = (size_t)strtoull(optarg, NULL, 10);
    else
      return 1;
  }
  zcoll_comm_t *comm;
  if (zcoll_comm_init(&comm, NULL) != ZCOLL_OK) {
    fprintf(stderr, "tasks: %s\n", zcoll_last_error());
    return 1;
  }
  int rank = zcoll_comm_rank(comm), size = zcoll_comm_size(comm), ntasks = tasks_on(rank);
  zcoll_vec_t *grad, *seen;
  if (zcoll_vec_init(comm, "grad", ntasks, count, ZCOLL_FLOAT64, ZCOLL_AVG, &grad) != ZCOLL_OK ||
      zcoll_vec_init(comm, "seen", ntasks, 1, ZCOLL_INT64, ZCOLL_SUM, &seen) != ZCOLL_OK) {
    fprintf(stderr, "tasks: %s\n", zcoll_comm_last_error(comm));
    return 1;
  }
  int total = 0, bad = 0;
  for (int r = 0; r < size; r++) total += tasks_on(r);
  double *avg = malloc(count * sizeof(double) + 1);
  for (int round = 0; round < rounds && !bad; round++) {
    struct task t[3];
    pthread_t th[3];
    for (int i = 0; i < ntasks; i++) {
      t[i] = (struct task){grad, seen, rank, i, round, count, 0};
      pthread_create(&th[i], NULL, task_main, &t[i]);
    }
    /* The main thread does not wait for its tasks: get blocks until every task of every
     * rank has committed and the reduction is done. */
    int64_t samples = 0;
    if (zcoll_vec_get(seen, &samples) != ZCOLL_OK || zcoll_vec_get(grad, avg) != ZCOLL_OK) {
      fprintf(stderr, "rank %d: %s\n", rank, zcoll_last_error());
      bad = 1;
    }
    for (int i = 0; i < ntasks; i++) {
      pthread_join(th[i], NULL);
      bad |= t[i].failed;
    }
    int64_t want_samples = 0;
    for (int r = 0; r < size; r++)
      for (int i = 0; i < tasks_on(r); i++) want_samples += seen_of(r, i, round);
    for (size_t k = 0; k < count && !bad; k++) {
      double want = 0;
      for (int r = 0; r < size; r++)
        for (int i = 0; i < tasks_on(r); i++) want += grad_of(r, i, round, k);
      if (avg[k] != want / total) {
        fprintf(stderr, "rank %d round %d: grad[%zu] = %g, want %g\n", rank, round, k, avg[k],
                want / total);
        bad = 1;
      }
    }
    if (!bad && samples != want_samples) {
      fprintf(stderr, "rank %d round %d: seen %lld, want %lld\n", rank, round, (long long)samples,
              (long long)want_samples);
      bad = 1;
    }
    if (!bad && rank == 0)
      printf("tasks: round %d: %d tasks on %d ranks saw %lld samples; grad[0..2] = %.4f %.4f "
             "%.4f\n",
             round, total, size, (long long)samples, avg[0], count > 1 ? avg[1] : 0,
             count > 2 ? avg[2] : 0);
  }
  if (!bad && rank == 0)
    printf("tasks: %d rounds, every element of both keys as expected on every rank\n", rounds);
  free(avg);
  zcoll_vec_free(grad);
  zcoll_vec_free(seen);
  zcoll_status_t st = zcoll_comm_destroy(comm);
  return bad || st != ZCOLL_OK;
}
