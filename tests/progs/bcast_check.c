/*
 * bcast_check -- broadcast between processes on whatever transport the environment
 * chooses (tests/bcast_check.h): from every root, every dtype, both algorithms (a small
 * vector takes the tree, a large one the chain, each mode in turn: blocking,
 * non-blocking, persistent). Rank 0 prints "broadcast: every element exact on every
 * rank over <tl>"; a failure exits 1 with the reason.
 */
#include <stdio.h>

#include "../bcast_check.h"

int main(void) {
  zcoll_comm_t *comm;
  if (zcoll_comm_init(&comm, NULL) != ZCOLL_OK) {
    fprintf(stderr, "zcoll_comm_init: %s\n", zcoll_last_error());
    return 1;
  }
  static const size_t counts[] = {1, 3000, 300000};
  char why[300];
  int size = zcoll_comm_size(comm), i = 0;
  for (int root = 0; root < size; root++)
    for (int dt = 0; dt < ZCOLL_DTYPE_COUNT; dt++)
      for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++, i++) {
        /* the large vector only for the widest dtype of each size: it is the slow one */
        if (c == 2 && dt != ZCOLL_FLOAT64 && dt != ZCOLL_UINT8) continue;
        if (bc_check(comm, (zcoll_dtype_t)dt, counts[c], root, i % BC_MODES, why, sizeof(why))) {
          fprintf(stderr, "rank %d: root %d %s n=%zu: %s\n", zcoll_comm_rank(comm), root,
                  zcoll_dtype_name((zcoll_dtype_t)dt), counts[c], why);
          return 1;
        }
      }
  if (zcoll_comm_rank(comm) == 0)
    printf("broadcast: every element exact on every rank over %s\n", zcoll_comm_transport(comm));
  return zcoll_comm_destroy(comm) == ZCOLL_OK ? 0 : 1;
}
