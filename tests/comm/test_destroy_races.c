/*
 * Races of zcoll_comm_abort / zcoll_comm_revoke with zcoll_comm_destroy, and ranks that
 * leave early (review of the communicator registry and destroy's final barrier). Ranks
 * are threads over the loopback transport (tests/rank_threads.h).
 */
#include <criterion/criterion.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rank_threads.h"
#include "zcoll.h"

static void nap_ms(double ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)((ms - 1000.0 * (time_t)(ms / 1000)) * 1e6)};
  nanosleep(&ts, NULL);
}

static int sum_ok(zcoll_comm_t *comm, int k) {
  enum { N = 257 };
  double buf[N];
  int size = zcoll_comm_size(comm), rank = zcoll_comm_rank(comm);
  for (int i = 0; i < N; i++) buf[i] = rank * 10.0 + i + k;
  if (zcoll_allreduce(comm, ZCOLL_IN_PLACE, buf, N, ZCOLL_FLOAT64, ZCOLL_SUM) != ZCOLL_OK) return 0;
  for (int i = 0; i < N; i++)
    if (buf[i] != 10.0 * size * (size - 1) / 2 + (double)size * (i + k)) return 0;
  return 1;
}

/* ---- a stale handle whose address a new communicator got ---------------------------- */

static zcoll_status_t init1(zcoll_comm_t **c) {
  zcoll_config_t *cfg;
  cr_assert_eq(zcoll_config_create(&cfg), ZCOLL_OK);
  cr_assert_eq(zcoll_config_set(cfg, "SIZE", "1"), ZCOLL_OK);
  cr_assert_eq(zcoll_config_set(cfg, "RANK", "0"), ZCOLL_OK);
  zcoll_status_t st = zcoll_comm_init(c, cfg);
  zcoll_config_free(cfg);
  return st;
}

/* zcoll.h: "A handle already destroyed or aborted is refused (ZCOLL_ERR_INVALID_ARG),
 * not read" -- a watchdog holding the old handle must not abort the new communicator
 * that malloc placed at the same address. */
Test(destroy_races, stale_handle_does_not_hit_a_new_communicator) {
  /* With malloc's reuse a new communicator used to get an old one's address within a
   * few rounds. */
  for (int i = 0; i < 8; i++) {
    zcoll_comm_t *old, *fresh;
    cr_assert_eq(init1(&old), ZCOLL_OK, "%s", zcoll_last_error());
    cr_assert_eq(zcoll_comm_destroy(old), ZCOLL_OK);
    cr_assert_eq(init1(&fresh), ZCOLL_OK, "%s", zcoll_last_error());
    /* The watchdog of the old communicator fires late. */
    zcoll_status_t st = zcoll_comm_abort(old);
    cr_expect_eq(st, ZCOLL_ERR_INVALID_ARG, "round %d (%s): abort of the stale handle returned %s",
                 i, fresh == old ? "same address" : "another address", zcoll_strerror(st));
    /* The new communicator must still work. */
    double x = 1;
    if (st == ZCOLL_OK) return; /* it was freed through the stale handle */
    cr_expect_eq(zcoll_allreduce(fresh, ZCOLL_IN_PLACE, &x, 1, ZCOLL_FLOAT64, ZCOLL_SUM), ZCOLL_OK,
                 "%s", zcoll_last_error());
    cr_expect_eq(zcoll_comm_destroy(fresh), ZCOLL_OK);
  }
}

/* ---- abort from a watchdog at a random point of destroy ------------------------------ */

struct wd {
  zcoll_comm_t *comm;
  double delay_ms;
  zcoll_status_t st;
};

static void *watchdog(void *arg) {
  struct wd *w = arg;
  nap_ms(w->delay_ms);
  w->st = zcoll_comm_abort(w->comm);
  return NULL;
}

static _Atomic unsigned seed;

static void abort_during_destroy(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  job->released[rank] = 1;
  if (!sum_ok(comm, 1)) rt_fail(job, rank, "allreduce wrong");
  int nwd = *(int *)job->arg;
  unsigned s = atomic_fetch_add(&seed, 7919);
  pthread_t th[2];
  struct wd w[2];
  if (rank == 1)
    for (int i = 0; i < nwd; i++) {
      w[i] = (struct wd){comm, (double)(rand_r(&s) % 4000) / 1000.0, -1};
      pthread_create(&th[i], NULL, watchdog, &w[i]);
    }
  if (rank == 0) nap_ms((double)(rand_r(&s) % 3000) / 1000.0);
  zcoll_status_t st = zcoll_comm_destroy(comm);
  if (st != ZCOLL_OK && st != ZCOLL_ERR_PEER_FAILED && st != ZCOLL_ERR_INVALID_ARG) {
    char m[300];
    snprintf(m, sizeof(m), "destroy: %s: %s", zcoll_strerror(st), zcoll_last_error());
    rt_fail(job, rank, m);
  }
  if (rank == 1)
    for (int i = 0; i < nwd; i++) {
      pthread_join(th[i], NULL);
      if (w[i].st != ZCOLL_OK && w[i].st != ZCOLL_ERR_INVALID_ARG) {
        char m[300];
        snprintf(m, sizeof(m), "abort %d: %s", i, zcoll_strerror(w[i].st));
        rt_fail(job, rank, m);
      }
    }
}

static void run_abort_loop(int size, int nwd, const char *progress, int loops) {
  for (int i = 0; i < loops; i++) {
    struct rt_job job = {.size = size, .body = abort_during_destroy, .arg = &nwd};
    job.settings[0][0] = "PROGRESS";
    job.settings[0][1] = progress;
    job.settings[1][0] = "TIMEOUT";
    job.settings[1][1] = "20";
    cr_assert_eq(rt_run(&job), 0, "loop %d: %s", i, job.all);
    close(job.lfd);
  }
}

Test(destroy_races, one_watchdog, .timeout = 300) { run_abort_loop(2, 1, "caller", 40); }
Test(destroy_races, two_watchdogs, .timeout = 300) { run_abort_loop(2, 2, "caller", 40); }
Test(destroy_races, two_watchdogs_progress_thread, .timeout = 300) {
  run_abort_loop(3, 2, "thread", 30);
}

/* ---- a rank leaving early: how fast the others hear ---------------------------------- */

struct early {
  int leaver, calls;
  double took[8];
  zcoll_status_t st[8], dst[8];
};

static void leave_early(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  struct early *e = job->arg;
  job->released[rank] = 1;
  int n = rank == e->leaver ? e->calls : e->calls + 1;
  for (int k = 0; k < n; k++) {
    double t = sp_now_();
    double buf[64] = {0};
    e->st[rank] = zcoll_allreduce(comm, ZCOLL_IN_PLACE, buf, 64, ZCOLL_FLOAT64, ZCOLL_SUM);
    e->took[rank] = sp_now_() - t;
    if (e->st[rank] != ZCOLL_OK) break;
  }
  e->dst[rank] = zcoll_comm_destroy(comm);
}

static void run_leave_early(int size, int leaver, const char *progress) {
  struct early e = {.leaver = leaver, .calls = 2};
  struct rt_job job = {.size = size, .body = leave_early, .arg = &e};
  job.settings[0][0] = "PROGRESS";
  job.settings[0][1] = progress;
  job.settings[1][0] = "TIMEOUT";
  job.settings[1][1] = "30";
  rt_run(&job);
  close(job.lfd);
  for (int r = 0; r < size; r++) {
    cr_log_info("rank %d: call %s after %.3f s, destroy %s", r, zcoll_strerror(e.st[r]), e.took[r],
                zcoll_strerror(e.dst[r]));
    if (r == leaver) continue;
    cr_expect_eq(e.st[r], ZCOLL_ERR_PEER_FAILED, "rank %d: %s", r, zcoll_strerror(e.st[r]));
    /* heard of at once, not at ZCOLL_TIMEOUT (30 s) */
    cr_expect_lt(e.took[r], 10.0, "rank %d heard of the departure after %.1f s", r, e.took[r]);
  }
  cr_expect_neq(e.dst[leaver], ZCOLL_OK, "the early leaver's destroy said OK");
}

Test(destroy_races, leave_early_rank1, .timeout = 120) { run_leave_early(3, 1, "caller"); }
Test(destroy_races, leave_early_rank0, .timeout = 120) { run_leave_early(3, 0, "caller"); }
Test(destroy_races, leave_early_rank1_pt, .timeout = 120) { run_leave_early(3, 1, "thread"); }
Test(destroy_races, leave_early_rank0_pt, .timeout = 120) { run_leave_early(3, 0, "thread"); }

/* ---- abort while a destroy on another thread gives up ----------------------------- */

/* A destroy refused because a request is still in flight leaves the communicator alive
 * (zcoll.h: "nothing was destroyed"). A watchdog's abort that came during that refused
 * destroy must then abort it itself, not wait 10 s for a destroy that will not come and
 * return ZCOLL_ERR_TIMEOUT with the communicator revoked but alive. The destroy is
 * retried in a loop so that the abort lands inside one. */
struct refused {
  atomic_int stop;
  zcoll_status_t abort_st;
  double abort_took;
};

struct refused_job {
  struct refused f;
  zcoll_comm_t *comm1;
};

static void *abort_after_50ms(void *arg) {
  struct refused_job *rj = arg;
  nap_ms(50);
  double t = sp_now_();
  rj->f.abort_st = zcoll_comm_abort(rj->comm1);
  rj->f.abort_took = sp_now_() - t;
  atomic_store(&rj->f.stop, 1);
  return NULL;
}

static void refused_destroy(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  struct refused_job *rj = job->arg;
  job->released[rank] = 1;
  double buf[16] = {0};
  if (rank == 0) {
    /* joins the allreduce only after the abort: it fails then, naming rank 1 */
    while (!atomic_load(&rj->f.stop)) nap_ms(5);
    zcoll_allreduce(comm, ZCOLL_IN_PLACE, buf, 16, ZCOLL_FLOAT64, ZCOLL_SUM);
    zcoll_comm_destroy(comm);
    return;
  }
  zcoll_request_t *req;
  if (zcoll_iallreduce(comm, ZCOLL_IN_PLACE, buf, 16, ZCOLL_FLOAT64, ZCOLL_SUM, &req) != ZCOLL_OK) {
    rt_fail(job, rank, "iallreduce");
    atomic_store(&rj->f.stop, 1);
    return;
  }
  rj->comm1 = comm;
  pthread_t th;
  pthread_create(&th, NULL, abort_after_50ms, rj);
  int refusals = 0;
  while (!atomic_load(&rj->f.stop)) {
    zcoll_status_t st = zcoll_comm_destroy(comm);
    if (st != ZCOLL_ERR_INVALID_ARG) break;
    if (!strstr(zcoll_last_error(), "still in flight")) break; /* aborted meanwhile */
    refusals++;
  }
  pthread_join(th, NULL);
  cr_log_info("%d refused destroys; abort %s after %.3f s", refusals,
              zcoll_strerror(rj->f.abort_st), rj->f.abort_took);
}

Test(destroy_races, abort_during_a_refused_destroy, .timeout = 60) {
  struct refused_job rj = {0};
  struct rt_job job = {.size = 2, .body = refused_destroy, .arg = &rj};
  job.settings[0][0] = "TIMEOUT";
  job.settings[0][1] = "30";
  rt_run(&job);
  close(job.lfd);
  cr_expect_eq(rj.f.abort_st, ZCOLL_OK, "abort returned %s after %.1f s",
               zcoll_strerror(rj.f.abort_st), rj.f.abort_took);
  cr_expect_lt(rj.f.abort_took, 5.0);
}

/* ---- destroy after different numbers of collectives: MISMATCH everywhere ------------- */

struct counted {
  zcoll_status_t bst, dst[2];
};

/* Rank 1 skips a broadcast from rank 0 that rank 0 can finish without it (a small
 * one lands in rank 1's slots), then destroys once rank 0 is in destroy. */
static void skip_bcast(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  struct counted *c = job->arg;
  job->released[rank] = 1;
  int v = 7;
  if (rank == 0)
    c->bst = zcoll_broadcast(comm, &v, 1, ZCOLL_INT32, 0);
  else
    nap_ms(300);
  c->dst[rank] = zcoll_comm_destroy(comm);
}

Test(destroy_races, different_counts_mismatch, .timeout = 60) {
  struct counted c = {0};
  struct rt_job job = {.size = 2, .body = skip_bcast, .arg = &c};
  job.settings[0][0] = "TIMEOUT";
  job.settings[0][1] = "20";
  rt_run(&job);
  close(job.lfd);
  cr_log_info("bcast %s, destroy %s / %s", zcoll_strerror(c.bst), zcoll_strerror(c.dst[0]),
              zcoll_strerror(c.dst[1]));
  if (c.bst != ZCOLL_OK) return; /* the broadcast needed rank 1: nothing to show */
  cr_expect_eq(c.dst[0], ZCOLL_ERR_MISMATCH, "%s", zcoll_strerror(c.dst[0]));
  cr_expect_eq(c.dst[1], ZCOLL_ERR_MISMATCH, "%s", zcoll_strerror(c.dst[1]));
}

/* ---- two jobs whose rank 0 is in this process, each on an inherited socket ------------ */

/* Rank 0 may be given only its listening socket (ZCOLL_ROOT_FD, no ZCOLL_ROOT). Two such
 * jobs are different jobs -- different sockets -- and may be created at once; only the
 * same rank of the same job is refused. */
struct job2 {
  int lfd, port, rank;
  zcoll_status_t st;
  char why[300];
};

static void *create_rank(void *arg) {
  struct job2 *j = arg;
  zcoll_config_t *cfg;
  char buf[64];
  zcoll_config_create(&cfg);
  zcoll_config_set(cfg, "SIZE", "2");
  snprintf(buf, sizeof(buf), "%d", j->rank);
  zcoll_config_set(cfg, "RANK", buf);
  zcoll_config_set(cfg, "TRANSPORT", "loopback");
  zcoll_config_set(cfg, "TIMEOUT", "20");
  if (j->rank == 0) {
    snprintf(buf, sizeof(buf), "%d", j->lfd);
    zcoll_config_set(cfg, "ROOT_FD", buf);
  } else {
    nap_ms(300); /* both rank 0s are in their rendezvous by now */
    snprintf(buf, sizeof(buf), "127.0.0.1:%d", j->port);
    zcoll_config_set(cfg, "ROOT", buf);
  }
  zcoll_comm_t *comm;
  j->st = zcoll_comm_init(&comm, cfg);
  zcoll_config_free(cfg);
  if (j->st != ZCOLL_OK) {
    snprintf(j->why, sizeof(j->why), "%s", zcoll_last_error());
    return NULL;
  }
  if (!sum_ok(comm, 3)) j->st = ZCOLL_ERR_MISMATCH; /* a wrong sum */
  zcoll_comm_destroy(comm);
  return NULL;
}

Test(destroy_races, two_jobs_on_inherited_sockets_at_once, .timeout = 60) {
  struct job2 j[4];
  pthread_t th[4];
  for (int k = 0; k < 2; k++) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    cr_assert(!bind(fd, (struct sockaddr *)&a, sizeof(a)) && !listen(fd, 16) &&
              !getsockname(fd, (struct sockaddr *)&a, &alen));
    for (int r = 0; r < 2; r++) j[2 * k + r] = (struct job2){fd, ntohs(a.sin_port), r, -1, ""};
  }
  for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, create_rank, &j[i]);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 4; i++)
    cr_expect_eq(j[i].st, ZCOLL_OK, "job %d rank %d: %s: %s", i / 2, j[i].rank,
                 zcoll_strerror(j[i].st), j[i].why);
  close(j[0].lfd);
  close(j[2].lfd);
}
