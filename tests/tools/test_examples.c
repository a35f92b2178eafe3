/*
 * The examples as a user runs them: examples/asgd on 4 ranks (shm, non-blocking and
 * blocking averaging, and the progress thread) against one rank over the whole data set.
 * The loss must fall every epoch and end within 5% of the single rank's. Times are
 * printed, never asserted (perf/ measures them).
 */
#include <criterion/criterion.h>
#include <math.h>

#include "spawn.h"

#define EPOCHS 4

struct losses {
  int n;
  double loss[16];
  char *out;
};

/* Runs asgd under zcoll_run -np np (np 0: alone, no launcher) and reads its per-epoch
 * losses; every epoch's loss must be below the one before. */
static struct losses run_asgd(int np, const char *mode, const char *const *env) {
  char nps[16];
  snprintf(nps, sizeof(nps), "%d", np);
  const char *alone[] = {SP_BIN("asgd"), "--epochs", "4", mode, NULL};
  const char *launched[] = {SP_BIN("zcoll_run"), "-np", nps,  SP_BIN("asgd"),
                            "--epochs",          "4",   mode, NULL};
  struct sp_result r = sp_run(np ? launched : alone, env, 120);
  cr_assert_eq(r.status, 0, "asgd np %d %s: exit %d\n%s", np, mode ? mode : "", r.status, r.out);
  struct losses l = {0, {0}, r.out};
  for (const char *p = r.out; (p = strstr(p, "epoch ")) != NULL; p++) {
    int e;
    double x;
    if (sscanf(p, "epoch %d loss %lf", &e, &x) != 2 || e != l.n + 1) continue;
    l.loss[l.n++] = x;
  }
  cr_assert_eq(l.n, EPOCHS, "np %d: %d epochs reported\n%s", np, l.n, r.out);
  for (int i = 1; i < l.n; i++)
    cr_expect_lt(l.loss[i], l.loss[i - 1], "np %d: the loss rose at epoch %d\n%s", np, i + 1,
                 r.out);
  cr_log_info("asgd np %d %s: %s", np, mode ? mode : "", strstr(r.out, "asgd:"));
  return l;
}

static void within_5_percent(const struct losses *l, const struct losses *one) {
  double a = l->loss[EPOCHS - 1], b = one->loss[EPOCHS - 1];
  cr_expect_lt(fabs(a - b), 0.05 * b, "final loss %.6f, one rank %.6f\n%s", a, b, l->out);
}

Test(examples, asgd_four_ranks_match_one, .timeout = 300) {
  const char *shm[] = {"ZCOLL_TRANSPORT=shm", NULL};
  const char *thread[] = {"ZCOLL_TRANSPORT=shm", "ZCOLL_PROGRESS=thread", NULL};
  struct losses one = run_asgd(0, NULL, NULL);
  cr_expect_lt(one.loss[EPOCHS - 1], 0.9 * one.loss[0], "one rank barely learns\n%s", one.out);
  struct losses nb = run_asgd(4, NULL, shm);
  struct losses bl = run_asgd(4, "--blocking", shm);
  struct losses th = run_asgd(4, NULL, thread);
  within_5_percent(&nb, &one);
  within_5_percent(&bl, &one);
  within_5_percent(&th, &one);
  free(one.out);
  free(nb.out);
  free(bl.out);
  free(th.out);
}

Test(examples, asgd_rejects_bad_arguments, .timeout = 60) {
  static const char *const bad[][3] = {
      {"--dim", "0"}, {"--lr", "-1"}, {"--every", "x"}, {"--flip", "0.7"}, {"--bogus", "1"}};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    const char *argv[] = {SP_BIN("asgd"), bad[i][0], bad[i][1], NULL};
    struct sp_result r = sp_run(argv, NULL, 30);
    cr_expect_eq(r.status, 2, "%s %s: exit %d\n%s", bad[i][0], bad[i][1], r.status, r.out);
    free(r.out);
  }
}

/* examples/tasks: threads of uneven task counts per rank commit to two keys, the main
 * thread gets them; it checks every element itself. Both progress modes. */
Test(examples, tasks_three_ranks, .timeout = 300) {
  const char *modes[][2] = {{"ZCOLL_PROGRESS=caller", NULL}, {"ZCOLL_PROGRESS=thread", NULL}};
  for (int m = 0; m < 2; m++) {
    const char *argv[] = {SP_BIN("zcoll_run"), "-np", "3", SP_BIN("tasks"), "--rounds", "4", NULL};
    struct sp_result r = sp_run(argv, modes[m], 240);
    cr_expect_eq(r.status, 0, "%s: exit %d\n%s", modes[m][0], r.status, r.out);
    cr_expect(strstr(r.out, "4 rounds, every element of both keys as expected") != NULL, "%s",
              r.out);
    cr_log_info("%s\n%s", modes[m][0], r.out);
    free(r.out);
  }
}

/* examples/split_hosts: hosts of 2 ranks made up on 5 ranks (hosts of 2, 2 and 1), and the
 * real host name (one host): the two-level sum equals the allreduce on every rank. */
Test(examples, split_hosts, .timeout = 120) {
  static const char *const per[] = {"2", "0"};
  for (int k = 0; k < 2; k++) {
    const char *argv[] = {SP_BIN("zcoll_run"), "-np",  "5", SP_BIN("split_hosts"),
                          "--ranks-per-host",  per[k], NULL};
    const char *env[] = {"ZCOLL_TRANSPORT=shm", NULL};
    struct sp_result r = sp_run(argv, env, 100);
    cr_expect_eq(r.status, 0, "-k %s: exit %d\n%s", per[k], r.status, r.out);
    for (int q = 0; q < 5; q++) {
      char want[128];
      snprintf(want, sizeof(want), "split_hosts: rank %d: host %d (rank %d of %d", q,
               k ? 0 : q / 2 * 2, k ? q : q % 2, k ? 5 : (q == 4 ? 1 : 2));
      cr_expect(strstr(r.out, want) != NULL, "no '%s'\n%s", want, r.out);
    }
    cr_expect(!strstr(r.out, "DIFFERS"), "%s", r.out);
    free(r.out);
  }
}
