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

#include "rank_threads.h"
#include "sample.h"
#include "spawn.h"
#include "xchg_check.h"

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

/* Pieces of 4 KiB: the large counts cross many of them (pipelined). */
ParameterizedTest(int *p, xchg, loopback, .timeout = 120) {
  struct rt_job job = {.size = *p, .body = matrix_body, .settings = {{"CHUNK_BYTES", "4096"}}};
  cr_assert_eq(rt_run(&job), 0, "p=%d: %s", *p, job.first);
}

/* The root of every rank, each kind that has one, and all four dtype sizes. */
static void roots_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  static const int kinds[] = {XC_GATHER, XC_GATHERV, XC_SCATTER, XC_SCATTERV};
  char msg[400];
  for (int root = 0; root < job->size; root++)
    for (int k = 0; k < 4; k++)
      for (int d = 0; d < 4; d++) {
        struct xc_case c = {.kind = kinds[k],
                            .dt = dtypes[d],
                            .n = 7,
                            .root = root,
                            .in_place = (root + d) % 2,
                            .gap = 2,
                            .salt = (unsigned)(root * 16 + k * 4 + d)};
        if (xc_run(comm, &c, msg, sizeof(msg))) {
          rt_fail(job, rank, msg);
          return;
        }
      }
}

Test(xchg, every_root, .timeout = 60) {
  struct rt_job job = {.size = 4, .body = roots_body};
  cr_assert_eq(rt_run(&job), 0, "%s", job.first);
}

/* ---- counts that two ranks disagree on: MISMATCH on both ---- */

struct mm {
  int which;
};

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

/* Rank 0 in an alltoall, the others in a gather to it (or a scatter from it): every rank
 * talks to rank 0 both ways, so every one sees the other kind. */
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
