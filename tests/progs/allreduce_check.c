/*
 * allreduce_check -- the correctness matrix as a real multi-process job.
 *
 *   zcoll_run -np P allreduce_check [large_bytes]
 *
 * With ZCOLL_TEST_REGISTER=1 every buffer is registered with zcoll_mem_register around
 * each call (the zero-copy send path of transports that need registration).
 * Uses only <zcoll.h> and the library, like any application: it also builds outside
 * the tree with `cc allreduce_check.c $(pkg-config --cflags --libs zcoll)`. Exits 0
 * only if every element of every case on this rank was exact.
 */
#include <stdio.h>
#include <stdlib.h>

#include "check_matrix.h"

int main(int argc, char **argv) {
  size_t large = argc > 1 ? strtoull(argv[1], NULL, 0) : (size_t)3 << 20;
  zcoll_comm_t *comm;
  zcoll_status_t rc = zcoll_comm_init(&comm, NULL);
  if (rc != ZCOLL_OK) {
    fprintf(stderr, "allreduce_check: zcoll_comm_init: %s: %s\n", zcoll_strerror(rc),
            zcoll_last_error());
    return 1;
  }
  struct chk_stats st = {0, 0, "", 0};
  const char *reg = getenv("ZCOLL_TEST_REGISTER");
  st.register_buffers = reg && reg[0] == '1';
  chk_run_matrix(comm, large, &st);
  int rank = zcoll_comm_rank(comm), size = zcoll_comm_size(comm);
  const char *tl = zcoll_comm_transport(comm);
  if (st.failures)
    fprintf(stderr, "allreduce_check: rank %d of %d (%s): %lu of %lu checks failed; first: %s\n",
            rank, size, tl, st.failures, st.cases, st.first);
  /* Only a job where every rank is exact passes; rank 0 reports the total. */
  uint64_t mine = st.failures, all = 0;
  if (zcoll_allreduce(comm, &mine, &all, 1, ZCOLL_UINT64, ZCOLL_SUM) == ZCOLL_OK && !all &&
      rank == 0)
    printf("allreduce_check: %d ranks over %s: %lu cases, every element exact on every rank\n",
           size, tl, st.cases);
  rc = zcoll_comm_destroy(comm);
  if (rc != ZCOLL_OK) {
    fprintf(stderr, "allreduce_check: zcoll_comm_destroy: %s\n", zcoll_strerror(rc));
    return 1;
  }
  return st.failures ? 1 : 0;
}
