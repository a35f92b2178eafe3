/*
 * early_exit -- one rank leaves (_exit, no zcoll_comm_destroy) right after
 * zcoll_comm_init; the others then tear down, with or without one allreduce first.
 * Whatever the transport has in flight towards the dead rank, the survivors must
 * return a status, not die inside the transport (UCX asserts on requests still in
 * flight at ucp_worker_destroy, or on endpoints without error handling).
 *
 *   early_exit VICTIM MODE      MODE: destroy (survivors only destroy) or
 *                               allreduce (one allreduce, then destroy)
 * A survivor prints "survivor R: allreduce <status>; destroy <status>: <message>" and
 * exits 0 if every status is OK or PEER_FAILED (the dead rank named), 1 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zcoll.h"

static int acceptable(zcoll_status_t st) { return st == ZCOLL_OK || st == ZCOLL_ERR_PEER_FAILED; }

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  int victim = atoi(argv[1]);
  int with_allreduce = strcmp(argv[2], "allreduce") == 0;
  zcoll_comm_t *comm;
  if (zcoll_comm_init(&comm, NULL) != ZCOLL_OK) {
    fprintf(stderr, "early_exit: init: %s\n", zcoll_last_error());
    return 1;
  }
  int rank = zcoll_comm_rank(comm);
  if (rank == victim) _exit(3);
  size_t count = 1 << 20; /* large enough for UCX's rendezvous */
  float *s = calloc(count, sizeof(float)), *r = calloc(count, sizeof(float));
  zcoll_status_t ast = ZCOLL_OK;
  char why[512] = "";
  if (with_allreduce) {
    ast = zcoll_allreduce(comm, s, r, count, ZCOLL_FLOAT32, ZCOLL_SUM);
    snprintf(why, sizeof(why), "%s", zcoll_comm_last_error(comm));
  }
  zcoll_status_t dst = zcoll_comm_destroy(comm);
  if (!why[0]) snprintf(why, sizeof(why), "%s", zcoll_last_error());
  printf("survivor %d: allreduce %s; destroy %s: %s\n", rank, zcoll_strerror(ast),
         zcoll_strerror(dst), why);
  free(s);
  free(r);
  return acceptable(ast) && acceptable(dst) ? 0 : 1;
}
