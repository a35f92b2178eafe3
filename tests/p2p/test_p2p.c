/*
 * Point-to-point messages (lib/p2p): as threads over loopback at p = 1..4 and as
 * processes over shm and UCX at p = 2 and 4 (tests/progs/p2p_check.c), the cases of
 * p2p_bodies.h -- every dtype, counts from 0 to many pieces around the eager limit in a
 * ring of isend/irecv and one of blocking calls, tags received in another order than
 * sent, one tag in order, messages to oneself, 1000 unexpected sends, mismatched counts
 * and dtypes on both sides, bad arguments, messages in flight beside allreduces; and a
 * receive ended by a revoke, one that times out, a peer killed during a receive.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <pthread.h>
#include <time.h>

#include "fail_job.h"
#include "p2p_bodies.h"
#include "rank_threads.h"
#include "sample.h"

#define P2P_CHUNK_STR "4096"

static void all_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  char msg[400];
  if (p2p_all(comm, msg, sizeof(msg))) rt_fail(job, rank, msg);
}

ParameterizedTestParameters(p2p, loopback) {
  static int sizes[] = {1, 2, 3, 4};
  return cr_make_param_array(int, sizes, sizeof(sizes) / sizeof(sizes[0]));
}

ParameterizedTest(int *p, p2p, loopback, .timeout = 120) {
  struct rt_job job = {.size = *p, .body = all_body, .settings = {{"CHUNK_BYTES", P2P_CHUNK_STR}}};
  cr_assert_eq(rt_run(&job), 0, "p=%d: %s", *p, job.first);
}

/* The progress thread moves the messages while the ranks wait in their calls. */
Test(p2p, progress_thread, .timeout = 120) {
  struct rt_job job = {.size = 2,
                       .body = all_body,
                       .settings = {{"CHUNK_BYTES", P2P_CHUNK_STR}, {"PROGRESS", "thread"}}};
  cr_assert_eq(rt_run(&job), 0, "%s", job.first);
}

/* A receive with no sender, ended by a revoke from another thread: its wait returns
 * ZCOLL_ERR_PEER_FAILED and the buffer stays as it was. */
static void *revoke_later(void *arg) {
  struct timespec ts = {0, 100 * 1000 * 1000};
  nanosleep(&ts, NULL);
  zcoll_comm_revoke(arg);
  return NULL;
}

static void revoke_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  if (rank != 0) { /* waits for rank 0's news in a barrier, which the revoke ends */
    if (zcoll_barrier(comm) == ZCOLL_OK) rt_fail(job, rank, "a barrier outlived a revoke");
    return;
  }
  uint32_t buf[4] = {1, 2, 3, 4};
  zcoll_request_t *q = NULL;
  if (zcoll_irecv(comm, buf, 4, ZCOLL_UINT32, 1, 0, &q) != ZCOLL_OK) {
    rt_fail(job, rank, zcoll_last_error());
    return;
  }
  pthread_t th;
  pthread_create(&th, NULL, revoke_later, comm);
  zcoll_status_t st = zcoll_wait(q);
  pthread_join(th, NULL);
  char msg[400];
  snprintf(msg, sizeof(msg), "wait after revoke: %s (%s)", zcoll_strerror(st), zcoll_last_error());
  if (st != ZCOLL_ERR_PEER_FAILED) rt_fail(job, rank, msg);
  if (buf[0] != 1 || buf[3] != 4) rt_fail(job, rank, "a revoked receive wrote its buffer");
  if (zcoll_request_free(q) != ZCOLL_OK) rt_fail(job, rank, "free after revoke");
}

Test(p2p, revoke_ends_a_receive, .timeout = 60) {
  struct rt_job job = {.size = 2, .body = revoke_body};
  cr_assert_eq(rt_run(&job), 0, "%s", job.first);
}

/* A receive with no sender under ZCOLL_TIMEOUT=1: ZCOLL_ERR_TIMEOUT after about a second
 * of nothing moving, naming the wait, never a hang. */
static void timeout_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  if (rank != 0) { /* silent, then hears that rank 0 gave up */
    struct timespec ts = {2, 0};
    nanosleep(&ts, NULL);
    (void)zcoll_barrier(comm);
    return;
  }
  uint8_t b[8];
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  zcoll_status_t st = zcoll_recv(comm, b, sizeof(b), ZCOLL_UINT8, 1, 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  char msg[400];
  snprintf(msg, sizeof(msg), "after %.1f s: %s (%s)", s, zcoll_strerror(st), zcoll_last_error());
  if (st != ZCOLL_ERR_TIMEOUT || !strstr(zcoll_last_error(), "ZCOLL_TIMEOUT") || s > 10)
    rt_fail(job, rank, msg);
}

Test(p2p, receive_times_out, .timeout = 60) {
  struct rt_job job = {.size = 2, .body = timeout_body, .settings = {{"TIMEOUT", "1"}}};
  cr_assert_eq(rt_run(&job), 0, "%s", job.first);
}

/* ---- between processes ---- */

/* p = 2 and 4; ZCOLL_TEST_SAMPLE=1 (CI's sanitizer pass) runs p = 2, the plain pass 4. */
static void run_procs(const char *tl) {
  static const char *const sizes[] = {"2", "4"};
  for (int k = 0; k < 2; k++) {
    if (!zt_keep(k == 0)) continue;
    char transport[64];
    snprintf(transport, sizeof(transport), "ZCOLL_TRANSPORT=%s", tl);
    const char *argv[] = {SP_BIN("zcoll_run"), "-np", sizes[k], SP_PROG("p2p_check"), NULL};
    const char *env[] = {transport, "ZCOLL_CHUNK_BYTES=" P2P_CHUNK_STR, NULL};
    struct sp_result r = sp_run(argv, env, 120);
    cr_expect_eq(r.status, 0, "%s p=%s: exit %d\n%s", tl, sizes[k], r.status, r.out);
    cr_expect(strstr(r.out, "p2p_check: ok over") != NULL, "%s p=%s:\n%s", tl, sizes[k], r.out);
    free(r.out);
  }
}

Test(p2p, processes_shm, .timeout = 300) { run_procs("shm"); }
Test(p2p, processes_ucx, .timeout = 300) { run_procs("ucx"); }

/* A peer killed while the others wait in a receive from it, a send to it in flight: both
 * end with ZCOLL_ERR_PEER_FAILED, through the rendezvous's news, well before the timeout. */
static void run_killed(const char *tl) {
  struct job_result res;
  const char *argv[] = {SP_PROG("p2p_check"), "kill", "1", NULL};
  run_job_with_victim(tl, 3, argv, 1, 3, &res);
  for (int r = 0; r < 3; r += 2) {
    cr_expect_eq(res.status[r], 0, "rank %d exited %d:\n%s", r, res.status[r], res.out[r]);
    cr_expect(strstr(res.out[r], "survivor") != NULL, "rank %d:\n%s", r, res.out[r]);
  }
  cr_expect_lt(res.seconds, 30.0, "took %.1f s", res.seconds);
}

Test(p2p, peer_dies_during_a_receive_shm, .timeout = 120) { run_killed("shm"); }
Test(p2p, peer_dies_during_a_receive_ucx, .timeout = 120) { run_killed("ucx"); }
