/*
 * fail_peer -- one rank dies (or aborts) in the middle of a stream of allreduces; the
 * others must each return ZCOLL_ERR_PEER_FAILED promptly, not hang.
 *
 *   fail_peer VICTIM MODE MS    MODE: signal (killed by SIGALRM after MS ms, most
 *                               likely inside a collective), exit (_exit(3) between
 *                               collectives), abort (zcoll_comm_abort); VICTIM -1: no
 *                               rank fails, the stream runs until something else ends
 *                               it (a link taken down: tests/transports/test_verbs.c)
 * Survivors print "survivor R: <status> after S s: <message>" and exit 0 when they
 * saw PEER_FAILED; anything else exits 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "zcoll.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc < 4) return 2;
  int victim = atoi(argv[1]);
  const char *mode = argv[2];
  long ms = atol(argv[3]);
  zcoll_comm_t *comm;
  if (zcoll_comm_init(&comm, NULL) != ZCOLL_OK) {
    fprintf(stderr, "fail_peer: init: %s\n", zcoll_last_error());
    return 1;
  }
  int rank = zcoll_comm_rank(comm);
  size_t count = 1 << 20;
  float *s = calloc(count, sizeof(float)), *r = calloc(count, sizeof(float));
  if (rank == victim && strcmp(mode, "signal") == 0) {
    struct itimerval it = {{0, 0}, {ms / 1000, (ms % 1000) * 1000}};
    setitimer(ITIMER_REAL, &it, NULL); /* SIGALRM's default action kills us */
  }
  double t0 = now(), failed_at = 0;
  zcoll_status_t st = ZCOLL_OK;
  for (long it = 0; st == ZCOLL_OK && now() - t0 < 60; it++) {
    if (rank == victim && now() - t0 > ms / 1000.0) {
      if (strcmp(mode, "exit") == 0) _exit(3);
      if (strcmp(mode, "abort") == 0) {
        zcoll_comm_abort(comm);
        free(s);
        free(r);
        return 0;
      }
    }
    st = zcoll_allreduce(comm, s, r, count, ZCOLL_FLOAT32, ZCOLL_SUM);
    failed_at = now();
  }
  if (rank == victim) return 1; /* the victim should not get here */
  printf("survivor %d: %s after %.2f s: %s\n", rank, zcoll_strerror(st), failed_at - t0,
         zcoll_comm_last_error(comm));
  zcoll_comm_destroy(comm);
  free(s);
  free(r);
  return st == ZCOLL_ERR_PEER_FAILED ? 0 : 1;
}
