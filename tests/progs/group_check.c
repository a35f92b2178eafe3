/*
 * group_check -- zcoll_group_start / zcoll_group_end between processes (group_bodies.h).
 *
 *   group_check            the fused allreduces, the mix, the send-first ring and nesting;
 *                          prints "group_check: ok over TRANSPORT" (rank 0), exits 0
 *   group_check mismatch   ranks disagree inside a group: every rank's group fails; prints
 *                          "group_check: mismatch failed every rank's group" (rank 0), exits 0
 *
 * The mismatch is a job of its own: a rank that is through a collective before the others
 * would break it for them by meeting the mismatch first.
 */
#include <stdio.h>

#include "../group_bodies.h"

int main(int argc, char **argv) {
  zcoll_comm_t *comm;
  if (zcoll_comm_init(&comm, NULL) != ZCOLL_OK) {
    fprintf(stderr, "group_check: init: %s\n", zcoll_last_error());
    return 1;
  }
  char msg[600];
  int rank = zcoll_comm_rank(comm), mismatch = argc > 1 && strcmp(argv[1], "mismatch") == 0;
  int (*const cases[])(zcoll_comm_t *, char *, size_t) = {gr_fused, gr_mix, gr_packs, gr_ring,
                                                          gr_nesting};
  for (size_t k = 0; k < (mismatch ? 1 : sizeof(cases) / sizeof(cases[0])); k++)
    if ((mismatch ? gr_mismatch : cases[k])(comm, msg, sizeof(msg))) {
      fprintf(stderr, "group_check: rank %d: %s\n", rank, msg);
      zcoll_comm_abort(comm);
      return 1;
    }
  if (rank == 0 && mismatch) printf("group_check: mismatch failed every rank's group\n");
  if (rank == 0 && !mismatch) printf("group_check: ok over %s\n", zcoll_comm_transport(comm));
  if (mismatch) {
    zcoll_comm_abort(comm); /* broken: nothing to wait for */
    return 0;
  }
  return zcoll_comm_destroy(comm) == ZCOLL_OK ? 0 : 1;
}
