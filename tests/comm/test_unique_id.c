/*
 * A communicator from a unique id (zcoll_get_unique_id, zcoll_comm_init_rank), moved
 * through a file by progs/uid_init.c: jobs over shm and UCX whose ranks are not the ones
 * the environment (zcoll_run's ZCOLL_RANK, ZCOLL_JOB_KEY) says, checked by an allreduce
 * and an allgather; then what must fail, and fail at once: a rank after the job formed
 * (late or reused id), a forged key (while the real ranks still form the job), rank 0's
 * second use of an id, bytes that are no id, and an id whose rank 0 gave up after
 * ZCOLL_TIMEOUT.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "spawn.h"

static char *fresh_dir(void) {
  static char dir[64];
  snprintf(dir, sizeof(dir), "/tmp/zcoll-uid-XXXXXX");
  cr_assert(mkdtemp(dir) != NULL);
  return dir;
}

static void clean(const char *dir) {
  char path[128];
  snprintf(path, sizeof(path), "%s/id", dir);
  remove(path);
  rmdir(dir);
}

static void job_then_late(const char *tl, const char *np) {
  const char *dir = fresh_dir();
  char transport[64];
  snprintf(transport, sizeof(transport), "ZCOLL_TRANSPORT=%s", tl);
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", np, SP_PROG("uid_init"), dir, NULL};
  /* a key in the environment that init_rank must not use (the id's is the job's) */
  const char *env[] = {transport, "ZCOLL_JOB_KEY=not-the-ids-key", NULL};
  struct sp_result r = sp_run(argv, env, 120);
  cr_expect_eq(r.status, 0, "%s np=%s: exit %d\n%s", tl, np, r.status, r.out);
  for (int k = 0; k < atoi(np); k++) {
    char want[96];
    snprintf(want, sizeof(want), "uid_init: rank %d of %s ok over %s, launcher unique id", k, np,
             tl);
    cr_expect(strstr(r.out, want) != NULL, "no '%s'\n%s", want, r.out);
  }
  free(r.out);
  const char *late[] = {SP_PROG("uid_init"), dir, "late", NULL};
  r = sp_run(late, NULL, 60);
  cr_expect_eq(r.status, 0, "late: exit %d\n%s", r.status, r.out);
  cr_expect(strstr(r.out, "uid_init: late: bootstrap (rendezvous) failed after 0.") &&
                strstr(r.out, "nobody listens there any more") && r.seconds < 10,
            "a late rank must be refused at once (%.1f s)\n%s", r.seconds, r.out);
  free(r.out);
  clean(dir);
}

Test(unique_id, job_over_shm_then_a_late_rank, .timeout = 180) { job_then_late("shm", "3"); }
Test(unique_id, job_over_ucx_then_a_late_rank, .timeout = 180) { job_then_late("ucx", "2"); }

/* Rank 0 waits for rank 1; a process with the id's key altered tries first. */
Test(unique_id, forged_key_is_refused_and_the_job_still_forms, .timeout = 180) {
  const char *dir = fresh_dir();
  const char *r0[] = {SP_PROG("uid_init"), dir, "as", "0", "2", NULL};
  const char *env[] = {"ZCOLL_TRANSPORT=shm", NULL};
  struct sp_async a = sp_start(r0, env);
  const char *forged[] = {SP_PROG("uid_init"), dir, "forged", NULL};
  struct sp_result f = sp_run(forged, env, 60);
  cr_expect_eq(f.status, 0, "forged: exit %d\n%s", f.status, f.out);
  cr_expect(strstr(f.out, "uid_init: forged: bootstrap (rendezvous) failed") &&
                strstr(f.out, "job key mismatch"),
            "%s", f.out);
  free(f.out);
  const char *r1[] = {SP_PROG("uid_init"), dir, "as", "1", "2", NULL};
  struct sp_result one = sp_run(r1, env, 60);
  struct sp_result zero = sp_finish(&a, 60);
  cr_expect(one.status == 0 && strstr(one.out, "rank 1 of 2 ok"), "rank 1:\n%s", one.out);
  cr_expect(zero.status == 0 && strstr(zero.out, "rank 0 of 2 ok"), "rank 0:\n%s", zero.out);
  free(one.out), free(zero.out);
  clean(dir);
}

/* A job of one from an id, then the id again as rank 0, bytes that are no id, a bad rank. */
Test(unique_id, reuse_junk_and_bad_ranks_are_refused, .timeout = 60) {
  const char *argv[] = {SP_PROG("uid_init"), "-", "reuse", NULL};
  struct sp_result r = sp_run(argv, NULL, 50);
  cr_expect_eq(r.status, 0, "exit %d\n%s", r.status, r.out);
  cr_expect(strstr(r.out, "reused by rank 0: invalid argument") &&
                strstr(r.out, "was used already") && strstr(r.out, "not an id: invalid argument") &&
                strstr(r.out, "rank 2 of 2: invalid argument"),
            "%s", r.out);
  free(r.out);
}

/* Rank 0 alone gives up after ZCOLL_TIMEOUT; its rendezvous is closed then. */
Test(unique_id, rank_0_times_out_and_closes, .timeout = 120) {
  const char *dir = fresh_dir();
  const char *r0[] = {SP_PROG("uid_init"), dir, "as", "0", "2", NULL};
  const char *env[] = {"ZCOLL_TRANSPORT=shm", "ZCOLL_TIMEOUT=2", NULL};
  struct sp_result zero = sp_run(r0, env, 60);
  cr_expect_neq(zero.status, 0, "rank 0 alone must time out\n%s", zero.out);
  cr_expect(strstr(zero.out, "init_rank") && strstr(zero.out, "timed out"), "%s", zero.out);
  free(zero.out);
  const char *late[] = {SP_PROG("uid_init"), dir, "late", NULL};
  struct sp_result r = sp_run(late, NULL, 60);
  cr_expect(r.status == 0 && strstr(r.out, "nobody listens there any more"), "%s", r.out);
  free(r.out);
  clean(dir);
}
