/*
 * The partial (quorum) allreduce, ranks as threads over loopback (partial_bodies.h says
 * what each run checks): every quorum from 1 to p over hundreds of rounds with random
 * per-rank delays and two epochs (restart after a flush); AVG; other collectives
 * interleaved; flush with nothing pending and with an offer pending; liveness with a rank
 * that stays away (caller progress and the progress thread); mismatched quorums and bad
 * arguments. Processes over shm and UCX (its atomics: transports/ucx/amo.c), a rank killed
 * among them: progs/partial_check.c.
 */
#include <stdatomic.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "partial_bodies.h"
#include "rank_threads.h"
#include "spawn.h"

static void conserve_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  char msg[400];
  if (pb_run(comm, job->arg, msg, sizeof(msg))) rt_fail(job, rank, msg);
}

struct pcase {
  int p, q;
};

ParameterizedTestParameters(partial, every_quorum) {
  static struct pcase cases[] = {{1, 1}, {2, 1}, {2, 2}, {3, 2}, {4, 1},
                                 {4, 2}, {4, 3}, {4, 4}, {5, 3}, {6, 4}};
  return cr_make_param_array(struct pcase, cases, sizeof(cases) / sizeof(cases[0]));
}

/* 2 epochs of 150 starts, each after a random sleep of up to 200 us. */
ParameterizedTest(struct pcase *c, partial, every_quorum, .timeout = 300) {
  struct pb_args a = {c->q, 150, 2, 0, 200, ZCOLL_SUM};
  struct rt_job job = {.size = c->p, .body = conserve_body, .arg = &a};
  cr_expect_eq(rt_run(&job), 0, "p=%d q=%d: %s", c->p, c->q, job.first);
}

/* Offers across 2^32 of them, the counter started just below (a seam of partial_make.c):
 * the 2^32-th offer carried into the flushing count, and rounds past it were cut wrong.
 * 3 epochs of 40 starts on 4 ranks, quorum 3 (2^32 is not a multiple of it), and quorum 1
 * (a round per offer). */
extern uint64_t zcoll__partial_first_ticket;

Test(partial, offers_across_2_to_the_32, .timeout = 120) {
  static const int quorums[] = {3, 1};
  for (int i = 0; i < 2; i++) {
    zcoll__partial_first_ticket = (1ull << 32) - 50;
    struct pb_args a = {quorums[i], 40, 3, 0, 50, ZCOLL_SUM};
    struct rt_job job = {.size = 4, .body = conserve_body, .arg = &a};
    cr_expect_eq(rt_run(&job), 0, "q=%d: %s", quorums[i], job.first);
  }
}

/* A request the application never frees: zcoll_comm_destroy frees it (flushing it, with the
 * others, as zcoll_request_free would) and returns OK; under ASan nothing leaks. In flight,
 * destroy refuses and changes nothing. */
static atomic_int refused; /* rank 0's destroy was refused: the others may go */

static void left_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  int64_t x = rank, y = 0;
  zcoll_request_t *req;
  zcoll_status_t st = zcoll_allreduce_partial_init(comm, &x, &y, 1, ZCOLL_INT64, ZCOLL_SUM,
                                                   job->size, &req);
  for (int s = 0; s < 3 && st == ZCOLL_OK; s++) {
    if ((st = zcoll_start(req)) == ZCOLL_OK) st = zcoll_wait(req);
    if (st == ZCOLL_OK && y != job->size * (job->size - 1) / 2) rt_fail(job, rank, "wrong sum");
  }
  if (st == ZCOLL_OK && rank == 0 && (st = zcoll_start(req)) == ZCOLL_OK) {
    /* its round waits for the others, held back until then: refused */
    if (zcoll_comm_destroy(comm) != ZCOLL_ERR_INVALID_ARG ||
        !strstr(zcoll_comm_last_error(comm), "in flight"))
      rt_fail(job, rank, "destroy with a partial offer in flight was not refused");
    atomic_store(&refused, 1);
    st = zcoll_wait(req); /* the others' flush (in their destroy) decides it */
  }
  while (st == ZCOLL_OK && rank != 0 && !atomic_load(&refused)) usleep(1000);
  if (st != ZCOLL_OK) rt_fail(job, rank, zcoll_last_error());
}

Test(partial, left_behind_is_freed_by_destroy, .timeout = 60) {
  struct rt_job job = {.size = 3, .body = left_body};
  cr_expect_eq(rt_run(&job), 0, "%s", job.first);
}

Test(partial, avg_divides_by_the_rounds_offers, .timeout = 300) {
  struct pb_args a = {3, 60, 2, 0, 300, ZCOLL_AVG};
  struct rt_job job = {.size = 4, .body = conserve_body, .arg = &a};
  cr_expect_eq(rt_run(&job), 0, "%s", job.first);
}

Test(partial, other_collectives_interleaved, .timeout = 300) {
  struct pb_args a = {2, 60, 2, 1, 100, ZCOLL_SUM};
  struct rt_job job = {.size = 4, .body = conserve_body, .arg = &a};
  cr_expect_eq(rt_run(&job), 0, "%s", job.first);
}

Test(partial, progress_thread, .timeout = 300) {
  struct pb_args a = {3, 80, 2, 0, 200, ZCOLL_SUM};
  struct rt_job job = {.size = 4, .body = conserve_body, .arg = &a};
  job.settings[0][0] = "PROGRESS";
  job.settings[0][1] = "thread";
  cr_expect_eq(rt_run(&job), 0, "%s", job.first);
}

/* p * steps a multiple of the quorum: nothing pending at the flush (its round full), and
 * one offer each with quorum 3 of 4: the fourth waits until the others flush. */
Test(partial, flush_with_nothing_and_with_an_offer_pending, .timeout = 300) {
  struct pb_args full = {2, 10, 3, 0, 0, ZCOLL_SUM}, pending = {3, 1, 3, 0, 50, ZCOLL_SUM};
  struct rt_job job = {.size = 4, .body = conserve_body, .arg = &full};
  cr_expect_eq(rt_run(&job), 0, "nothing pending: %s", job.first);
  struct rt_job job2 = {.size = 4, .body = conserve_body, .arg = &pending};
  cr_expect_eq(rt_run(&job2), 0, "an offer pending: %s", job2.first);
  struct pb_args none = {2, 0, 2, 0, 0, ZCOLL_SUM}; /* flushes of nothing */
  struct rt_job job3 = {.size = 3, .body = conserve_body, .arg = &none};
  cr_expect_eq(rt_run(&job3), 0, "no offers: %s", job3.first);
}

struct live {
  int done[8], straggler_done;
};

static void live_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  struct live *l = job->arg;
  char msg[400];
  if (pb_live(comm, 3, 20, 3, l->done, &l->straggler_done, msg, sizeof(msg)))
    rt_fail(job, rank, msg);
}

Test(partial, a_rank_away_holds_up_nobody, .timeout = 300) {
  for (int thread = 0; thread < 2; thread++) {
    struct live l;
    memset(&l, 0, sizeof(l));
    struct rt_job job = {.size = 4, .body = live_body, .arg = &l};
    if (thread) {
      job.settings[0][0] = "PROGRESS";
      job.settings[0][1] = "thread";
    }
    cr_expect_eq(rt_run(&job), 0, "%s: %s", thread ? "thread" : "caller", job.first);
  }
}

static void mismatch_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  int64_t x = 1, y;
  zcoll_request_t *req = (zcoll_request_t *)&x;
  int mode = *(int *)job->arg;
  int quorum = mode == 0 ? (rank == 1 ? 2 : 3) : mode == 1 ? 9 : 2;
  const void *send = mode == 2 && rank == 2 ? NULL : &x;
  zcoll_status_t st = zcoll_allreduce_partial_init(comm, send, &y, 1, ZCOLL_INT64, ZCOLL_SUM,
                                                   quorum, &req);
  zcoll_status_t want = mode == 0 ? ZCOLL_ERR_MISMATCH : ZCOLL_ERR_INVALID_ARG;
  char msg[400];
  if (st != want || req != NULL) {
    snprintf(msg, sizeof(msg), "mode %d: %s (want %s), req %p: %s", mode, zcoll_strerror(st),
             zcoll_strerror(want), (void *)req, zcoll_last_error());
    rt_fail(job, rank, msg);
    return;
  }
  const char *need = mode == 0 ? "quorum of 2" : mode == 1 ? "quorum 9" : "sendbuf is NULL";
  if (rank == (mode == 0 ? 0 : 2) && !strstr(zcoll_last_error(), need) && mode != 1) {
    snprintf(msg, sizeof(msg), "mode %d: message lacks '%s': %s", mode, need, zcoll_last_error());
    rt_fail(job, rank, msg);
  }
  /* the communicator is still good */
  int64_t s = 1;
  if (zcoll_allreduce(comm, ZCOLL_IN_PLACE, &s, 1, ZCOLL_INT64, ZCOLL_SUM) != ZCOLL_OK ||
      s != job->size)
    rt_fail(job, rank, "the communicator broke");
}

Test(partial, mismatched_quorums_and_bad_arguments, .timeout = 120) {
  for (int mode = 0; mode < 3; mode++) {
    struct rt_job job = {.size = 4, .body = mismatch_body, .arg = &mode};
    cr_expect_eq(rt_run(&job), 0, "mode %d: %s", mode, job.first);
  }
}

Test(partial, calls_on_other_requests_are_refused, .timeout = 60) {
  cr_expect_eq(zcoll_partial_flush(NULL), ZCOLL_ERR_INVALID_ARG);
  uint64_t r;
  cr_expect_eq(zcoll_request_partial_info(NULL, &r, NULL, NULL), ZCOLL_ERR_INVALID_ARG);
  cr_expect(strstr(zcoll_last_error(), "not a partial request") != NULL, "%s", zcoll_last_error());
}

/* ---- processes (progs/partial_check.c) ---- */

static struct sp_result procs(const char *tl, const char *np, const char *mode, const char *arg) {
  char transport[64];
  snprintf(transport, sizeof(transport), "ZCOLL_TRANSPORT=%s", tl);
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", np, SP_PROG("partial_check"), mode, arg, NULL};
  const char *env[] = {transport, "ZCOLL_TIMEOUT=60", NULL};
  return sp_run(argv, env, 240);
}

static void expect_ok(const char *tl, const char *np, const char *mode, const char *arg) {
  struct sp_result r = procs(tl, np, mode, arg);
  cr_expect_eq(r.status, 0, "%s np=%s %s %s: exit %d\n%s", tl, np, mode, arg, r.status, r.out);
  for (int k = 0; k < atoi(np); k++) {
    char want[80];
    snprintf(want, sizeof(want), "partial_check: rank %d ok", k);
    cr_expect(strstr(r.out, want) != NULL, "%s %s: no '%s'\n%s", tl, mode, want, r.out);
  }
  free(r.out);
}

Test(partial, processes_shm, .timeout = 300) {
  expect_ok("shm", "4", "conserve", "3");
  expect_ok("shm", "3", "conserve", "1");
}

/* The liveness run (pb_live) with its counters in a file every process maps. */
static void away(const char *tl) {
  char path[] = "/tmp/zcoll_partial_live_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0 && ftruncate(fd, 4096) == 0);
  close(fd);
  expect_ok(tl, "4", "live", path);
  unlink(path);
}

Test(partial, processes_shm_a_rank_away, .timeout = 300) { away("shm"); }

/* A rank killed mid-run: every survivor's request fails, none hangs. left: the survivors
 * leave the request to zcoll_comm_destroy, which frees it and its communicator (they
 * leaked, 109 KB a rank: under ASan the leak check failed the survivors' exit). */
static void killed(const char *tl, const char *left) {
  struct sp_result r = procs(tl, "4", "kill", left);
  if (left[0]) cr_expect_eq(r.status, 0, "%s: exit %d\n%s", tl, r.status, r.out);
  for (int k = 0; k < 4; k++) {
    if (k == 1) continue;
    char want[80];
    snprintf(want, sizeof(want), "partial_check: rank %d: failed as it should", k);
    cr_expect(strstr(r.out, want) != NULL, "%s: no '%s'\n%s", tl, want, r.out);
  }
  free(r.out);
}

Test(partial, processes_shm_a_rank_killed, .timeout = 300) { killed("shm", ""); }
Test(partial, processes_ucx_a_rank_killed, .timeout = 300) { killed("ucx", ""); }
Test(partial, processes_shm_a_rank_killed_request_left, .timeout = 300) { killed("shm", "left"); }

Test(partial, processes_ucx, .timeout = 300) {
  expect_ok("ucx", "4", "conserve", "2");
  away("ucx");
}
