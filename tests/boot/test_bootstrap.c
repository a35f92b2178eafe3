/*
 * The rendezvous against strangers: silent connections, garbage, another job's key,
 * and a rank with the wrong key. Ranks are threads over the loopback transport with the
 * real TCP bootstrap.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "boot/bootstrap_wire.h"
#include "rank_threads.h"
#include "boot/sock.h"

static int connect_to(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  cr_assert(fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
  return fd;
}

static void sum_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  int v = rank + 1, out = 0, p = zcoll_comm_size(comm);
  if (zcoll_allreduce(comm, &v, &out, 1, ZCOLL_INT32, ZCOLL_SUM) != ZCOLL_OK ||
      out != p * (p + 1) / 2)
    rt_fail(job, rank, "wrong sum");
}

/* The strangers connect to the job's port before its ranks start. */
typedef void (*stranger_fn)(int port, int *fds, int *n);

static void silent(int port, int *fds, int *n) {
  for (int i = 0; i < 20; i++) fds[(*n)++] = connect_to(port);
}

static void garbage(int port, int *fds, int *n) {
  int fd = connect_to(port);
  const char junk[] = "GET / HTTP/1.0\r\n\r\n";
  cr_assert(write(fd, junk, sizeof(junk)) > 0);
  fds[(*n)++] = fd;
}

static void foreign_key(int port, int *fds, int *n) {
  /* A hello of protocol version 1 (which sent the key in clear) from another job,
   * claiming rank 1: another version is dropped, never fatal. */
  int fd = connect_to(port);
  char hello[12 + 5];
  uint32_t h[3] = {1, 3, 5};
  memcpy(hello, h, sizeof(h));
  memcpy(hello + 12, "other", 5);
  cr_assert_eq(zcoll__sock_send_msg(fd, 1, hello, sizeof(hello), zcoll__deadline(5)), ZCOLL_OK);
  fds[(*n)++] = fd;
}

static void run_with_strangers(stranger_fn f) {
  struct rt_job job = {.size = 3, .body = sum_body};
  job.settings[0][0] = "JOB_KEY";
  job.settings[0][1] = "the-real-job";
  job.settings[1][0] = "LOG";
  job.settings[1][1] = "none";
  /* rt_run makes the socket; make it here instead to connect strangers first. */
  job.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof(a);
  cr_assert(!bind(job.lfd, (struct sockaddr *)&a, sizeof(a)) && !listen(job.lfd, 128) &&
            !getsockname(job.lfd, (struct sockaddr *)&a, &alen));
  job.port = ntohs(a.sin_port);
  int fds[64], n = 0;
  f(job.port, fds, &n);
  double t0 = sp_now_();
  cr_assert_eq(rt_run_prepared(&job), 0, "%s", job.first);
  /* Strangers cost nothing: the old one-at-a-time hello read waited 5 s for each. */
  cr_expect_lt(sp_now_() - t0, 4.0, "the job took %.1f s", sp_now_() - t0);
  for (int i = 0; i < n; i++) close(fds[i]);
}

Test(bootstrap, silent_connections_do_not_stall, .timeout = 60) { run_with_strangers(silent); }
Test(bootstrap, garbage_is_dropped, .timeout = 60) { run_with_strangers(garbage); }
Test(bootstrap, another_jobs_key_is_rejected, .timeout = 60) { run_with_strangers(foreign_key); }

/* A rank of this job with the wrong key is turned away with a reason. */
static void wrong_key_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  (void)job, (void)rank, (void)comm;
}

Test(bootstrap, wrong_key_rank_is_told_why, .timeout = 60) {
  struct rt_job job = {.size = 2, .body = wrong_key_body};
  job.settings[0][0] = "JOB_KEY";
  job.settings[0][1] = "the-key";
  job.settings[1][0] = "TIMEOUT";
  job.settings[1][1] = "3";
  job.settings[2][0] = "LOG";
  job.settings[2][1] = "none";
  job.key_of_rank1 = "not-the-key";
  cr_assert_eq(rt_run(&job), 2, "both ranks should fail: %s", job.first);
  cr_assert(strstr(job.all, "job key mismatch"), "%s", job.all);
  cr_assert(strstr(job.all, "only 1 of 2 ranks connected"), "%s", job.all);
}

/* Rank 0 watches every rank's socket while it waits, not only the first 63: the abort
 * of the last of 70 ranks reaches everyone long before ZCOLL_TIMEOUT. */
static void last_aborts_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  int p = zcoll_comm_size(comm);
  if (rank == p - 1) {
    zcoll_comm_abort(comm);
    job->released[rank] = 1;
    return;
  }
  int v = 1, out;
  zcoll_status_t st = zcoll_allreduce(comm, &v, &out, 1, ZCOLL_INT32, ZCOLL_SUM);
  if (st != ZCOLL_ERR_PEER_FAILED) rt_fail(job, rank, zcoll_strerror(st));
}

Test(bootstrap, abort_of_rank_69_reaches_everyone, .timeout = 120) {
  struct rt_job job = {.size = 70, .body = last_aborts_body};
  job.settings[0][0] = "TIMEOUT";
  job.settings[0][1] = "60";
  job.settings[1][0] = "LOG";
  job.settings[1][1] = "none";
  job.settings[2][0] = "ALGO";
  job.settings[2][1] = "ring"; /* rank 0 waits on rank 69, its ring neighbour */
  double t0 = sp_now_();
  cr_assert_eq(rt_run(&job), 0, "%s", job.all);
  cr_expect_lt(sp_now_() - t0, 30.0, "took %.1f s", sp_now_() - t0);
}

/* A rank of the release before the goodbye carried a count (wire version 2) must be
 * turned away at the handshake, not pass it and break destroy's final barrier. */
Test(bootstrap, previous_wire_version_is_refused) {
  uint8_t h[ZCOLL_BS_HDR_BYTES];
  zcoll__bs_put_hdr(h, ZCOLL_BS_HELLO, ZCOLL_BS_HELLO_BYTES);
  h[4] = 2, h[5] = 0;
  struct zcoll__bs_hdr out;
  const char *why = NULL;
  cr_expect_eq(zcoll__bs_parse_hdr(h, sizeof(h), 1024, &out, &why), -1);
  cr_expect(why && strstr(why, "another zcoll rendezvous protocol version"), "%s",
            why ? why : "(accepted)");
}
