/*
 * partial_check -- the partial allreduce between processes (tests/partial_bodies.h).
 *
 *   partial_check conserve Q   quorum Q, 2 epochs of 120 starts after random sleeps of up
 *                              to 200 us, AVG too; then the same with an iallreduce on the
 *                              user's communicator every 5 starts. "partial_check: rank R ok".
 *                              A third argument: starts per epoch (120; AVG a third of it).
 *   partial_check live FILE    quorum p - 1, the last rank offering only after the others
 *                              each completed 20 rounds more (counted in FILE, mapped by all).
 *   partial_check kill [left]  quorum 2: rank 1 exits without a word after 5 starts; every
 *                              survivor's request must fail (not hang):
 *                              "partial_check: rank R: failed as it should: ...". Then it
 *                              frees the request and aborts; with "left" it leaves the
 *                              request to zcoll_comm_destroy (rank 3: zcoll_comm_abort),
 *                              which must free it (nothing may leak: ASan).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../partial_bodies.h"

static int kill_mode(zcoll_comm_t *comm, int rank, int left) {
  int64_t x = rank, y = 0;
  zcoll_request_t *req;
  if (zcoll_allreduce_partial_init(comm, &x, &y, 1, ZCOLL_INT64, ZCOLL_SUM, 2, &req) != ZCOLL_OK) {
    fprintf(stderr, "partial_check: rank %d: init: %s\n", rank, zcoll_last_error());
    return 1;
  }
  /* Mid-run, not mid-init: a rank that died while another's init was still wiring its
   * channels would fail that init instead (rightly, but it is not this case). */
  if (zcoll_barrier(comm) != ZCOLL_OK) {
    fprintf(stderr, "partial_check: rank %d: barrier: %s\n", rank, zcoll_last_error());
    return 1;
  }
  for (int s = 0; s < 100000; s++) {
    if (rank == 1 && s == 5) _exit(0);
    zcoll_status_t st = zcoll_start(req);
    if (st == ZCOLL_OK) st = zcoll_wait(req);
    if (st != ZCOLL_OK) {
      printf("partial_check: rank %d: failed as it should: %s\n", rank, zcoll_strerror(st));
      fflush(stdout);
      if (!left) zcoll_request_free(req);
      return 0;
    }
    usleep(200);
  }
  fprintf(stderr, "partial_check: rank %d: 100000 rounds after rank 1 died\n", rank);
  return 1;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "conserve";
  zcoll_comm_t *comm;
  if (zcoll_comm_init(&comm, NULL) != ZCOLL_OK) {
    fprintf(stderr, "partial_check: init: %s\n", zcoll_last_error());
    return 1;
  }
  int rank = zcoll_comm_rank(comm), p = zcoll_comm_size(comm), bad = 0;
  char msg[400];
  if (!strcmp(mode, "kill")) {
    int left = argc > 2 && !strcmp(argv[2], "left");
    bad = kill_mode(comm, rank, left);
    if (left && rank != 3) {
      zcoll_status_t st = zcoll_comm_destroy(comm); /* broken: an error, but it frees */
      printf("partial_check: rank %d: destroy %s\n", rank, zcoll_strerror(st));
    } else {
      zcoll_comm_abort(comm);
    }
    return bad;
  }
  if (!strcmp(mode, "live")) {
    int fd = argc > 2 ? open(argv[2], O_RDWR) : -1;
    int *shared = fd >= 0 ? mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : NULL;
    if (!shared || shared == MAP_FAILED) {
      fprintf(stderr, "partial_check: rank %d: cannot map the counters\n", rank);
      return 1;
    }
    bad = pb_live(comm, p - 1, 20, 3, shared, shared + 64, msg, sizeof(msg));
  } else {
    int q = argc > 2 ? atoi(argv[2]) : 2, steps = argc > 3 ? atoi(argv[3]) : 120;
    struct pb_args a = {q, steps, 2, 0, 200, ZCOLL_SUM};
    bad = pb_run(comm, &a, msg, sizeof(msg));
    a.op = ZCOLL_AVG;
    a.steps = steps / 3;
    if (!bad) bad = pb_run(comm, &a, msg, sizeof(msg));
    a.op = ZCOLL_SUM;
    a.interleave = 1;
    if (!bad) bad = pb_run(comm, &a, msg, sizeof(msg));
  }
  if (bad)
    fprintf(stderr, "partial_check: rank %d: %s\n", rank, msg);
  else
    printf("partial_check: rank %d ok\n", rank);
  fflush(stdout);
  if (zcoll_comm_destroy(comm) != ZCOLL_OK) bad = 1;
  return bad;
}
