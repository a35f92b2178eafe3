/*
 * The verbs transport on real RDMA devices (soft-RoCE in CI: ci/rxe.sh runs this suite
 * inside a guest whose kernel has rdma_rxe). Where no device exists the tests skip with
 * the reason -- unless ZCOLL_REQUIRE_RDMA=1 (set by the harness), where that is a failure,
 * so CI can never pass by skipping.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <infiniband/verbs.h>

#include "fail_job.h"
#include "spawn.h"

static void need_rdma(void) {
  int n = 0;
  struct ibv_device **d = ibv_get_device_list(&n);
  if (d) ibv_free_device_list(d);
  if (n > 0) return;
  const char *req = getenv("ZCOLL_REQUIRE_RDMA");
  if (req && strcmp(req, "1") == 0)
    cr_assert_fail("ZCOLL_REQUIRE_RDMA=1 but no RDMA device is visible");
  cr_skip_test("no RDMA device here (ci/rxe.sh provides soft-RoCE ones)");
}

/* Smaller vectors than over UCX: the CI's RoCE devices are emulated. */
#define VERBS_LARGE "1048576"

ParameterizedTestParameters(verbs, matrix) {
  static int sizes[] = {2, 3, 4, 5};
  return cr_make_param_array(int, sizes, sizeof(sizes) / sizeof(sizes[0]));
}

ParameterizedTest(int *p, verbs, matrix, .timeout = 1500) {
  need_rdma();
  char np[16];
  snprintf(np, sizeof(np), "%d", *p);
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", np, SP_PROG("allreduce_check"), VERBS_LARGE,
                        NULL};
  const char *env[] = {"ZCOLL_TRANSPORT=verbs", NULL};
  struct sp_result r = sp_run(argv, env, 1400);
  cr_log_warn("verbs p=%d: %.1f s\n%s", *p, r.seconds, r.out);
  cr_assert_eq(r.status, 0, "p=%d: exit %d\n%s", *p, r.status, r.out);
  cr_assert(strstr(r.out, "over verbs") && strstr(r.out, "every element exact on every rank"),
            "%s", r.out);
  free(r.out);
}

Test(verbs, auto_prefers_rdma, .timeout = 300) {
  need_rdma();
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", "2", SP_PROG("allreduce_check"), "4096",
                        NULL};
  const char *env[] = {"ZCOLL_TRANSPORT=auto", NULL};
  struct sp_result r = sp_run(argv, env, 280);
  cr_assert_eq(r.status, 0, "%s", r.out);
  cr_assert(strstr(r.out, "over verbs"), "auto did not pick verbs:\n%s", r.out);
  free(r.out);
}

Test(verbs, bad_device_is_a_clear_error, .timeout = 120) {
  need_rdma();
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", "2", SP_PROG("allreduce_check"), "64", NULL};
  const char *env[] = {"ZCOLL_TRANSPORT=verbs", "ZCOLL_IB_DEV=mlx9_nonexistent", NULL};
  struct sp_result r = sp_run(argv, env, 100);
  cr_assert_neq(r.status, 0, "%s", r.out);
  cr_assert(strstr(r.out, "ZCOLL_IB_DEV=mlx9_nonexistent") && strstr(r.out, "devices here"),
            "%s", r.out);
  free(r.out);
}

Test(verbs, peer_killed_mid_collective, .timeout = 300) {
  need_rdma();
  struct job_result res;
  run_job("verbs", 3, "1", "signal", "3000", &res);
  for (int r = 0; r < 3; r++) cr_log_warn("rank %d: %d\n%s", r, res.status[r], res.out[r]);
  cr_expect_eq(res.status[1], 128 + SIGALRM);
  /* Survivors learn of it through the rendezvous or a retry-exceeded completion, long
   * before the 60 s ZCOLL_TIMEOUT the job runs with. */
  expect_survivors(3, 1, &res, 50);
}
