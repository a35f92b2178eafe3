/* init_scale.c -- one rank of perf/init_scale.sh: how long zcoll_comm_init and
 * zcoll_comm_destroy take in this process, and when it started, so that the script can
 * also measure the job from the first rank's start to the last rank's readiness. */
#include <stdio.h>
#include <time.h>

#include <zcoll.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts); /* one clock for every process of this host */
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(void) {
  double t0 = now_s();
  zcoll_comm_t *comm;
  zcoll_status_t st = zcoll_comm_init(&comm, NULL);
  double t1 = now_s();
  if (st != ZCOLL_OK) {
    fprintf(stderr, "init_scale: zcoll_comm_init: %s\n", zcoll_last_error());
    return 1;
  }
  int rank = zcoll_comm_rank(comm), size = zcoll_comm_size(comm);
  st = zcoll_comm_destroy(comm);
  double t2 = now_s();
  if (st != ZCOLL_OK) {
    fprintf(stderr, "init_scale: zcoll_comm_destroy: %s\n", zcoll_strerror(st));
    return 1;
  }
  /* One short line per rank: atomic in the pipe the ranks share. */
  printf("init_scale %d %d %.6f %.6f %.6f\n", rank, size, t0, t1, t2);
  return 0;
}
