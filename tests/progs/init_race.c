/*
 * init_race -- two threads of one rank call zcoll_comm_init at once (tests/comm/test_init_race.c).
 * Under zcoll_run -np 2: on rank 0, thread A creates (and waits in the rendezvous, because
 * rank 1 starts only once GO_FILE exists), thread B tries 200 ms later; whichever comes
 * second must be refused with ZCOLL_ERR_INVALID_ARG, never paired with rank 1. Then rank 1
 * creates, and the one communicator runs an allreduce checked element by element.
 *
 *   init_race GO_FILE
 *
 * Prints "rank R thread T: STATUS: MESSAGE" per creation, "rank R sum OK" or
 * "rank R WRONG ...", and exits 0 when exactly one creation per rank succeeded.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zcoll.h"

static const char *go_file;

struct creator {
  char name;
  double delay;
  zcoll_comm_t *comm;
  zcoll_status_t st;
};

static void nap(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

static void *create(void *arg) {
  struct creator *c = arg;
  nap(c->delay);
  c->st = zcoll_comm_init(&c->comm, NULL);
  printf("rank %s thread %c: %s: %s\n", getenv("ZCOLL_RANK"), c->name, zcoll_strerror(c->st),
         c->st == ZCOLL_OK ? "" : zcoll_last_error());
  /* The one refused (B, or A if B got in first) lets rank 1 start. */
  if (c->st != ZCOLL_OK) fclose(fopen(go_file, "w"));
  return NULL;
}

static int sum_ok(zcoll_comm_t *comm) {
  enum { N = 1000 };
  int rank = zcoll_comm_rank(comm), size = zcoll_comm_size(comm);
  static double buf[N];
  for (int i = 0; i < N; i++) buf[i] = (rank + 1) * 1000.0 + i;
  zcoll_status_t st = zcoll_allreduce(comm, ZCOLL_IN_PLACE, buf, N, ZCOLL_FLOAT64, ZCOLL_SUM);
  if (st != ZCOLL_OK) {
    printf("rank %d allreduce: %s: %s\n", rank, zcoll_strerror(st), zcoll_comm_last_error(comm));
    return 0;
  }
  for (int i = 0; i < N; i++) {
    double want = 0;
    for (int r = 0; r < size; r++) want += (r + 1) * 1000.0 + i;
    if (buf[i] != want) {
      printf("rank %d WRONG element %d: %g want %g\n", rank, i, buf[i], want);
      return 0;
    }
  }
  printf("rank %d sum OK\n", rank);
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  go_file = argv[1];
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *rank = getenv("ZCOLL_RANK");
  if (!rank) return 2;
  if (strcmp(rank, "0") != 0) {
    for (int i = 0; i < 3000 && access(go_file, F_OK) != 0; i++) nap(0.01);
    struct creator c = {'A', 0, NULL, 0};
    create(&c);
    int ok = c.st == ZCOLL_OK && sum_ok(c.comm);
    if (c.st == ZCOLL_OK) zcoll_comm_destroy(c.comm);
    return ok ? 0 : 1;
  }
  struct creator c[2] = {{'A', 0, NULL, 0}, {'B', 0.2, NULL, 0}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, create, &c[i]);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  int made = (c[0].st == ZCOLL_OK) + (c[1].st == ZCOLL_OK), ok = made == 1;
  for (int i = 0; i < 2; i++)
    if (c[i].st == ZCOLL_OK) {
      ok &= sum_ok(c[i].comm);
      zcoll_comm_destroy(c[i].comm);
    }
  printf("rank 0: %d of 2 creations succeeded\n", made);
  return ok ? 0 : 1;
}
