/*
 * A one-host allreduce that fails on one rank (progs/onehost_fail.c, the design in
 * lib/core/onehost.h and onehost_big.c): a call revoked after it published its vector
 * takes it back, so the ranks that come later fail too -- nobody gets OK from a collective
 * whose result a rank never got (through a schedule, the late ranks read the job's news
 * as they start: lib/core/exec.h, zcoll__news_at_start); and a failed call of the large path ends within the
 * timeout, or right after a revoke, even while a peer is stopped in the middle of writing
 * into its result -- and what that peer writes once it resumes never reaches it.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "spawn.h"

/* algo: the mailboxes (auto), or a schedule (ring): there the late ranks have every piece
 * they need from rank 0 before it was revoked, and must read the news before completing. */
static void run_late(const char *algo) {
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", "3", SP_PROG("onehost_fail"), "late", NULL};
  const char *env[] = {"ZCOLL_TRANSPORT=shm", "ZCOLL_TIMEOUT=30", algo, NULL};
  struct sp_result r = sp_run(argv, env, 60);
  cr_expect_eq(r.status, 0, "%s", r.out);
  for (int k = 0; k < 3; k++) {
    char line[64];
    snprintf(line, sizeof(line), "rank %d: a peer failed or aborted", k);
    cr_expect(strstr(r.out, line), "rank %d did not fail with PEER_FAILED:\n%s", k, r.out);
  }
  cr_expect(strstr(r.out, ": success") == NULL, "%s", r.out);
  /* The late ranks name rank 0's failed call (its box taken back), or hear of it. */
  cr_expect(strstr(r.out, "rank 0's call of collective #1") || strstr(algo, "ring"), "%s", r.out);
  cr_expect(strstr(r.out, "rank 0 aborted: rank 0's communicator was revoked"), "%s", r.out);
  free(r.out);
}

Test(onehost_fail, a_revoked_call_fails_the_late_ranks_too, .timeout = 120) {
  run_late("ZCOLL_ALGO=auto");
}

Test(onehost_fail, a_revoked_call_fails_the_late_ranks_too_in_a_schedule, .timeout = 120) {
  run_late("ZCOLL_ALGO=ring");
}

/* Runs until the stop lands in the middle of rank 1's write (3 tries). */
static void run_stop(const char *mode, const char *timeout, double within) {
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", "2", SP_PROG("onehost_fail"), mode, NULL};
  const char *env[] = {"ZCOLL_TRANSPORT=shm", timeout, NULL};
  for (int run = 0; run < 3; run++) {
    struct sp_result r = sp_run(argv, env, 90);
    if (strstr(r.out, "inconclusive")) {
      free(r.out);
      continue;
    }
    cr_expect_eq(r.status, 0, "%s: exit %d\n%s", mode, r.status, r.out);
    const char *s = strstr(r.out, "rank 0: failed ");
    double after = 99;
    cr_assert(s && sscanf(s, "rank 0: failed %lf s after the stop", &after) == 1, "%s", r.out);
    cr_expect(after < within, "%s: rank 0's call failed %.2f s after its peer stopped:\n%s", mode,
              after, r.out);
    cr_expect(strstr(r.out, "result unchanged after the writer resumed"), "%s", r.out);
    cr_expect(strstr(r.out, "private copy"), "%s: no detach was logged:\n%s", mode, r.out);
    free(r.out);
    return;
  }
  cr_assert_fail("%s: the stop missed rank 1's write three times", mode);
}

Test(onehost_fail, a_stopped_writer_does_not_hold_a_failed_call_past_the_timeout, .timeout = 300) {
  run_stop("stop", "ZCOLL_TIMEOUT=1", 3.5);
}

Test(onehost_fail, a_revoke_ends_a_call_waiting_on_a_stopped_writer, .timeout = 300) {
  run_stop("stoprevoke", "ZCOLL_TIMEOUT=30", 2.5);
}
