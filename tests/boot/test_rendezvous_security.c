/*
 * The rendezvous against strangers, squatters and other jobs: the key never crosses
 * the wire, nothing unauthenticated is fatal, only an authenticated contradiction is.
 * Real sockets on 127.0.0.1 only; ranks are threads over the loopback transport.
 */
#include "base/log.h"
#include "rendezvous_helpers.h"

/* ---- a stranger that speaks the protocol but does not know the key --------------- */

struct stranger {
  int fd;
  struct zcoll__bs_hello h;
  int got_challenge, dropped;
  pthread_t th;
};

static void *stranger_main(void *arg) {
  struct stranger *s = arg;
  struct zcoll__bs_hello h = s->h;
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
    zcoll__bs_mac("a-guess", ZCOLL_BS_RANK_TO_ROOT, h.jobid, h.rank, h.size, h.nonce, c.nonce, mac);
    zcoll__sock_send_msg(s->fd, ZCOLL_BS_PROOF, mac, sizeof(mac), zcoll__deadline(5));
  }
  free(payload);
  s->dropped = closed_within(s->fd, 10);
  return NULL;
}

/* Connects and says hello before returning, so that the hello is queued ahead of any
 * real rank; a thread then answers the challenge with a guessed key. */
static void stranger_start(struct stranger *s, int port, uint32_t rank, uint32_t size) {
  memset(s, 0, sizeof(*s));
  s->fd = connect_to(port);
  s->h.rank = rank;
  s->h.size = size;
  zcoll__bs_job_digest("", s->h.jobid); /* the same (absent) job id as the job's */
  uint8_t hello[ZCOLL_BS_HELLO_BYTES];
  zcoll__bs_put_hello(hello, &s->h);
  cr_assert_eq(
      zcoll__sock_send_msg(s->fd, ZCOLL_BS_HELLO, hello, sizeof(hello), zcoll__deadline(5)),
      ZCOLL_OK);
  pthread_create(&s->th, NULL, stranger_main, s);
}

static void run_past_stranger(uint32_t rank, uint32_t size) {
  struct rt_job job;
  job_init(&job, 3, "the-real-job");
  struct stranger s;
  stranger_start(&s, job.port, rank, size);
  double t0 = sp_now();
  cr_assert_eq(rt_run_prepared(&job), 0, "%s", job.first);
  cr_expect_lt(sp_now() - t0, 4.0, "the job took %.1f s", sp_now() - t0);
  pthread_join(s.th, NULL);
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
  for (int i = 0; i < 30; i++) {                               /* a crowd of 4-byte senders */
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

/* The accept queue of the LISTEN socket on `port` (rx_queue in /proc/net/tcp) reaches
 * n within `seconds`. */
static int wait_backlog(int port, unsigned n, double seconds) {
  double end = sp_now() + seconds;
  while (sp_now() < end) {
    FILE *f = fopen("/proc/net/tcp", "r");
    char line[512];
    unsigned queued = 0;
    while (f && fgets(line, sizeof(line), f)) {
      unsigned p, st, rx;
      if (sscanf(line, " %*d: %*[0-9A-Fa-f]:%x %*s %x %*x:%x", &p, &st, &rx) == 3 &&
          p == (unsigned)port && st == 0x0A)
        queued = rx;
    }
    if (f) fclose(f);
    if (queued >= n) return 1;
    usleep(10 * 1000);
  }
  return 0;
}

Test(rendezvous, two_jobs_on_one_port_do_not_kill_each_other, .timeout = 60) {
  struct rt_job job;
  job_init(&job, 2, NULL); /* no key at all: only the job ids tell the jobs apart */
  job.settings[1][0] = "JOB_ID";
  job.settings[1][1] = "job-A";
  struct foreign f[2] = {{1, job.port, 0, ""}, {2, job.port, 0, ""}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, foreign_main, &f[i]);
  /* Job B's ranks wait in rank 0's accept queue before job A starts. */
  cr_assert(wait_backlog(job.port, 2, 10), "job B's ranks never connected");
  cr_assert_eq(rt_run_prepared(&job), 0, "%s", job.first);
  for (int i = 0; i < 2; i++) {
    pthread_join(th[i], NULL);
    cr_expect_eq(f[i].st, ZCOLL_ERR_BOOTSTRAP, "%s", f[i].err);
    cr_expect(strstr(f[i].err, "another job"), "%s", f[i].err);
  }
  close(job.lfd);
}

/* The drop is logged with the peer's address, and the key appears nowhere. Rank 0's
 * accept loop alone, so that the stranger is judged before rank 1 comes. */
Test(rendezvous, drop_is_logged_with_peer_address, .timeout = 60) {
  static const char key[] = "key-that-must-not-be-logged";
  char path[] = "/tmp/zcoll_rdv_log_XXXXXX";
  int logfd = mkstemp(path);
  cr_assert(logfd >= 0);
  unlink(path);
  int saved = dup(2);
  dup2(logfd, 2);
  zcoll__log_set_level(ZCOLL_LOG_INFO);
  struct acceptor a = {who_of(0, 2, key), -1, {-1, -1, -1, -1}, ZCOLL_OK};
  int port;
  a.lfd = listen_local(&port);
  struct stranger s;
  stranger_start(&s, port, 1, 2);
  pthread_t th;
  pthread_create(&th, NULL, acceptor_main, &a);
  pthread_join(s.th, NULL); /* until rank 0 has dropped it */
  int fd = connect_to(port);
  struct zcoll__bs_who w1 = who_of(1, 2, key);
  zcoll_status_t st = zcoll__bs_join(&w1, fd, "test", zcoll__deadline(10));
  pthread_join(th, NULL);
  dup2(saved, 2);
  close(saved);
  char log[65536] = "";
  ssize_t n = pread(logfd, log, sizeof(log) - 1, 0);
  log[n > 0 ? n : 0] = '\0';
  close(logfd);
  cr_expect(s.got_challenge && s.dropped);
  cr_expect_eq(st, ZCOLL_OK, "%s", zcoll_last_error());
  cr_expect_eq(a.st, ZCOLL_OK, "%s", zcoll_strerror(a.st));
  cr_expect(strstr(log, "dropped the connection from 127.0.0.1:"), "%s", log);
  cr_expect(strstr(log, "claimed rank 1 but does not know the job key"), "%s", log);
  cr_expect_null(strstr(log, key), "%s", log);
  close(a.fds[1]);
  close(fd);
  close(s.fd);
  close(a.lfd);
}
