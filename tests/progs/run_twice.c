/* run_twice: a zcoll_run test rank that creates, uses and destroys a communicator
 * twice in one process. Under zcoll_run rank 0 inherits ZCOLL_ROOT_FD: the second
 * zcoll_comm_init must still find a rendezvous. Prints "twice ok" on rank 0. */
#include <stdio.h>

#include "zcoll.h"

static int one_round(int round) {
  zcoll_comm_t *comm;
  zcoll_status_t st = zcoll_comm_init(&comm, NULL);
  if (st != ZCOLL_OK) {
    fprintf(stderr, "round %d: zcoll_comm_init: %s: %s\n", round, zcoll_strerror(st),
            zcoll_last_error());
    return -1;
  }
  int p = zcoll_comm_size(comm), v = zcoll_comm_rank(comm) + 1, sum = 0;
  st = zcoll_allreduce(comm, &v, &sum, 1, ZCOLL_INT32, ZCOLL_SUM);
  if (st != ZCOLL_OK || sum != p * (p + 1) / 2) {
    fprintf(stderr, "round %d: allreduce: %s, sum %d\n", round, zcoll_strerror(st), sum);
    zcoll_comm_abort(comm);
    return -1;
  }
  int rank = zcoll_comm_rank(comm);
  if ((st = zcoll_comm_destroy(comm)) != ZCOLL_OK) {
    fprintf(stderr, "round %d: zcoll_comm_destroy: %s\n", round, zcoll_strerror(st));
    return -1;
  }
  return rank;
}

int main(void) {
  int rank = one_round(1);
  if (rank < 0 || one_round(2) < 0) return 1;
  if (rank == 0) printf("twice ok\n");
  return 0;
}
