/*
 * flight_skip -- a hang for the flight recorder (tests/core/test_flight.c).
 *
 *   flight_skip skip RANK K    every rank makes K allreduces; RANK then skips the next one
 *                              (it computes, as a rank stuck elsewhere would) while the
 *                              others block in it until ZCOLL_TIMEOUT breaks it; RANK then
 *                              dumps on request (zcoll_comm_dump), the others dumped when
 *                              they failed.
 *   flight_skip watch K        2 ranks, K allreduces; in the next, rank 0 is blocked for
 *                              1.5 s waiting for rank 1 while another thread of rank 0
 *                              calls zcoll_comm_dump: it must return, long before the call.
 *   flight_skip mismatch K     K allreduces, then rank 1 passes half the count: every rank
 *                              fails (MISMATCH or PEER_FAILED) and dumps.
 *   flight_skip abort K        K allreduces, then rank 1 aborts (and dumps) while the others
 *                              are in the next; they fail with PEER_FAILED and dump.
 * Each rank prints "rank R: ..." and exits 0 when what it saw is as expected. With
 * FLIGHT_SKIP_SYNC=DIR, rank 1 makes its fault only once every rank has returned from
 * call K-1 (each touches DIR/k.RANK): failure news must not reach a rank still in it.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zcoll.h"

#define COUNT 1024

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One allreduce, its result checked against the closed form sum over ranks of (r + i). */
static zcoll_status_t one_n(zcoll_comm_t *comm, float *s, float *r, int *bad, size_t n) {
  int rank = zcoll_comm_rank(comm), size = zcoll_comm_size(comm);
  for (size_t i = 0; i < n; i++) s[i] = (float)(rank + i % 7);
  zcoll_status_t st = zcoll_allreduce(comm, s, r, n, ZCOLL_FLOAT32, ZCOLL_SUM);
  for (size_t i = 0; st == ZCOLL_OK && i < n; i++)
    if (r[i] != (float)(size * (size - 1) / 2 + size * (i % 7))) *bad = 1;
  return st;
}

static zcoll_status_t one(zcoll_comm_t *comm, float *s, float *r, int *bad) {
  return one_n(comm, s, r, bad, COUNT);
}

/* Every rank has returned from its first k calls: they are all in call k or about to be. */
static void sync_point(int rank, int size, int wait) {
  const char *dir = getenv("FLIGHT_SKIP_SYNC");
  if (!dir) return;
  char path[512];
  snprintf(path, sizeof(path), "%s/k.%d", dir, rank);
  FILE *f = fopen(path, "w");
  if (f) fclose(f);
  for (int r = 0; wait && r < size; r++) {
    snprintf(path, sizeof(path), "%s/k.%d", dir, r);
    for (double t0 = now(); access(path, F_OK) != 0 && now() - t0 < 60;) usleep(10 * 1000);
  }
}

struct watcher {
  zcoll_comm_t *comm;
  zcoll_status_t st;
  double at;
};

static void *watch(void *arg) {
  struct watcher *w = arg;
  usleep(500 * 1000); /* the owner is blocked by then: rank 1 joins after 1.5 s */
  w->st = zcoll_comm_dump(w->comm);
  w->at = now();
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  int watch_mode = strcmp(argv[1], "watch") == 0;
  int mismatch = strcmp(argv[1], "mismatch") == 0, abort_mode = strcmp(argv[1], "abort") == 0;
  int two_args = watch_mode || mismatch || abort_mode;
  int skipper = two_args ? -1 : atoi(argv[2]);
  int k = atoi(argv[two_args ? 2 : 3]);
  zcoll_comm_t *comm;
  if (zcoll_comm_init(&comm, NULL) != ZCOLL_OK) {
    fprintf(stderr, "flight_skip: init: %s\n", zcoll_last_error());
    return 1;
  }
  int rank = zcoll_comm_rank(comm), bad = 0, ok = 1;
  float *s = malloc(COUNT * sizeof(float)), *r = malloc(COUNT * sizeof(float));
  for (int i = 0; i < k; i++)
    if (one(comm, s, r, &bad) != ZCOLL_OK || bad) {
      printf("rank %d: allreduce %d: %s\n", rank, i, bad ? "wrong" : zcoll_comm_last_error(comm));
      return 1;
    }
  if (mismatch || abort_mode) sync_point(rank, zcoll_comm_size(comm), rank == 1);
  if (abort_mode && rank == 1) {
    zcoll_status_t st = zcoll_comm_abort(comm);
    printf("rank 1: abort %s\n", zcoll_strerror(st));
    free(s);
    free(r);
    return st == ZCOLL_OK ? 0 : 1;
  }
  if (mismatch || abort_mode) {
    zcoll_status_t st = one_n(comm, s, r, &bad, mismatch && rank == 1 ? COUNT / 2 : COUNT);
    ok = st == ZCOLL_ERR_MISMATCH || st == ZCOLL_ERR_PEER_FAILED;
    printf("rank %d: allreduce %d %s\n", rank, k, zcoll_strerror(st));
  } else if (watch_mode) {
    struct watcher w = {comm, ZCOLL_IN_PROGRESS, 0};
    pthread_t t;
    if (rank == 0) pthread_create(&t, NULL, watch, &w);
    if (rank == 1) usleep(1500 * 1000);
    zcoll_status_t st = one(comm, s, r, &bad);
    double done = now();
    if (rank == 0) {
      pthread_join(t, NULL);
      /* The dump came back while the call was still blocked, a second before it ended. */
      ok = w.st == ZCOLL_OK && w.at < done - 0.5;
      printf("rank 0: dump %s, %.2f s before the call returned\n", zcoll_strerror(w.st),
             done - w.at);
    }
    ok = ok && st == ZCOLL_OK && !bad;
    printf("rank %d: last allreduce %s%s\n", rank, zcoll_strerror(st), bad ? " (wrong)" : "");
  } else if (rank == skipper) {
    /* Stuck elsewhere past the others' timeout; then asked for the dump (zcoll_run's
     * users: a signal handler setting a flag, a watchdog thread). */
    const char *t = getenv("ZCOLL_TIMEOUT");
    usleep((useconds_t)((t ? atof(t) : 2) * 1e6 + 1e6));
    zcoll_status_t st = zcoll_comm_dump(comm);
    ok = st == ZCOLL_OK;
    printf("rank %d: skipped allreduce %d; dump %s\n", rank, k, zcoll_strerror(st));
  } else {
    zcoll_status_t st = one(comm, s, r, &bad);
    ok = st == ZCOLL_ERR_TIMEOUT || st == ZCOLL_ERR_PEER_FAILED;
    printf("rank %d: allreduce %d %s\n", rank, k, zcoll_strerror(st));
  }
  zcoll_comm_destroy(comm);
  free(s);
  free(r);
  return ok ? 0 : 1;
}
