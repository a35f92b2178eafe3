/*
 * xchg_check -- alltoall, alltoallv, allgatherv, gather, gatherv, scatter and scatterv
 * between processes, every element checked (xchg_check.h): per kind, counts 0, 1, 7, 300
 * and 20000 (the last over many pieces), each dtype size class, in place and not, blocking
 * and not, with gaps, the root moving. Prints "xchg_check: N cases over TRANSPORT" and exits
 * 0 when all are right.
 *
 *   xchg_check [MAX_COUNT]
 *
 * MAX_COUNT caps the counts (the emulated RDMA guest is slow).
 */
#include <stdio.h>

#include "../xchg_check.h"

int main(int argc, char **argv) {
  static const size_t counts[] = {0, 1, 7, 300, 20000};
  static const zcoll_dtype_t dtypes[] = {ZCOLL_INT8, ZCOLL_BFLOAT16, ZCOLL_FLOAT32, ZCOLL_UINT64};
  size_t max = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000;
  zcoll_comm_t *comm;
  if (zcoll_comm_init(&comm, NULL) != ZCOLL_OK) {
    fprintf(stderr, "xchg_check: init: %s\n", zcoll_last_error());
    return 1;
  }
  int rank = zcoll_comm_rank(comm), p = zcoll_comm_size(comm), n = 0;
  char msg[600];
  for (int kind = 0; kind < XC_NKINDS; kind++)
    for (unsigned v = 0; v < 10; v++) {
      struct xc_case c = {.kind = kind,
                          .dt = dtypes[(v + (unsigned)kind) % 4],
                          .n = counts[v % 5],
                          .root = (int)((v + (unsigned)kind) % (unsigned)p),
                          .in_place = (int)(v / 5),
                          .nonblocking = (int)(v % 3 == 2),
                          .gap = v % 2 ? 5 : 0,
                          .salt = v * 8 + (unsigned)kind};
      if (c.n > max) c.n = max;
      if (xc_run(comm, &c, msg, sizeof(msg))) {
        fprintf(stderr, "xchg_check: rank %d: %s\n", rank, msg);
        return 1;
      }
      n++;
    }
  printf("xchg_check: %d cases over %s\n", n, zcoll_comm_transport(comm));
  fflush(stdout);
  return zcoll_comm_destroy(comm) == ZCOLL_OK ? 0 : 1;
}
