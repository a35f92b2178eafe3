/*
 * Non-blocking and persistent allreduce between real processes (progs/requests_check.c)
 * on each transport that runs on one machine without RDMA (verbs: in the rxe harness):
 * requests in flight completed in any order with a blocking call among them, persistent
 * requests double-buffered, and a peer that dies while requests are in flight -- every
 * request on every survivor ends with an error, none hangs.
 */
#include "fail_job.h"

/* Algorithm x rank count, sampled: every algorithm once, every p at least twice. */
static const struct {
  const char *algo;
  int np;
} cases[] = {{"auto", 2}, {"butterfly", 2}, {"ring", 3}, {"tree", 3}, {"rhd", 4}, {"auto", 4}};

static void run_matrix(const char *tl) {
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char np[16], algo[64], transport[64];
    snprintf(np, sizeof(np), "%d", cases[i].np);
    snprintf(algo, sizeof(algo), "ZCOLL_ALGO=%s", cases[i].algo);
    snprintf(transport, sizeof(transport), "ZCOLL_TRANSPORT=%s", tl);
    const char *argv[] = {SP_BIN("zcoll_run"), "-np", np, SP_PROG("requests_check"), NULL};
    const char *env[] = {transport, algo, "ZCOLL_CHUNK_BYTES=65536", NULL};
    struct sp_result r = sp_run(argv, env, 300);
    cr_log_info("%s %s p=%d: %.1f s", tl, algo, cases[i].np, r.seconds);
    cr_expect_eq(r.status, 0, "%s %s p=%d: exit %d\n%s", tl, algo, cases[i].np, r.status, r.out);
    cr_expect(strstr(r.out, "every element exact on every rank over") != NULL, "%s", r.out);
    free(r.out);
  }
}

static void run_killed(const char *tl) {
  setenv("UCX_LOG_LEVEL", "fatal", 1);
  struct job_result res;
  const char *argv[] = {SP_PROG("requests_check"), "kill", "1", NULL};
  run_job_argv(tl, 3, argv, &res);
  cr_expect_eq(res.status[1], 3, "the victim exited %d:\n%s", res.status[1], res.out[1]);
  for (int r = 0; r < 3; r += 2) {
    cr_log_info("%s rank %d: %s", tl, r, res.out[r]);
    cr_expect_eq(res.status[r], 0, "rank %d exited %d:\n%s", r, res.status[r], res.out[r]);
    cr_expect(strstr(res.out[r], "survivor") && strstr(res.out[r], "8 requests ended with"),
              "rank %d:\n%s", r, res.out[r]);
  }
  cr_expect_lt(res.seconds, 30.0, "took %.1f s", res.seconds);
  unsetenv("UCX_LOG_LEVEL");
}

Test(requests_shm, in_flight_and_persistent, .timeout = 600) { run_matrix("shm"); }
Test(requests_ucx, in_flight_and_persistent, .timeout = 600) { run_matrix("ucx"); }
Test(requests_shm, peer_dies_with_requests_in_flight, .timeout = 120) { run_killed("shm"); }
Test(requests_ucx, peer_dies_with_requests_in_flight, .timeout = 120) { run_killed("ucx"); }
