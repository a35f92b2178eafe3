/*
 * zcoll_group_start / zcoll_group_end (lib/coll/group.c): the cases of group_bodies.h as
 * threads over the loopback transport at p = 2, 3, 4 -- 50 small allreduces fused (in
 * place, not, alternating, i-forms among them), a mix of collectives and messages in one
 * group, a ring where every rank sends first, nesting and misuse, a bad argument and a
 * mismatch inside a group (every rank's end fails), a destroy inside an open group -- and
 * the same between processes over shm and UCX (progs/group_check.c).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "group_bodies.h"
#include "rank_threads.h"
#include "spawn.h"

typedef int (*gr_case)(zcoll_comm_t *comm, char *msg, size_t len);

static void body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  gr_case c = (gr_case)job->arg;
  char msg[400];
  if (c(comm, msg, sizeof(msg))) rt_fail(job, rank, msg);
  if (c == gr_destroy_open) job->released[rank] = 1; /* destroyed by the case */
}

static void run(gr_case c, const char *name) {
  for (int p = 2; p <= 4; p++) {
    struct rt_job job = {.size = p, .body = body, .arg = (void *)c};
    cr_expect_eq(rt_run(&job), 0, "%s p=%d: %s", name, p, job.first);
  }
}

Test(group, fused_allreduces, .timeout = 60) { run(gr_fused, "fused"); }
Test(group, mix, .timeout = 60) { run(gr_mix, "mix"); }
Test(group, several_packs, .timeout = 60) { run(gr_packs, "packs"); }
Test(group, send_first_ring, .timeout = 60) { run(gr_ring, "ring"); }
Test(group, nesting_and_misuse, .timeout = 60) { run(gr_nesting, "nesting"); }
Test(group, bad_argument, .timeout = 60) { run(gr_bad_arg, "bad argument"); }
Test(group, mismatch, .timeout = 60) { run(gr_mismatch, "mismatch"); }
Test(group, destroy_inside, .timeout = 60) { run(gr_destroy_open, "destroy inside"); }

/* ---- between processes ---- */

static void run_procs(const char *tl) {
  static const char *const sizes[] = {"2", "3", "4"};
  for (int k = 0; k < 6; k++) {
    char transport[64];
    snprintf(transport, sizeof(transport), "ZCOLL_TRANSPORT=%s", tl);
    const char *mode = k % 2 ? "mismatch" : "all";
    const char *argv[] = {SP_BIN("zcoll_run"),    "-np", sizes[k / 2],
                          SP_PROG("group_check"), mode,  NULL};
    const char *env[] = {transport, NULL};
    struct sp_result r = sp_run(argv, env, 120);
    cr_expect_eq(r.status, 0, "%s p=%s %s: exit %d\n%s", tl, sizes[k / 2], mode, r.status, r.out);
    cr_expect(strstr(r.out, k % 2 ? "group_check: mismatch failed every" : "group_check: ok over"),
              "%s p=%s %s:\n%s", tl, sizes[k / 2], mode, r.out);
    free(r.out);
  }
}

Test(group, processes_shm, .timeout = 300) { run_procs("shm"); }
Test(group, processes_ucx, .timeout = 300) { run_procs("ucx"); }
