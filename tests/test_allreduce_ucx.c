/*
 * The correctness matrix as real processes over UCX, launched with zcoll_run: every
 * dtype x op x placement, counts 0, 1, p-1, p+1, odd and 3 MiB, misaligned buffers,
 * for p = 1..8. Each rank checks every element against the independent reference.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "spawn.h"

ParameterizedTestParameters(ucx, matrix) {
  static int sizes[] = {1, 2, 3, 4, 5, 6, 7, 8};
  return cr_make_param_array(int, sizes, sizeof(sizes) / sizeof(sizes[0]));
}

ParameterizedTest(int *p, ucx, matrix, .timeout = 600) {
  char np[16];
  snprintf(np, sizeof(np), "%d", *p);
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", np, SP_PROG("allreduce_check"), NULL};
  const char *env[] = {"ZCOLL_TRANSPORT=ucx", NULL};
  struct sp_result r = sp_run(argv, env, 500);
  cr_log_info("p=%d: %.1f s\n%s", *p, r.seconds, r.out);
  cr_assert_eq(r.status, 0, "p=%d: exit %d\n%s", *p, r.status, r.out);
  cr_assert(strstr(r.out, "every element exact on every rank") != NULL, "%s", r.out);
  cr_assert(strstr(r.out, "over ucx") != NULL, "%s", r.out);
  free(r.out);
}
