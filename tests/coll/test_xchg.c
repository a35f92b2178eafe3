/*
 * The rest of MPI's set (alltoall, alltoallv, allgatherv, gather, gatherv, scatter, scatterv)
 * as threads over the loopback transport: p = 1..5, every kind, a dtype of each size class
 * (1, 2, 4, 8 bytes), counts from 0 to ones that cross many pieces (chunks of 4 KiB), uneven
 * and zero counts per pair, gaps between blocks (left untouched), every root, in place and
 * not, blocking and not, every element checked (xchg_check.h). Counts two ranks disagree on
 * (MISMATCH on both), a kind against another, bad arguments. Between processes over shm and
 * UCX: progs/xchg_check.c.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "fail_job.h"
#include "rank_threads.h"
#include "sample.h"
#include "spawn.h"
#include "xchg_check.h"
#include "zcoll_info.h"

static const zcoll_dtype_t dtypes[] = {ZCOLL_UINT8, ZCOLL_FLOAT16, ZCOLL_INT32, ZCOLL_FLOAT64};

/* Every kind x placement x blocking, over the counts; the dtype and root move with the case. */
static void matrix_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  static const size_t counts[] = {0, 1, 5, 300, 3000};
  char msg[400];
  unsigned salt = 0;
  int p = job->size;
  for (int kind = 0; kind < XC_NKINDS; kind++)
    for (int ip = 0; ip < 2; ip++)
      for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        salt++;
        struct xc_case c = {.kind = kind,
                            .dt = dtypes[salt % 4],
                            .n = counts[k],
                            .root = (int)(salt % (unsigned)p),
                            .in_place = ip,
                            .nonblocking = (int)(salt % 3 == 1),
                            .gap = salt % 2 ? 3 : 0,
                            .salt = salt};
        if (kind == XC_ALLTOALLV && counts[k] == 3000 && p > 3) c.n = 900;
        if (xc_run(comm, &c, msg, sizeof(msg))) {
          rt_fail(job, rank, msg);
          return;
        }
      }
}

ParameterizedTestParameters(xchg, loopback) {
  static int sizes[] = {1, 2, 3, 4, 5};
  return cr_make_param_array(int, sizes, sizeof(sizes) / sizeof(sizes[0]));
}

/* Pieces of 4 KiB: the large counts cross many of them (pipelined); at odd p a pipeline of
 * two slots, so that an order only deep buffering saves would stall. */
ParameterizedTest(int *p, xchg, loopback, .timeout = 120) {
  struct rt_job job = {
      .size = *p,
      .body = matrix_body,
      .settings = {{"CHUNK_BYTES", "4096"}, {"PIPELINE_DEPTH", *p % 2 ? "2" : "8"}}};
  cr_assert_eq(rt_run(&job), 0, "p=%d: %s", *p, job.first);
}

/* The root of every rank, each kind that has one, all four dtype sizes, small blocks (the
 * binomial tree at p >= 4) and larger ones (direct). */
static void roots_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  static const int kinds[] = {XC_GATHER, XC_GATHERV, XC_SCATTER, XC_SCATTERV};
  char msg[400];
  for (int root = 0; root < job->size; root++)
    for (int k = 0; k < 8; k++)
      for (int d = 0; d < 4; d++) {
        struct xc_case c = {.kind = kinds[k % 4],
                            .dt = dtypes[d],
                            .n = k < 4 ? 7 : 700,
                            .root = root,
                            .in_place = (root + d) % 2,
                            .gap = 2,
                            .salt = (unsigned)(root * 32 + k * 4 + d)};
        if (xc_run(comm, &c, msg, sizeof(msg))) {
          rt_fail(job, rank, msg);
          return;
        }
      }
}

Test(xchg, every_root, .timeout = 60) {
  for (int p = 4; p <= 5; p++) {
    struct rt_job job = {.size = p, .body = roots_body};
    cr_assert_eq(rt_run(&job), 0, "p=%d: %s", p, job.first);
  }
}

/* Alltoall on 6..8 ranks: small blocks out of place run Bruck's algorithm, the others (in
 * place, larger) the pairwise exchange. */
static void bruck_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  static const size_t counts[] = {0, 1, 3, 30, 200};
  char msg[400];
  for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
    for (int d = 0; d < 4; d++) {
      struct xc_case c = {.kind = XC_ALLTOALL,
                          .dt = dtypes[d],
                          .n = counts[k],
                          .in_place = d == 3,
                          .nonblocking = (int)(k % 2),
                          .salt = (unsigned)(k * 4 + (size_t)d)};
      if (xc_run(comm, &c, msg, sizeof(msg))) {
        rt_fail(job, rank, msg);
        return;
      }
    }
}

Test(xchg, alltoall_bruck, .timeout = 60) {
  for (int p = 6; p <= 8; p++) { /* p = 7: two slots a peer, pieces of 64 bytes */
    struct rt_job job = {.size = p, .body = bruck_body};
    static const char *small[2][2] = {{"CHUNK_BYTES", "64"}, {"PIPELINE_DEPTH", "2"}};
    for (int i = 0; p == 7 && i < 2; i++) {
      job.settings[i][0] = small[i][0];
      job.settings[i][1] = small[i][1];
    }
    cr_assert_eq(rt_run(&job), 0, "p=%d: %s", p, job.first);
  }
}

/* ---- counts that two ranks disagree on: MISMATCH on both ---- */

/* Rank 0 and rank 1 disagree on what 0 sends 1 (or 1 sends 0); a third rank, if any, agrees
 * with both. Both of the pair must get MISMATCH; the third may end either way. */
static void pair_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  int which = *(int *)job->arg, p = job->size;
  size_t sc[8], sd[8], rc[8], rd[8];
  int32_t sbuf[64] = {0}, rbuf[64];
  for (int q = 0; q < p; q++) sc[q] = rc[q] = 2, sd[q] = rd[q] = (size_t)q * 8;
  zcoll_status_t st;
  switch (which) {
  case 0: /* alltoallv: 0 sends 1 five, 1 expects four */
    if (rank == 0) sc[1] = 5;
    if (rank == 1) rc[0] = 4;
    st = zcoll_alltoallv(comm, sbuf, sc, sd, rbuf, rc, rd, ZCOLL_INT32);
    break;
  case 1: /* alltoallv: 0 sends 1 nothing, 1 expects seven */
    if (rank == 0) sc[1] = 0;
    if (rank == 1) rc[0] = 7;
    st = zcoll_alltoallv(comm, sbuf, sc, sd, rbuf, rc, rd, ZCOLL_INT32);
    break;
  case 2: /* gatherv to 0: 1 sends three, 0 expects two */
    st = zcoll_gatherv(comm, sbuf, rank == 1 ? 3 : 2, rbuf, rc, rd, ZCOLL_INT32, 0);
    break;
  case 3: /* gatherv to 0: 1 sends seven, 0 expects none */
    if (rank == 0) rc[1] = 0;
    st = zcoll_gatherv(comm, sbuf, rank == 1 ? 7 : 2, rbuf, rc, rd, ZCOLL_INT32, 0);
    break;
  case 4: /* scatterv from 0: 0 sends 1 three, 1 expects two */
    if (rank == 0) sc[1] = 3;
    st = zcoll_scatterv(comm, sbuf, sc, sd, rbuf, 2, ZCOLL_INT32, 0);
    break;
  case 5: /* scatterv from 1: 1 sends 0 none, 0 expects four */
    if (rank == 1) sc[0] = 0;
    st = zcoll_scatterv(comm, sbuf, sc, sd, rbuf, rank == 0 ? 4 : 2, ZCOLL_INT32, 1);
    break;
  case 6: /* allgatherv: rank 1 thinks rank 0's block is three */
    if (rank == 1) rc[0] = 3;
    st = zcoll_allgatherv(comm, sbuf, 2, rbuf, rc, rd, ZCOLL_INT32);
    break;
  default: /* alltoall: rank 1's block is another count */
    st = zcoll_alltoall(comm, sbuf, rbuf, rank == 1 ? 3 : 2, ZCOLL_INT32);
    break;
  }
  char msg[400];
  if (rank < 2 && st != ZCOLL_ERR_MISMATCH) {
    snprintf(msg, sizeof(msg), "case %d: %s (%s)", which, zcoll_strerror(st),
             zcoll_comm_last_error(comm));
    rt_fail(job, rank, msg);
  }
  if (rank >= 2 && st != ZCOLL_OK && st != ZCOLL_ERR_MISMATCH && st != ZCOLL_ERR_PEER_FAILED) {
    snprintf(msg, sizeof(msg), "case %d (bystander): %s", which, zcoll_strerror(st));
    rt_fail(job, rank, msg);
  }
  if (rank >= 2) { /* its communicator is broken whether or not it heard of it yet */
    zcoll_comm_destroy(comm);
    job->released[rank] = 1;
  }
}

Test(xchg, mismatched_counts, .timeout = 120) {
  for (int which = 0; which < 8; which++)
    for (int p = 2; p <= 3; p++) {
      struct rt_job job = {.size = p, .body = pair_body, .arg = &which};
      cr_expect_eq(rt_run(&job), 0, "case %d p=%d: %s", which, p, job.first);
    }
}

/* Rank 0 in an alltoall, the others in a gather to it (or a scatter from it): every rank that
 * exchanges with rank 0 sees the other kind (direct: all of them). */
static void kinds_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  int which = *(int *)job->arg;
  int32_t sbuf[64] = {0}, rbuf[64];
  zcoll_status_t st;
  if (rank == 0)
    st = zcoll_alltoall(comm, sbuf, rbuf, 2, ZCOLL_INT32);
  else if (which == 0)
    st = zcoll_gather(comm, sbuf, rbuf, 2, ZCOLL_INT32, 0);
  else
    st = zcoll_scatter(comm, sbuf, rbuf, 2, ZCOLL_INT32, 0);
  /* A rank of the binomial tree (small blocks, p >= 4) that never meets rank 0 may end its
   * own part before the root sees the difference; the failure reaches it at its next call,
   * as for a reduce's leaf. */
  if (st == ZCOLL_OK && rank != 0) {
    st = zcoll_barrier(comm);
    if (st == ZCOLL_OK) rt_fail(job, rank, "the call after a mismatched gather succeeded");
    return;
  }
  const char *why = zcoll_comm_last_error(comm);
  if (st != ZCOLL_ERR_MISMATCH) {
    rt_fail(job, rank, zcoll_strerror(st));
  } else if (!strstr(why, "alltoall(") || !strstr(why, which ? "scatter(" : "gather(")) {
    rt_fail(job, rank, why);
  }
}

Test(xchg, kinds_mismatched, .timeout = 120) {
  for (int which = 0; which < 2; which++)
    for (int p = 2; p <= 4; p++) {
      struct rt_job job = {.size = p, .body = kinds_body, .arg = &which};
      cr_expect_eq(rt_run(&job), 0, "case %d p=%d: %s", which, p, job.first);
    }
}

/* ---- bad arguments: ZCOLL_ERR_INVALID_ARG naming the problem ---- */

static void args_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  int which = *(int *)job->arg;
  int32_t buf[64] = {0};
  size_t c[2] = {2, 2}, d[2] = {0, 2}, huge[2] = {0, SIZE_MAX / 2};
  zcoll_status_t st;
  const char *want;
  switch (which) {
  case 0:
    st = zcoll_alltoall(comm, buf, buf + 1, 2, ZCOLL_INT32);
    want = "overlap";
    break;
  case 1:
    st = zcoll_gather(comm, buf, buf + 8, 2, ZCOLL_INT32, 5);
    want = "root 5 is not a rank";
    break;
  case 2:
    st = zcoll_alltoallv(comm, buf, NULL, d, buf + 8, c, d, ZCOLL_INT32);
    want = "sendcounts is NULL";
    break;
  case 3:
    st = zcoll_alltoallv(comm, buf, c, d, buf + 8, c, NULL, ZCOLL_INT32);
    want = "rdispls is NULL";
    break;
  case 4:
    st = zcoll_allgatherv(comm, buf, 2, buf + 8, c, huge, ZCOLL_INT32);
    want = "overflows";
    break;
  case 5:
    st = zcoll_alltoall(comm, NULL, buf, 2, ZCOLL_INT32);
    want = "sendbuf is NULL";
    break;
  case 6:
    st = zcoll_scatter(comm, buf, rank ? (void *)ZCOLL_IN_PLACE : (void *)(buf + 8), 2, ZCOLL_INT32,
                       0);
    want = rank ? "the root's only" : NULL;
    break;
  default:
    st = zcoll_gatherv(comm, buf, 2, rank ? NULL : buf + 8, rank ? NULL : c, d, ZCOLL_INT32, 0);
    want = NULL; /* fine: recvcounts is the root's only */
    if (st != ZCOLL_OK) rt_fail(job, rank, zcoll_comm_last_error(comm));
    return;
  }
  const char *why = zcoll_comm_last_error(comm);
  if (st == ZCOLL_OK)
    rt_fail(job, rank, "a bad argument passed");
  else if (want && (st != ZCOLL_ERR_INVALID_ARG || !strstr(why, want)))
    rt_fail(job, rank, why);
}

Test(xchg, bad_arguments, .timeout = 120) {
  for (int which = 0; which < 8; which++) {
    struct rt_job job = {.size = 2, .body = args_body, .arg = &which};
    cr_expect_eq(rt_run(&job), 0, "case %d: %s", which, job.first);
  }
}

/* ---- between processes ---- */

/* p = 2, 3 and 5; ZCOLL_TEST_SAMPLE=1 (CI's sanitizer pass) runs p = 3, the plain pass the
 * others. */
static void run_procs(const char *tl) {
  static const char *const sizes[] = {"2", "3", "5"};
  for (int k = 0; k < 3; k++) {
    if (!zt_keep(k == 1)) continue;
    char transport[64];
    snprintf(transport, sizeof(transport), "ZCOLL_TRANSPORT=%s", tl);
    const char *argv[] = {SP_BIN("zcoll_run"), "-np", sizes[k], SP_PROG("xchg_check"), NULL};
    const char *env[] = {transport, NULL};
    struct sp_result r = sp_run(argv, env, 120);
    cr_expect_eq(r.status, 0, "%s p=%s: exit %d\n%s", tl, sizes[k], r.status, r.out);
    cr_expect(strstr(r.out, "xchg_check: 70 cases over") != NULL, "%s p=%s:\n%s", tl, sizes[k],
              r.out);
    free(r.out);
  }
}

Test(xchg, processes_shm, .timeout = 300) { run_procs("shm"); }
Test(xchg, processes_ucx, .timeout = 300) { run_procs("ucx"); }

/* Rank 1 of 3 dies with an alltoall and a gather to rank 0 in flight: the alltoall ends with
 * ZCOLL_ERR_PEER_FAILED on the survivors, promptly, and the gather at the root. */
static void run_killed(const char *tl) {
  setenv("UCX_LOG_LEVEL", "fatal", 1);
  struct job_result res;
  const char *argv[] = {SP_PROG("xchg_check"), "kill", "1", NULL};
  run_job_argv(tl, 3, argv, &res);
  cr_expect_eq(res.status[1], 3, "the victim exited %d:\n%s", res.status[1], res.out[1]);
  for (int r = 0; r < 3; r += 2) {
    /* exit 0: the alltoall (and the root's gather) ended with PEER_FAILED; the output,
     * cut at 1 KiB, may have lost the survivor's line behind the failure's log lines */
    cr_expect_eq(res.status[r], 0, "rank %d exited %d:\n%s", r, res.status[r], res.out[r]);
  }
  cr_expect_lt(res.seconds, 30.0, "took %.1f s", res.seconds);
  unsetenv("UCX_LOG_LEVEL");
}

Test(xchg, peer_dies_shm, .timeout = 120) { run_killed("shm"); }
Test(xchg, peer_dies_ucx, .timeout = 120) { run_killed("ucx"); }

/* ---- the choice, as zcoll_info -s prints it ---- */

Test(xchg, explain) {
  zcoll_config_t *cfg;
  cr_assert_eq(zcoll_config_create(&cfg), ZCOLL_OK);
  static const struct {
    const char *coll;
    int ranks;
    size_t bytes;
    const char *algo;
  } want[] = {{"alltoall", 8, 64, "bruck"},         {"alltoall", 4, 64, "pairwise"},
              {"alltoall", 8, 1 << 20, "pairwise"}, {"gather", 8, 64, "binomial"},
              {"gather", 3, 64, "direct"},          {"scatter", 8, 1 << 20, "direct"},
              {"alltoallv", 8, 64, "pairwise"},     {"allgatherv", 8, 64, "ring"},
              {"gatherv", 8, 64, "direct"},         {"scatterv", 8, 64, "direct"}};
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
    zcoll_allreduce_plan_t plan;
    cr_assert_eq(zcoll_collective_explain(cfg, want[i].coll, want[i].ranks, want[i].bytes, &plan),
                 ZCOLL_OK, "%s: %s", want[i].coll, zcoll_last_error());
    cr_expect_str_eq(plan.algorithm, want[i].algo, "%s on %d ranks, %zu bytes: %s", want[i].coll,
                     want[i].ranks, want[i].bytes, plan.reason);
    cr_expect(plan.reason[0], "%s: no reason", want[i].coll);
  }
  zcoll_config_free(cfg);
}

/* ---- above ZCOLL_ALL_PEERS_MAX ranks across hosts: refused on every rank alike ---- */

static void wide_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  int p = zcoll_comm_size(comm);
  int32_t in[2] = {rank, -rank}, *all = malloc(sizeof(int32_t) * 2 * (size_t)p);
  size_t *counts = malloc(sizeof(size_t) * (size_t)p), *displs = malloc(sizeof(size_t) * (size_t)p);
  char msg[300];
  if (!all || !counts || !displs) {
    rt_fail(job, rank, "out of memory");
    goto out;
  }
  zcoll_status_t st = ZCOLL_ERR_UNSUPPORTED;
  if (job->arg)
    goto ring; /* the second job; a refusal revokes the communicator, as any
                            * collective a rank cannot make does (report.c) */
  st = zcoll_alltoall(comm, in, all, 1, ZCOLL_INT32);
  if (st != ZCOLL_ERR_UNSUPPORTED || !strstr(zcoll_comm_last_error(comm), "channels only to")) {
    snprintf(msg, sizeof(msg), "alltoall at p=%d: %s: %s", p, zcoll_strerror(st),
             zcoll_comm_last_error(comm));
    rt_fail(job, rank, msg);
  }
  goto out;
ring:
  /* allgatherv's ring needs only the ring's neighbours: it still runs. */
  for (int r = 0; r < p; r++) counts[r] = r % 3 == 0 ? 2 : 1, displs[r] = 2 * (size_t)r;
  st = zcoll_allgatherv(comm, in, counts[rank], all, counts, displs, ZCOLL_INT32);
  int wrong = -1;
  for (int r = 0; st == ZCOLL_OK && wrong < 0 && r < p; r++)
    if (all[2 * r] != r || (counts[r] == 2 && all[2 * r + 1] != -r)) wrong = r;
  if (st != ZCOLL_OK || wrong >= 0) {
    snprintf(msg, sizeof(msg), "allgatherv at p=%d: %s (%s), first wrong block %d", p,
             zcoll_strerror(st), zcoll_comm_last_error(comm), wrong);
    rt_fail(job, rank, msg);
  }
out:
  free(all), free(counts), free(displs);
}

Test(xchg, refused_alike_above_the_all_peers_limit, .timeout = 120) {
  struct rt_job job = {.size = 33, .body = wide_body};
  cr_assert_eq(rt_run(&job), 0, "%s", job.first);
  struct rt_job ring = {.size = 33, .body = wide_body, .arg = &ring};
  cr_assert_eq(rt_run(&ring), 0, "%s", ring.first);
}
