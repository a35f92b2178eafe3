/*
 * xchg_check -- alltoall, alltoallv, allgatherv, gather, gatherv, scatter and scatterv
 * between processes, every element checked (xchg_check.h): per kind, counts 0, 1, 7, 300
 * and 20000 (the last over many pieces), each dtype size class, in place and not, blocking
 * and not, with gaps, the root moving. Prints "xchg_check: N cases over TRANSPORT" and exits
 * 0 when all are right.
 *
 *   xchg_check [MAX_COUNT]
 *   xchg_check kill V     every rank issues a large ialltoall and an igather to rank 0;
 *                         rank V _exits (3) at once; the survivors print "survivor R:
 *                         alltoall ended with STATUS; gather with STATUS" and exit 0 if the
 *                         alltoall failed with PEER_FAILED (and the gather at the root)
 *
 * MAX_COUNT caps the counts (the emulated RDMA guest is slow).
 */
#include <stdio.h>
#include <unistd.h>

#include "../xchg_check.h"

static int killed(zcoll_comm_t *comm, int rank, int p, int victim) {
  enum { N = 100000 };
  int64_t *in = calloc((size_t)p * N, sizeof(int64_t)), *out = calloc((size_t)p * N, 8);
  zcoll_request_t *req[2] = {NULL, NULL};
  if (!in || !out) return 1;
  /* The victim may be gone before a slow survivor posts: then the post reports it. */
  if (zcoll_ialltoall(comm, in, out, N, ZCOLL_INT64, &req[0]) != ZCOLL_OK) req[0] = NULL;
  if (zcoll_igather(comm, in, out, N, ZCOLL_INT64, 0, &req[1]) != ZCOLL_OK) req[1] = NULL;
  if (rank == victim) _exit(3);
  /* The alltoall needs the victim everywhere; the gather only at the root (rank 0): rank 2's
   * own pair with the root may complete before the failure ends what is in flight. */
  zcoll_status_t st[2];
  for (int k = 1; k >= 0; k--) {
    st[k] = req[k] ? zcoll_wait(req[k]) : ZCOLL_ERR_PEER_FAILED;
    if (req[k]) zcoll_request_free(req[k]);
  }
  printf("survivor %d: alltoall ended with %s; gather with %s\n", rank, zcoll_strerror(st[0]),
         zcoll_strerror(st[1]));
  fflush(stdout);
  zcoll_comm_destroy(comm);
  int bad = st[0] != ZCOLL_ERR_PEER_FAILED || (rank == 0 && st[1] != ZCOLL_ERR_PEER_FAILED) ||
            (st[1] != ZCOLL_OK && st[1] != ZCOLL_ERR_PEER_FAILED);
  free(in), free(out);
  return bad;
}

int main(int argc, char **argv) {
  static const size_t counts[] = {0, 1, 7, 300, 20000};
  static const zcoll_dtype_t dtypes[] = {ZCOLL_INT8, ZCOLL_BFLOAT16, ZCOLL_FLOAT32, ZCOLL_UINT64};
  size_t max = argc > 1 && strcmp(argv[1], "kill") ? strtoull(argv[1], NULL, 10) : 20000;
  zcoll_comm_t *comm;
  if (zcoll_comm_init(&comm, NULL) != ZCOLL_OK) {
    fprintf(stderr, "xchg_check: init: %s\n", zcoll_last_error());
    return 1;
  }
  int rank = zcoll_comm_rank(comm), p = zcoll_comm_size(comm), n = 0;
  if (argc > 2 && strcmp(argv[1], "kill") == 0) return killed(comm, rank, p, atoi(argv[2]));
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
