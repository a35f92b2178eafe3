/*
 * onehost_fail -- a one-host allreduce whose call fails on one rank, between processes (for
 * tests/core/test_onehost_fail.c): what the others are told, and how soon.
 *
 *   onehost_fail late          rank 0's 2-float allreduce (the mailboxes) is revoked by a
 *                              thread 200 ms in, after it published; the others enter
 *                              the same allreduce 500 ms after that. Nobody may get OK:
 *                              rank 0's result was never complete.
 *   onehost_fail stop          large allreduces (64 MiB, zcoll_mem_alloc memory, p = 2)
 *   onehost_fail stoprevoke    in a loop; a thread of rank 0 watches rank 0's result and,
 *                              once rank 1 has begun writing its block there and not
 *                              finished (its first element changed, its last not), stops
 *                              rank 1 (SIGSTOP) and resumes it (SIGCONT) 5 s later. Rank
 *                              0's call must fail within the timeout (stop: ZCOLL_TIMEOUT)
 *                              or right after a revoke 300 ms after the stop
 *                              (stoprevoke), not when rank 1 resumes -- and nothing rank
 *                              1 writes after it resumes may reach rank 0's result.
 *
 * Each rank prints "rank R: STATUS: MESSAGE" for its failed call; rank 0 in the stop modes
 * "rank 0: failed S s after the stop; result unchanged after the writer resumed" (or
 * "WRITTEN AFTER THE ERROR at byte I", or "inconclusive: ..." when the stop missed the
 * write, which the test retries).
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zcoll.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *revoke_later(void *arg) {
  usleep(200000);
  zcoll_comm_revoke(arg);
  return NULL;
}

static int late(zcoll_comm_t *comm) {
  int rank = zcoll_comm_rank(comm);
  float x[2] = {1, 2}, y[2];
  pthread_t t;
  /* Not the first collective: a first one does not read the news at its start (exec.h). */
  if (zcoll_barrier(comm) != ZCOLL_OK) return 1;
  if (rank == 0 && pthread_create(&t, NULL, revoke_later, comm)) return 1;
  if (rank != 0) usleep(700000);
  zcoll_status_t st = zcoll_allreduce(comm, x, y, 2, ZCOLL_FLOAT32, ZCOLL_SUM);
  printf("rank %d: %s: %s\n", rank, zcoll_strerror(st),
         st == ZCOLL_OK ? "" : zcoll_comm_last_error(comm));
  if (rank == 0) pthread_join(t, NULL);
  return 0;
}

struct watch {
  zcoll_comm_t *comm;
  pid_t writer;
  const float *out;
  size_t first, last; /* rank 1's block in rank 0's result */
  int revoke;
  atomic_int armed;   /* rank 0 is in a call: a changed element is a write of rank 1's */
  atomic_int stopped; /* 1: the writer was stopped mid-write; -1: the stop missed it */
  atomic_int resumed;
  double stop_at;
};

/* Rank 1 writes the next rank's result first, by chunks: its block's first element in
 * rank 0's result changes as it begins, its last as it ends. */
static void *watcher(void *arg) {
  struct watch *w = arg;
  uint32_t fresh;
  memset(&fresh, 0xee, sizeof(fresh));
  for (;;) {
    uint32_t v;
    int armed = atomic_load(&w->armed);
    memcpy(&v, &w->out[w->first], sizeof(v));
    if (armed && v != fresh) break;
    sched_yield(); /* two ranks and this on two cores */
  }
  kill(w->writer, SIGSTOP);
  w->stop_at = now();
  usleep(20000); /* the stop has landed */
  uint32_t v;
  memcpy(&v, &w->out[w->last], sizeof(v));
  atomic_store(&w->stopped, v == fresh ? 1 : -1);
  if (w->revoke) {
    usleep(300000);
    zcoll_comm_revoke(w->comm);
  }
  usleep(5000000);
  kill(w->writer, SIGCONT);
  atomic_store(&w->resumed, 1);
  return NULL;
}

static int stop(zcoll_comm_t *comm, int revoke) {
  int rank = zcoll_comm_rank(comm);
  size_t bytes = (size_t)64 << 20, n = bytes / sizeof(float);
  float *in, *out;
  unsigned char *copy = malloc(bytes);
  int64_t pids[2], me = getpid();
  if (!copy || zcoll_allgather(comm, &me, pids, 1, ZCOLL_INT64) != ZCOLL_OK ||
      zcoll_mem_alloc(comm, bytes, (void **)&in) != ZCOLL_OK ||
      zcoll_mem_alloc(comm, bytes, (void **)&out) != ZCOLL_OK) {
    printf("rank %d: setup: %s\n", rank, zcoll_comm_last_error(comm));
    return 1;
  }
  for (size_t i = 0; i < n; i++) in[i] = (float)(rank + i % 7);
  memset(out, 0xee, bytes);
  struct watch w = {comm, (pid_t)pids[1], out, n / 2, n - 1, revoke, 0, 0, 0, 0};
  pthread_t t;
  if (rank == 0 && pthread_create(&t, NULL, watcher, &w)) return 1;
  zcoll_status_t st = ZCOLL_OK;
  while (st == ZCOLL_OK) {
    atomic_store(&w.armed, 1);
    st = zcoll_allreduce(comm, in, out, n, ZCOLL_FLOAT32, ZCOLL_SUM);
    atomic_store(&w.armed, 0);
    if (st == ZCOLL_OK && rank == 0) memset(out, 0xee, bytes); /* for the watcher, again */
  }
  double failed_at = now();
  printf("rank %d: %s: %s\n", rank, zcoll_strerror(st), zcoll_comm_last_error(comm));
  if (rank != 0) {
    free(copy);
    return 0;
  }
  memcpy(copy, out, bytes);
  while (!atomic_load(&w.resumed)) usleep(10000);
  usleep(500000); /* the writer's time to finish its block */
  pthread_join(t, NULL);
  size_t at = 0;
  while (at < bytes && copy[at] == ((unsigned char *)out)[at]) at++;
  int rc = 0;
  if (atomic_load(&w.stopped) < 0) {
    printf("rank 0: inconclusive: the stop came after rank 1 had written its block\n");
  } else if (at < bytes) {
    printf("rank 0: WRITTEN AFTER THE ERROR at byte %zu\n", at);
    rc = 1;
  } else {
    printf("rank 0: failed %.2f s after the stop; result unchanged after the writer resumed\n",
           failed_at - w.stop_at);
  }
  free(copy);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: onehost_fail late | stop | stoprevoke\n");
    return 2;
  }
  zcoll_comm_t *comm;
  if (zcoll_comm_init(&comm, NULL) != ZCOLL_OK) {
    fprintf(stderr, "onehost_fail: init: %s\n", zcoll_last_error());
    return 1;
  }
  int rc = strcmp(argv[1], "late") == 0 ? late(comm)
                                        : stop(comm, strcmp(argv[1], "stoprevoke") == 0);
  fflush(stdout);
  zcoll_comm_destroy(comm);
  return rc;
}
