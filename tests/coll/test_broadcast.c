/*
 * Broadcast as threads over the loopback transport: both algorithms, p = 1..9, from
 * every root, every dtype, blocking / non-blocking / persistent, counts that cross many
 * small pieces; the argument checks and a mismatch. Between processes over shm and UCX:
 * progs/bcast_check.c (verbs: the same program in the rxe harness, test_verbs.c).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "bcast_check.h"
#include "rank_threads.h"
#include "sample.h"
#include "spawn.h"

struct bc_case {
  int size;
  char algo[16];
};

static void bc_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  static const size_t counts[] = {0, 1, 777};
  char why[300], msg[400];
  for (int root = 0; root < job->size; root++)
    for (int dt = 0; dt < ZCOLL_DTYPE_COUNT; dt++)
      for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        int mode = (root + dt + (int)c) % BC_MODES; /* each mode meets every root and dtype */
        if (bc_check(comm, (zcoll_dtype_t)dt, counts[c], root, mode, why, sizeof(why))) {
          snprintf(msg, sizeof(msg), "root %d %s n=%zu mode %d: %s", root,
                   zcoll_dtype_name((zcoll_dtype_t)dt), counts[c], mode, why);
          rt_fail(job, rank, msg);
          return;
        }
      }
}

/* ZCOLL_TEST_SAMPLE=1: the first 6 cases (both algorithms, p = 1..9 but 4, 6, 7); CI's
 * plain pass the other 12 (sample.h). */
ParameterizedTestParameters(broadcast, roots) {
  static struct bc_case cases[] = {
      {2, "tree"},  {3, "chain"}, {5, "tree"},  {9, "chain"}, {8, "tree"},  {1, "auto"},
      {4, "chain"}, {6, "tree"},  {7, "chain"}, {9, "tree"},  {2, "chain"}, {3, "tree"},
      {5, "chain"}, {7, "tree"},  {4, "tree"},  {6, "chain"}, {8, "chain"}, {5, "auto"},
  };
  return cr_make_param_array(struct bc_case, cases + zt_from(6),
                             zt_count(6, sizeof(cases) / sizeof(cases[0])));
}

ParameterizedTest(struct bc_case *c, broadcast, roots, .timeout = 600) {
  struct rt_job job = {.size = c->size, .body = bc_body};
  job.settings[0][0] = "CHUNK_BYTES", job.settings[0][1] = "256";
  job.settings[1][0] = "PIPELINE_DEPTH", job.settings[1][1] = "3";
  job.settings[2][0] = "BCAST_ALGO", job.settings[2][1] = c->algo;
  /* arity 3: the tree's subtrees are uneven, and a root deep in one floods up and down */
  job.settings[3][0] = "TREE_ARITY", job.settings[3][1] = "3";
  cr_assert_eq(rt_run(&job), 0, "p=%d %s: %s", c->size, c->algo, job.first);
}

/* An allreduce and a broadcast, interleaved in flight: one channel order for both. */
static void mixed_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  enum { N = 5000 };
  static _Thread_local float a[N], b[N];
  for (int round = 0; round < 4; round++) {
    for (int k = 0; k < N; k++) a[k] = (float)(rank + k % 5), b[k] = rank == 1 ? (float)k : -1;
    zcoll_request_t *r1, *r2;
    if (zcoll_iallreduce(comm, ZCOLL_IN_PLACE, a, N, ZCOLL_FLOAT32, ZCOLL_SUM, &r1) ||
        zcoll_ibroadcast(comm, b, N, ZCOLL_FLOAT32, 1, &r2) || zcoll_wait(r2) || zcoll_wait(r1)) {
      rt_fail(job, rank, zcoll_comm_last_error(comm));
      return;
    }
    zcoll_request_free(r1), zcoll_request_free(r2);
    for (int k = 0; k < N; k++)
      if (a[k] != (float)(job->size * (job->size - 1) / 2 + job->size * (k % 5)) ||
          b[k] != (float)k) {
        rt_fail(job, rank, "wrong element with an allreduce and a broadcast in flight");
        return;
      }
  }
}

Test(broadcast, with_allreduce_in_flight, .timeout = 300) {
  struct rt_job job = {.size = 4, .body = mixed_body};
  job.settings[0][0] = "CHUNK_BYTES", job.settings[0][1] = "1024";
  cr_assert_eq(rt_run(&job), 0, "%s", job.first);
}

static void bad_root_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  int v[4] = {0};
  const char *small = NULL, *large = NULL;
  if (zcoll_broadcast_algorithm(comm, 4, ZCOLL_INT32, 2, &small) != ZCOLL_OK ||
      zcoll_broadcast_algorithm(comm, 1 << 20, ZCOLL_FLOAT32, 0, &large) != ZCOLL_OK ||
      strcmp(small, "tree") != 0 || strcmp(large, "chain") != 0 ||
      zcoll_broadcast_algorithm(comm, 4, ZCOLL_INT32, 3, &small) != ZCOLL_ERR_INVALID_ARG)
    rt_fail(job, rank, "zcoll_broadcast_algorithm does not say tree, then chain");
  zcoll_status_t st = zcoll_broadcast(comm, v, 4, ZCOLL_INT32, rank == 0 ? 5 : 0);
  if (rank == 0 && (st != ZCOLL_ERR_INVALID_ARG || !strstr(zcoll_comm_last_error(comm), "root 5")))
    rt_fail(job, rank, "root 5 of 3 ranks was not refused");
  if (rank != 0 && st == ZCOLL_OK) rt_fail(job, rank, "a broadcast whose root erred succeeded");
}

/* Ranks that each think they are the root only send: neither can notice in that call
 * (each one's buffer holds what its call asked for), but the other's piece waits on
 * the channel, and the next call fails on both. */
static void two_roots_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  int v[64] = {0};
  zcoll_status_t st = zcoll_broadcast(comm, v, 64, ZCOLL_INT32, rank);
  if (st == ZCOLL_OK) st = zcoll_allreduce(comm, ZCOLL_IN_PLACE, v, 64, ZCOLL_INT32, ZCOLL_SUM);
  if (st != ZCOLL_ERR_MISMATCH && st != ZCOLL_ERR_PEER_FAILED)
    rt_fail(job, rank, "two roots were not a mismatch");
  else if (st == ZCOLL_ERR_MISMATCH && !strstr(zcoll_comm_last_error(comm), "broadcast(count 64"))
    rt_fail(job, rank, zcoll_comm_last_error(comm));
}

Test(broadcast, argument_errors_and_mismatch, .timeout = 300) {
  struct rt_job job = {.size = 3, .body = bad_root_body};
  cr_expect_eq(rt_run(&job), 0, "%s", job.first);
  job = (struct rt_job){.size = 2, .body = two_roots_body};
  cr_expect_eq(rt_run(&job), 0, "%s", job.first);
}

/* ---- between processes ---- */

static void run_procs(const char *tl) {
  for (int np = 1; np <= 9; np++) {
    if (!zt_keep(np == 2 || np == 5 || np == 9)) continue;
    char nps[16], transport[64];
    snprintf(nps, sizeof(nps), "%d", np);
    snprintf(transport, sizeof(transport), "ZCOLL_TRANSPORT=%s", tl);
    const char *argv[] = {SP_BIN("zcoll_run"), "-np", nps, SP_PROG("bcast_check"), NULL};
    const char *env[] = {transport, "ZCOLL_CHUNK_BYTES=16384", NULL};
    struct sp_result r = sp_run(argv, env, 300);
    cr_expect_eq(r.status, 0, "%s p=%d: exit %d\n%s", tl, np, r.status, r.out);
    cr_expect(strstr(r.out, "broadcast: every element exact on every rank over") != NULL, "%s",
              r.out);
    free(r.out);
  }
}

/* ZCOLL_TEST_SAMPLE=1: p = 2, 5, 9 only. */
Test(broadcast, processes_shm, .timeout = 900) { run_procs("shm"); }
Test(broadcast, processes_ucx, .timeout = 900) { run_procs("ucx"); }
