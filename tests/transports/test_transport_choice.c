/*
 * ZCOLL_TRANSPORT=auto chooses per pair of ranks: shared memory between ranks on one
 * host, a network transport between hosts (hosts played with ZCOLL_TEST_SPLIT_NODES: =1
 * gives every rank a host of its own, =2,1 puts ranks 0 and 1 on one host and rank 2 on
 * another); shm forced on such a job is a clear error.
 */
#include <criterion/criterion.h>

#include "log_lines.h"
#include "spawn.h"

static struct sp_result run_np(const char *np, const char *const *env) {
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", np, SP_PROG("allreduce_check"), "4096", NULL};
  return sp_run(argv, env, 200);
}
static struct sp_result run(const char *const *env) { return run_np("3", env); }

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

/* The transport rank a's init line names for peer b (log_lines.h), "" if none. */
static const char *pair(const char *out, int a, int b) {
  static char tl[32];
  if (!ll_pair_transport(out, a, b, tl, sizeof(tl))) tl[0] = '\0';
  return tl;
}

static void expect_pair(const char *out, int a, int b, const char *tl) {
  cr_expect_str_eq(pair(out, a, b), tl, "rank %d -> %d in:\n%s", a, b, out);
}

/* A job that must pass, every element exact: its output. */
static struct sp_result run_ok(const char *np, const char *const *env) {
  struct sp_result r = run_np(np, env);
  cr_assert_eq(r.status, 0, "%s:\n%s", env[2] ? env[2] : "", r.out);
  cr_assert(strstr(r.out, "every element exact on every rank"), "%s", r.out);
  return r;
}

Test(transport_choice, each_pair_gets_its_own, .timeout = 240) {
  const char *env[] = {"ZCOLL_TRANSPORT=auto", "ZCOLL_TEST_SPLIT_NODES=2,1", "ZCOLL_LOG=info",
                       NULL};
  struct sp_result r = run_ok("3", env);
  cr_expect(strstr(r.out, "over shm+ucx") || strstr(r.out, "over shm+verbs"), "%s", r.out);
  expect_pair(r.out, 0, 1, "shm");
  expect_pair(r.out, 1, 0, "shm");
  for (int a = 0; a < 2; a++) {
    const char *there = pair(r.out, a, 2), *back = pair(r.out, 2, a);
    cr_expect(!strcmp(there, "ucx") || !strcmp(there, "verbs"), "%d -> 2: %s", a, r.out);
    cr_expect(!strcmp(back, "ucx") || !strcmp(back, "verbs"), "2 -> %d: %s", a, r.out);
  }
  free(r.out);
}

/* Uneven hosts, every algorithm: the channels of one run mix transports. */
Test(transport_choice, uneven_hosts_every_algorithm, .timeout = 600) {
  static const char *const algos[] = {"ZCOLL_ALGO=ring", "ZCOLL_ALGO=butterfly", "ZCOLL_ALGO=rhd",
                                      "ZCOLL_ALGO=tree", "ZCOLL_ALGO=chain",     "ZCOLL_ALGO=hier"};
  for (size_t i = 0; i < sizeof(algos) / sizeof(algos[0]); i++) {
    const char *env[] = {"ZCOLL_TRANSPORT=auto", "ZCOLL_TEST_SPLIT_NODES=2,3,1", algos[i], NULL};
    struct sp_result r = run_ok("6", env);
    cr_expect(strstr(r.out, "6 ranks over shm+"), "%s:\n%s", algos[i], r.out);
    free(r.out);
  }
}

Test(transport_choice, forced_transport_for_every_pair, .timeout = 240) {
  const char *env[] = {"ZCOLL_TRANSPORT=ucx", "ZCOLL_TEST_SPLIT_NODES=2,1", "ZCOLL_LOG=info", NULL};
  struct sp_result r = run_ok("3", env);
  cr_expect(strstr(r.out, "3 ranks over ucx:"), "%s", r.out);
  expect_pair(r.out, 0, 1, "ucx");
  free(r.out);
}
