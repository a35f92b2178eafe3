/*
 * The correctness matrix as real processes over one transport (ZCOLL_TEST_TL: this
 * file is built once per transport, as test_allreduce_<tl>), launched with zcoll_run: every
 * dtype x op x placement, counts 0, 1, p-1, p+1, odd and large (in one placement per
 * dtype x op, alternating with p: check_matrix.h), misaligned buffers, each element checked against the independent reference on every rank -- for the
 * automatic choice (3 MiB vectors) and for every algorithm forced (1 MiB), p = 1..9.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "sample.h"
#include "spawn.h"

#ifndef ZCOLL_TEST_TL
#error "build with -DZCOLL_TEST_TL=\"ucx\" (or another transport)"
#endif

static const char *const algos[] = {"auto", "ring", "butterfly", "rhd", "tree"};
#define NALGOS 5
#define MAXP 9

/* Plain values only: Criterion runs each test in a fresh process. */
struct tl_case {
  int algo, size;
};

/* ZCOLL_TEST_SAMPLE=1 (CI's sanitizer pass): 5 of the 45 cases, p = 1..5 with algorithm
 * p % 5, so every algorithm once, at an odd and an even p beside 1; inside each, every
 * dtype x op x placement x count as always. Not p = 6..9 there: a case costs about p
 * processes' work, 2-3 times more under the sanitizers, and the four would be two thirds
 * of the sample's time. CI's plain pass (ZCOLL_TEST_SAMPLE=rest) covers the rest pairwise
 * over transport x algorithm x rank count: cell (a, p) on shm where a + p is even, on ucx
 * where it is odd -- every algorithm at every rank count on one of the two, each algorithm
 * and each rank count on both -- less the sample's cells. Without ZCOLL_TEST_SAMPLE every
 * cell runs on both. */
static int on_this_tl(int a, int p) { return (a + p) % 2 == (strcmp(ZCOLL_TEST_TL, "ucx") == 0); }

ParameterizedTestParameters(procs, matrix) {
  static struct tl_case cases[NALGOS * MAXP];
  size_t n = 0;
  for (int a = 0; a < NALGOS; a++)
    for (int p = 1; p <= MAXP; p++)
      if (zt_keep(a == p % NALGOS && p <= 5) && (zt_pass() != ZT_REST || on_this_tl(a, p)))
        cases[n++] = (struct tl_case){a, p};
  return cr_make_param_array(struct tl_case, cases, n);
}

ParameterizedTest(struct tl_case *c, procs, matrix, .timeout = 600) {
  char np[16], algo[64];
  snprintf(np, sizeof(np), "%d", c->size);
  snprintf(algo, sizeof(algo), "ZCOLL_ALGO=%s", algos[c->algo]);
  const char *large = c->algo == 0 ? "3145728" : "1048576";
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", np, SP_PROG("allreduce_check"), large, NULL};
  const char *env[] = {"ZCOLL_TRANSPORT=" ZCOLL_TEST_TL, algo, NULL};
  struct sp_result r = sp_run(argv, env, 500);
  cr_log_info("%s p=%d: %.1f s\n%s", algo, c->size, r.seconds, r.out);
  cr_assert_eq(r.status, 0, "%s p=%d: exit %d\n%s", algo, c->size, r.status, r.out);
  cr_assert(strstr(r.out, "every element exact on every rank") != NULL, "%s", r.out);
  cr_assert(strstr(r.out, "over " ZCOLL_TEST_TL) != NULL, "%s", r.out);
  free(r.out);
}
