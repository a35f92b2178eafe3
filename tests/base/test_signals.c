/*
 * A library does not change its host's signal dispositions: a program linked with
 * libzcoll catches no more signals after init, an allreduce and destroy than before
 * (UCX's libucs would add SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGHUP if it were
 * loaded as is), on each transport that runs here, and `kill -HUP` still kills a rank.
 */
#include "fail_job.h"

static void expect_unchanged(const char *tl) {
  struct job_result res;
  const char *argv[] = {SP_PROG("sig_dispositions"), "check", NULL};
  run_job_argv(tl, 2, argv, &res);
  for (int r = 0; r < 2; r++) {
    cr_expect_eq(res.status[r], 0, "rank %d exited %d:\n%s", r, res.status[r], res.out[r]);
    char want[64];
    snprintf(want, sizeof(want), "transport %s", tl);
    cr_expect(strstr(res.out[r], want), "rank %d did not run over %s:\n%s", r, tl, res.out[r]);
    /* Every stage catches what the program caught before init: nothing, unless a
     * sanitizer's runtime installed its handlers before main. */
    unsigned long long before = ~0ull, stage;
    const char *p = strstr(res.out[r], "sigcgt before-init ");
    cr_assert(p && sscanf(p, "sigcgt before-init %llx", &before) == 1, "%s", res.out[r]);
#if !defined(__SANITIZE_ADDRESS__)
    cr_expect_eq(before, 0ull, "rank %d caught signals of its own?\n%s", r, res.out[r]);
#endif
    for (const char *q = res.out[r]; (q = strstr(q, "sigcgt ")); q++) {
      char what[32];
      cr_assert(sscanf(q, "sigcgt %31s %llx", what, &stage) == 2, "%s", res.out[r]);
      cr_expect_eq(stage, before, "rank %d: %s %llx, before init %llx:\n%s", r, what, stage, before,
                   res.out[r]);
    }
    cr_expect(strstr(res.out[r], "sigcgt after-destroy"), "%s", res.out[r]);
  }
}

static void expect_hup_kills(const char *tl) {
  struct job_result res;
  const char *argv[] = {SP_PROG("sig_dispositions"), "hup", NULL};
  run_job_argv(tl, 2, argv, &res);
  for (int r = 0; r < 2; r++)
    cr_expect_eq(res.status[r], 128 + SIGHUP, "rank %d exited %d, not by SIGHUP:\n%s", r,
                 res.status[r], res.out[r]);
}

Test(signals, ucx_leaves_dispositions_alone, .timeout = 60) { expect_unchanged("ucx"); }
Test(signals, shm_leaves_dispositions_alone, .timeout = 60) { expect_unchanged("shm"); }
Test(signals, sighup_kills_a_ucx_rank, .timeout = 60) { expect_hup_kills("ucx"); }
Test(signals, sighup_kills_a_shm_rank, .timeout = 60) { expect_hup_kills("shm"); }
