/*
 * Barrier: no rank leaves before every rank has entered, checked by a counter the ranks
 * (threads over the loopback transport) bump before the call and read after it -- not
 * by zcoll. p = 1..9, blocking and non-blocking, a different rank late each time, beside
 * other requests; a barrier met by an allreduce is a mismatch. Between processes over
 * shm and UCX: progs/barrier_check.c, whose entry and exit times (one clock for the
 * host) must not overlap.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdatomic.h>
#include <unistd.h>

#include "rank_threads.h"
#include "sample.h"
#include "spawn.h"

enum { ITERS = 24 };
static atomic_int arrived[ITERS];

/* Barrier `it`: blocking, non-blocking waited, non-blocking polled beside an allreduce
 * request issued after it (the two complete in either order), in turn. 0, or 1 with
 * msg saying what went wrong. */
static int one_barrier(zcoll_comm_t *comm, int it, int rank, int p, char *msg, size_t len) {
  zcoll_request_t *q = NULL, *other = NULL;
  zcoll_status_t st = ZCOLL_OK;
  int64_t v = rank;
  if (it % 3 == 0) {
    st = zcoll_barrier(comm);
  } else if ((st = zcoll_ibarrier(comm, &q)) == ZCOLL_OK && it % 3 == 1) {
    st = zcoll_wait(q);
  } else if (st == ZCOLL_OK && (st = zcoll_iallreduce(comm, ZCOLL_IN_PLACE, &v, 1, ZCOLL_INT64,
                                                      ZCOLL_SUM, &other)) == ZCOLL_OK) {
    while ((st = zcoll_test(q)) == ZCOLL_IN_PROGRESS) sched_yield();
    zcoll_status_t st2 = zcoll_wait(other);
    if (st == ZCOLL_OK) st = st2;
  }
  if (q) zcoll_request_free(q);
  if (other) zcoll_request_free(other);
  if (st != ZCOLL_OK) {
    snprintf(msg, len, "barrier %d: %s: %s", it, zcoll_strerror(st), zcoll_comm_last_error(comm));
    return 1;
  }
  if (other && v != (int64_t)p * (p - 1) / 2) {
    snprintf(msg, len, "barrier %d: the allreduce beside it gave %lld", it, (long long)v);
    return 1;
  }
  return 0;
}

static void barrier_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  int p = job->size;
  char msg[400];
  for (int it = 0; it < ITERS; it++) {
    if (rank == it % p) usleep((useconds_t)(200 + it * 577 % 1800));
    atomic_fetch_add(&arrived[it], 1);
    int bad = one_barrier(comm, it, rank, p, msg, sizeof(msg));
    int seen = atomic_load(&arrived[it]);
    if (!bad && seen != p)
      snprintf(msg, sizeof(msg), "left barrier %d when %d of %d ranks had entered", it, seen, p);
    if (bad || seen != p) {
      rt_fail(job, rank, msg);
      return;
    }
  }
}

ParameterizedTestParameters(barrier, loopback) {
  static int sizes[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  return cr_make_param_array(int, sizes, sizeof(sizes) / sizeof(sizes[0]));
}

ParameterizedTest(int *p, barrier, loopback, .timeout = 120) {
  for (int i = 0; i < ITERS; i++) atomic_store(&arrived[i], 0);
  struct rt_job job = {.size = *p, .body = barrier_body};
  cr_assert_eq(rt_run(&job), 0, "p=%d: %s", *p, job.first);
}

/* One rank in a barrier, the others in an allreduce of the same shape (one byte): every
 * rank fails, and whoever sees the difference names both calls. */
static void mismatch_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  uint8_t b = 1;
  zcoll_status_t st = rank == 0
                          ? zcoll_barrier(comm)
                          : zcoll_allreduce(comm, ZCOLL_IN_PLACE, &b, 1, ZCOLL_UINT8, ZCOLL_MAX);
  const char *why = zcoll_comm_last_error(comm);
  if (st != ZCOLL_ERR_MISMATCH && st != ZCOLL_ERR_PEER_FAILED)
    rt_fail(job, rank, "a barrier against an allreduce did not fail");
  else if (st == ZCOLL_ERR_MISMATCH && !(strstr(why, "barrier") && strstr(why, "allreduce(")))
    rt_fail(job, rank, why);
}

Test(barrier, against_an_allreduce_is_a_mismatch, .timeout = 120) {
  for (int p = 2; p <= 4; p++) {
    struct rt_job job = {.size = p, .body = mismatch_body};
    cr_expect_eq(rt_run(&job), 0, "p=%d: %s", p, job.first);
  }
}

/* ---- between processes ---- */

/* barrier_check's lines: for each barrier, the last entry must precede the first exit. */
static void check_times(const char *out, int np, int iters, const char *what) {
  long long max_in[64] = {0}, min_out[64];
  int lines[64] = {0};
  for (int i = 0; i < iters; i++) min_out[i] = -1;
  for (const char *s = strstr(out, "barrier "); s; s = strstr(s + 1, "barrier ")) {
    int it, rank;
    long long in, o;
    if (sscanf(s, "barrier %d %d %lld %lld", &it, &rank, &in, &o) != 4 || it < 0 || it >= iters)
      continue;
    lines[it]++;
    if (in > max_in[it]) max_in[it] = in;
    if (min_out[it] < 0 || o < min_out[it]) min_out[it] = o;
  }
  for (int i = 0; i < iters; i++) {
    cr_expect_eq(lines[i], np, "%s: barrier %d has %d lines of %d\n%s", what, i, lines[i], np, out);
    cr_expect(max_in[i] < min_out[i], "%s: barrier %d: a rank left %lld ns before the last entered",
              what, i, max_in[i] - min_out[i]);
  }
}

static void run_procs(const char *tl) {
  for (int np = 2; np <= 9; np++) {
    if (!zt_keep(np == 2 || np == 5 || np == 9)) continue;
    char nps[16], transport[64];
    snprintf(nps, sizeof(nps), "%d", np);
    snprintf(transport, sizeof(transport), "ZCOLL_TRANSPORT=%s", tl);
    const char *argv[] = {SP_BIN("zcoll_run"), "-np", nps, SP_PROG("barrier_check"), "20", NULL};
    const char *env[] = {transport, NULL};
    struct sp_result r = sp_run(argv, env, 120);
    cr_expect_eq(r.status, 0, "%s p=%d: exit %d\n%s", tl, np, r.status, r.out);
    char what[48];
    snprintf(what, sizeof(what), "%s p=%d", tl, np);
    if (r.status == 0) check_times(r.out, np, 20, what);
    free(r.out);
  }
}

/* ZCOLL_TEST_SAMPLE=1 (CI's sanitizer pass): p = 2, 5, 9; the plain pass the others. */
Test(barrier, processes_shm, .timeout = 600) { run_procs("shm"); }
Test(barrier, processes_ucx, .timeout = 600) { run_procs("ucx"); }

/* zcoll_perf -t barrier times it between processes, blocking and not: one 0-byte row. */
Test(barrier, zcoll_perf_table, .timeout = 300) {
  static const char *const modes[] = {"0", "1"};
  for (int m = 0; m < 2; m++) {
    const char *argv[] = {SP_BIN("zcoll_run"),
                          "-np",
                          "3",
                          SP_BIN("zcoll_perf"),
                          "-t",
                          "barrier",
                          "-z",
                          modes[m],
                          "-n",
                          "200",
                          "-w",
                          "10",
                          NULL};
    const char *env[] = {"ZCOLL_TRANSPORT=shm", NULL};
    struct sp_result r = sp_run(argv, env, 240);
    cr_expect_eq(r.status, 0, "-z %s: exit %d\n%s", modes[m], r.status, r.out);
    cr_expect(strstr(r.out, "           0             0     float    none      -1      N/A") &&
                  strstr(r.out, "  butterfly\n") && strstr(r.out, "Out of bounds values : 0 OK"),
              "-z %s:\n%s", modes[m], r.out);
    free(r.out);
  }
}
