/*
 * ops_check -- created ops between processes, on whatever transport the environment
 * chooses, every element checked on every rank (tests/ops_check.h): maxloc, the
 * non-commutative affine op, and a premul sum whose scalar differs per rank (rank r
 * scales by (r % 4 + 1) / 4: a weighted sum), every floating-point dtype, in place and
 * not, up to 2^17 elements. Rank 0 prints "ops: every element exact on every rank over
 * <tl>"; any failure exits 1 with the reason.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../ops_check.h"

static int fail(zcoll_comm_t *comm, const char *what, size_t n, int ip, zcoll_status_t st,
                size_t bad) {
  fprintf(stderr, "rank %d: %s n=%zu %s: %s, %zu wrong: %s\n", zcoll_comm_rank(comm), what, n,
          ip ? "in place" : "out of place", zcoll_strerror(st), bad,
          st == ZCOLL_OK ? "" : zcoll_comm_last_error(comm));
  return 1;
}

int main(void) {
  zcoll_comm_t *comm;
  if (zcoll_comm_init(&comm, NULL) != ZCOLL_OK) {
    fprintf(stderr, "zcoll_comm_init: %s\n", zcoll_last_error());
    return 1;
  }
  int rank = zcoll_comm_rank(comm), size = zcoll_comm_size(comm);
  double *scalar = malloc(sizeof(double) * (size_t)size);
  for (int r = 0; r < size; r++) scalar[r] = (double)(r % 4 + 1) / 4;
  zcoll_op_t maxloc, affine, premul;
  if (zcoll_op_create(oc_maxloc_fn, NULL, 1, sizeof(struct oc_maxloc), &maxloc) != ZCOLL_OK ||
      zcoll_op_create(oc_affine_fn, NULL, 0, sizeof(struct oc_affine), &affine) != ZCOLL_OK ||
      zcoll_op_create_premul_sum(scalar[rank], &premul) != ZCOLL_OK) {
    fprintf(stderr, "zcoll_op_create: %s\n", zcoll_last_error());
    return 1;
  }
  static const size_t counts[] = {1, 1000, 131072};
  static const zcoll_dtype_t floats[] = {ZCOLL_FLOAT16, ZCOLL_BFLOAT16, ZCOLL_FLOAT32,
                                         ZCOLL_FLOAT64};
  zcoll_status_t st;
  size_t bad;
  for (int ip = 0; ip < 2; ip++)
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
      size_t n = counts[c];
      if ((bad = oc_maxloc_check(comm, maxloc, n, ip, &st)) || st)
        return fail(comm, "maxloc", n, ip, st, bad);
      if ((bad = oc_affine_check(comm, affine, n, ip, &st)) || st)
        return fail(comm, "affine", n, ip, st, bad);
      for (size_t d = 0; d < sizeof(floats) / sizeof(floats[0]); d++)
        if ((bad = oc_premul_check(comm, premul, floats[d], n, ip, scalar, &st)) || st)
          return fail(comm, zcoll_dtype_name(floats[d]), n, ip, st, bad);
    }
  if (rank == 0)
    printf("ops: every element exact on every rank over %s\n", zcoll_comm_transport(comm));
  zcoll_op_free(maxloc), zcoll_op_free(affine), zcoll_op_free(premul);
  free(scalar);
  return zcoll_comm_destroy(comm) == ZCOLL_OK ? 0 : 1;
}
