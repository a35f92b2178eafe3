/*
 * zcoll_comm_split as threads over the loopback transport: even/odd at p = 1..6 (ranks
 * ordered by key, then parent rank; every member's allreduce and allgather checked), keys
 * that reverse the order, every rank but one ZCOLL_UNDEFINED, nested splits, a child used
 * on a second thread while the parent runs collectives on the first, the parent destroyed
 * before its child, the vector interface on a child without the parent's rank 0, and a
 * bad color. Between processes (progs/split_check.c): the child over its parent's shm
 * instance with its control over socket pairs (or a rendezvous, where the leader may not
 * take their ends), and a member or the leader killed in one child breaks that child, not
 * the other.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <pthread.h>

#include "rank_threads.h"
#include "split_bodies.h"
#include "spawn.h"

/* The child's collectives against what the parent ranks in it make: an allreduce of their
 * parent ranks and an allgather in child rank order. want: parent ranks by child rank. */
static int check_child(zcoll_comm_t *child, const int *want, int n, int prank, char *msg,
                       size_t len) {
  if (zcoll_comm_size(child) != n || zcoll_comm_rank(child) < 0 ||
      want[zcoll_comm_rank(child)] != prank) {
    snprintf(msg, len, "parent rank %d is child rank %d of %d; want size %d", prank,
             zcoll_comm_rank(child), zcoll_comm_size(child), n);
    return 1;
  }
  int64_t sum = prank, want_sum = 0;
  int32_t mine = prank, got[64];
  for (int i = 0; i < n; i++) want_sum += want[i];
  if (zcoll_allreduce(child, ZCOLL_IN_PLACE, &sum, 1, ZCOLL_INT64, ZCOLL_SUM) != ZCOLL_OK ||
      zcoll_allgather(child, &mine, got, 1, ZCOLL_INT32) != ZCOLL_OK) {
    snprintf(msg, len, "child collective: %s", zcoll_comm_last_error(child));
    return 1;
  }
  int bad = sum != want_sum;
  for (int i = 0; i < n; i++) bad |= got[i] != want[i];
  if (bad)
    snprintf(msg, len, "child results wrong (sum %lld, want %lld)", (long long)sum,
             (long long)want_sum);
  return bad;
}

/* The parent ranks of a color, ordered by key then rank: keys are given per parent rank. */
static int members(int p, const int *colors, const int *keys, int color, int *out) {
  int n = 0;
  for (int k = -64; k <= 64; k++)
    for (int r = 0; r < p; r++)
      if (colors[r] == color && keys[r] == k) out[n++] = r;
  return n;
}

struct split_case {
  int mode; /* 0 even/odd, 1 reversed keys, 2 all undefined but one */
};

static void split_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  int p = job->size, mode = *(int *)job->arg, colors[64], keys[64];
  for (int r = 0; r < p; r++) {
    colors[r] = mode == 2 ? (r == p / 2 ? 7 : ZCOLL_UNDEFINED) : r % 2;
    keys[r] = mode == 1 ? -r : 0;
  }
  zcoll_comm_t *child = NULL;
  char msg[300];
  zcoll_status_t st = zcoll_comm_split(comm, colors[rank], keys[rank], &child);
  if (st != ZCOLL_OK) {
    snprintf(msg, sizeof(msg), "split: %s", zcoll_last_error());
    rt_fail(job, rank, msg);
    return;
  }
  if (colors[rank] == ZCOLL_UNDEFINED) {
    if (child) rt_fail(job, rank, "ZCOLL_UNDEFINED got a communicator");
    return;
  }
  int want[64], n = members(p, colors, keys, colors[rank], want);
  if (!child)
    rt_fail(job, rank, "no communicator");
  else if (check_child(child, want, n, rank, msg, sizeof(msg)))
    rt_fail(job, rank, msg);
  if (child && zcoll_comm_destroy(child) != ZCOLL_OK) rt_fail(job, rank, "child destroy failed");
}

ParameterizedTestParameters(split, loopback) {
  static int sizes[] = {1, 2, 3, 4, 5, 6};
  return cr_make_param_array(int, sizes, sizeof(sizes) / sizeof(sizes[0]));
}

ParameterizedTest(int *p, split, loopback, .timeout = 300) {
  for (int mode = 0; mode < 3; mode++) {
    struct rt_job job = {.size = *p, .body = split_body, .arg = &mode};
    cr_expect_eq(rt_run(&job), 0, "p=%d mode %d: %s", *p, mode, job.first);
  }
}

/* Split by parity, then each half by child rank / 2: grandchildren of one or two ranks. */
static void nested_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  zcoll_comm_t *child = NULL, *grand = NULL;
  char msg[300];
  if (zcoll_comm_split(comm, rank % 2, 0, &child) != ZCOLL_OK ||
      zcoll_comm_split(child, zcoll_comm_rank(child) / 2, 0, &grand) != ZCOLL_OK) {
    snprintf(msg, sizeof(msg), "split: %s", zcoll_last_error());
    rt_fail(job, rank, msg);
  } else {
    /* grandchild g of parity c: parent ranks c + 2 * (2g), c + 2 * (2g + 1), if < p */
    int c = rank % 2, g = zcoll_comm_rank(child) / 2, want[2], n = 0;
    for (int k = 0; k < 2; k++)
      if (c + 2 * (2 * g + k) < job->size) want[n++] = c + 2 * (2 * g + k);
    if (check_child(grand, want, n, rank, msg, sizeof(msg))) rt_fail(job, rank, msg);
  }
  zcoll_comm_destroy(grand);
  zcoll_comm_destroy(child);
}

Test(split, nested, .timeout = 300) {
  for (int p = 1; p <= 7; p++) {
    struct rt_job job = {.size = p, .body = nested_body};
    cr_expect_eq(rt_run(&job), 0, "p=%d: %s", p, job.first);
  }
}

Test(split, tasks_on_a_child_without_the_parents_rank_0, .timeout = 300) {
  for (int p = 2; p <= 5; p++) {
    struct rt_job job = {.size = p, .body = vec_child_body};
    cr_expect_eq(rt_run(&job), 0, "p=%d: %s", p, job.first);
  }
}

Test(split, child_and_parent_at_once_from_two_threads, .timeout = 300) {
  for (int p = 2; p <= 5; p++) {
    struct rt_job job = {.size = p, .body = concurrent_body};
    cr_expect_eq(rt_run(&job), 0, "p=%d: %s", p, job.first);
  }
}

/* Children aborted (their channel sets given up for good: a peer's late data may still
 * come for them) and more children alive at once than a process tells apart (63 sets):
 * later splits still work, the extra ones over instances of their own. */
static void many_children_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  enum { ALIVE = 66 };
  static __thread zcoll_comm_t *kids[ALIVE];
  int p = job->size, want[64];
  char msg[256];
  for (int r = 0; r < p; r++) want[r] = r;
  for (int i = 0; i < 4; i++) { /* made, used, aborted by every rank */
    zcoll_comm_t *c = NULL;
    if (zcoll_comm_split(comm, 0, rank, &c) != ZCOLL_OK ||
        check_child(c, want, p, rank, msg, sizeof(msg))) {
      rt_fail(job, rank, c ? msg : zcoll_last_error());
      return;
    }
    /* Everyone done with the child first: an abort ends it for the ranks still in it. */
    if (zcoll_barrier(comm) != ZCOLL_OK) {
      rt_fail(job, rank, zcoll_last_error());
      return;
    }
    zcoll_comm_abort(c);
  }
  int n = 0;
  for (; n < ALIVE; n++)
    if (zcoll_comm_split(comm, 0, rank, &kids[n]) != ZCOLL_OK) {
      rt_fail(job, rank, zcoll_last_error());
      break;
    }
  for (int i = n - 1; i >= 0; i -= 5) /* used in another order than made */
    if (check_child(kids[i], want, p, rank, msg, sizeof(msg))) rt_fail(job, rank, msg);
  for (int i = 0; i < n; i++)
    if (zcoll_comm_destroy(kids[i]) != ZCOLL_OK) rt_fail(job, rank, zcoll_last_error());
}

Test(split, aborted_children_and_more_than_63_alive, .timeout = 300) {
  for (int p = 2; p <= 3; p++) {
    struct rt_job job = {.size = p, .body = many_children_body};
    cr_expect_eq(rt_run(&job), 0, "p=%d: %s", p, job.first);
  }
}

/* A color below 0 other than ZCOLL_UNDEFINED, on one rank: every rank refuses. */
static void bad_color_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  zcoll_comm_t *child = (zcoll_comm_t *)1;
  zcoll_status_t st = zcoll_comm_split(comm, rank == 1 ? -5 : 0, 0, &child);
  if (st != ZCOLL_ERR_INVALID_ARG || child || !strstr(zcoll_last_error(), "rank 1 passed color -5"))
    rt_fail(job, rank, "a bad color was not refused everywhere");
}

Test(split, bad_color_is_refused_everywhere, .timeout = 60) {
  struct rt_job job = {.size = 3, .body = bad_color_body};
  cr_expect_eq(rt_run(&job), 0, "%s", job.first);
}

/* Between processes over shm and UCX, and a member killed in one child. */
/* mode: "" or "nofetch" (split_check's). Over shm the child runs on its parent's instance
 * (core/family.h: no second one) and its control over socket pairs (no network socket),
 * or, where the leader may not take its members' ends, over a rendezvous of its own. */
static void procs(const char *tl, const char *np, const char *mode) {
  char transport[64];
  snprintf(transport, sizeof(transport), "ZCOLL_TRANSPORT=%s", tl);
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", np, SP_PROG("split_check"), mode, NULL};
  const char *env[] = {transport, NULL};
  struct sp_result r = sp_run(argv, env, 120);
  int shm = !strcmp(tl, "shm"), pairs = shm && !mode[0];
  cr_expect_eq(r.status, 0, "%s np=%s: exit %d\n%s", tl, np, r.status, r.out);
  for (int k = 0; k < atoi(np); k++) {
    char want[80];
    snprintf(want, sizeof(want), "split_check: rank %d ok", k);
    cr_expect(strstr(r.out, want) != NULL, "%s: no '%s'\n%s", tl, want, r.out);
    snprintf(want, sizeof(want), "split_check: rank %d: %d shm instance%s", k, shm,
             shm ? ", " : "s, ");
    cr_expect(strstr(r.out, want) != NULL, "%s: no '%s'\n%s", tl, want, r.out);
    snprintf(want, sizeof(want), "split_check: rank %d: 1 shm instance, +0 network", k);
    if (shm)
      cr_expect((strstr(r.out, want) != NULL) == pairs, "%s %s: %s '%s'\n%s", tl, mode,
                pairs ? "no" : "unexpected", want, r.out);
  }
  free(r.out);
}

Test(split, processes_shm, .timeout = 200) { procs("shm", "5", ""); }
Test(split, processes_shm_without_pidfd_getfd, .timeout = 200) { procs("shm", "4", "nofetch"); }
Test(split, processes_ucx, .timeout = 200) { procs("ucx", "4", ""); }

/* Hosts of two ranks made up on one machine (shm inside, UCX between): a split per host
 * shares the parent's shm instance, though the parent's other instance (UCX) could not be. */
Test(split, per_host_of_a_job_on_several_hosts, .timeout = 200) {
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", "4", SP_PROG("split_check"), "pairs", NULL};
  const char *env[] = {"ZCOLL_TEST_SPLIT_NODES=2,2", NULL};
  struct sp_result r = sp_run(argv, env, 120);
  cr_expect_eq(r.status, 0, "exit %d\n%s", r.status, r.out);
  for (int k = 0; k < 4; k++) {
    char want[80];
    snprintf(want, sizeof(want), "split_check: rank %d ok", k);
    cr_expect(strstr(r.out, want) != NULL, "no '%s'\n%s", want, r.out);
    snprintf(want, sizeof(want), "split_check: rank %d: 1 shm instance,", k);
    cr_expect(strstr(r.out, want) != NULL, "no '%s'\n%s", want, r.out);
  }
  free(r.out);
}

/* A member of the odd child dies (parent rank 1, or 3: the child's leader, who relays its
 * failure news): the odd child fails on the survivor, the even child goes on. */
static void killed(const char *mode, int victim, int survivor) {
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", "5", SP_PROG("split_check"), mode, NULL};
  const char *env[] = {"ZCOLL_TRANSPORT=shm", "ZCOLL_TIMEOUT=30", NULL};
  struct sp_result r = sp_run(argv, env, 180);
  cr_expect_eq(r.status, 0, "exit %d\n%s", r.status, r.out);
  char want[96];
  snprintf(want, sizeof(want), "rank %d: odd child failed: a peer failed or aborted", survivor);
  cr_expect(strstr(r.out, want) != NULL, "no '%s'\n%s", want, r.out);
  for (int k = 0; k < 5; k += 2) {
    snprintf(want, sizeof(want), "split_check: rank %d: even child ok after rank %d died", k,
             victim);
    cr_expect(strstr(r.out, want) != NULL, "no '%s'\n%s", want, r.out);
  }
  free(r.out);
}

Test(split, member_killed_breaks_its_child_only, .timeout = 200) { killed("kill", 1, 3); }
Test(split, leader_killed_breaks_its_child_only, .timeout = 200) { killed("killlead", 3, 1); }
