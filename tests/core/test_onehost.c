/*
 * The one-host small allreduce (lib/core/onehost.h) between real processes over shm,
 * p = 2..8: results checked element by element (progs/onehost_check.c) under late ranks,
 * sleeping waits and a non-blocking allreduce of the executor's in flight; a peer in
 * another collective at the same number -- through the executor, or through the
 * mailboxes with another op -- fails every rank with a mismatch rather than hanging; a
 * peer dying while the others wait fails them at once. The dtype x op x placement matrix
 * at small counts runs through it too (test_allreduce_shm, ZCOLL_ALGO=auto).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "sample.h"
#include "spawn.h"

static void run_stress(int np, const char *spin) {
  char nps[16], spin_env[64];
  snprintf(nps, sizeof(nps), "%d", np);
  snprintf(spin_env, sizeof(spin_env), "ZCOLL_SPIN_US=%s", spin);
  const char *argv[] = {
      SP_BIN("zcoll_run"), "-np", nps, SP_PROG("onehost_check"), "stress", "300", NULL};
  const char *env[] = {"ZCOLL_TRANSPORT=shm", spin_env, NULL};
  struct sp_result r = sp_run(argv, env, 240);
  cr_expect_eq(r.status, 0, "p=%d spin %s: exit %d\n%s", np, spin, r.status, r.out);
  int ok = 0;
  for (const char *s = strstr(r.out, "onehost: rank"); s; s = strstr(s + 1, "onehost: rank")) {
    cr_expect(strstr(s, "algorithm onehost") != NULL &&
                  strncmp(strstr(s, "over"), "over shm", 8) == 0,
              "p=%d: %.*s", np, (int)strcspn(s, "\n"), s);
    ok++;
  }
  cr_expect_eq(ok, np, "p=%d spin %s: %d of %d ranks ok\n%s", np, spin, ok, np, r.out);
  free(r.out);
}

/* Spinning (the default on dedicated cores) and never spinning (every wait sleeps, so every
 * publication must knock the sleeper awake). */
Test(onehost, stress_spinning, .timeout = 900) {
  for (int np = 2; np <= 8; np++)
    if (zt_keep(np == 2 || np == 5)) run_stress(np, "50");
}

Test(onehost, stress_sleeping, .timeout = 900) {
  for (int np = 2; np <= 8; np++)
    if (zt_keep(np == 3 || np == 8)) run_stress(np, "0");
}

static void run_cross(const char *mode, int np) {
  char nps[16];
  snprintf(nps, sizeof(nps), "%d", np);
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", nps, SP_PROG("onehost_check"), mode, NULL};
  const char *env[] = {"ZCOLL_TRANSPORT=shm", "ZCOLL_TIMEOUT=60", NULL};
  struct sp_result r = sp_run(argv, env, 120);
  cr_expect_eq(r.status, 0, "%s p=%d: exit %d\n%s", mode, np, r.status, r.out);
  for (int k = 0; k < np; k++) {
    char line[32];
    snprintf(line, sizeof(line), "rank %d: ", k);
    const char *s = strstr(r.out, line);
    cr_expect(s != NULL, "%s p=%d: rank %d printed nothing\n%s", mode, np, k, r.out);
    if (!s) continue;
    cr_expect(strncmp(s + strlen(line), "ZCOLL_ERR_MISMATCH", 18) == 0 ||
                  strncmp(s + strlen(line), "collectives differ", 18) == 0 ||
                  strstr(s, "differs between ranks") != NULL,
              "%s p=%d: rank %d: %.*s\n%s", mode, np, k, (int)strcspn(s, "\n"), s, r.out);
  }
  cr_expect(r.seconds < 30, "%s p=%d: took %.1f s (a hang until the timeout?)", mode, np,
            r.seconds);
  free(r.out);
}

Test(onehost, mismatch_with_a_broadcast, .timeout = 300) { run_cross("cross-bcast", 3); }
Test(onehost, mismatch_with_a_large_allreduce, .timeout = 300) { run_cross("cross-count", 2); }
/* A peer gone (_exit, no destroy) before it publishes: the others hear of it from the
 * transport (its pidfd) and the rendezvous, within moments. */
static void run_kill(const char *mode) {
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", "4", SP_PROG("onehost_check"), mode, NULL};
  const char *env[] = {"ZCOLL_TRANSPORT=shm", "ZCOLL_TIMEOUT=60", NULL};
  struct sp_result r = sp_run(argv, env, 120);
  cr_expect_eq(r.status, 0, "%s", r.out); /* the victim's _exit(0) is no error of zcoll_run's */
  for (int k = 0; k < 4; k++) {
    char line[32];
    snprintf(line, sizeof(line), "rank %d: ", k);
    const char *s = strstr(r.out, line);
    if (k == 1) {
      cr_expect(s == NULL, "the victim printed\n%s", r.out);
      continue;
    }
    cr_expect(s && strstr(s, "a peer failed or aborted") &&
                  strstr(s, "a peer failed or aborted") < s + strcspn(s, "\n"),
              "rank %d\n%s", k, r.out);
  }
  cr_expect(r.seconds < 15, "took %.1f s", r.seconds);
  free(r.out);
}

Test(onehost, peer_dies_while_the_others_wait, .timeout = 300) { run_kill("kill"); }
Test(onehost, peer_dies_while_the_others_wait_large, .timeout = 300) { run_kill("bigkill"); }

/* Every rank writes its block of the result into every rank's memory: a call that fails
 * (rank 0 revokes mid-loop) must still be the end of the writes into each rank's result.
 * A writer seen late only on some runs: four runs (without the wait for writers in
 * zcoll__onehost_quiesce, 4 runs in 10 showed a write after the error here). */
static void run_no_write_after(const char *mode, int survivors, int runs) {
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", "4", SP_PROG("onehost_check"), mode, NULL};
  const char *env[] = {"ZCOLL_TRANSPORT=shm", NULL};
  for (int run = 0; run < runs; run++) {
    struct sp_result r = sp_run(argv, env, 120);
    cr_expect_eq(r.status, 0, "%s run %d: exit %d\n%s", mode, run, r.status, r.out);
    int ok = 0;
    for (const char *s = strstr(r.out, "result unchanged after"); s;
         s = strstr(s + 1, "result unchanged after"))
      ok++;
    cr_expect_eq(ok, survivors, "%s run %d: %d of %d ranks unchanged\n%s", mode, run, ok, survivors,
                 r.out);
    cr_expect(strstr(r.out, "then success") == NULL, "%s run %d: a call did not fail\n%s", mode,
              run, r.out);
    cr_expect(strstr(r.out, "WRONG") == NULL, "%s run %d:\n%s", mode, run, r.out);
    free(r.out);
  }
}

Test(onehost, large_no_write_after_the_error, .timeout = 300) {
  run_no_write_after("bigrevoke", 4, 4);
}

/* A peer that dies in the middle of a large call, most likely while it writes into the
 * others' results: they fail (PEER_FAILED, through its pidfd and the rendezvous), the calls
 * before were right, and nothing is written after the error -- the dead writer is seen
 * gone, not waited for. */
Test(onehost, large_peer_dies_mid_copy, .timeout = 300) { run_no_write_after("bigdie", 3, 3); }

/* Large vectors: every rank's in zcoll_mem_alloc memory (the path that reads the peers'
 * vectors where they lie), or one rank's not (all fall back to the schedule, under the same
 * collective numbers: the count of collectives must be the count of calls). */
static void run_big(int np, const char *who) {
  char nps[16];
  snprintf(nps, sizeof(nps), "%d", np);
  const char *argv[] = {
      SP_BIN("zcoll_run"), "-np", nps, SP_PROG("onehost_check"), "big", who, "8", NULL};
  const char *env[] = {"ZCOLL_TRANSPORT=shm", NULL};
  struct sp_result r = sp_run(argv, env, 300);
  cr_expect_eq(r.status, 0, "p=%d %s: exit %d\n%s", np, who, r.status, r.out);
  int ok = 0;
  const char *want = strcmp(who, "all") == 0 ? "ok over shm, 8 collectives, 8 mapped"
                                             : "ok over shm, 8 collectives, 0 mapped";
  for (const char *s = strstr(r.out, "onehost: rank"); s; s = strstr(s + 1, "onehost: rank")) {
    const char *n = strstr(s, want);
    cr_expect(n && n < s + strcspn(s, "\n"), "p=%d %s: %.*s", np, who, (int)strcspn(s, "\n"), s);
    ok++;
  }
  cr_expect_eq(ok, np, "p=%d %s: %d of %d ranks ok\n%s", np, who, ok, np, r.out);
  free(r.out);
}

Test(onehost, large_in_mapped_memory, .timeout = 900) {
  for (int np = 2; np <= 8; np++)
    if (zt_keep(np == 2 || np == 5)) run_big(np, "all");
}

Test(onehost, large_falls_back_when_one_rank_is_not_mapped, .timeout = 900) {
  for (int np = 2; np <= 4; np++)
    if (zt_keep(np == 3)) run_big(np, "one");
}

Test(onehost, mismatch_of_op_in_the_mailboxes, .timeout = 300) { run_cross("cross-op", 4); }
