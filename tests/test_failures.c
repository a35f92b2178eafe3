/*
 * A peer that dies or aborts turns into ZCOLL_ERR_PEER_FAILED on every survivor, well
 * within ZCOLL_TIMEOUT, with real processes, on each transport that runs on one
 * machine without RDMA (verbs: tests/test_verbs.c). The ranks are started by hand
 * here (not by zcoll_run, which would kill the survivors at once).
 */
#include "fail_job.h"

#define FAILURE_TESTS(tl)                                                              \
  Test(failures_##tl, rank_killed_mid_collective, .timeout = 120) {                    \
    struct job_result res;                                                             \
    run_job(#tl, 3, "1", "signal", "500", &res);                                       \
    cr_expect_eq(res.status[1], 128 + SIGALRM, "victim: %d\n%s", res.status[1],        \
                 res.out[1]);                                                          \
    expect_survivors(3, 1, &res, 30);                                                  \
  }                                                                                    \
  Test(failures_##tl, root_killed, .timeout = 120) {                                   \
    struct job_result res;                                                             \
    run_job(#tl, 3, "0", "signal", "500", &res);                                       \
    expect_survivors(3, 0, &res, 30);                                                  \
  }                                                                                    \
  Test(failures_##tl, rank_exits_between_collectives, .timeout = 120) {                \
    struct job_result res;                                                             \
    run_job(#tl, 4, "3", "exit", "300", &res);                                         \
    cr_expect_eq(res.status[3], 3);                                                    \
    expect_survivors(4, 3, &res, 30);                                                  \
  }                                                                                    \
  Test(failures_##tl, rank_aborts, .timeout = 120) {                                   \
    struct job_result res;                                                             \
    run_job(#tl, 3, "2", "abort", "300", &res);                                        \
    cr_expect_eq(res.status[2], 0, "%s", res.out[2]);                                  \
    expect_survivors(3, 2, &res, 30);                                                  \
  }

FAILURE_TESTS(ucx)
FAILURE_TESTS(shm)
