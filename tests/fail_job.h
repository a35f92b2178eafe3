/*
 * fail_job.h -- start the ranks of tests/progs/fail_peer by hand (zcoll_run would kill
 * the survivors at the first death) and collect each rank's status and output.
 */
#ifndef ZCOLL_FAIL_JOB_H
#define ZCOLL_FAIL_JOB_H

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "spawn.h"

struct job_result {
  int status[16];
  char out[16][1024];
  double seconds;
};

/* Starts argv with the soft RLIMIT_FSIZE at fsize bytes (0: as ours), which it inherits. */
static inline struct sp_async sp_start_fsize(const char *const *argv, const char *const *env,
                                             unsigned long long fsize) {
  struct rlimit old, rl;
  cr_assert_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
  rl = old;
  rl.rlim_cur = fsize;
  cr_assert(!fsize || !setrlimit(RLIMIT_FSIZE, &rl), "setrlimit(RLIMIT_FSIZE, %llu): %s", fsize,
            strerror(errno));
  struct sp_async a = sp_start(argv, env);
  cr_assert(!fsize || !setrlimit(RLIMIT_FSIZE, &old));
  return a;
}

/* Starts the ranks of argv (each rank's RLIMIT_FSIZE fsize[r], NULL: none) into jobs;
 * returns when they started. */
static inline double job_start(const char *transport, int np, const char *const *argv,
                               const unsigned long long *fsize, struct sp_async *jobs) {
  int lfd = socket(AF_INET, SOCK_STREAM, 0); /* inherited by rank 0 */
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof(a);
  cr_assert(lfd >= 0 && !bind(lfd, (struct sockaddr *)&a, sizeof(a)) && !listen(lfd, 64) &&
            !getsockname(lfd, (struct sockaddr *)&a, &alen));
  char root[64], size[16], fd[16];
  snprintf(root, sizeof(root), "ZCOLL_ROOT=127.0.0.1:%d", ntohs(a.sin_port));
  snprintf(size, sizeof(size), "ZCOLL_SIZE=%d", np);
  snprintf(fd, sizeof(fd), "ZCOLL_ROOT_FD=%d", lfd);
  double t0 = sp_now();
  for (int r = 0; r < np; r++) {
    char rank[32];
    snprintf(rank, sizeof(rank), "ZCOLL_RANK=%d", r);
    char tl[64];
    snprintf(tl, sizeof(tl), "ZCOLL_TRANSPORT=%s", transport);
    const char *env[] = {rank, size, root, r == 0 ? fd : "ZCOLL_ROOT_FD=-1", "ZCOLL_TIMEOUT=60",
                         tl,   NULL};
    jobs[r] = sp_start_fsize(argv, env, fsize ? fsize[r] : 0);
  }
  close(lfd);
  return t0;
}

static inline void job_finish(int np, struct sp_async *jobs, double t0, struct job_result *res) {
  for (int r = 0; r < np; r++) {
    struct sp_result x = sp_finish(&jobs[r], 90);
    res->status[r] = x.status;
    snprintf(res->out[r], sizeof(res->out[r]), "%s", x.out ? x.out : "");
    free(x.out);
  }
  res->seconds = sp_now() - t0;
}

/* argv: the program each rank runs, with its arguments; fsize (NULL: none) each rank's
 * RLIMIT_FSIZE. */
static inline void run_job_limited(const char *transport, int np, const char *const *argv,
                                   const unsigned long long *fsize, struct job_result *res) {
  struct sp_async jobs[16];
  double t0 = job_start(transport, np, argv, fsize, jobs);
  job_finish(np, jobs, t0, res);
}

static inline void run_job_argv(const char *transport, int np, const char *const *argv,
                                struct job_result *res) {
  run_job_limited(transport, np, argv, NULL, res);
}

static inline void run_job(const char *transport, int np, const char *victim, const char *mode,
                           const char *ms, struct job_result *res) {
  const char *argv[] = {SP_PROG("fail_peer"), victim, mode, ms, NULL};
  run_job_argv(transport, np, argv, res);
}

/* A job whose rank `victim` is to exit with victim_status (a peer killed): UCX's own
 * complaints about the lost peer kept out of the output. */
static inline void run_job_with_victim(const char *transport, int np, const char *const *argv,
                                       int victim, int victim_status, struct job_result *res) {
  setenv("UCX_LOG_LEVEL", "fatal", 1);
  run_job_argv(transport, np, argv, res);
  unsetenv("UCX_LOG_LEVEL");
  cr_expect_eq(res->status[victim], victim_status, "the victim exited %d:\n%s", res->status[victim],
               res->out[victim]);
}

static inline void expect_survivors(int np, int victim, struct job_result *res,
                                    double max_seconds) {
  for (int r = 0; r < np; r++) {
    if (r == victim) continue;
    cr_expect_eq(res->status[r], 0, "rank %d exited %d:\n%s", r, res->status[r], res->out[r]);
    cr_expect(strstr(res->out[r], "a peer failed or aborted") != NULL, "rank %d:\n%s", r,
              res->out[r]);
  }
  /* Detected through the rendezvous star, not by the 60 s timeout. */
  cr_expect_lt(res->seconds, max_seconds, "took %.1f s", res->seconds);
}

#endif
