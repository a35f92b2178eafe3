/*
 * ZCOLL_TRANSPORT=auto: shared memory when every rank is on this host, a network
 * transport when the ranks span hosts (played with ZCOLL_TEST_SPLIT_NODES=1, which
 * gives every rank a host of its own); shm forced on such a job is a clear error.
 */
#include <criterion/criterion.h>

#include "spawn.h"

static struct sp_result run(const char *const *env) {
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", "3", SP_PROG("allreduce_check"), "4096",
                        NULL};
  return sp_run(argv, env, 200);
}

/* The job passes, every element exact, over one of the transports named. */
static void expect_over(const char *const *env, const char *tl1, const char *tl2) {
  struct sp_result r = run(env);
  cr_assert_eq(r.status, 0, "%s", r.out);
  cr_assert(strstr(r.out, "every element exact on every rank"), "%s", r.out);
  cr_assert(strstr(r.out, tl1) || (tl2 && strstr(r.out, tl2)), "not %s:\n%s", tl1, r.out);
  free(r.out);
}

Test(transport_choice, one_host_picks_shm, .timeout = 240) {
  const char *env[] = {"ZCOLL_TRANSPORT=auto", NULL};
  expect_over(env, "over shm", NULL);
}

Test(transport_choice, several_hosts_pick_a_network, .timeout = 240) {
  const char *env[] = {"ZCOLL_TRANSPORT=auto", "ZCOLL_TEST_SPLIT_NODES=1", NULL};
  expect_over(env, "over ucx", "over verbs");
}

Test(transport_choice, shm_across_hosts_is_an_error, .timeout = 240) {
  const char *env[] = {"ZCOLL_TRANSPORT=shm", "ZCOLL_TEST_SPLIT_NODES=1", NULL};
  struct sp_result r = run(env);
  cr_assert_neq(r.status, 0, "%s", r.out);
  cr_assert(strstr(r.out, "ZCOLL_TRANSPORT=shm needs every rank on one host"), "%s", r.out);
  free(r.out);
}
