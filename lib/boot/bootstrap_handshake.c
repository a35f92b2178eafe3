/* bootstrap_handshake.c -- admitting ranks: rank 0's non-blocking accept loop and every
 * other rank's side of the challenge-response (bootstrap_wire.h has the exchange). */
#include "bootstrap_handshake.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap_auth.h"
#include "base/log.h"
#include "sock.h"

/* ---- rank 0 ---------------------------------------------------------------------- */

struct conn { /* a connection not yet admitted */
  int fd;
  int64_t deadline; /* its own: ZCOLL_BS_HANDSHAKE_S after accept */
  int proving;      /* 0: waiting for the hello; 1: challenge sent, waiting for the proof */
  size_t have;
  uint8_t buf[ZCOLL_BS_MAX_HANDSHAKE_FRAME];
  struct zcoll__bs_hello hello;
  uint8_t nonce[ZCOLL_BS_NONCE_BYTES];
  char peer[64];
};

struct admit {
  const struct zcoll__bs_who *who;
  int *fds;
  int joined;
  struct conn *conn;
  int nconn;
};

/* Drops a connection that did not authenticate: never an error of the job. A reason is
 * only sent where it helps a misconfigured rank (another version, another job). */
static void drop(struct admit *a, int i, int warn, const char *reason, const char *tell) {
  struct conn *c = &a->conn[i];
  if (warn)
    zcoll_log_warn("bootstrap: dropped the connection from %s: %s", c->peer, reason);
  else
    zcoll_log_info("bootstrap: dropped the connection from %s: %s", c->peer, reason);
  if (tell) zcoll__sock_send_msg(c->fd, ZCOLL_BS_REJECT, tell, (uint32_t)strlen(tell), 0);
  close(c->fd);
  a->conn[i] = a->conn[--a->nconn];
}

/* The connection proved it knows the key: from here on, it speaks for the job. */
static zcoll_status_t admit(struct admit *a, int i) {
  struct conn *c = &a->conn[i];
  const struct zcoll__bs_who *who = a->who;
  uint32_t r = c->hello.rank;
  char reason[200] = "";
  if (c->hello.size != (uint32_t)who->size)
    snprintf(reason, sizeof(reason), "rank %u (from %s) says the job has %u ranks, rank 0 says %d",
             r, c->peer, c->hello.size, who->size);
  else if (r == 0 || r >= (uint32_t)who->size)
    snprintf(reason, sizeof(reason), "rank %u (from %s) is out of range for %d ranks", r, c->peer,
             who->size);
  else if (a->fds[r] >= 0)
    snprintf(reason, sizeof(reason), "rank %u joined twice (again from %s)", r, c->peer);
  if (reason[0]) {
    zcoll__sock_send_msg(c->fd, ZCOLL_BS_REJECT, reason, (uint32_t)strlen(reason), 0);
    close(c->fd);
    a->conn[i] = a->conn[--a->nconn];
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "bootstrap: inconsistent job: %s", reason);
  }
  if (zcoll__sock_send_msg(c->fd, ZCOLL_BS_WELCOME, NULL, 0, zcoll__deadline(1.0)) != ZCOLL_OK) {
    drop(a, i, 1, "rank left before it was welcomed", NULL);
    return ZCOLL_OK;
  }
  zcoll_log_debug("bootstrap: rank %u joined from %s", r, c->peer);
  a->fds[r] = c->fd;
  a->joined++;
  a->conn[i] = a->conn[--a->nconn];
  return ZCOLL_OK;
}

static zcoll_status_t on_hello(struct admit *a, int i, const uint8_t *payload, uint32_t len) {
  struct conn *c = &a->conn[i];
  const char *why = "";
  if (zcoll__bs_parse_hello(payload, len, &c->hello, &why)) {
    drop(a, i, 0, why, NULL);
    return ZCOLL_OK;
  }
  if (memcmp(c->hello.jobid, a->who->jobid, ZCOLL_BS_JOBID_BYTES) != 0) {
    char reason[160];
    snprintf(reason, sizeof(reason), "a hello for another job (job id differs from '%s')",
             a->who->job_id_text);
    drop(a, i, 1, reason,
         "rank 0 on this port serves another job (the job ids differ; to join it, set the "
         "same ZCOLL_JOB_ID on every rank)");
    return ZCOLL_OK;
  }
  uint8_t msg[ZCOLL_BS_CHALLENGE_BYTES];
  zcoll_status_t st = zcoll__bs_nonce(c->nonce);
  if (st == ZCOLL_OK)
    st = zcoll__bs_mac(a->who->key, ZCOLL_BS_ROOT_TO_RANK, c->hello.jobid, c->hello.rank,
                       c->hello.size, c->hello.nonce, c->nonce, msg + ZCOLL_BS_NONCE_BYTES);
  if (st != ZCOLL_OK) return st;
  memcpy(msg, c->nonce, ZCOLL_BS_NONCE_BYTES);
  /* A fresh socket has room for 80 bytes: no deadline needed, and none can block us. */
  if (zcoll__sock_send_msg(c->fd, ZCOLL_BS_CHALLENGE, msg, sizeof(msg), 0) != ZCOLL_OK) {
    drop(a, i, 0, "it did not take the challenge", NULL);
    return ZCOLL_OK;
  }
  c->proving = 1;
  c->have = 0;
  return ZCOLL_OK;
}

static zcoll_status_t on_proof(struct admit *a, int i, const uint8_t *payload, uint32_t len) {
  struct conn *c = &a->conn[i];
  const char *why = "";
  uint8_t got[ZCOLL_BS_MAC_BYTES], want[ZCOLL_BS_MAC_BYTES];
  if (zcoll__bs_parse_proof(payload, len, got, &why)) {
    drop(a, i, 0, why, NULL);
    return ZCOLL_OK;
  }
  zcoll_status_t st = zcoll__bs_mac(a->who->key, ZCOLL_BS_RANK_TO_ROOT, c->hello.jobid,
                                    c->hello.rank, c->hello.size, c->hello.nonce, c->nonce, want);
  if (st != ZCOLL_OK) return st;
  if (!zcoll__bs_mac_equal(got, want)) {
    char reason[96];
    snprintf(reason, sizeof(reason), "claimed rank %u but does not know the job key",
             c->hello.rank);
    drop(a, i, 1, reason, NULL);
    return ZCOLL_OK;
  }
  return admit(a, i);
}

/* Reads what connection i has sent, without blocking; acts on a complete frame. Recurses
 * once at most: a frame found bad after a read is dropped by the first check, at once. */
static zcoll_status_t on_readable(struct admit *a, int i) { /* NOLINT(misc-no-recursion) */
  struct conn *c = &a->conn[i];
  const char *why = "";
  long need = zcoll__bs_frame_need(c->buf, c->have, ZCOLL_BS_HELLO_BYTES, &why);
  if (need < 0) {
    /* Our magic with another version is a zcoll of another release: worth a warning. */
    int ours = c->buf[0] == 0x42 && c->buf[1] == 0x4c && c->buf[2] == 0x43 && c->buf[3] == 0x5a;
    drop(a, i, ours, why, ours ? "rank 0 speaks another zcoll rendezvous version" : NULL);
    return ZCOLL_OK;
  }
  ssize_t n = recv(c->fd, c->buf + c->have, (size_t)need - c->have, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return ZCOLL_OK;
  if (n <= 0) {
    drop(a, i, 0, n == 0 ? "closed before authenticating" : strerror(errno), NULL);
    return ZCOLL_OK;
  }
  c->have += (size_t)n;
  if ((need = zcoll__bs_frame_need(c->buf, c->have, ZCOLL_BS_HELLO_BYTES, &why)) < 0)
    return on_readable(a, i); /* words the drop */
  if (c->have < (size_t)need) return ZCOLL_OK;
  struct zcoll__bs_hdr h;
  zcoll__bs_parse_hdr(c->buf, c->have, ZCOLL_BS_HELLO_BYTES, &h, &why);
  const uint8_t *payload = c->buf + ZCOLL_BS_HDR_BYTES;
  if (!c->proving && h.type == ZCOLL_BS_HELLO) return on_hello(a, i, payload, h.len);
  if (c->proving && h.type == ZCOLL_BS_PROOF) return on_proof(a, i, payload, h.len);
  drop(a, i, 0, c->proving ? "expected a proof" : "expected a hello", NULL);
  return ZCOLL_OK;
}

static int oldest(const struct admit *a) {
  int o = 0;
  for (int i = 1; i < a->nconn; i++)
    if (a->conn[i].deadline < a->conn[o].deadline) o = i;
  return o;
}

/* *more is cleared when the accept queue is empty. The listening socket may be an
 * inherited blocking one (its flags are shared with the launcher's copy, so they are
 * left alone): accept only when poll says a connection is waiting. */
static zcoll_status_t accept_one(struct admit *a, int lfd, int *more) {
  struct pollfd p = {.fd = lfd, .events = POLLIN};
  if (poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN)) {
    *more = 0;
    return ZCOLL_OK;
  }
  int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) *more = 0;
    if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN || errno == EWOULDBLOCK)
      return ZCOLL_OK;
    if (errno == EMFILE || errno == ENFILE) {
      /* Out of descriptors: make room by dropping the oldest stranger; with none to
       * drop, waiting would only spin on the still-readable listening socket. */
      if (!a->nconn)
        return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "bootstrap: accept: %s (RLIMIT_NOFILE)",
                           strerror(errno));
      drop(a, oldest(a), 1, "out of file descriptors", NULL);
      *more = 0;
      return ZCOLL_OK;
    }
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "bootstrap: accept: %s", strerror(errno));
  }
  zcoll__sock_tune(fd, a->who->timeout);
  /* Past the cap, the oldest stranger makes room: a real rank completes in a moment. */
  if (a->nconn == ZCOLL_BS_MAX_PENDING) drop(a, oldest(a), 1, "too many connections at once", NULL);
  struct conn *c = &a->conn[a->nconn++];
  memset(c, 0, sizeof(*c));
  c->fd = fd;
  c->deadline = zcoll__deadline(ZCOLL_BS_HANDSHAKE_S);
  zcoll__sock_peer_name(fd, c->peer, sizeof(c->peer));
  return ZCOLL_OK;
}

static zcoll_status_t admit_loop(struct admit *a, int lfd, struct pollfd *pfd) {
  const struct zcoll__bs_who *who = a->who;
  int64_t deadline = zcoll__deadline(who->timeout);
  while (a->joined < who->size) {
    int64_t now = zcoll__now_ms();
    if (now >= deadline) {
      int r = 1;
      while (r < who->size && a->fds[r] >= 0) r++;
      return zcoll__fail(ZCOLL_ERR_TIMEOUT,
                         "bootstrap: only %d of %d ranks connected within %.0f s (ZCOLL_TIMEOUT; "
                         "rank %d is missing)",
                         a->joined, who->size, who->timeout, r);
    }
    int64_t wake = deadline < now + 1000 ? deadline : now + 1000;
    for (int i = a->nconn - 1; i >= 0; i--) {
      if (now < a->conn[i].deadline) {
        if (a->conn[i].deadline < wake) wake = a->conn[i].deadline;
        continue;
      }
      char reason[96];
      snprintf(reason, sizeof(reason), "no %s within %.0f s",
               a->conn[i].proving ? "proof" : "hello", ZCOLL_BS_HANDSHAKE_S);
      drop(a, i, 0, reason, NULL);
    }
    pfd[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
    for (int i = 0; i < a->nconn; i++)
      pfd[i + 1] = (struct pollfd){.fd = a->conn[i].fd, .events = POLLIN};
    int n = a->nconn;
    int rc = poll(pfd, (nfds_t)n + 1, (int)(wake - now));
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "bootstrap: poll: %s", strerror(errno));
    /* Back to front: a dropped connection is replaced by the last one. */
    for (int i = n - 1; i >= 0; i--) {
      if (!pfd[i + 1].revents) continue;
      zcoll_status_t st = on_readable(a, i);
      if (st != ZCOLL_OK) return st;
    }
    /* Several per wakeup: under a flood of strangers the queue must drain faster than
     * it fills, or real ranks' connections wait in it (or in SYN retries). */
    int more = pfd[0].revents & POLLIN;
    for (int k = 0; k < 16 && more; k++) {
      zcoll_status_t st = accept_one(a, lfd, &more);
      if (st != ZCOLL_OK) return st;
    }
  }
  return ZCOLL_OK;
}

zcoll_status_t zcoll__bs_accept_all(const struct zcoll__bs_who *who, int lfd, int *fds) {
  struct admit a = {who, fds, 1, calloc(ZCOLL_BS_MAX_PENDING, sizeof(struct conn)), 0};
  struct pollfd *pfd = calloc(ZCOLL_BS_MAX_PENDING + 1, sizeof(*pfd));
  zcoll_status_t st;
  if (!a.conn || !pfd)
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "bootstrap: out of memory");
  else
    st = admit_loop(&a, lfd, pfd);
  while (a.nconn) {
    close(a.conn[a.nconn - 1].fd);
    a.nconn--;
  }
  free(a.conn);
  free(pfd);
  if (st != ZCOLL_OK) {
    char text[200];
    snprintf(text, sizeof(text), "rank 0 gave up: %s", zcoll__last_error());
    for (int r = 1; r < who->size; r++)
      if (fds[r] >= 0)
        zcoll__sock_send_msg(fds[r], ZCOLL_BS_REJECT, text, (uint32_t)strlen(text),
                             zcoll__deadline(1));
  }
  return st;
}

/* ---- every other rank ------------------------------------------------------------ */

/* Rank 0's reason, which may come from anyone: printable characters only. */
static void reason_text(const void *payload, uint32_t len, char *out, size_t outlen) {
  size_t n = len < outlen - 1 ? len : outlen - 1;
  for (size_t i = 0; i < n; i++) {
    char ch = ((const char *)payload)[i];
    if (ch < 0x20 || ch >= 0x7f) ch = '?';
    out[i] = ch;
  }
  out[n] = '\0';
}

/* Receives rank 0's next handshake message; any other outcome is the error. */
static zcoll_status_t join_recv(const struct zcoll__bs_who *who, int fd, const char *root,
                                int64_t deadline, uint16_t want, void **payload, uint32_t *len) {
  uint16_t type = 0;
  zcoll_status_t st = zcoll__sock_recv_msg(fd, 4096, deadline, &type, payload, len);
  if (st == ZCOLL_ERR_PEER_FAILED)
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP,
                       "bootstrap: %s closed the connection during the handshake of rank %d (not "
                       "a zcoll rank 0 of this job?)",
                       root, who->rank);
  if (st == ZCOLL_ERR_TIMEOUT)
    return zcoll__fail(st, "bootstrap: no answer from rank 0 at %s within %.0f s (ZCOLL_TIMEOUT)",
                       root, who->timeout);
  if (st != ZCOLL_OK)
    return zcoll__fail(st, "bootstrap: %s did not answer like a zcoll rank 0 of this version",
                       root);
  if (type == ZCOLL_BS_REJECT) {
    char reason[200];
    reason_text(*payload, *len, reason, sizeof(reason));
    free(*payload);
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "bootstrap: rank 0 at %s rejected rank %d: %s", root,
                       who->rank, reason);
  }
  if (type != want) {
    free(*payload);
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP,
                       "bootstrap: unexpected message %u from %s during the handshake", type, root);
  }
  return ZCOLL_OK;
}

zcoll_status_t zcoll__bs_join(const struct zcoll__bs_who *who, int fd, const char *root,
                              int64_t deadline) {
  struct zcoll__bs_hello h = {(uint32_t)who->rank, (uint32_t)who->size, {0}, {0}};
  memcpy(h.jobid, who->jobid, sizeof(h.jobid));
  zcoll_status_t st = zcoll__bs_nonce(h.nonce);
  if (st != ZCOLL_OK) return st;
  uint8_t hello[ZCOLL_BS_HELLO_BYTES];
  zcoll__bs_put_hello(hello, &h);
  if ((st = zcoll__sock_send_msg(fd, ZCOLL_BS_HELLO, hello, sizeof(hello), deadline)) != ZCOLL_OK)
    return zcoll__fail(st == ZCOLL_ERR_TIMEOUT ? st : ZCOLL_ERR_BOOTSTRAP,
                       "bootstrap: cannot send rank %d's hello to %s", who->rank, root);
  void *payload;
  uint32_t len;
  if ((st = join_recv(who, fd, root, deadline, ZCOLL_BS_CHALLENGE, &payload, &len)) != ZCOLL_OK)
    return st;
  struct zcoll__bs_challenge c;
  const char *why = "";
  int bad = zcoll__bs_parse_challenge(payload, len, &c, &why);
  free(payload);
  if (bad) return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "bootstrap: %s sent %s", root, why);
  uint8_t want[ZCOLL_BS_MAC_BYTES], proof[ZCOLL_BS_MAC_BYTES];
  if ((st = zcoll__bs_mac(who->key, ZCOLL_BS_ROOT_TO_RANK, h.jobid, h.rank, h.size, h.nonce,
                          c.nonce, want)) != ZCOLL_OK)
    return st;
  /* Rank 0 proves itself first: a stranger on the port learns nothing it could use. */
  if (!zcoll__bs_mac_equal(c.mac, want))
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP,
                       "bootstrap: job key mismatch: the process at %s could not prove that it "
                       "knows ZCOLL_JOB_KEY (another job's rank 0, a process squatting the "
                       "port, or a different key); not trusting it",
                       root);
  if ((st = zcoll__bs_mac(who->key, ZCOLL_BS_RANK_TO_ROOT, h.jobid, h.rank, h.size, h.nonce,
                          c.nonce, proof)) != ZCOLL_OK)
    return st;
  if ((st = zcoll__sock_send_msg(fd, ZCOLL_BS_PROOF, proof, sizeof(proof), deadline)) != ZCOLL_OK)
    return zcoll__fail(st == ZCOLL_ERR_TIMEOUT ? st : ZCOLL_ERR_BOOTSTRAP,
                       "bootstrap: cannot send rank %d's proof to %s", who->rank, root);
  if ((st = join_recv(who, fd, root, deadline, ZCOLL_BS_WELCOME, &payload, &len)) != ZCOLL_OK)
    return st;
  free(payload);
  return ZCOLL_OK;
}
