/*
 * The rendezvous against strangers, squatters and other jobs: the key never crosses
 * the wire, nothing unauthenticated is fatal, only an authenticated contradiction is.
 * Real sockets on 127.0.0.1 only; ranks are threads over the loopback transport.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>

#include "bootstrap_auth.h"
#include "bootstrap_handshake.h"
#include "rank_threads.h"
#include "sock.h"
#include "spawn.h"

static int listen_local(int *port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof(a);
  cr_assert(fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) && !listen(fd, 128) &&
            !getsockname(fd, (struct sockaddr *)&a, &alen));
  *port = ntohs(a.sin_port);
  return fd;
}

static int free_port(void) {
  int port, fd = listen_local(&port);
  close(fd);
  return port;
}

static int connect_to(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
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

static void job_init(struct rt_job *job, int size, const char *key) {
  memset(job, 0, sizeof(*job));
  job->size = size;
  job->body = sum_body;
  int i = 0;
  if (key) {
    job->settings[i][0] = "JOB_KEY";
    job->settings[i++][1] = key;
  }
  job->settings[i][0] = "LOG";
  job->settings[i++][1] = "none";
  job->lfd = listen_local(&job->port);
}

/* 1 if the peer closed fd within `seconds`. */
static int closed_within(int fd, double seconds) {
  double end = sp_now() + seconds;
  char buf[256];
  while (sp_now() < end) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return 1;
  }
  return 0;
}

/* ---- a stranger that speaks the protocol but does not know the key --------------- */

struct stranger {
  int fd;
  uint32_t rank, size;
  int got_challenge, dropped;
};

static void *stranger_main(void *arg) {
  struct stranger *s = arg;
  struct zcoll__bs_hello h = {s->rank, s->size, {0}, {0}};
  zcoll__bs_job_digest("", h.jobid); /* the same (absent) job id as the job's */
  uint8_t hello[ZCOLL_BS_HELLO_BYTES];
  zcoll__bs_put_hello(hello, &h);
  zcoll__sock_send_msg(s->fd, ZCOLL_BS_HELLO, hello, sizeof(hello), zcoll__deadline(5));
  uint16_t type;
  void *payload = NULL;
  uint32_t len;
  if (zcoll__sock_recv_msg(s->fd, 4096, zcoll__deadline(10), &type, &payload, &len) == ZCOLL_OK &&
      type == ZCOLL_BS_CHALLENGE) {
    s->got_challenge = 1;
    struct zcoll__bs_challenge c;
    const char *why;
    uint8_t mac[ZCOLL_BS_MAC_BYTES];
    zcoll__bs_parse_challenge(payload, len, &c, &why);
    zcoll__bs_mac("a-guess", ZCOLL_BS_RANK_TO_ROOT, h.jobid, h.rank, h.size, h.nonce, c.nonce,
                  mac);
    zcoll__sock_send_msg(s->fd, ZCOLL_BS_PROOF, mac, sizeof(mac), zcoll__deadline(5));
  }
  free(payload);
  s->dropped = closed_within(s->fd, 10);
  return NULL;
}

static void run_past_stranger(uint32_t rank, uint32_t size) {
  struct rt_job job;
  job_init(&job, 3, "the-real-job");
  struct stranger s = {connect_to(job.port), rank, size, 0, 0};
  pthread_t th;
  pthread_create(&th, NULL, stranger_main, &s);
  /* The stranger's hello is queued before any real rank exists. */
  usleep(100 * 1000);
  double t0 = sp_now();
  cr_assert_eq(rt_run_prepared(&job), 0, "%s", job.first);
  cr_expect_lt(sp_now() - t0, 4.0, "the job took %.1f s", sp_now() - t0);
  pthread_join(th, NULL);
  cr_expect(s.got_challenge, "rank 0 never challenged the stranger");
  cr_expect(s.dropped, "rank 0 did not drop the stranger");
  close(s.fd);
  close(job.lfd);
}

Test(rendezvous, stranger_with_wrong_key_claiming_free_rank_is_dropped, .timeout = 60) {
  run_past_stranger(1, 3);
}

Test(rendezvous, wrong_size_before_auth_does_not_kill_the_job, .timeout = 60) {
  run_past_stranger(2, 7);
}

/* The drop is logged with the peer's address, and the key appears nowhere. */
Test(rendezvous, drop_is_logged_with_peer_address, .timeout = 60) {
  char path[] = "/tmp/zcoll_rdv_log_XXXXXX";
  int logfd = mkstemp(path);
  cr_assert(logfd >= 0);
  unlink(path);
  int saved = dup(2);
  dup2(logfd, 2);
  struct rt_job job;
  job_init(&job, 2, "key-that-must-not-be-logged");
  job.settings[1][1] = "info";
  struct stranger s = {connect_to(job.port), 1, 2, 0, 0};
  pthread_t th;
  pthread_create(&th, NULL, stranger_main, &s);
  usleep(100 * 1000);
  unsigned long failures = rt_run_prepared(&job);
  pthread_join(th, NULL);
  dup2(saved, 2);
  close(saved);
  cr_assert_eq(failures, 0, "%s", job.first);
  char log[65536] = "";
  ssize_t n = pread(logfd, log, sizeof(log) - 1, 0);
  log[n > 0 ? n : 0] = '\0';
  close(logfd);
  cr_expect(strstr(log, "dropped the connection from 127.0.0.1:"), "%s", log);
  cr_expect(strstr(log, "does not know the job key"), "%s", log);
  cr_expect_null(strstr(log, "key-that-must-not-be-logged"), "%s", log);
  close(s.fd);
  close(job.lfd);
}

/* ---- junk, huge lengths, silence, slowness, crowds -------------------------------- */

static void *slow_sender(void *arg) {
  int fd = *(int *)arg;
  uint8_t frame[ZCOLL_BS_HDR_BYTES + ZCOLL_BS_HELLO_BYTES] = {0};
  zcoll__bs_put_hdr(frame, ZCOLL_BS_HELLO, ZCOLL_BS_HELLO_BYTES);
  /* One byte a second: the whole hello would take 88 s. */
  for (size_t i = 0; i < sizeof(frame); i++) {
    if (send(fd, frame + i, 1, MSG_NOSIGNAL) != 1) break;
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 1000) > 0) break; /* rank 0 closed us */
  }
  return NULL;
}

Test(rendezvous, junk_huge_silent_slow_and_crowds_do_not_stall, .timeout = 60) {
  struct rt_job job;
  job_init(&job, 3, "the-real-job");
  int fds[64], n = 0;
  const char junk[] = "GET / HTTP/1.0\r\n\r\n";
  fds[n] = connect_to(job.port);
  cr_assert(send(fds[n++], junk, sizeof(junk), 0) > 0);
  uint8_t huge[ZCOLL_BS_HDR_BYTES];
  zcoll__bs_put_hdr(huge, ZCOLL_BS_HELLO, 0xfffffff0u);
  fds[n] = connect_to(job.port);
  cr_assert(send(fds[n++], huge, sizeof(huge), 0) > 0);
  for (int i = 0; i < 5; i++) fds[n++] = connect_to(job.port); /* silent */
  for (int i = 0; i < 30; i++) { /* a crowd of 4-byte senders */
    fds[n] = connect_to(job.port);
    cr_assert(send(fds[n++], "ZCLB", 4, 0) == 4);
  }
  int slow = connect_to(job.port);
  pthread_t th;
  pthread_create(&th, NULL, slow_sender, &slow);
  usleep(100 * 1000);
  double t0 = sp_now();
  cr_assert_eq(rt_run_prepared(&job), 0, "%s", job.first);
  /* Strangers cost nothing: reading them one at a time, 30 would take 30 s. */
  cr_expect_lt(sp_now() - t0, 4.0, "the job took %.1f s", sp_now() - t0);
  pthread_join(th, NULL);
  for (int i = 0; i < n; i++) close(fds[i]);
  close(slow);
  close(job.lfd);
}

/* A silent stranger is dropped after the short handshake deadline, not ZCOLL_TIMEOUT. */
struct acceptor {
  struct zcoll__bs_who who;
  int lfd, fds[4];
  zcoll_status_t st;
};

static void *acceptor_main(void *arg) {
  struct acceptor *a = arg;
  a->st = zcoll__bs_accept_all(&a->who, a->lfd, a->fds);
  return NULL;
}

static struct zcoll__bs_who who_of(int rank, int size, const char *key) {
  struct zcoll__bs_who w = {rank, size, key, {0}, "", 60};
  zcoll__bs_job_digest("", w.jobid);
  return w;
}

Test(rendezvous, silent_stranger_has_its_own_deadline, .timeout = 60) {
  struct acceptor a = {who_of(0, 2, "k"), -1, {-1, -1, -1, -1}, ZCOLL_OK};
  int port;
  a.lfd = listen_local(&port);
  int silent = connect_to(port);
  pthread_t th;
  pthread_create(&th, NULL, acceptor_main, &a);
  double t0 = sp_now();
  cr_expect(closed_within(silent, 15), "the silent stranger was never dropped");
  double took = sp_now() - t0;
  cr_expect(took > ZCOLL_BS_HANDSHAKE_S - 1 && took < ZCOLL_BS_HANDSHAKE_S + 3,
            "dropped after %.1f s", took);
  /* The real rank 1 still gets in. */
  int fd = connect_to(port);
  struct zcoll__bs_who w1 = who_of(1, 2, "k");
  cr_expect_eq(zcoll__bs_join(&w1, fd, "test", zcoll__deadline(10)), ZCOLL_OK, "%s",
               zcoll_last_error());
  pthread_join(th, NULL);
  cr_expect_eq(a.st, ZCOLL_OK, "%s", zcoll_strerror(a.st));
  cr_expect_geq(a.fds[1], 0);
  close(a.fds[1]);
  close(fd);
  close(silent);
  close(a.lfd);
}

/* ---- authenticated contradictions are errors of the job -------------------------- */

struct joiner {
  struct zcoll__bs_who who;
  int fd;
  zcoll_status_t st;
};

static void *joiner_main(void *arg) {
  struct joiner *j = arg;
  j->st = zcoll__bs_join(&j->who, j->fd, "test", zcoll__deadline(20));
  return NULL;
}

/* One rank of a job through the public API; returns its zcoll_comm_init status with the
 * message in err. A communicator that does form is used once and destroyed. */
static zcoll_status_t one_rank(int rank, int size, int port, int lfd, const char *const *set,
                               char *err, size_t errlen) {
  zcoll_config_t *cfg;
  cr_assert_eq(zcoll_config_create(&cfg), ZCOLL_OK);
  char buf[64];
  snprintf(buf, sizeof(buf), "%d", rank);
  cr_assert_eq(zcoll_config_set(cfg, "RANK", buf), ZCOLL_OK);
  snprintf(buf, sizeof(buf), "%d", size);
  cr_assert_eq(zcoll_config_set(cfg, "SIZE", buf), ZCOLL_OK);
  snprintf(buf, sizeof(buf), "127.0.0.1:%d", port);
  cr_assert_eq(zcoll_config_set(cfg, "ROOT", buf), ZCOLL_OK);
  if (lfd >= 0) {
    snprintf(buf, sizeof(buf), "%d", lfd);
    cr_assert_eq(zcoll_config_set(cfg, "ROOT_FD", buf), ZCOLL_OK);
  }
  cr_assert_eq(zcoll_config_set(cfg, "TRANSPORT", "loopback"), ZCOLL_OK);
  cr_assert_eq(zcoll_config_set(cfg, "TIMEOUT", "10"), ZCOLL_OK);
  cr_assert_eq(zcoll_config_set(cfg, "LOG", "none"), ZCOLL_OK);
  for (int i = 0; set && set[i]; i += 2)
    cr_assert_eq(zcoll_config_set(cfg, set[i], set[i + 1]), ZCOLL_OK, "%s", zcoll_last_error());
  zcoll_comm_t *comm = NULL;
  zcoll_status_t st = zcoll_comm_init(&comm, cfg);
  snprintf(err, errlen, "%s", st == ZCOLL_OK ? "" : zcoll_last_error());
  zcoll_config_free(cfg);
  if (st == ZCOLL_OK) zcoll_comm_destroy(comm);
  return st;
}

static void rank0_against(struct joiner *j, int nj, const char *expect) {
  int port, lfd = listen_local(&port);
  pthread_t th[4];
  for (int i = 0; i < nj; i++) {
    j[i].fd = connect_to(port);
    pthread_create(&th[i], NULL, joiner_main, &j[i]);
  }
  usleep(100 * 1000);
  char err[600];
  const char *set[] = {"JOB_KEY", "k", NULL};
  zcoll_status_t st = one_rank(0, 3, port, lfd, set, err, sizeof(err));
  cr_expect_eq(st, ZCOLL_ERR_BOOTSTRAP, "%s: %s", zcoll_strerror(st), err);
  cr_expect(strstr(err, expect), "%s", err);
  for (int i = 0; i < nj; i++) {
    pthread_join(th[i], NULL);
    close(j[i].fd);
  }
  close(lfd);
}

Test(rendezvous, authenticated_duplicate_rank_is_an_error_naming_it, .timeout = 60) {
  struct joiner j[2] = {{who_of(1, 3, "k"), -1, 0}, {who_of(1, 3, "k"), -1, 0}};
  rank0_against(j, 2, "rank 1 joined twice");
  /* One of the two was welcomed, the other told why it was refused. */
  cr_expect(j[0].st == ZCOLL_ERR_BOOTSTRAP || j[1].st == ZCOLL_ERR_BOOTSTRAP);
}

Test(rendezvous, authenticated_wrong_size_is_an_error, .timeout = 60) {
  struct joiner j[1] = {{who_of(2, 4, "k"), -1, 0}};
  rank0_against(j, 1, "rank 2 (from 127.0.0.1:");
  cr_expect_eq(j[0].st, ZCOLL_ERR_BOOTSTRAP);
}

/* ---- a squatter on the port learns nothing -------------------------------------- */

struct squatter {
  int lfd;
  int forge; /* 1: answer with a challenge carrying a made-up MAC; 0: just listen */
  char got[8192];
  size_t len;
};

static void *squatter_main(void *arg) {
  struct squatter *q = arg;
  int fd = accept(q->lfd, NULL, NULL);
  if (fd < 0) return NULL;
  double end = sp_now() + 3;
  int answered = 0;
  while (sp_now() < end && q->len < sizeof(q->got)) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    ssize_t n = recv(fd, q->got + q->len, sizeof(q->got) - q->len, 0);
    if (n <= 0) break;
    q->len += (size_t)n;
    if (q->forge && !answered && q->len >= ZCOLL_BS_HDR_BYTES + ZCOLL_BS_HELLO_BYTES) {
      uint8_t frame[ZCOLL_BS_HDR_BYTES + ZCOLL_BS_CHALLENGE_BYTES] = {0};
      zcoll__bs_put_hdr(frame, ZCOLL_BS_CHALLENGE, ZCOLL_BS_CHALLENGE_BYTES);
      cr_assert(send(fd, frame, sizeof(frame), MSG_NOSIGNAL) > 0);
      answered = 1;
    }
  }
  close(fd);
  return NULL;
}

static void squat(int forge, const char *expect) {
  static const char key[] = "squat-proof-key-5e1f0a";
  struct squatter q = {.forge = forge};
  int port;
  q.lfd = listen_local(&port);
  pthread_t th;
  pthread_create(&th, NULL, squatter_main, &q);
  char err[600];
  const char *set[] = {"JOB_KEY", key, NULL};
  zcoll_status_t st = one_rank(1, 2, port, -1, set, err, sizeof(err));
  pthread_join(th, NULL);
  close(q.lfd);
  cr_expect_eq(st, ZCOLL_ERR_BOOTSTRAP, "%s: %s", zcoll_strerror(st), err);
  cr_expect(strstr(err, expect), "%s", err);
  cr_expect_gt(q.len, 0, "the rank never spoke to the squatter");
  cr_expect_null(memmem(q.got, q.len, key, strlen(key)), "the squatter received the key");
  cr_expect_null(memmem(q.got, q.len, key, 8), "the squatter received part of the key");
}

Test(rendezvous, squatter_forging_a_challenge_is_not_trusted, .timeout = 60) {
  squat(1, "could not prove that it knows ZCOLL_JOB_KEY");
}

Test(rendezvous, squatter_that_only_listens_learns_nothing, .timeout = 60) {
  squat(0, "closed the connection during the handshake");
}

/* ---- two jobs on one port ------------------------------------------------------ */

struct foreign {
  int rank, port;
  zcoll_status_t st;
  char err[600];
};

static void *foreign_main(void *arg) {
  struct foreign *f = arg;
  const char *set[] = {"JOB_ID", "job-B", NULL};
  f->st = one_rank(f->rank, 3, f->port, -1, set, f->err, sizeof(f->err));
  return NULL;
}

Test(rendezvous, two_jobs_on_one_port_do_not_kill_each_other, .timeout = 60) {
  struct rt_job job;
  job_init(&job, 2, NULL); /* no key at all: only the job ids tell the jobs apart */
  job.settings[1][0] = "JOB_ID";
  job.settings[1][1] = "job-A";
  struct foreign f[2] = {{1, job.port, 0, ""}, {2, job.port, 0, ""}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, foreign_main, &f[i]);
  usleep(200 * 1000); /* job B's hellos are there first */
  cr_assert_eq(rt_run_prepared(&job), 0, "%s", job.first);
  for (int i = 0; i < 2; i++) {
    pthread_join(th[i], NULL);
    cr_expect_eq(f[i].st, ZCOLL_ERR_BOOTSTRAP, "%s", f[i].err);
    cr_expect(strstr(f[i].err, "another job"), "%s", f[i].err);
  }
  close(job.lfd);
}

/* ---- configuration: no key, redaction ------------------------------------------- */

Test(rendezvous, require_key_without_a_key_is_an_error, .timeout = 30) {
  char err[600];
  const char *set[] = {"REQUIRE_KEY", "1", NULL};
  zcoll_status_t st = one_rank(1, 2, free_port(), -1, set, err, sizeof(err));
  cr_expect_eq(st, ZCOLL_ERR_BOOTSTRAP, "%s", zcoll_strerror(st));
  cr_expect(strstr(err, "ZCOLL_REQUIRE_KEY"), "%s", err);
  /* A job of one has no rendezvous to protect. */
  st = one_rank(0, 1, free_port(), -1, set, err, sizeof(err));
  cr_expect_eq(st, ZCOLL_OK, "%s", err);
}

Test(rendezvous, zcoll_info_does_not_print_the_key, .timeout = 30) {
  const char *argv[] = {SP_BIN("zcoll_info"), "-c", NULL};
  const char *env[] = {"ZCOLL_JOB_KEY=hush-7f3a9c-secret", NULL};
  struct sp_result r = sp_run(argv, env, 20);
  cr_assert_eq(r.status, 0, "%s", r.out);
  cr_expect_null(strstr(r.out, "hush-7f3a9c"), "%s", r.out);
  cr_expect(strstr(r.out, "ZCOLL_JOB_KEY=(set)"), "%s", r.out);
  free(r.out);
  /* Nor in the error about a bad value (this one is too long). */
  char big[300] = "ZCOLL_JOB_KEY=hush-7f3a9c-";
  memset(big + strlen(big), 'x', 200);
  const char *env2[] = {big, NULL};
  r = sp_run(argv, env2, 20);
  cr_expect_eq(r.status, 1, "%s", r.out);
  cr_expect_null(strstr(r.out, "hush-7f3a9c"), "%s", r.out);
  free(r.out);
  /* Nor through zcoll_config_get. */
  zcoll_config_t *cfg;
  char buf[64];
  cr_assert_eq(zcoll_config_create(&cfg), ZCOLL_OK);
  cr_assert_eq(zcoll_config_set(cfg, "JOB_KEY", "hush-7f3a9c"), ZCOLL_OK);
  cr_assert_eq(zcoll_config_get(cfg, "JOB_KEY", buf, sizeof(buf)), ZCOLL_OK);
  cr_expect_str_eq(buf, "(set)");
  zcoll_config_free(cfg);
}

/* ---- the listening socket ------------------------------------------------------ */

/* Second communicator in the same processes: rank 0's ZCOLL_ROOT_FD was used by the
 * first one. */
Test(rendezvous, second_init_under_zcoll_run_works, .timeout = 120) {
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", "3", SP_PROG("run_twice"), NULL};
  const char *env[] = {"ZCOLL_TRANSPORT=shm", "ZCOLL_TIMEOUT=30", NULL};
  struct sp_result r = sp_run(argv, env, 100);
  cr_expect_eq(r.status, 0, "%s", r.out);
  cr_expect(strstr(r.out, "twice ok"), "%s", r.out);
  free(r.out);
}

Test(rendezvous, second_job_on_the_same_inherited_socket, .timeout = 60) {
  struct rt_job job;
  job_init(&job, 3, "k");
  cr_assert_eq(rt_run_prepared(&job), 0, "%s", job.first);
  cr_assert_eq(rt_run_prepared(&job), 0, "second: %s", job.first);
  close(job.lfd);
}

Test(rendezvous, gone_root_fd_falls_back_to_root, .timeout = 60) {
  struct rt_job job;
  job_init(&job, 2, "k");
  close(job.lfd);
  job.lfd = 987; /* not open: rank 0 must listen on ZCOLL_ROOT itself */
  cr_assert_eq(rt_run_prepared(&job), 0, "%s", job.first);
}

/* The LISTEN entry of `port` in /proc/net/tcp: its local address as hex, or "". */
static void listen_addr(int port, char *out, size_t len) {
  out[0] = '\0';
  FILE *f = fopen("/proc/net/tcp", "r");
  cr_assert_not_null(f);
  char line[512];
  while (fgets(line, sizeof(line), f)) {
    char local[64];
    unsigned st, p;
    if (sscanf(line, " %*d: %63[0-9A-Fa-f]:%x %*s %x", local, &p, &st) == 3 && p == (unsigned)port &&
        st == 0x0A)
      snprintf(out, len, "%s", local);
  }
  fclose(f);
}

struct lone_root {
  int port;
  const char *root;
  zcoll_status_t st;
};

static void *lone_root_main(void *arg) {
  struct lone_root *l = arg;
  char err[600];
  const char *set[] = {"ROOT", l->root, "TIMEOUT", "2", NULL};
  l->st = one_rank(0, 2, l->port, -1, set, err, sizeof(err));
  return NULL;
}

static void check_bind(const char *fmt, const char *want) {
  struct lone_root l = {free_port(), NULL, 0};
  char root[64], addr[64] = "";
  snprintf(root, sizeof(root), fmt, l.port);
  l.root = root;
  pthread_t th;
  pthread_create(&th, NULL, lone_root_main, &l);
  for (int i = 0; i < 100 && !addr[0]; i++) {
    usleep(20 * 1000);
    listen_addr(l.port, addr, sizeof(addr));
  }
  pthread_join(th, NULL);
  cr_expect_str_eq(addr, want, "%s", root);
  cr_expect_eq(l.st, ZCOLL_ERR_TIMEOUT, "%s", zcoll_strerror(l.st));
}

Test(rendezvous, loopback_root_binds_loopback_only, .timeout = 60) {
  check_bind("127.0.0.1:%d", "0100007F");
}

Test(rendezvous, every_interface_only_when_asked, .timeout = 60) {
  check_bind("0.0.0.0:%d", "00000000");
}

Test(rendezvous, star_sockets_have_keepalive_and_user_timeout) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  zcoll__sock_tune(fd, 30);
  int v = 0;
  socklen_t l = sizeof(v);
  cr_expect(!getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &v, &l) && v == 1);
  cr_expect(!getsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &v, &l) && v == 10, "idle %d", v);
  cr_expect(!getsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &v, &l) && v == 3, "count %d", v);
  unsigned u = 0;
  l = sizeof(u);
  cr_expect(!getsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &u, &l) && u == 30000, "user %u", u);
  close(fd);
}

Test(rendezvous, fd_limit_is_raised_or_reported) {
  struct rlimit rl;
  cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 2048) cr_skip_test("hard limit too low");
  struct rlimit low = {256, rl.rlim_max};
  cr_assert_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
  cr_expect_eq(zcoll__sock_reserve_fds(2000, "test"), ZCOLL_OK, "%s", zcoll_last_error());
  cr_assert_eq(getrlimit(RLIMIT_NOFILE, &low), 0);
  cr_expect_geq(low.rlim_cur, 2000);
  struct rlimit tight = {100, 200};
  cr_assert_eq(setrlimit(RLIMIT_NOFILE, &tight), 0);
  cr_expect_eq(zcoll__sock_reserve_fds(1000, "rank 0 of this job"), ZCOLL_ERR_BOOTSTRAP);
  cr_expect(strstr(zcoll_last_error(), "hard limit"), "%s", zcoll_last_error());
}

/* The star of 70 ranks under a soft limit it would not fit in. */
Test(rendezvous, star_grows_past_a_low_soft_fd_limit, .timeout = 120) {
  struct rlimit rl;
  cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 1024) cr_skip_test("hard limit too low");
  struct rlimit low = {100, rl.rlim_max};
  struct rt_job job;
  job_init(&job, 70, "k");
  job.settings[1][0] = "ALGO";
  job.settings[1][1] = "ring";
  job.settings[2][0] = "LOG";
  job.settings[2][1] = "none";
  cr_assert_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
  cr_expect_eq(rt_run_prepared(&job), 0, "%s", job.first);
  close(job.lfd);
}

/* The job id comes from the launcher that placed the ranks, and never from a guess
 * that could split one job in two. */
Test(rendezvous, job_id_from_the_launcher) {
  char id[160];
  unsetenv("ZCOLL_RANK");
  unsetenv("PMI_RANK");
  unsetenv("OMPI_MCA_ess_base_jobid");
  unsetenv("PMIX_NAMESPACE");
  setenv("SLURM_JOB_ID", "4242", 1);
  setenv("SLURM_STEP_ID", "3", 1);
  setenv("SLURM_PROCID", "1", 1);
  zcoll__bs_job_id("", id, sizeof(id));
  cr_expect_str_eq(id, "slurm:4242.3");
  zcoll__bs_job_id("mine", id, sizeof(id));
  cr_expect_str_eq(id, "mine");
  setenv("PMIX_NAMESPACE", "ns7", 1);
  zcoll__bs_job_id("", id, sizeof(id));
  cr_expect_str_eq(id, "pmix:ns7");
  setenv("OMPI_MCA_ess_base_jobid", "99", 1); /* mpirun inside an allocation */
  zcoll__bs_job_id("", id, sizeof(id));
  cr_expect_str_eq(id, "ompi:99");
  unsetenv("OMPI_MCA_ess_base_jobid");
  setenv("ZCOLL_RANK", "1", 1); /* placed by hand, perhaps one srun step per rank */
  zcoll__bs_job_id("", id, sizeof(id));
  cr_expect_str_eq(id, "");
}
