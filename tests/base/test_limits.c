/*
 * A rank under a low RLIMIT_FSIZE (`ulimit -f`, which batch systems pass on) fails init
 * with ZCOLL_ERR_NO_MEMORY naming the limit, instead of dying of SIGXFSZ while it makes
 * its shared-memory files (the shm transport's memfds; UCX's posix segments under
 * /dev/shm), and the ranks that could go on hear of it rather than wait for the timeout.
 * Real processes, started by hand (fail_job.h), each with its own limit.
 */
#include "fail_job.h"

#define KIB 1024ull

/* Every rank's verdict: allreduce_check's one line, no logs around it. */
static void run_limited(const char *tl, int np, const unsigned long long *fsize,
                        struct job_result *res) {
  setenv("ZCOLL_LOG", "none", 1);
  setenv("UCX_LOG_LEVEL", "fatal", 1);
  const char *argv[] = {SP_PROG("allreduce_check"), "65536", NULL};
  run_job_limited(tl, np, argv, fsize, res);
  unsetenv("ZCOLL_LOG");
  unsetenv("UCX_LOG_LEVEL");
}

/* Rank r failed init itself, with a status, on its limit; whose names the need. */
static void expect_refused(const char *tl, struct job_result *res, int r, const char *whose) {
  cr_expect_eq(res->status[r], 1, "%s: rank %d exited %d (%d: SIGXFSZ):\n%s", tl, r, res->status[r],
               128 + SIGXFSZ, res->out[r]);
  cr_expect(strstr(res->out[r], "zcoll_comm_init: out of memory") &&
                strstr(res->out[r], "RLIMIT_FSIZE (ulimit -f) is 65536 bytes") &&
                strstr(res->out[r], "ulimit -f unlimited") && strstr(res->out[r], whose),
            "%s: rank %d does not say which limit and whose need:\n%s", tl, r, res->out[r]);
}

static void every_rank_limited(const char *tl, const char *whose) {
  const unsigned long long fsize[] = {64 * KIB, 64 * KIB};
  struct job_result res;
  run_limited(tl, 2, fsize, &res);
  for (int r = 0; r < 2; r++) expect_refused(tl, &res, r, whose);
  cr_expect_lt(res.seconds, 30.0, "%s: took %.1f s (ZCOLL_TIMEOUT is 60)", tl, res.seconds);
}

/* One rank limited: it refuses, and the others learn it from the rendezvous at once. */
static void one_rank_limited(const char *tl, int victim, const char *whose) {
  unsigned long long fsize[3] = {0, 0, 0};
  fsize[victim] = 64 * KIB;
  struct job_result res;
  run_limited(tl, 3, fsize, &res);
  expect_refused(tl, &res, victim, whose);
  for (int r = 0; r < 3; r++) {
    if (r == victim) continue;
    cr_expect_eq(res.status[r], 1, "%s: rank %d exited %d:\n%s", tl, r, res.status[r], res.out[r]);
    cr_expect(strstr(res.out[r], "a peer failed or aborted") && strstr(res.out[r], "RLIMIT_FSIZE"),
              "%s: rank %d was not told why rank %d left:\n%s", tl, r, victim, res.out[r]);
  }
  cr_expect_lt(res.seconds, 30.0, "%s: took %.1f s (ZCOLL_TIMEOUT is 60)", tl, res.seconds);
}

/* A limit above what the job makes changes nothing. */
static void limit_large_enough(const char *tl) {
  const unsigned long long fsize[] = {64 * KIB * KIB, 64 * KIB * KIB};
  struct job_result res;
  run_limited(tl, 2, fsize, &res);
  for (int r = 0; r < 2; r++)
    cr_expect_eq(res.status[r], 0, "%s: rank %d exited %d:\n%s", tl, r, res.status[r], res.out[r]);
  cr_expect(strstr(res.out[0], "every element exact on every rank"), "%s:\n%s", tl, res.out[0]);
}

/* On each transport that makes files; whose: how its message names the need (UCX writes
 * its files itself: the message says the need is UCX's). */
#define LIMIT_TESTS(tl, whose)                                                              \
  Test(limits, tl##_every_rank_limited, .timeout = 120) { every_rank_limited(#tl, whose); } \
  Test(limits, tl##_rank_0_limited, .timeout = 120) { one_rank_limited(#tl, 0, whose); }    \
  Test(limits, tl##_rank_2_limited, .timeout = 120) { one_rank_limited(#tl, 2, whose); }    \
  Test(limits, tl##_limit_large_enough, .timeout = 120) { limit_large_enough(#tl); }

LIMIT_TESTS(shm, "the shm transport")
LIMIT_TESTS(ucx, "UCX (not zcoll itself")
