/*
 * Communicators made by several threads of one process (issue: racing init), and the
 * registry that keeps abort and destroy from freeing one communicator twice.
 *
 * Two threads of one rank creating at once pair with the other processes' threads in no
 * defined way, and every allreduce would then be OK with another thread's data summed in:
 * the second creation is refused instead (tests/progs/init_race.c). Ranks that are threads
 * of one process with distinct ranks (tests/rank_threads.h) are not refused: the whole
 * suite's loopback tests create that way.
 */
#include <criterion/criterion.h>

#include <stdlib.h>

#include "spawn.h"
#include "zcoll.h"

static void race(const char *tl) {
  char dir[] = "/tmp/zcoll_init_race.XXXXXX", go[64], tlv[64];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(go, sizeof(go), "%s/go", dir);
  snprintf(tlv, sizeof(tlv), "ZCOLL_TRANSPORT=%s", tl);
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", "2", SP_PROG("init_race"), go, NULL};
  /* The timeout only bounds the old behaviour (a creation paired with nobody). */
  const char *env[] = {tlv, "ZCOLL_TIMEOUT=10", "ZCOLL_LOG=none", NULL};
  struct sp_async a = sp_start(argv, env);
  struct sp_result r = sp_finish(&a, 60);
  unlink(go);
  rmdir(dir);
  cr_log_info("%s", r.out ? r.out : "");
  cr_expect_eq(r.status, 0, "the job exited %d:\n%s", r.status, r.out);
  cr_expect(r.out && strstr(r.out, "zcoll_comm_init: another thread of this process is creating "
                                   "a communicator (as rank 0 of 2"),
            "the second creation was not refused:\n%s", r.out);
  cr_expect(r.out && strstr(r.out, "one at a time, in the same order on every rank"), "%s", r.out);
  cr_expect(r.out && strstr(r.out, "rank 0 sum OK") && strstr(r.out, "rank 1 sum OK"), "%s", r.out);
  cr_expect(r.out && strstr(r.out, "rank 0: 1 of 2 creations succeeded"), "%s", r.out);
  free(r.out);
}

Test(init_race, second_creation_refused_shm, .timeout = 90) { race("shm"); }
Test(init_race, second_creation_refused_ucx, .timeout = 90) { race("ucx"); }

/* Destroy, then a watchdog's abort (or a second destroy) on the same handle: refused with
 * a message, and nothing of the freed communicator read (ASan would see it). */
Test(init_race, abort_or_destroy_after_destroy_refused) {
  zcoll_config_t *cfg;
  cr_assert_eq(zcoll_config_create(&cfg), ZCOLL_OK);
  cr_assert_eq(zcoll_config_set(cfg, "SIZE", "1"), ZCOLL_OK);
  cr_assert_eq(zcoll_config_set(cfg, "RANK", "0"), ZCOLL_OK);
  zcoll_comm_t *comm;
  cr_assert_eq(zcoll_comm_init(&comm, cfg), ZCOLL_OK, "%s", zcoll_last_error());
  zcoll_config_free(cfg);
  cr_assert_eq(zcoll_comm_destroy(comm), ZCOLL_OK);
  cr_expect_eq(zcoll_comm_abort(comm), ZCOLL_ERR_INVALID_ARG);
  cr_expect(strstr(zcoll_last_error(), "not a live communicator"), "%s", zcoll_last_error());
  cr_expect_eq(zcoll_comm_destroy(comm), ZCOLL_ERR_INVALID_ARG);
  cr_expect(strstr(zcoll_last_error(), "not a live communicator"), "%s", zcoll_last_error());
}
