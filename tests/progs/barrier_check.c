/*
 * barrier_check -- ITERS barriers, blocking and non-blocking in turn, a different rank
 * late by up to 3 ms each time. Every rank prints, per barrier, when it entered and left
 * (CLOCK_MONOTONIC: one clock for every process of the host):
 *   barrier IT RANK ENTER_NS LEAVE_NS
 * then "barrier: done over TRANSPORT". The test (test_barrier.c) checks that no rank
 * left a barrier before the last one had entered it.
 *
 *   barrier_check [ITERS]      (default 20)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "zcoll.h"

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 20;
  zcoll_comm_t *comm;
  if (zcoll_comm_init(&comm, NULL) != ZCOLL_OK) {
    fprintf(stderr, "barrier_check: init: %s\n", zcoll_last_error());
    return 1;
  }
  int rank = zcoll_comm_rank(comm), p = zcoll_comm_size(comm);
  for (int it = 0; it < iters; it++) {
    if (rank == it % p) usleep((useconds_t)(300 + it * 577 % 2700));
    long long in = now_ns();
    zcoll_status_t st;
    if (it % 2 == 0) {
      st = zcoll_barrier(comm);
    } else {
      zcoll_request_t *q = NULL;
      st = zcoll_ibarrier(comm, &q);
      if (st == ZCOLL_OK) st = zcoll_wait(q);
      if (q) zcoll_request_free(q);
    }
    long long out = now_ns();
    if (st != ZCOLL_OK) {
      fprintf(stderr, "barrier_check: rank %d, barrier %d: %s\n", rank, it,
              zcoll_comm_last_error(comm));
      return 1;
    }
    printf("barrier %d %d %lld %lld\n", it, rank, in, out);
    fflush(stdout);
  }
  printf("barrier: done over %s\n", zcoll_comm_transport(comm));
  fflush(stdout);
  return zcoll_comm_destroy(comm) == ZCOLL_OK ? 0 : 1;
}
