/*
 * p2p_check -- point-to-point messages between processes, every byte checked
 * (p2p_bodies.h). Prints "p2p_check: ok over TRANSPORT" and exits 0 when all are right.
 *
 *   p2p_check             the cases of p2p_bodies.h
 *   p2p_check quick       their sample (p2p_cases: a ring of 3 dtypes up to 16 KiB, tags,
 *                         mismatches), for the emulated RDMA guest of ci/test.sh
 *   p2p_check kill V      after a barrier rank V _exits (3); every other rank has a large
 *                         send to it in flight and waits in a receive from it, and prints
 *                         "survivor R: receive and send ended with <status> after S s"
 *                         (exit 0) if both ended with ZCOLL_ERR_PEER_FAILED, none hung.
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "../p2p_bodies.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int killed(zcoll_comm_t *comm, int rank, int victim) {
  enum { N = 100000 };
  static uint8_t out[N], in[16];
  if (zcoll_barrier(comm) != ZCOLL_OK) {
    fprintf(stderr, "p2p_check: rank %d: barrier: %s\n", rank, zcoll_last_error());
    return 1;
  }
  if (rank == victim) {
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    _exit(3);
  }
  double t0 = now();
  zcoll_request_t *q = NULL;
  zcoll_status_t ss = zcoll_isend(comm, out, N, ZCOLL_UINT8, victim, 1, &q);
  zcoll_status_t rs = zcoll_recv(comm, in, sizeof(in), ZCOLL_UINT8, victim, 2);
  if (ss == ZCOLL_OK) ss = zcoll_wait(q);
  if (q) zcoll_request_free(q);
  printf("survivor %d: receive and send ended with %s, %s after %.1f s (%s)\n", rank,
         zcoll_strerror(rs), zcoll_strerror(ss), now() - t0, zcoll_last_error());
  zcoll_comm_abort(comm);
  return rs == ZCOLL_ERR_PEER_FAILED && ss == ZCOLL_ERR_PEER_FAILED ? 0 : 1;
}

int main(int argc, char **argv) {
  zcoll_comm_t *comm;
  if (zcoll_comm_init(&comm, NULL) != ZCOLL_OK) {
    fprintf(stderr, "p2p_check: init: %s\n", zcoll_last_error());
    return 1;
  }
  char msg[600];
  int rank = zcoll_comm_rank(comm);
  if (argc >= 3 && strcmp(argv[1], "kill") == 0) return killed(comm, rank, atoi(argv[2]));
  if (p2p_cases(comm, argc == 2 && strcmp(argv[1], "quick") == 0, msg, sizeof(msg))) {
    fprintf(stderr, "p2p_check: rank %d: %s\n", rank, msg);
    zcoll_comm_abort(comm);
    return 1;
  }
  if (rank == 0) printf("p2p_check: ok over %s\n", zcoll_comm_transport(comm));
  return zcoll_comm_destroy(comm) == ZCOLL_OK ? 0 : 1;
}
