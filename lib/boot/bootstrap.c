/* bootstrap.c -- the TCP rendezvous: a star of authenticated sockets around rank 0. */
#include "bootstrap.h"
#include "bootstrap_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap_auth.h"
#include "bootstrap_handshake.h"
#include "base/log.h"
#include "sock.h"

/* Descriptors rank 0 needs beyond one per rank: strangers being admitted, the
 * listening socket, the transport's own. */
#define FD_SLACK (ZCOLL_BS_MAX_PENDING + 64)

zcoll_status_t zcoll__bs_fail_sticky(struct zcoll__bootstrap *bs, zcoll_status_t st,
                                     const char *fmt, ...) {
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

void zcoll__bs_send_abort(int fd, uint32_t origin, zcoll_status_t st, const char *text) {
  struct zcoll__bs_abort m = {origin, (uint32_t)st, ""};
  uint8_t wire[sizeof(m)];
  zcoll__bs_abort_text(&m, text);
  zcoll__bs_put_abort(wire, &m);
  /* Best effort with a short deadline: the receiver may be gone too. */
  zcoll__sock_send_msg(fd, ZCOLL_BS_ABORT, wire, (uint32_t)sizeof(wire), zcoll__deadline(1.0));
}

/* Rank 0 tells everyone but `except`. */
void zcoll__bs_relay_abort(struct zcoll__bootstrap *bs, int except, uint32_t origin,
                           zcoll_status_t st, const char *text) {
  for (int r = 1; r < bs->size; r++)
    if (r != except && bs->kid[r].fd >= 0 && !bs->kid[r].gone)
      zcoll__bs_send_abort(bs->kid[r].fd, origin, st, text);
}

zcoll_status_t zcoll__bs_take_abort(struct zcoll__bootstrap *bs, int from, const void *payload,
                                    uint32_t len) {
  struct zcoll__bs_abort m;
  zcoll__bs_parse_abort(payload, len, (uint32_t)from, &m);
  /* A mismatch is every rank's (they disagree), and so is the fabric's failure (TRANSPORT:
   * a port or link that went, named by the rank that saw it); anything else of one rank
   * is, to the others, a peer that failed. */
  zcoll_status_t st = m.status == ZCOLL_ERR_MISMATCH || m.status == ZCOLL_ERR_TRANSPORT
                          ? m.status
                          : ZCOLL_ERR_PEER_FAILED;
  if (bs->rank == 0) zcoll__bs_relay_abort(bs, from, m.origin, st, m.text);
  return zcoll__bs_fail_sticky(bs, st, "rank %u aborted: %s", m.origin, m.text);
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
  zcoll_status_t st = zcoll__sock_recv_msg(k->fd, ZCOLL_BS_MAX_MSG, deadline, &type, &payload,
                                           &len);
  if (st == ZCOLL_ERR_PEER_FAILED) {
    char text[64];
    snprintf(text, sizeof(text), "rank %d disconnected", r);
    zcoll__bs_relay_abort(bs, r, (uint32_t)r, ZCOLL_ERR_PEER_FAILED, text);
    return zcoll__bs_fail_sticky(bs, ZCOLL_ERR_PEER_FAILED,
                                 "rank %d disconnected (died or exited early)", r);
  }
  if (st != ZCOLL_OK)
    return zcoll__bs_fail_sticky(bs, st, "bootstrap: reading from rank %d failed", r);
  if (type == ZCOLL_BS_ABORT) {
    st = zcoll__bs_take_abort(bs, r, payload, len);
    free(payload);
    return st;
  }
  if (type == ZCOLL_BS_CTL) return zcoll__bs_file_ctl(bs, r, payload, len);
  if ((type != ZCOLL_BS_GATHER && type != ZCOLL_BS_BYE) || k->type) {
    free(payload);
    return zcoll__bs_fail_sticky(bs, ZCOLL_ERR_BOOTSTRAP,
                                 "bootstrap: unexpected message %u from rank %d", type, r);
  }
  if (type == ZCOLL_BS_BYE) {
    const char *why = NULL;
    int bad = zcoll__bs_parse_bye(payload, len, &k->ncolls, &why);
    free(payload);
    if (bad)
      return zcoll__bs_fail_sticky(bs, ZCOLL_ERR_BOOTSTRAP, "bootstrap: rank %d sent %s", r, why);
    k->type = ZCOLL_BS_BYE;
    if (!bs->leaving) zcoll__bs_departed(bs, r, k->ncolls);
    return ZCOLL_OK;
  }
  k->type = type;
  k->payload = payload;
  k->len = len;
  return ZCOLL_OK;
}

/* Reads whatever has arrived, waiting up to timeout_ms (-1: until the deadline) until
 * every rank has a message of `want` filed (want 0: do not wait). */
zcoll_status_t zcoll__bs_root_pump(struct zcoll__bootstrap *bs, uint16_t want, int64_t deadline) {
  struct pollfd *fds = calloc((size_t)bs->size + 1, sizeof(*fds));
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
      /* One message ahead at most: each rank waits for our reply. Except that one that
       * said goodbye may still abort (a revoke in its destroy): the others must hear. */
      if (k->type && !(want == ZCOLL_BS_BYE && k->type == ZCOLL_BS_BYE)) continue;
      fds[n] = (struct pollfd){.fd = k->fd, .events = POLLIN};
      who[n++] = r;
    }
    /* All goodbyes are in: a last look (not a wait) for an abort that followed one. */
    int last = want == ZCOLL_BS_BYE && !missing;
    if (want && !missing && !last) break;
    int ncancel = want && bs->cancel_fd >= 0;
    if (ncancel) fds[n] = (struct pollfd){.fd = bs->cancel_fd, .events = POLLIN};
    if (want && bs->cancel && atomic_load(bs->cancel)) {
      st = zcoll__bs_fail_cancelled(bs);
      goto out;
    }
    int64_t left = deadline == INT64_MAX ? -1 : deadline - zcoll__now_ms();
    if (!want || last) left = 0;
    if (left < -1) left = 0;
    int rc = poll(fds, (nfds_t)n + (nfds_t)ncancel, left > 1000000 ? 1000000 : (int)left);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) {
      st = zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "bootstrap: poll failed: %s", strerror(errno));
      goto out;
    }
    if (rc == 0) {
      if (!want || last) break;
      if (deadline != INT64_MAX && zcoll__now_ms() >= deadline) {
        int r = 1;
        while (r < bs->size && (bs->kid[r].gone || bs->kid[r].type == want)) r++;
        st = zcoll__bs_fail_sticky(bs, ZCOLL_ERR_TIMEOUT,
                                   "bootstrap: rank %d did not answer in %.0f s", r, bs->timeout);
        goto out;
      }
      continue;
    }
    if (ncancel && fds[n].revents && zcoll__bs_cancelled(bs)) {
      st = zcoll__bs_fail_cancelled(bs);
      goto out;
    }
    for (int i = 0; i < n; i++)
      if (fds[i].revents && (st = root_read(bs, who[i], zcoll__deadline(bs->timeout))) != ZCOLL_OK)
        goto out;
    if (last) break;
  }
out:
  free(fds);
  free(who);
  return st;
}

/* Every rank but 0: connect and prove that we belong to the job. */
static zcoll_status_t leaf_join(struct zcoll__bootstrap *bs, const struct zcoll__bs_who *who,
                                const char *root, int root_listens) {
  int64_t deadline = zcoll__deadline(bs->timeout);
  zcoll_status_t st = zcoll__sock_connect(root, deadline, root_listens, &bs->fd);
  if (st != ZCOLL_OK) return st;
  zcoll__sock_tune(bs->fd, bs->timeout);
  return zcoll__bs_join(who, bs->fd, root, deadline);
}

/* Rank 0's listening socket: the inherited ZCOLL_ROOT_FD while it is one, else our own
 * on ZCOLL_ROOT. The inherited socket is kept open (and away from our children) after
 * the rendezvous, so that a later communicator of this process finds it again, instead
 * of a closed descriptor or one that meanwhile numbers some other socket. */
static zcoll_status_t root_listen(const struct zcoll__bootstrap_params *p, int *lfd, int *own) {
  if (p->root_fd >= 0) {
    int listening = 0;
    socklen_t sl = sizeof(listening);
    if (!getsockopt(p->root_fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &sl) && listening) {
      fcntl(p->root_fd, F_SETFD, FD_CLOEXEC);
      *lfd = p->root_fd;
      *own = p->close_root_fd;
      return ZCOLL_OK;
    }
    if (!p->root || !p->root[0])
      return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "ZCOLL_ROOT_FD=%d is not a listening socket",
                         p->root_fd);
    zcoll_log_info("ZCOLL_ROOT_FD=%d is no longer a listening socket; listening on ZCOLL_ROOT "
                   "%s instead",
                   p->root_fd, p->root);
  } else if (!p->root || !p->root[0]) {
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "ZCOLL_ROOT (host:port for rank 0) is not set");
  }
  *own = 1;
  return zcoll__sock_listen(p->root, lfd);
}

static zcoll_status_t root_accept(struct zcoll__bootstrap *bs,
                                  const struct zcoll__bootstrap_params *p,
                                  const struct zcoll__bs_who *who) {
  if (!(bs->kid = calloc((size_t)p->size, sizeof(*bs->kid))))
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "bootstrap: out of memory");
  int *fds = malloc(sizeof(int) * (size_t)p->size);
  if (!fds) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "bootstrap: out of memory");
  for (int r = 0; r < p->size; r++) bs->kid[r].fd = fds[r] = -1;
  /* The star holds one socket per rank at rank 0. */
  zcoll_status_t st = zcoll__sock_reserve_fds((long)p->size + FD_SLACK, "rank 0 of this job");
  int lfd = -1, own = 0;
  if (st == ZCOLL_OK) st = root_listen(p, &lfd, &own);
  if (st == ZCOLL_OK) st = zcoll__bs_accept_all(who, lfd, fds);
  if (own && lfd >= 0)
    close(lfd); /* nobody else may join */
  else if (lfd < 0 && p->close_root_fd && p->root_fd >= 0)
    close(p->root_fd);
  for (int r = 1; r < p->size; r++) bs->kid[r].fd = fds[r];
  free(fds);
  return st;
}

/* No key: anyone who can reach the port may join. Said once per communicator. */
static zcoll_status_t check_key(const struct zcoll__bootstrap_params *p) {
  if (p->size == 1 || p->job_key[0]) return ZCOLL_OK;
  if (p->require_key)
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP,
                       "ZCOLL_REQUIRE_KEY=1 but ZCOLL_JOB_KEY is not set: refusing an "
                       "unauthenticated rendezvous");
  if (p->rank == 0)
    zcoll_log_warn("the rendezvous is unauthenticated (ZCOLL_JOB_KEY is not set): any process "
                   "that can reach %s may join this job",
                   p->root && p->root[0] ? p->root : "rank 0's port");
  else
    zcoll_log_info("the rendezvous is unauthenticated (ZCOLL_JOB_KEY is not set)");
  return ZCOLL_OK;
}

zcoll_status_t zcoll__bootstrap_create(const struct zcoll__bootstrap_params *p,
                                       struct zcoll__bootstrap **out) {
  zcoll_status_t st = check_key(p);
  struct zcoll__bootstrap *bs = st == ZCOLL_OK ? calloc(1, sizeof(*bs)) : NULL;
  if (!bs) {
    if (p->close_root_fd && p->root_fd >= 0) close(p->root_fd); /* root_accept did not */
    return st != ZCOLL_OK ? st : zcoll__fail(ZCOLL_ERR_NO_MEMORY, "bootstrap: out of memory");
  }
  bs->rank = p->rank;
  bs->size = p->size;
  bs->timeout = p->timeout;
  bs->fd = -1;
  bs->cancel_fd = -1;
  bs->left_rank = -1;
  if (p->size == 1) goto done;
  char job_id[160];
  zcoll__bs_job_id(p->job_id, job_id, sizeof(job_id));
  struct zcoll__bs_who who = {p->rank, p->size, p->job_key, {0}, job_id, p->timeout};
  if ((st = zcoll__bs_job_digest(job_id, who.jobid)) != ZCOLL_OK) goto fail;
  zcoll_log_debug("bootstrap: job id '%s'", job_id);
  if (p->rank != 0) {
    if (!p->root || !p->root[0]) {
      st = zcoll__fail(ZCOLL_ERR_INVALID_ARG, "ZCOLL_ROOT (host:port of rank 0) is not set");
      goto fail;
    }
    if ((st = leaf_join(bs, &who, p->root, p->root_listens)) != ZCOLL_OK) goto fail;
    goto done;
  }
  if ((st = root_accept(bs, p, &who)) != ZCOLL_OK) goto fail;
done:
  *out = bs;
  return ZCOLL_OK;
fail:
  zcoll__bootstrap_destroy(bs);
  return st;
}

zcoll_status_t zcoll__bootstrap_attach(int rank, int size, double timeout, const int *fds,
                                       struct zcoll__bootstrap **out) {
  struct zcoll__bootstrap *bs = calloc(1, sizeof(*bs));
  if (bs && rank == 0 && size > 1) bs->kid = calloc((size_t)size, sizeof(*bs->kid));
  if (!bs || (rank == 0 && size > 1 && !bs->kid)) {
    free(bs);
    for (int r = rank ? 0 : 1; r < (rank ? 1 : size); r++) close(fds[r]);
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "bootstrap: out of memory");
  }
  bs->rank = rank;
  bs->size = size;
  bs->timeout = timeout;
  bs->fd = rank ? fds[0] : -1;
  bs->cancel_fd = -1;
  bs->left_rank = -1;
  for (int r = 1; rank == 0 && r < size; r++) bs->kid[r].fd = fds[r];
  /* Socket pairs within one host: no handshake (each rank was handed its own), and a
   * peer's death is an end of file at once, no keepalive needed. */
  *out = bs;
  return ZCOLL_OK;
}

/* Our send to rank 0 failed: it is gone, but may have said why first (a rank that fails
 * init aborts, then closes), and that news is still ours to read. */
zcoll_status_t zcoll__bs_lost_root(struct zcoll__bootstrap *bs, const char *what) {
  struct pollfd p = {.fd = bs->fd, .events = POLLIN};
  while (poll(&p, 1, 0) > 0) {
    uint16_t type;
    void *payload;
    uint32_t len;
    if (zcoll__sock_recv_msg(bs->fd, ZCOLL_BS_MAX_MSG, zcoll__deadline(1.0), &type, &payload,
                             &len) != ZCOLL_OK)
      break;
    zcoll_status_t st = type == ZCOLL_BS_ABORT ? zcoll__bs_take_abort(bs, 0, payload, len)
                                               : ZCOLL_OK;
    free(payload);
    if (st != ZCOLL_OK) return st;
  }
  return zcoll__bs_fail_sticky(bs, ZCOLL_ERR_PEER_FAILED, "%s", what);
}

/* A rank other than 0 in a round: its contribution to rank 0, then rank 0's reply
 * (*reply malloc'ed, the caller frees it). */
static zcoll_status_t leaf_round(struct zcoll__bootstrap *bs, const void *mine, size_t len,
                                 int64_t deadline, void **reply, uint32_t *got) {
  zcoll_status_t st = zcoll__sock_send_msg(bs->fd, ZCOLL_BS_GATHER, mine, (uint32_t)len, deadline);
  if (st != ZCOLL_OK) return zcoll__bs_lost_root(bs, "lost the connection to rank 0");
  uint16_t type;
  void *payload;
  st = zcoll__sock_recv_msg(bs->fd, ZCOLL_BS_MAX_MSG, deadline, &type, &payload, got);
  if (st == ZCOLL_ERR_PEER_FAILED)
    return zcoll__bs_fail_sticky(bs, st, "lost the connection to rank 0 (died or exited early)");
  if (st == ZCOLL_ERR_TIMEOUT)
    return zcoll__bs_fail_sticky(bs, st, "bootstrap: no answer from rank 0 in %.0f s", bs->timeout);
  if (st != ZCOLL_OK) return zcoll__bs_fail_sticky(bs, st, "bootstrap: reading from rank 0 failed");
  if (type == ZCOLL_BS_ABORT) {
    st = zcoll__bs_take_abort(bs, 0, payload, *got);
  } else if (type == ZCOLL_BS_REJECT) {
    /* Rank 0 welcomed us, then found the job inconsistent (a rank twice, ...). */
    int n = *got < 200 ? (int)*got : 200;
    st = zcoll__bs_fail_sticky(bs, ZCOLL_ERR_BOOTSTRAP, "bootstrap: %.*s", n,
                               payload ? (char *)payload : "");
  } else if (type != ZCOLL_BS_GATHERED) {
    st = zcoll__bs_fail_sticky(bs, ZCOLL_ERR_BOOTSTRAP, "bootstrap: unexpected reply (type %u)",
                               type);
  }
  if (st != ZCOLL_OK) {
    free(payload);
    return st;
  }
  *reply = payload;
  return ZCOLL_OK;
}

zcoll_status_t zcoll__bootstrap_allgather(struct zcoll__bootstrap *bs, const void *mine, size_t len,
                                          void *all) {
  if (bs->failed) return zcoll__fail(bs->failed, "%s", bs->why);
  if (len > ZCOLL_BS_MAX_CONTRIB)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "bootstrap: allgather of %zu bytes is too large",
                       len);
  if (len) memcpy((char *)all + (size_t)bs->rank * len, mine, len);
  if (bs->size == 1) return ZCOLL_OK;
  int64_t deadline = zcoll__deadline(bs->timeout);
  zcoll_status_t st;
  if (bs->rank == 0) {
    if ((st = zcoll__bs_root_pump(bs, ZCOLL_BS_GATHER, deadline)) != ZCOLL_OK) return st;
    for (int r = 1; r < bs->size; r++) {
      struct kid *k = &bs->kid[r];
      if (k->len != len) {
        char text[96];
        snprintf(text, sizeof(text), "bootstrap allgather: rank %d sent %u bytes, rank 0 %zu", r,
                 k->len, len);
        zcoll__bs_relay_abort(bs, -1, 0, ZCOLL_ERR_MISMATCH, text);
        return zcoll__bs_fail_sticky(bs, ZCOLL_ERR_MISMATCH, "%s", text);
      }
      if (len) memcpy((char *)all + (size_t)r * len, k->payload, len);
      kid_drop_pending(k);
    }
    for (int r = 1; r < bs->size; r++) {
      st = zcoll__sock_send_msg(bs->kid[r].fd, ZCOLL_BS_GATHERED, all, (uint32_t)(len * bs->size),
                                deadline);
      if (st != ZCOLL_OK)
        return zcoll__bs_fail_sticky(bs, st, "bootstrap: rank %d stopped listening", r);
    }
    return ZCOLL_OK;
  }
  void *payload = NULL;
  uint32_t got = 0;
  if ((st = leaf_round(bs, mine, len, deadline, &payload, &got)) != ZCOLL_OK) return st;
  if (got != len * (size_t)bs->size)
    st = zcoll__bs_fail_sticky(bs, ZCOLL_ERR_BOOTSTRAP, "bootstrap: bad allgather reply (%u bytes)",
                               got);
  else if (len) /* our own slot too: rank 0 sent back what we wrote */
    memcpy(all, payload, got);
  free(payload);
  return st;
}

zcoll_status_t zcoll__bootstrap_gather_reply(struct zcoll__bootstrap *bs, const void *mine,
                                             size_t len, zcoll__bs_reply_fn fn, void *arg,
                                             void **out, size_t *out_len) {
  if (bs->failed) return zcoll__fail(bs->failed, "%s", bs->why);
  if (len > ZCOLL_BS_MAX_CONTRIB)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "bootstrap: a contribution of %zu bytes is too large",
                       len);
  int64_t deadline = zcoll__deadline(bs->timeout);
  zcoll_status_t st = ZCOLL_OK;
  if (bs->rank != 0) {
    void *payload = NULL;
    uint32_t got = 0;
    if ((st = leaf_round(bs, mine, len, deadline, &payload, &got)) != ZCOLL_OK) return st;
    *out = payload;
    *out_len = got;
    return ZCOLL_OK;
  }
  if (bs->size > 1 && (st = zcoll__bs_root_pump(bs, ZCOLL_BS_GATHER, deadline)) != ZCOLL_OK)
    return st;
  const void **blobs = malloc(sizeof(void *) * (size_t)bs->size);
  uint32_t *lens = malloc(sizeof(uint32_t) * (size_t)bs->size);
  if (!blobs || !lens) {
    free(blobs), free(lens);
    return zcoll__bs_fail_sticky(bs, ZCOLL_ERR_NO_MEMORY, "bootstrap: out of memory");
  }
  blobs[0] = mine;
  lens[0] = (uint32_t)len;
  for (int r = 1; r < bs->size; r++) blobs[r] = bs->kid[r].payload, lens[r] = bs->kid[r].len;
  /* Rank 0's own answer last: an error for any rank stops the round for all. */
  for (int i = 1; i <= bs->size && st == ZCOLL_OK; i++) {
    int r = i % bs->size;
    void *reply = NULL;
    size_t rlen = 0;
    if ((st = fn(arg, r, blobs, lens, &reply, &rlen)) != ZCOLL_OK) {
      char text[256];
      snprintf(text, sizeof(text), "%s", zcoll__last_error());
      zcoll__bs_relay_abort(bs, -1, 0, st, text);
      st = zcoll__bs_fail_sticky(bs, st, "%s", text);
    } else if (r == 0) {
      *out = reply;
      *out_len = rlen;
      reply = NULL;
    } else if ((st = zcoll__sock_send_msg(bs->kid[r].fd, ZCOLL_BS_GATHERED, reply, (uint32_t)rlen,
                                          deadline)) != ZCOLL_OK) {
      st = zcoll__bs_fail_sticky(bs, st, "bootstrap: rank %d stopped listening", r);
    }
    free(reply);
  }
  for (int r = 1; r < bs->size; r++) kid_drop_pending(&bs->kid[r]);
  free(blobs), free(lens);
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
  if (bs->rank == 0) return zcoll__bs_root_pump(bs, 0, 0);
  for (;;) { /* everything that has arrived: control messages come in bursts */
    struct pollfd p = {.fd = bs->fd, .events = POLLIN};
    if (poll(&p, 1, 0) <= 0) return ZCOLL_OK;
    uint16_t type;
    void *payload;
    uint32_t len;
    zcoll_status_t st = zcoll__sock_recv_msg(bs->fd, ZCOLL_BS_MAX_MSG, zcoll__deadline(bs->timeout),
                                             &type, &payload, &len);
    if (st == ZCOLL_ERR_PEER_FAILED)
      return zcoll__bs_fail_sticky(bs, st, "lost the connection to rank 0 (died or exited early)");
    if (st != ZCOLL_OK)
      return zcoll__bs_fail_sticky(bs, st, "bootstrap: reading from rank 0 failed");
    if (type == ZCOLL_BS_CTL) {
      if ((st = zcoll__bs_file_ctl(bs, 0, payload, len)) != ZCOLL_OK) return st;
      continue;
    }
    if (type == ZCOLL_BS_LEFT) {
      uint32_t who;
      uint64_t n;
      const char *why = NULL;
      int bad = zcoll__bs_parse_left(payload, len, &who, &n, &why) || who >= (uint32_t)bs->size;
      free(payload);
      if (bad)
        return zcoll__bs_fail_sticky(bs, ZCOLL_ERR_BOOTSTRAP, "bootstrap: rank 0 sent %s",
                                     why ? why : "a departure notice of a rank not in the job");
      zcoll__bs_departed(bs, (int)who, n);
      /* Stop here: the caller weighs the departure before news that may follow (the
       * abort of a rank that heard of it first names the wrong rank). */
      return ZCOLL_OK;
    }
    if (type == ZCOLL_BS_ABORT)
      st = zcoll__bs_take_abort(bs, 0, payload, len);
    else
      st = zcoll__bs_fail_sticky(bs, ZCOLL_ERR_BOOTSTRAP,
                                 "bootstrap: unexpected message %u from rank 0", type);
    free(payload);
    return st;
  }
}

void zcoll__bootstrap_abort(struct zcoll__bootstrap *bs, zcoll_status_t reason, const char *why) {
  if (bs->size > 1) {
    if (bs->rank == 0)
      zcoll__bs_relay_abort(bs, -1, 0, reason, why);
    else if (bs->fd >= 0 && !bs->failed)
      zcoll__bs_send_abort(bs->fd, (uint32_t)bs->rank, reason, why);
  }
  if (!bs->failed) {
    bs->failed = reason == ZCOLL_ERR_MISMATCH ? reason : ZCOLL_ERR_PEER_FAILED;
    snprintf(bs->why, sizeof(bs->why), "this rank aborted: %s", why);
  }
}

zcoll_status_t zcoll__bootstrap_destroy(struct zcoll__bootstrap *bs) {
  if (!bs) return ZCOLL_OK;
  zcoll_status_t st = bs->failed;
  if (bs->fd >= 0) close(bs->fd);
  if (bs->kid) {
    for (int r = 1; r < bs->size; r++) {
      if (bs->kid[r].fd >= 0) close(bs->kid[r].fd);
      kid_drop_pending(&bs->kid[r]);
    }
    free(bs->kid);
  }
  while (bs->inbox) {
    struct ctl *c = bs->inbox;
    bs->inbox = c->next;
    free(c->msg), free(c);
  }
  free(bs);
  return st;
}
