/*
 * The fault matrix: one rank of a real multi-process job misbehaves (tests/progs/
 * fault_rank.c) and every rank's status, message, timing and data are checked: never
 * ZCOLL_OK with wrong data, never a crash, an error that names the culprit, within a
 * time bound (and, for a slow peer, not before the timeout).
 *
 * The full product (fault x transport x algorithm x p) is ~200 jobs; each fault runs
 * here on both local transports, with the algorithm and the number of ranks rotating
 * over the faults so that every algorithm and every p in 2..4 meets every transport
 * (a pairwise sample). tests/fault_matrix.sh runs the whole product.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "spawn.h"

struct job {
  int np;
  int status[8];
  char out[8][4096];
  double seconds;
};

static void run_fault(const char *tl, const char *algo, int np, const char *fault, int victim,
                      const char *timeout, struct job *j) {
  int lfd = socket(AF_INET, SOCK_STREAM, 0); /* inherited by rank 0 */
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof(a);
  cr_assert(lfd >= 0 && !bind(lfd, (struct sockaddr *)&a, sizeof(a)) && !listen(lfd, 64) &&
            !getsockname(lfd, (struct sockaddr *)&a, &alen));
  char root[64], size[16], fd[16], tlv[64], algov[64], tov[64], vs[16];
  snprintf(root, sizeof(root), "ZCOLL_ROOT=127.0.0.1:%d", ntohs(a.sin_port));
  snprintf(size, sizeof(size), "ZCOLL_SIZE=%d", np);
  snprintf(fd, sizeof(fd), "ZCOLL_ROOT_FD=%d", lfd);
  snprintf(tlv, sizeof(tlv), "ZCOLL_TRANSPORT=%s", tl);
  snprintf(algov, sizeof(algov), "ZCOLL_ALGO=%s", algo);
  snprintf(tov, sizeof(tov), "ZCOLL_TIMEOUT=%s", timeout);
  snprintf(vs, sizeof(vs), "%d", victim);
  const char *argv[] = {SP_PROG("fault_rank"), fault, vs, "4096", NULL};
  struct sp_async jobs[8];
  double t0 = sp_now();
  j->np = np;
  for (int r = 0; r < np; r++) {
    char rank[32];
    snprintf(rank, sizeof(rank), "ZCOLL_RANK=%d", r);
    const char *env[] = {rank, size, root, r == 0 ? fd : "ZCOLL_ROOT_FD=-1", tov, tlv, algov,
                         /* 4096 floats in 1 KiB pieces: many pieces in flight */
                         "ZCOLL_CHUNK_BYTES=1024", "ZCOLL_LOG=none", NULL};
    jobs[r] = sp_start(argv, env);
  }
  close(lfd);
  /* Survivors first; a stopped victim is killed once they are done. */
  for (int pass = 0; pass < 2; pass++)
    for (int r = 0; r < np; r++) {
      int is_victim = r == victim;
      if (is_victim != pass) continue;
      if (is_victim && !strcmp(fault, "sigstop")) kill(jobs[r].pid, SIGKILL);
      struct sp_result x = sp_finish(&jobs[r], 60);
      j->status[r] = x.status;
      snprintf(j->out[r], sizeof(j->out[r]), "%s", x.out ? x.out : "");
      free(x.out);
    }
  j->seconds = sp_now() - t0;
}

/* The status and seconds rank r printed for call k; 0 if it printed none. */
static int call_result(const struct job *j, int r, int k, char *status, double *secs,
                       const char **msg) {
  char key[64];
  snprintf(key, sizeof(key), "rank %d call %d: ", r, k);
  const char *p = strstr(j->out[r], key);
  if (!p) return 0;
  p += strlen(key);
  if (sscanf(p, "%63s after %lf s:", status, secs) != 2) return 0;
  if (msg) *msg = p;
  return 1;
}

static void dump(const struct job *j) {
  for (int r = 0; r < j->np; r++)
    cr_log_info("rank %d exited %d:\n%s", r, j->status[r], j->out[r]);
}

/* What holds in every cell: no crash, no wrong data. */
static void expect_sane(const struct job *j, const char *fault, int victim) {
  for (int r = 0; r < j->np; r++) {
    if (!(r == victim && !strcmp(fault, "sigstop")))
      cr_expect_eq(j->status[r], 0, "rank %d exited %d (crash or kill):\n%s", r, j->status[r],
                   j->out[r]);
    cr_expect_null(strstr(j->out[r], "WRONG"), "rank %d got OK with wrong data:\n%s", r,
                   j->out[r]);
    cr_expect_null(strstr(j->out[r], "AddressSanitizer"), "rank %d:\n%s", r, j->out[r]);
    cr_expect_null(strstr(j->out[r], "runtime error"), "rank %d:\n%s", r, j->out[r]);
  }
}

/* A mismatch at call 0: MISMATCH on at least one rank, an error on every rank by the
 * end of the stream, never OK for the mismatched call on the rank that made it. */
static void expect_mismatch(const struct job *j, int victim, int call, const char *needle) {
  int mismatches = 0;
  for (int r = 0; r < j->np; r++) {
    int failed = 0;
    for (int k = call; k < 3; k++) {
      char st[64];
      double s;
      const char *msg = NULL;
      if (!call_result(j, r, k, st, &s, &msg)) continue;
      if (!strcmp(st, "ZCOLL_OK")) {
        cr_expect(r != victim || k != call, "the mismatching rank got OK:\n%s", j->out[r]);
        continue;
      }
      failed = 1;
      if (!strcmp(st, "ZCOLL_ERR_MISMATCH")) {
        mismatches++;
        cr_expect(strstr(msg, needle) != NULL, "rank %d's message lacks '%s':\n%s", r, needle,
                  j->out[r]);
      }
      cr_expect(s < 10, "rank %d took %.1f s to fail", r, s);
      break;
    }
    cr_expect(failed, "rank %d never saw an error:\n%s", r, j->out[r]);
  }
  cr_expect_gt(mismatches, 0, "nobody reported ZCOLL_ERR_MISMATCH");
}

static const char *const algos[] = {"ring", "butterfly", "rhd", "tree"};

#define FAULT_TESTS(tl)                                                                        \
  Test(faults_##tl, mismatch_op, .timeout = 120) {                                            \
    struct job j;                                                                              \
    /* the case that got OK with 3 on one rank and 2 on the other */                         \
    run_fault(#tl, "butterfly", 2, "mismatch-op", 1, "30", &j);                               \
    dump(&j);                                                                                  \
    expect_sane(&j, "mismatch-op", 1);                                                         \
    expect_mismatch(&j, 1, 0, "max");                                                          \
  }                                                                                            \
  Test(faults_##tl, mismatch_dtype, .timeout = 120) {                                         \
    struct job j;                                                                              \
    run_fault(#tl, algos[1 % 4], 3, "mismatch-dtype", 2, "30", &j);                           \
    dump(&j);                                                                                  \
    expect_sane(&j, "mismatch-dtype", 2);                                                      \
    expect_mismatch(&j, 2, 0, "int32");                                                        \
  }                                                                                            \
  Test(faults_##tl, mismatch_count, .timeout = 120) {                                         \
    struct job j;                                                                              \
    run_fault(#tl, algos[2], 4, "mismatch-count", 0, "30", &j);                               \
    dump(&j);                                                                                  \
    expect_sane(&j, "mismatch-count", 0);                                                      \
    expect_mismatch(&j, 0, 0, "count 4097");                                                   \
  }                                                                                            \
  Test(faults_##tl, skew, .timeout = 120) {                                                   \
    struct job j;                                                                              \
    run_fault(#tl, algos[3], 3, "skew", 1, "30", &j);                                         \
    dump(&j);                                                                                  \
    expect_sane(&j, "skew", 1);                                                                \
    expect_mismatch(&j, 1, 0, "count 0");                                                  \
  }                                                                                            \
  Test(faults_##tl, invalid_arg_poisons, .timeout = 120) {                                    \
    struct job j;                                                                              \
    run_fault(#tl, algos[0], 3, "invalid-arg", 1, "30", &j);                                  \
    dump(&j);                                                                                  \
    expect_sane(&j, "invalid-arg", 1);                                                         \
    char st[64];                                                                               \
    double s;                                                                                  \
    const char *msg;                                                                           \
    cr_assert(call_result(&j, 1, 0, st, &s, &msg));                                           \
    cr_expect_str_eq(st, "ZCOLL_ERR_INVALID_ARG");                                             \
    cr_assert(call_result(&j, 1, 1, st, &s, &msg));                                           \
    cr_expect_str_eq(st, "ZCOLL_ERR_INVALID_ARG", "the next call must not run");              \
    for (int r = 0; r < 3; r += 2) {                                                           \
      cr_assert(call_result(&j, r, 0, st, &s, &msg), "rank %d:\n%s", r, j.out[r]);            \
      cr_expect_str_eq(st, "ZCOLL_ERR_MISMATCH", "rank %d:\n%s", r, j.out[r]);                \
      cr_expect(strstr(msg, "rank 1") && strstr(msg, "recvbuf is NULL"), "%s", msg);          \
      cr_expect_lt(s, 2.0);                                                                    \
    }                                                                                          \
  }                                                                                            \
  Test(faults_##tl, abort_from_watchdog_thread, .timeout = 120) {                             \
    struct job j;                                                                              \
    run_fault(#tl, algos[1], 4, "abort-thread", 2, "30", &j);                                 \
    dump(&j);                                                                                  \
    expect_sane(&j, "abort-thread", 2);                                                        \
    char st[64];                                                                               \
    double s;                                                                                  \
    const char *msg;                                                                           \
    cr_assert(call_result(&j, 2, 1, st, &s, &msg), "%s", j.out[2]);                           \
    cr_expect_str_eq(st, "ZCOLL_ERR_PEER_FAILED");                                             \
    cr_expect(s < 1.3, "the blocked call took %.2f s (abort came at 0.3 s)", s);               \
    cr_expect(strstr(j.out[2], "abort returned ZCOLL_OK"), "%s", j.out[2]);                    \
    for (int r = 0; r < 4; r++) {                                                              \
      if (r == 2) continue;                                                                    \
      cr_assert(call_result(&j, r, 1, st, &s, &msg), "rank %d:\n%s", r, j.out[r]);            \
      cr_expect_str_eq(st, "ZCOLL_ERR_PEER_FAILED", "rank %d:\n%s", r, j.out[r]);             \
      cr_expect(strstr(msg, "rank 2"), "rank %d blames another:\n%s", r, msg);                \
    }                                                                                          \
  }                                                                                            \
  Test(faults_##tl, revoke_from_signal_handler, .timeout = 120) {                             \
    struct job j;                                                                              \
    run_fault(#tl, algos[2], 2, "revoke-signal", 0, "30", &j);                                \
    dump(&j);                                                                                  \
    expect_sane(&j, "revoke-signal", 0);                                                       \
    char st[64];                                                                               \
    double s;                                                                                  \
    const char *msg;                                                                           \
    cr_assert(call_result(&j, 0, 1, st, &s, &msg), "%s", j.out[0]);                           \
    cr_expect_str_eq(st, "ZCOLL_ERR_PEER_FAILED");                                             \
    cr_expect(s < 1.3, "the blocked call took %.2f s (revoke came at 0.3 s)", s);              \
    cr_assert(call_result(&j, 1, 1, st, &s, &msg), "%s", j.out[1]);                           \
    cr_expect_str_eq(st, "ZCOLL_ERR_PEER_FAILED");                                             \
    cr_expect(strstr(msg, "rank 0"), "%s", msg);                                               \
  }                                                                                            \
  Test(faults_##tl, two_threads_on_one_comm, .timeout = 120) {                                \
    struct job j;                                                                              \
    run_fault(#tl, algos[3], 4, "two-threads", 1, "30", &j);                                  \
    dump(&j);                                                                                  \
    expect_sane(&j, "two-threads", 1);                                                         \
    cr_expect(strstr(j.out[1], "thread: ZCOLL_ERR_INVALID_ARG") &&                             \
                  strstr(j.out[1], "used concurrently"),                                       \
              "%s", j.out[1]);                                                                 \
    for (int r = 0; r < 4; r++)                                                                \
      for (int k = 0; k < 3; k++) {                                                            \
        char st[64];                                                                           \
        double s;                                                                              \
        cr_assert(call_result(&j, r, k, st, &s, NULL), "rank %d:\n%s", r, j.out[r]);          \
        cr_expect_str_eq(st, "ZCOLL_OK", "rank %d call %d:\n%s", r, k, j.out[r]);             \
      }                                                                                        \
  }                                                                                            \
  Test(faults_##tl, sigstopped_rank_is_blamed, .timeout = 120) {                              \
    struct job j;                                                                              \
    run_fault(#tl, algos[0], 3, "sigstop", 1, "3", &j);                                       \
    dump(&j);                                                                                  \
    expect_sane(&j, "sigstop", 1);                                                             \
    for (int r = 0; r < 3; r += 2) {                                                           \
      char st[64];                                                                             \
      double s;                                                                                \
      const char *msg;                                                                         \
      cr_assert(call_result(&j, r, 1, st, &s, &msg), "rank %d:\n%s", r, j.out[r]);            \
      cr_expect(strcmp(st, "ZCOLL_OK") != 0, "rank %d:\n%s", r, j.out[r]);                     \
      cr_expect(strstr(msg, "rank 1") != NULL, "rank %d blames another:\n%s", r, msg);         \
      /* a slow peer is not a dead one: nobody gives up before ZCOLL_TIMEOUT */               \
      cr_expect(s >= 2.9 && s < 10, "rank %d failed after %.1f s", r, s);                      \
    }                                                                                          \
  }                                                                                            \
  Test(faults_##tl, fork_after_init, .timeout = 120) {                                        \
    struct job j;                                                                              \
    run_fault(#tl, algos[1], 2, "fork", 0, "30", &j);                                         \
    dump(&j);                                                                                  \
    expect_sane(&j, "fork", 0);                                                                \
    cr_expect(strstr(j.out[0], "child: ZCOLL_ERR_INVALID_ARG") &&                              \
                  strstr(j.out[0], "forked") && strstr(j.out[0], "destroy ZCOLL_OK"),          \
              "%s", j.out[0]);                                                                 \
    cr_expect_null(strstr(j.out[0], "child failed"), "%s", j.out[0]);                          \
    for (int r = 0; r < 2; r++) {                                                              \
      char st[64];                                                                             \
      double s;                                                                                \
      cr_assert(call_result(&j, r, 2, st, &s, NULL), "rank %d:\n%s", r, j.out[r]);            \
      cr_expect_str_eq(st, "ZCOLL_OK", "rank %d:\n%s", r, j.out[r]);                           \
    }                                                                                          \
  }

FAULT_TESTS(shm)
FAULT_TESTS(ucx)
