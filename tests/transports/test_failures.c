/*
 * A peer that dies or aborts turns into ZCOLL_ERR_PEER_FAILED on every survivor, well
 * within ZCOLL_TIMEOUT, with real processes, on each transport that runs on one
 * machine without RDMA (verbs: tests/transports/test_verbs.c). The ranks are started by hand
 * here (not by zcoll_run, which would kill the survivors at once).
 */
#include "fail_job.h"

#define FAILURE_TESTS(tl)                                                                    \
  Test(failures_##tl, rank_killed_mid_collective, .timeout = 120) {                          \
    struct job_result res;                                                                   \
    run_job(#tl, 3, "1", "signal", "500", &res);                                             \
    cr_expect_eq(res.status[1], 128 + SIGALRM, "victim: %d\n%s", res.status[1], res.out[1]); \
    expect_survivors(3, 1, &res, 30);                                                        \
  }                                                                                          \
  Test(failures_##tl, root_killed, .timeout = 120) {                                         \
    struct job_result res;                                                                   \
    run_job(#tl, 3, "0", "signal", "500", &res);                                             \
    expect_survivors(3, 0, &res, 30);                                                        \
  }                                                                                          \
  Test(failures_##tl, rank_exits_between_collectives, .timeout = 120) {                      \
    struct job_result res;                                                                   \
    run_job(#tl, 4, "3", "exit", "300", &res);                                               \
    cr_expect_eq(res.status[3], 3);                                                          \
    expect_survivors(4, 3, &res, 30);                                                        \
  }                                                                                          \
  Test(failures_##tl, rank_aborts, .timeout = 120) {                                         \
    struct job_result res;                                                                   \
    run_job(#tl, 3, "2", "abort", "300", &res);                                              \
    cr_expect_eq(res.status[2], 0, "%s", res.out[2]);                                        \
    expect_survivors(3, 2, &res, 30);                                                        \
  }

FAILURE_TESTS(ucx)
FAILURE_TESTS(shm)

/* A rank leaves right after init (no destroy) while the survivors tear down, with or
 * without one allreduce first; UCX asserted (SIGABRT) at ucp_worker_destroy on the
 * requests still in flight towards it. Every survivor must return OK or PEER_FAILED,
 * every time -- here ten times over, between "hosts" too (peer error handling on). */
static void early_exit_jobs(const char *tl, const char *mode, int split_nodes) {
  if (split_nodes) setenv("ZCOLL_TEST_SPLIT_NODES", "1", 1);
  /* Only the survivor's verdict fits the captured output: no logs before it. */
  setenv("ZCOLL_LOG", "none", 1);
  setenv("UCX_LOG_LEVEL", "fatal", 1);
  for (int i = 0; i < 10; i++) {
    struct job_result res;
    const char *argv[] = {SP_PROG("early_exit"), "2", mode, NULL};
    run_job_argv(tl, 3, argv, &res);
    cr_expect_eq(res.status[2], 3, "run %d: the victim exited %d:\n%s", i, res.status[2],
                 res.out[2]);
    for (int r = 0; r < 2; r++) {
      cr_expect_eq(res.status[r], 0, "run %d: rank %d exited %d:\n%s", i, r, res.status[r],
                   res.out[r]);
      cr_expect(strstr(res.out[r], "survivor"), "run %d: rank %d:\n%s", i, r, res.out[r]);
      if (strstr(res.out[r], "peer failed"))
        cr_expect(strstr(res.out[r], "rank 2"), "run %d: rank %d does not name rank 2:\n%s", i, r,
                  res.out[r]);
    }
  }
  unsetenv("ZCOLL_TEST_SPLIT_NODES");
  unsetenv("ZCOLL_LOG");
  unsetenv("UCX_LOG_LEVEL");
}

Test(failures_ucx, peer_exits_after_init_then_destroy, .timeout = 240) {
  early_exit_jobs("ucx", "destroy", 0);
}
Test(failures_ucx, peer_exits_after_init_then_allreduce, .timeout = 240) {
  early_exit_jobs("ucx", "allreduce", 0);
}
Test(failures_ucx, peer_on_another_host_exits_after_init, .timeout = 240) {
  early_exit_jobs("ucx", "allreduce", 1);
}
Test(failures_shm, peer_exits_after_init_then_allreduce, .timeout = 240) {
  early_exit_jobs("shm", "allreduce", 0);
}
