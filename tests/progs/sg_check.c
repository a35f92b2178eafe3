/*
 * sg_check -- allgather, reduce-scatter and reduce between processes, every element
 * checked (sg_check.h). The cases: per kind, every dtype x op pair once (the allgather:
 * every dtype), with the placement, the count (0, 1, 7, 300, 70000: the last over 256 KiB
 * at p >= 4, so the ring) and blocking or not varying across them; the root moves.
 * Prints "sg_check: N cases over TRANSPORT" and exits 0 when all are right.
 *
 *   sg_check [MAX_COUNT [register]]
 *
 * MAX_COUNT caps the counts (the emulated RDMA guest is slow); `register` registers each
 * result buffer (zcoll_mem_register), so that over verbs the peers write results into it
 * directly (grants). */
#include <stdio.h>

#include "../sg_check.h"

int main(int argc, char **argv) {
  static const size_t counts[] = {0, 1, 7, 300, 70000};
  size_t max = argc > 1 ? strtoull(argv[1], NULL, 10) : 70000;
  int reg = argc > 2 && strcmp(argv[2], "register") == 0;
  zcoll_comm_t *comm;
  if (zcoll_comm_init(&comm, NULL) != ZCOLL_OK) {
    fprintf(stderr, "sg_check: init: %s\n", zcoll_last_error());
    return 1;
  }
  int rank = zcoll_comm_rank(comm), p = zcoll_comm_size(comm), n = 0;
  char msg[600];
  for (int kind = 0; kind < SG_NKINDS; kind++)
    for (int dt = 0; dt < ZCOLL_DTYPE_COUNT; dt++)
      for (int op = 0; op < ZCOLL_OP_COUNT; op++) {
        if (kind == SG_ALLGATHER && op) continue;
        int v = dt * 3 + op + kind;
        struct sg_case c = {kind,  (zcoll_dtype_t)dt, (zcoll_op_t)op, (dt + op) % 2, counts[v % 5],
                            v % p, v % 3 == 0,        (unsigned)v};
        if (c.kind == SG_REDUCE && c.in_place && rank != c.root) c.in_place = 0;
        if (c.count > max) c.count = max;
        c.reg = reg;
        if (sg_run(comm, &c, msg, sizeof(msg))) {
          fprintf(stderr, "sg_check: rank %d: %s\n", rank, msg);
          return 1;
        }
        n++;
      }
  printf("sg_check: %d cases over %s\n", n, zcoll_comm_transport(comm));
  fflush(stdout);
  return zcoll_comm_destroy(comm) == ZCOLL_OK ? 0 : 1;
}
