/* bootstrap.c -- the TCP rendezvous: a star of authenticated sockets around rank 0. */
#include "bootstrap.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "sock.h"

enum {
  MSG_HELLO = 1, /* rank -> 0: u32 rank, u32 size, u32 keylen, key */
  MSG_WELCOME,   /* 0 -> rank */
  MSG_REJECT,    /* 0 -> rank: reason text */
  MSG_GATHER,    /* rank -> 0: contribution */
  MSG_GATHERED,  /* 0 -> rank: every contribution */
  MSG_ABORT,     /* either way: u32 origin, u32 status, text */
  MSG_BYE,       /* rank -> 0: leaving */
  MSG_BYE_ACK    /* 0 -> rank: everybody is leaving */
};

#define MAX_MSG (64u << 20)
#define HELLO_READ_S 5.0 /* a connection that says nothing this long is a stray */

struct kid { /* rank 0's view of one other rank */
  int fd;
  uint16_t type; /* a message received ahead of time (GATHER or BYE), 0: none */
  void *payload;
  uint32_t len;
  int gone; /* said BYE and was answered */
};

struct zcoll__bootstrap {
  int rank, size;
  double timeout;
  int fd;          /* rank != 0: the socket to rank 0 */
  struct kid *kid; /* rank 0: one per rank, kid[0] unused */
  zcoll_status_t failed;
  char why[256];
};

struct abort_msg {
  uint32_t origin, status;
  char text[200];
};

static zcoll_status_t fail_sticky(struct zcoll__bootstrap *bs, zcoll_status_t st, const char *fmt,
                                  ...) __attribute__((format(printf, 3, 4)));
static zcoll_status_t fail_sticky(struct zcoll__bootstrap *bs, zcoll_status_t st, const char *fmt,
                                  ...) {
  if (bs->failed == ZCOLL_OK) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(bs->why, sizeof(bs->why), fmt, ap);
    va_end(ap);
    bs->failed = st;
    return zcoll__fail(st, "%s", bs->why);
  }
  /* Already failed: report the first cause again, it is the one that matters. */
  return zcoll__fail(bs->failed, "%s", bs->why);
}

static void send_abort(int fd, uint32_t origin, zcoll_status_t st, const char *text) {
  struct abort_msg m = {origin, (uint32_t)st, ""};
  snprintf(m.text, sizeof(m.text), "%s", text);
  /* Best effort with a short deadline: the receiver may be gone too. */
  zcoll__sock_send_msg(fd, MSG_ABORT, &m, (uint32_t)sizeof(m), zcoll__deadline(1.0));
}

/* Rank 0 tells everyone but `except`. */
static void relay_abort(struct zcoll__bootstrap *bs, int except, uint32_t origin,
                        zcoll_status_t st, const char *text) {
  for (int r = 1; r < bs->size; r++)
    if (r != except && bs->kid[r].fd >= 0 && !bs->kid[r].gone)
      send_abort(bs->kid[r].fd, origin, st, text);
}

static zcoll_status_t take_abort(struct zcoll__bootstrap *bs, int from, const void *payload,
                                 uint32_t len) {
  struct abort_msg m = {(uint32_t)from, ZCOLL_ERR_PEER_FAILED, "no reason given"};
  memcpy(&m, payload, len < sizeof(m) ? len : sizeof(m));
  m.text[sizeof(m.text) - 1] = '\0';
  zcoll_status_t st = m.status == ZCOLL_ERR_MISMATCH ? ZCOLL_ERR_MISMATCH : ZCOLL_ERR_PEER_FAILED;
  if (bs->rank == 0) relay_abort(bs, from, m.origin, st, m.text);
  return fail_sticky(bs, st, "rank %u aborted: %s", m.origin, m.text);
}

/* ---- rank 0 ---------------------------------------------------------------------- */

static void kid_drop_pending(struct kid *k) {
  free(k->payload);
  k->payload = NULL;
  k->type = 0;
  k->len = 0;
}

/* Reads one message from rank r and files it. */
static zcoll_status_t root_read(struct zcoll__bootstrap *bs, int r, int64_t deadline) {
  struct kid *k = &bs->kid[r];
  uint16_t type;
  void *payload;
  uint32_t len;
  zcoll_status_t st = zcoll__sock_recv_msg(k->fd, MAX_MSG, deadline, &type, &payload, &len, NULL);
  if (st == ZCOLL_ERR_PEER_FAILED) {
    char text[64];
    snprintf(text, sizeof(text), "rank %d disconnected", r);
    relay_abort(bs, r, (uint32_t)r, ZCOLL_ERR_PEER_FAILED, text);
    return fail_sticky(bs, ZCOLL_ERR_PEER_FAILED, "rank %d disconnected (died or exited early)",
                       r);
  }
  if (st != ZCOLL_OK) return fail_sticky(bs, st, "bootstrap: reading from rank %d failed", r);
  if (type == MSG_ABORT) {
    st = take_abort(bs, r, payload, len);
    free(payload);
    return st;
  }
  if ((type != MSG_GATHER && type != MSG_BYE) || k->type) {
    free(payload);
    return fail_sticky(bs, ZCOLL_ERR_BOOTSTRAP, "bootstrap: unexpected message %u from rank %d",
                       type, r);
  }
  k->type = type;
  k->payload = payload;
  k->len = len;
  return ZCOLL_OK;
}

/* Reads whatever has arrived, waiting up to timeout_ms (-1: until the deadline) until
 * every rank has a message of `want` filed (want 0: do not wait). */
static zcoll_status_t root_pump(struct zcoll__bootstrap *bs, uint16_t want, int64_t deadline) {
  struct pollfd *fds = calloc((size_t)bs->size, sizeof(*fds));
  int *who = calloc((size_t)bs->size, sizeof(*who));
  zcoll_status_t st = ZCOLL_OK;
  if (!fds || !who) {
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "bootstrap: out of memory");
    goto out;
  }
  for (;;) {
    int n = 0, missing = 0;
    for (int r = 1; r < bs->size; r++) {
      struct kid *k = &bs->kid[r];
      if (k->gone) continue;
      if (want && k->type != want) missing++;
      if (k->type) continue; /* one message ahead at most: each rank waits for our reply */
      fds[n] = (struct pollfd){.fd = k->fd, .events = POLLIN};
      who[n++] = r;
    }
    if (want && !missing) break;
    int64_t left = deadline == INT64_MAX ? -1 : deadline - zcoll__now_ms();
    if (!want) left = 0;
    if (left < -1) left = 0;
    int rc = poll(fds, (nfds_t)n, left > 1000000 ? 1000000 : (int)left);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) {
      st = zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "bootstrap: poll failed: %s", strerror(errno));
      goto out;
    }
    if (rc == 0) {
      if (!want) break;
      if (deadline != INT64_MAX && zcoll__now_ms() >= deadline) {
        int r = 1;
        while (r < bs->size && (bs->kid[r].gone || bs->kid[r].type == want)) r++;
        st = fail_sticky(bs, ZCOLL_ERR_TIMEOUT, "bootstrap: rank %d did not answer in %.0f s", r,
                         bs->timeout);
        goto out;
      }
      continue;
    }
    for (int i = 0; i < n; i++)
      if (fds[i].revents && (st = root_read(bs, who[i], zcoll__deadline(bs->timeout))) != ZCOLL_OK)
        goto out;
  }
out:
  free(fds);
  free(who);
  return st;
}

/* Validates one new connection's HELLO. Returns its rank, -1 for a connection to drop
 * (stray or foreign job), or -2 with *st set for a fatal inconsistency of this job. */
static int root_hello(struct zcoll__bootstrap *bs, int fd, const char *key, zcoll_status_t *st) {
  uint16_t type, version = 0;
  void *payload;
  uint32_t len;
  char reason[160];
  /* Called once the connection is readable: the rest of a hello follows at once. */
  if (zcoll__sock_recv_msg(fd, 4096, zcoll__deadline(1.0), &type, &payload, &len, &version) !=
      ZCOLL_OK) {
    zcoll_log_warn("bootstrap: dropped a connection that did not send a valid hello");
    return -1;
  }
  int rank = -1;
  if (version != ZCOLL_BS_VERSION) {
    snprintf(reason, sizeof(reason), "bootstrap version mismatch: rank 0 speaks %u, you %u",
             ZCOLL_BS_VERSION, version);
  } else if (type != MSG_HELLO || len < 12) {
    snprintf(reason, sizeof(reason), "expected a hello message");
  } else {
    uint32_t h[3];
    memcpy(h, payload, sizeof(h));
    size_t keylen = strlen(key);
    /* Compare the whole key in constant time, whatever its length. */
    unsigned diff = (h[2] != keylen) | (len != 12 + h[2]);
    for (size_t i = 0; i < keylen; i++)
      diff |= (unsigned)(key[i] ^ (i < len - 12 ? ((const char *)payload)[12 + i] : 0));
    if (diff) {
      snprintf(reason, sizeof(reason), "job key mismatch (a process of another job?)");
    } else if (h[1] != (uint32_t)bs->size || h[0] == 0 || h[0] >= (uint32_t)bs->size ||
               bs->kid[h[0]].fd >= 0) {
      if (h[1] != (uint32_t)bs->size)
        snprintf(reason, sizeof(reason), "rank %u says the job has %u ranks, rank 0 says %d",
                 h[0], h[1], bs->size);
      else
        snprintf(reason, sizeof(reason), "rank %u is out of range or already connected", h[0]);
      *st = zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "bootstrap: %s", reason);
      zcoll__sock_send_msg(fd, MSG_REJECT, reason, (uint32_t)strlen(reason), zcoll__deadline(1));
      free(payload);
      return -2;
    } else {
      rank = (int)h[0];
    }
  }
  free(payload);
  if (rank < 0) {
    zcoll_log_warn("bootstrap: rejected a connection: %s", reason);
    zcoll__sock_send_msg(fd, MSG_REJECT, reason, (uint32_t)strlen(reason), zcoll__deadline(1));
    return -1;
  }
  if (zcoll__sock_send_msg(fd, MSG_WELCOME, NULL, 0, zcoll__deadline(bs->timeout)) != ZCOLL_OK)
    return -1;
  return rank;
}

/* Connections accepted but not yet introduced: read concurrently, so that silent or
 * slow ones cannot hold up the ranks behind them. */
#define MAX_PENDING 64

struct pending {
  int fd;
  int64_t since;
};

static void drop_pending(struct pending *pend, int *npend, int i) {
  close(pend[i].fd);
  pend[i] = pend[--*npend];
}

static zcoll_status_t root_accept_all(struct zcoll__bootstrap *bs, int lfd, const char *key) {
  int64_t deadline = zcoll__deadline(bs->timeout);
  struct pending pend[MAX_PENDING];
  struct pollfd fds[MAX_PENDING + 1];
  int joined = 1, npend = 0;
  zcoll_status_t st = ZCOLL_OK;
  while (joined < bs->size && st == ZCOLL_OK) {
    int64_t now = zcoll__now_ms();
    if (now >= deadline) {
      st = zcoll__fail(ZCOLL_ERR_TIMEOUT,
                       "bootstrap: only %d of %d ranks connected within %.0f s (ZCOLL_TIMEOUT)",
                       joined, bs->size, bs->timeout);
      break;
    }
    for (int i = npend - 1; i >= 0; i--)
      if (now - pend[i].since > (int64_t)(HELLO_READ_S * 1000)) {
        zcoll_log_warn("bootstrap: dropped a connection that sent no hello in %.0f s",
                       HELLO_READ_S);
        drop_pending(pend, &npend, i);
      }
    fds[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
    for (int i = 0; i < npend; i++) fds[i + 1] = (struct pollfd){.fd = pend[i].fd, .events = POLLIN};
    int64_t left = deadline == INT64_MAX ? 1000 : deadline - now;
    int rc = poll(fds, (nfds_t)(npend + 1), left > 1000 ? 1000 : (int)left);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) {
      st = zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "bootstrap: poll: %s", strerror(errno));
      break;
    }
    /* Hellos first (back to front: dropping swaps in the last entry). */
    for (int i = npend - 1; i >= 0 && st == ZCOLL_OK; i--) {
      if (!fds[i + 1].revents) continue;
      int fd = pend[i].fd;
      pend[i] = pend[--npend];
      int r = root_hello(bs, fd, key, &st);
      if (r >= 0) {
        bs->kid[r].fd = fd;
        joined++;
      } else {
        close(fd);
      }
    }
    if (st != ZCOLL_OK || !(fds[0].revents & POLLIN)) continue;
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN) continue;
      st = zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "bootstrap: accept: %s", strerror(errno));
      break;
    }
    zcoll__sock_tune(fd);
    /* Past the cap, the oldest stranger makes room: real ranks speak at once. */
    if (npend == MAX_PENDING) drop_pending(pend, &npend, 0);
    pend[npend++] = (struct pending){fd, zcoll__now_ms()};
  }
  while (npend) drop_pending(pend, &npend, 0);
  if (st == ZCOLL_ERR_BOOTSTRAP && joined < bs->size)
    for (int i = 1; i < bs->size; i++)
      if (bs->kid[i].fd >= 0)
        zcoll__sock_send_msg(bs->kid[i].fd, MSG_REJECT, "rank 0 gave up: inconsistent job", 33,
                             zcoll__deadline(1));
  return st;
}

/* ---- every rank ------------------------------------------------------------------ */

static zcoll_status_t leaf_join(struct zcoll__bootstrap *bs, const char *root, const char *key) {
  int64_t deadline = zcoll__deadline(bs->timeout);
  zcoll_status_t st = zcoll__sock_connect(root, deadline, &bs->fd);
  if (st != ZCOLL_OK) return st;
  size_t keylen = strlen(key);
  uint32_t len = (uint32_t)(12 + keylen);
  char *hello = malloc(len);
  if (!hello) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "bootstrap: out of memory");
  uint32_t h[3] = {(uint32_t)bs->rank, (uint32_t)bs->size, (uint32_t)keylen};
  memcpy(hello, h, sizeof(h));
  memcpy(hello + 12, key, keylen);
  st = zcoll__sock_send_msg(bs->fd, MSG_HELLO, hello, len, deadline);
  free(hello);
  uint16_t type = 0;
  void *payload = NULL;
  if (st == ZCOLL_OK) st = zcoll__sock_recv_msg(bs->fd, 4096, deadline, &type, &payload, &len, NULL);
  if (st == ZCOLL_OK && type == MSG_WELCOME) {
    free(payload);
    return ZCOLL_OK;
  }
  if (st == ZCOLL_OK && type == MSG_REJECT) {
    char reason[200];
    snprintf(reason, sizeof(reason), "%.*s", (int)len, payload ? (char *)payload : "");
    free(payload);
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "bootstrap: rank 0 at %s rejected rank %d: %s", root,
                       bs->rank, reason);
  }
  free(payload);
  if (st == ZCOLL_OK) st = ZCOLL_ERR_BOOTSTRAP;
  return zcoll__fail(st, "bootstrap: no welcome from rank 0 at %s (%s)", root,
                     st == ZCOLL_ERR_TIMEOUT ? "timed out" : "connection closed or bad reply");
}

zcoll_status_t zcoll__bootstrap_create(const struct zcoll__bootstrap_params *p,
                                       struct zcoll__bootstrap **out) {
  if (strlen(p->job_key) > 4000)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "ZCOLL_JOB_KEY is longer than 4000 bytes");
  struct zcoll__bootstrap *bs = calloc(1, sizeof(*bs));
  if (!bs) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "bootstrap: out of memory");
  bs->rank = p->rank;
  bs->size = p->size;
  bs->timeout = p->timeout;
  bs->fd = -1;
  zcoll_status_t st = ZCOLL_OK;
  if (p->size == 1) goto done;
  if (p->rank != 0) {
    if (!p->root || !p->root[0]) {
      st = zcoll__fail(ZCOLL_ERR_INVALID_ARG, "ZCOLL_ROOT (host:port of rank 0) is not set");
      goto fail;
    }
    if ((st = leaf_join(bs, p->root, p->job_key)) != ZCOLL_OK) goto fail;
    goto done;
  }
  if (!(bs->kid = calloc((size_t)p->size, sizeof(*bs->kid)))) {
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "bootstrap: out of memory");
    goto fail;
  }
  for (int r = 0; r < p->size; r++) bs->kid[r].fd = -1;
  int lfd = p->root_fd;
  if (lfd >= 0) {
    int listening = 0;
    socklen_t sl = sizeof(listening);
    if (getsockopt(lfd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &sl) || !listening) {
      st = zcoll__fail(ZCOLL_ERR_INVALID_ARG, "ZCOLL_ROOT_FD=%d is not a listening socket", lfd);
      goto fail;
    }
  } else if (!p->root || !p->root[0]) {
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG, "ZCOLL_ROOT (host:port for rank 0) is not set");
    goto fail;
  } else if ((st = zcoll__sock_listen(p->root, &lfd)) != ZCOLL_OK) {
    goto fail;
  }
  st = root_accept_all(bs, lfd, p->job_key);
  close(lfd); /* nobody else may join; an inherited socket is ours to close too */
  if (st != ZCOLL_OK) goto fail;
done:
  *out = bs;
  return ZCOLL_OK;
fail:
  zcoll__bootstrap_destroy(bs, 0);
  return st;
}

zcoll_status_t zcoll__bootstrap_allgather(struct zcoll__bootstrap *bs, const void *mine,
                                          size_t len, void *all) {
  if (bs->failed) return zcoll__fail(bs->failed, "%s", bs->why);
  if (len > ZCOLL_BS_MAX_CONTRIB)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "bootstrap: allgather of %zu bytes is too large",
                       len);
  if (len) memcpy((char *)all + (size_t)bs->rank * len, mine, len);
  if (bs->size == 1) return ZCOLL_OK;
  int64_t deadline = zcoll__deadline(bs->timeout);
  zcoll_status_t st;
  if (bs->rank == 0) {
    if ((st = root_pump(bs, MSG_GATHER, deadline)) != ZCOLL_OK) return st;
    for (int r = 1; r < bs->size; r++) {
      struct kid *k = &bs->kid[r];
      if (k->len != len) {
        char text[96];
        snprintf(text, sizeof(text), "bootstrap allgather: rank %d sent %u bytes, rank 0 %zu", r,
                 k->len, len);
        relay_abort(bs, -1, 0, ZCOLL_ERR_MISMATCH, text);
        return fail_sticky(bs, ZCOLL_ERR_MISMATCH, "%s", text);
      }
      if (len) memcpy((char *)all + (size_t)r * len, k->payload, len);
      kid_drop_pending(k);
    }
    for (int r = 1; r < bs->size; r++) {
      st = zcoll__sock_send_msg(bs->kid[r].fd, MSG_GATHERED, all, (uint32_t)(len * bs->size),
                                deadline);
      if (st != ZCOLL_OK) return fail_sticky(bs, st, "bootstrap: rank %d stopped listening", r);
    }
    return ZCOLL_OK;
  }
  st = zcoll__sock_send_msg(bs->fd, MSG_GATHER, mine, (uint32_t)len, deadline);
  if (st != ZCOLL_OK) return fail_sticky(bs, ZCOLL_ERR_PEER_FAILED, "lost the connection to rank 0");
  uint16_t type;
  void *payload;
  uint32_t got;
  st = zcoll__sock_recv_msg(bs->fd, MAX_MSG, deadline, &type, &payload, &got, NULL);
  if (st == ZCOLL_ERR_PEER_FAILED)
    return fail_sticky(bs, st, "lost the connection to rank 0 (died or exited early)");
  if (st == ZCOLL_ERR_TIMEOUT)
    return fail_sticky(bs, st, "bootstrap: no answer from rank 0 in %.0f s", bs->timeout);
  if (st != ZCOLL_OK) return fail_sticky(bs, st, "bootstrap: reading from rank 0 failed");
  if (type == MSG_ABORT) {
    st = take_abort(bs, 0, payload, got);
  } else if (type != MSG_GATHERED || got != len * (size_t)bs->size) {
    st = fail_sticky(bs, ZCOLL_ERR_BOOTSTRAP, "bootstrap: bad allgather reply (type %u, %u bytes)",
                     type, got);
  } else {
    /* Keep our own slot as we wrote it; the rest comes from rank 0. */
    if (len) memcpy(all, payload, got);
  }
  free(payload);
  return st;
}

zcoll_status_t zcoll__bootstrap_barrier(struct zcoll__bootstrap *bs) {
  return zcoll__bootstrap_allgather(bs, NULL, 0, NULL);
}

int zcoll__bootstrap_pollfds(struct zcoll__bootstrap *bs, struct pollfd *fds, int max) {
  int n = 0;
  if (bs->rank != 0) {
    if (bs->fd >= 0 && max > 0) fds[n++] = (struct pollfd){.fd = bs->fd, .events = POLLIN};
    return n;
  }
  for (int r = 1; r < bs->size && n < max; r++)
    if (bs->kid[r].fd >= 0 && !bs->kid[r].type && !bs->kid[r].gone)
      fds[n++] = (struct pollfd){.fd = bs->kid[r].fd, .events = POLLIN};
  return n;
}

zcoll_status_t zcoll__bootstrap_check(struct zcoll__bootstrap *bs) {
  if (bs->failed) return bs->failed;
  if (bs->size == 1) return ZCOLL_OK;
  if (bs->rank == 0) return root_pump(bs, 0, 0);
  struct pollfd p = {.fd = bs->fd, .events = POLLIN};
  if (poll(&p, 1, 0) <= 0) return ZCOLL_OK;
  uint16_t type;
  void *payload;
  uint32_t len;
  zcoll_status_t st =
      zcoll__sock_recv_msg(bs->fd, MAX_MSG, zcoll__deadline(bs->timeout), &type, &payload, &len,
                           NULL);
  if (st == ZCOLL_ERR_PEER_FAILED)
    return fail_sticky(bs, st, "lost the connection to rank 0 (died or exited early)");
  if (st != ZCOLL_OK) return fail_sticky(bs, st, "bootstrap: reading from rank 0 failed");
  if (type == MSG_ABORT)
    st = take_abort(bs, 0, payload, len);
  else
    st = fail_sticky(bs, ZCOLL_ERR_BOOTSTRAP, "bootstrap: unexpected message %u from rank 0", type);
  free(payload);
  return st;
}

void zcoll__bootstrap_abort(struct zcoll__bootstrap *bs, zcoll_status_t reason, const char *why) {
  if (bs->size > 1) {
    if (bs->rank == 0)
      relay_abort(bs, -1, 0, reason, why);
    else if (bs->fd >= 0 && !bs->failed)
      send_abort(bs->fd, (uint32_t)bs->rank, reason, why);
  }
  if (!bs->failed) {
    bs->failed = reason == ZCOLL_ERR_MISMATCH ? reason : ZCOLL_ERR_PEER_FAILED;
    snprintf(bs->why, sizeof(bs->why), "this rank aborted: %s", why);
  }
}

static zcoll_status_t graceful_leave(struct zcoll__bootstrap *bs) {
  int64_t deadline = zcoll__deadline(bs->timeout);
  if (bs->rank != 0) {
    if (zcoll__sock_send_msg(bs->fd, MSG_BYE, NULL, 0, deadline) != ZCOLL_OK)
      return fail_sticky(bs, ZCOLL_ERR_PEER_FAILED, "lost rank 0 while leaving");
    uint16_t type;
    void *payload;
    uint32_t len;
    /* Rank 0 answers once everyone has said goodbye: a final barrier. */
    zcoll_status_t st =
        zcoll__sock_recv_msg(bs->fd, MAX_MSG, deadline, &type, &payload, &len, NULL);
    if (st != ZCOLL_OK)
      return fail_sticky(bs, st == ZCOLL_ERR_TIMEOUT ? st : ZCOLL_ERR_PEER_FAILED,
                         "rank 0 did not confirm the final barrier");
    if (type == MSG_ABORT) st = take_abort(bs, 0, payload, len);
    free(payload);
    return st;
  }
  zcoll_status_t st = root_pump(bs, MSG_BYE, deadline);
  if (st != ZCOLL_OK) return st;
  for (int r = 1; r < bs->size; r++) {
    zcoll__sock_send_msg(bs->kid[r].fd, MSG_BYE_ACK, NULL, 0, deadline);
    bs->kid[r].gone = 1;
  }
  return ZCOLL_OK;
}

zcoll_status_t zcoll__bootstrap_destroy(struct zcoll__bootstrap *bs, int graceful) {
  if (!bs) return ZCOLL_OK;
  zcoll_status_t st = bs->failed;
  if (graceful && !bs->failed && bs->size > 1) st = graceful_leave(bs);
  if (bs->fd >= 0) close(bs->fd);
  if (bs->kid) {
    for (int r = 1; r < bs->size; r++) {
      if (bs->kid[r].fd >= 0) close(bs->kid[r].fd);
      kid_drop_pending(&bs->kid[r]);
    }
    free(bs->kid);
  }
  free(bs);
  return st;
}
