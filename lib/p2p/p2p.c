/* p2p.c -- zcoll_send, zcoll_recv, zcoll_isend, zcoll_irecv: their arguments, requests
 * (a kind of request of their own, lib/coll/request.h), messages to oneself, progress and
 * waits, and ending every message when the communicator breaks (the protocol: p2p.h; the
 * pieces: p2p_wire.c). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/dtype.h"
#include "base/log.h"
#include "coll/group.h"
#include "coll/progress_thread.h"
#include "coll/request.h"
#include "core/exec.h"
#include "core/guard.h"
#include "core/mr.h"
#include "core/report.h"
#include "p2p_impl.h"

void zcoll__p2p_finish(struct zcoll__p2p_req *q, zcoll_status_t st, const char *fmt, ...) {
  if (q->state == P2P_FINISHED) return;
  q->state = P2P_FINISHED;
  q->status = st;
  q->comm->p2p->active--;
  /* What a zero-copy rendezvous held (p2p.h). The key is plain memory on the transports
   * that grant (verbs, loopback), so this may follow the instance's close (destroy). */
  zcoll__mr_unhold(q->comm, q->mr_hold);
  q->mr_hold = 0;
  if (q->rkey) q->comm->p2p_chans[q->comm->chan_of[q->peer]].ops->rkey_release(q->rkey);
  q->rkey = NULL;
  if (st == ZCOLL_OK || !fmt) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(q->why, sizeof(q->why), fmt, ap);
  va_end(ap);
  zcoll_log_debug("%s", q->why); /* the call that returns it records it (result()) */
}

/* ---- the state, made on first use ---- */

static zcoll_status_t pump_pass(void *arg, int *progress);
static int pump_busy(const void *arg) {
  const struct zcoll__p2p *P = arg;
  return P->active > 0 || P->nctl > 0;
}
static zcoll_status_t hook(zcoll_comm_t *comm, int *progress);

static zcoll_status_t state(zcoll_comm_t *comm, struct zcoll__p2p **out) {
  struct zcoll__p2p *P = comm->p2p;
  if (!P) {
    P = calloc(1, sizeof(*P));
    size_t n = (size_t)(comm->nchans ? comm->nchans : 1);
    if (!P || !(P->peers = calloc(n, sizeof(*P->peers)))) {
      free(P);
      return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for point-to-point state");
    }
    P->comm = comm;
    for (int i = 0; i < comm->nchans; i++) {
      struct zcoll__p2p_peer *pe = &P->peers[i];
      ZCOLL_P2P_INIT(pe->sends), ZCOLL_P2P_INIT(pe->recvs), ZCOLL_P2P_INIT(pe->rdv);
      ZCOLL_P2P_INIT(pe->unexp), ZCOLL_P2P_INIT(pe->ctl), ZCOLL_P2P_INIT(pe->notes);
    }
    ZCOLL_P2P_INIT(P->self_sends), ZCOLL_P2P_INIT(P->self_recvs);
    comm->p2p = P;
    comm->p2p_pump = hook;
  }
  /* The progress thread moves messages between the application's calls. */
  if (comm->progress.on && !P->pumped) {
    zcoll_status_t st = zcoll__pump_add(comm, pump_pass, pump_busy, P);
    if (st != ZCOLL_OK) return st;
    P->pumped = 1;
  }
  *out = P;
  return ZCOLL_OK;
}

/* ---- failure: every message in flight ends with the communicator's status ---- */

/* cause: the failure's message (the thread's last error, just recorded, or the one the
 * call that broke the communicator reported). */
static void fail_all(struct zcoll__p2p *P, zcoll_status_t st, const char *cause) {
  char why[sizeof(P->comm->last_error)];
  snprintf(why, sizeof(why), "%s", cause);
  for (struct zcoll__p2p_req *q = P->all; q; q = q->all_next)
    zcoll__p2p_finish(q, st, "%s rank %d (tag %d) ended: %s",
                      q->is_send ? "a send to" : "a receive from", q->peer, q->tag, why);
  for (int i = 0; i < P->comm->nchans; i++) {
    struct zcoll__p2p_peer *pe = &P->peers[i];
    ZCOLL_P2P_INIT(pe->sends), ZCOLL_P2P_INIT(pe->recvs), ZCOLL_P2P_INIT(pe->rdv);
    pe->direct_out = pe->direct_in = NULL;
  }
  ZCOLL_P2P_INIT(P->self_sends), ZCOLL_P2P_INIT(P->self_recvs);
}

/* The core's hook (comm->p2p_pump), after every poll: the messages move if anything is
 * in flight, an answer waits to go, or a piece came. */
static zcoll_status_t hook(zcoll_comm_t *comm, int *progress) {
  struct zcoll__p2p *P = comm->p2p;
  /* Broken: its messages have ended (or end at the next p2p call), nothing more goes --
   * destroy's drain must not trip over an answer still queued. */
  if (comm->broken || (!P->active && !P->nctl && !comm->p2p_news)) return ZCOLL_OK;
  comm->p2p_news = 0;
  return zcoll__p2p_step(P, progress);
}

/* One pass: the core's events and collectives, and the messages through the hook. An
 * error breaks the communicator, which ends them all. */
static zcoll_status_t pass(struct zcoll__p2p *P, int *progress) {
  zcoll_comm_t *comm = P->comm;
  zcoll_status_t st = zcoll__check_usable(comm);
  if (st == ZCOLL_OK) st = zcoll__progress(comm, progress);
  if (st == ZCOLL_OK) return ZCOLL_OK;
  if (!comm->broken) st = zcoll__comm_break(comm, st);
  fail_all(P, comm->broken ? comm->broken : st, zcoll__last_error());
  return st;
}

static zcoll_status_t pump_pass(void *arg, int *progress) {
  struct zcoll__p2p *P = arg;
  /* The thread progresses the core itself (and so the hook) while a collective is listed. */
  zcoll_comm_t *comm = P->comm;
  zcoll_status_t st = comm->active ? ZCOLL_OK : zcoll__progress(comm, progress);
  if (st != ZCOLL_OK) fail_all(P, st, zcoll__last_error());
  return st;
}

/* ---- posting ---- */

static zcoll_status_t check(const char *fn, zcoll_comm_t *comm, const void *buf, size_t count,
                            zcoll_dtype_t dtype, int peer, int tag) {
  if ((unsigned)dtype >= ZCOLL_DTYPE_COUNT)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: unknown dtype %d", fn, (int)dtype);
  if (peer < 0 || peer >= comm->size)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "%s: peer %d is not a rank of the communicator (its size is %d)", fn, peer,
                       comm->size);
  if (tag < 0) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: tag %d is negative", fn, tag);
  if (!buf && count)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: buffer is NULL with count %zu", fn, count);
  if (count > SIZE_MAX / zcoll__dsize(dtype))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: count %zu of %s overflows", fn, count,
                       zcoll_dtype_name(dtype));
  return ZCOLL_OK;
}

/* A send and a receive to oneself meet: both end alike. */
static void self_meet(struct zcoll__p2p_req *s, struct zcoll__p2p_req *r) {
  if (s->count != r->count || s->dtype != r->dtype) {
    zcoll__p2p_finish(r, ZCOLL_ERR_MISMATCH,
                      "zcoll_recv: this rank sent itself %zu elements of %s with tag %d where its "
                      "receive expects %zu of %s",
                      s->count, zcoll_dtype_name(s->dtype), s->tag, r->count,
                      zcoll_dtype_name(r->dtype));
    zcoll__p2p_finish(s, ZCOLL_ERR_MISMATCH,
                      "zcoll_send: this rank's receive from itself with tag %d expects %zu "
                      "elements of %s where it sends %zu of %s",
                      s->tag, r->count, zcoll_dtype_name(r->dtype), s->count,
                      zcoll_dtype_name(s->dtype));
    return;
  }
  if (s->bytes) memmove(r->buf, s->buf, s->bytes);
  zcoll__p2p_finish(r, ZCOLL_OK, NULL);
  zcoll__p2p_finish(s, ZCOLL_OK, NULL);
}

/* The oldest request of list l with tag, unlinked; NULL if none. */
static struct zcoll__p2p_req *take(struct zcoll__p2p_req **head, struct zcoll__p2p_req ***tail,
                                   int tag) {
  for (struct zcoll__p2p_req **at = head; *at; at = &(*at)->next) {
    struct zcoll__p2p_req *q = *at;
    if (q->tag != tag) continue;
    *at = q->next;
    if (*tail == &q->next) *tail = at;
    return q;
  }
  return NULL;
}

static zcoll_status_t post_self(struct zcoll__p2p *P, struct zcoll__p2p_req *q, int blocking) {
  if (q->is_send) {
    struct zcoll__p2p_req *r = take(&P->self_recvs.head, &P->self_recvs.tail, q->tag);
    if (r) {
      self_meet(q, r);
      return ZCOLL_OK;
    }
    /* Synchronous like every send (p2p.h): nobody else could post its receive. */
    if (blocking)
      return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                         "zcoll_send: a send to this rank itself (tag %d) with no receive posted "
                         "would never complete: post it with zcoll_irecv first",
                         q->tag);
    q->state = P2P_SELF;
    ZCOLL_P2P_PUSH(P->self_sends, q);
    return ZCOLL_OK;
  }
  struct zcoll__p2p_req *s = take(&P->self_sends.head, &P->self_sends.tail, q->tag);
  if (s) {
    self_meet(s, q);
    return ZCOLL_OK;
  }
  q->state = P2P_POSTED;
  ZCOLL_P2P_PUSH(P->self_recvs, q);
  return ZCOLL_OK;
}

static void unlist(struct zcoll__p2p *P, struct zcoll__p2p_req *q) {
  if (q->all_prev)
    q->all_prev->all_next = q->all_next;
  else
    P->all = q->all_next;
  if (q->all_next) q->all_next->all_prev = q->all_prev;
}

static zcoll_status_t post(zcoll_comm_t *comm, int is_send, const void *buf, size_t count,
                           zcoll_dtype_t dtype, int peer, int tag, int blocking,
                           struct zcoll__p2p_req **out) {
  const char *fn = is_send ? (blocking ? "zcoll_send" : "zcoll_isend")
                           : (blocking ? "zcoll_recv" : "zcoll_irecv");
  zcoll_status_t st = check(fn, comm, buf, count, dtype, peer, tag);
  if (st == ZCOLL_OK) st = zcoll__check_usable(comm);
  int ci = st != ZCOLL_OK || peer == comm->rank ? -1 : comm->chan_of[peer];
  if (st == ZCOLL_OK && peer != comm->rank && ci < 0)
    st = zcoll__fail(ZCOLL_ERR_UNSUPPORTED,
                     "%s: rank %d has no channel to rank %d (messages reach the peers the "
                     "algorithms connect, and every rank on one host; a channel made on first "
                     "use is not there yet)",
                     fn, comm->rank, peer);
  struct zcoll__p2p *P = NULL;
  if (st == ZCOLL_OK) st = state(comm, &P);
  if (st != ZCOLL_OK) return st;
  struct zcoll__p2p_req *q = P->spare;
  if (q) {
    P->spare = q->next;
    P->nspare--;
  } else if (!(q = malloc(sizeof(*q)))) {
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "%s: out of memory", fn);
  }
  *q = (struct zcoll__p2p_req){.comm = comm,
                               .is_send = is_send,
                               .peer = peer,
                               .tag = tag,
                               .dtype = dtype,
                               .count = count,
                               .bytes = count * zcoll__dsize(dtype),
                               .buf = (char *)(uintptr_t)buf,
                               .status = ZCOLL_IN_PROGRESS};
  q->all_next = P->all;
  if (P->all) P->all->all_prev = q;
  P->all = q;
  P->active++;
  if (peer == comm->rank) {
    st = post_self(P, q, blocking);
  } else if (is_send) {
    q->state = P2P_QUEUED;
    q->msg = P->peers[ci].next_msg++;
    ZCOLL_P2P_PUSH(P->peers[ci].sends, q);
    zcoll__p2p_meet_noted(P, ci, q);
  } else {
    zcoll__p2p_hold(P, ci, q);
    st = zcoll__p2p_match_posted(P, ci, q);
  }
  if (st != ZCOLL_OK) {
    if (q->state != P2P_FINISHED) P->active--;
    zcoll__mr_unhold(comm, q->mr_hold); /* finished or not, it holds nothing from here */
    unlist(P, q);
    free(q);
    return st;
  }
  /* Its first piece goes now: a message posted and then computed over is on its way. */
  int progress = 0;
  if (pass(P, &progress) != ZCOLL_OK) {
    /* q ended with the communicator; its wait or test says so. */
  }
  *out = q;
  return ZCOLL_OK;
}

/* ---- results, waits ---- */

static zcoll_status_t result(const struct zcoll__p2p_req *q) {
  if (q->status == ZCOLL_OK || q->status == ZCOLL_IN_PROGRESS) return q->status;
  return zcoll__record_error(q->status, "%s", q->why);
}

/* Progress until q ends, or (timeout_ms >= 0) that long without it: ZCOLL_IN_PROGRESS. */
static zcoll_status_t wait_for(struct zcoll__p2p_req *q, int timeout_ms) {
  zcoll_comm_t *comm = q->comm;
  struct zcoll__p2p *P = comm->p2p;
  struct zcoll__idle id = {0};
  int64_t until = timeout_ms >= 0 ? zcoll__now_ns() + (int64_t)timeout_ms * 1000000 : 0;
  while (q->state != P2P_FINISHED) {
    int progress = 0;
    if (pass(P, &progress) != ZCOLL_OK) break; /* q ended with the communicator */
    if (q->state == P2P_FINISHED) break;
    if (progress) {
      zcoll__idle_done(comm, &id);
      continue;
    }
    zcoll_status_t st = zcoll__idle_wait(comm, NULL, &id);
    if (st == ZCOLL_ERR_TIMEOUT) /* the wait's own message knows no run, nor its peer */
      st = zcoll__record_error(
          st, "nothing moved for %.0f s (ZCOLL_TIMEOUT) waiting for %s rank %d", comm->cfg->timeout,
          q->is_send ? "a send to" : "a message from", q->peer);
    if (st != ZCOLL_OK) {
      if (!comm->broken) st = zcoll__comm_break(comm, st);
      fail_all(P, comm->broken ? comm->broken : st, zcoll__last_error());
      break;
    }
    if (until && zcoll__now_ns() > until) return ZCOLL_IN_PROGRESS;
  }
  return result(q);
}

static void drop(struct zcoll__p2p *P, struct zcoll__p2p_req *q) {
  unlist(P, q);
  if (q->handle && P->nhspare < P2P_SPARES)
    P->hspare[P->nhspare++] = q->handle;
  else if (q->handle)
    zcoll__request_forget(q->handle);
  if (P->nspare < P2P_SPARES) {
    q->next = P->spare;
    P->spare = q;
    P->nspare++;
  } else {
    free(q);
  }
}

/* ---- the request kind (request.h) ---- */

static const struct zcoll__request_ops p2p_request_ops;

static zcoll_status_t kind_start(zcoll_request_t *h) {
  (void)h;
  return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                     "zcoll_start: a request of zcoll_isend or zcoll_irecv is not persistent");
}

static zcoll_status_t kind_test(zcoll_request_t *h) {
  struct zcoll__p2p_req *q = zcoll__request_impl(h, &p2p_request_ops);
  zcoll_comm_t *comm = q->comm;
  zcoll_status_t st = zcoll__enter_unless_busy(comm, "zcoll_test");
  if (st != ZCOLL_OK) return st;
  if (q->state != P2P_FINISHED) {
    int progress = 0;
    (void)pass(comm->p2p, &progress); /* a failure ends q: its result says so */
  }
  st = zcoll__report(comm, result(q));
  zcoll__leave(comm);
  return st;
}

static zcoll_status_t kind_wait(zcoll_request_t *h, int timeout_ms) {
  struct zcoll__p2p_req *q = zcoll__request_impl(h, &p2p_request_ops);
  zcoll_comm_t *comm = q->comm;
  zcoll_status_t st = zcoll__enter(comm, timeout_ms < 0 ? "zcoll_wait" : "zcoll_wait_timeout");
  if (st != ZCOLL_OK) return st;
  st = zcoll__report(comm, wait_for(q, timeout_ms));
  zcoll__leave(comm);
  return st;
}

static zcoll_status_t kind_free(zcoll_request_t *h) {
  struct zcoll__p2p_req *q = zcoll__request_impl(h, &p2p_request_ops);
  zcoll_comm_t *comm = q->comm;
  zcoll_status_t st = zcoll__enter(comm, "zcoll_request_free");
  if (st != ZCOLL_OK) return st;
  if (q->state != P2P_FINISHED && comm->broken) /* broken by a collective since */
    fail_all(comm->p2p, comm->broken, comm->last_error);
  if (q->state != P2P_FINISHED)
    st = zcoll__report(comm, zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                                         "zcoll_request_free: the %s is still in flight "
                                         "(zcoll_wait for it first)",
                                         q->is_send ? "send" : "receive"));
  else
    drop(comm->p2p, q);
  zcoll__leave(comm);
  return st;
}

static const struct zcoll__request_ops p2p_request_ops = {kind_start, kind_test, kind_wait,
                                                          kind_free};

/* ---- the calls ---- */

/* Inside a group (lib/coll/group.h): checked now as far as a message can be alone (its
 * arguments, the channel to its peer), posted by zcoll_group_end through these. */
static zcoll_status_t group_check(const char *fn, zcoll_comm_t *comm, const struct zcoll__gargs *a,
                                  const void *buf) {
  zcoll_status_t st = check(fn, comm, buf, a->count, a->dtype, a->root, a->tag);
  if (st == ZCOLL_OK && a->root != comm->rank && comm->chan_of[a->root] < 0)
    st = zcoll__fail(ZCOLL_ERR_UNSUPPORTED, "%s: rank %d has no channel to rank %d", fn, comm->rank,
                     a->root);
  return st;
}
static zcoll_status_t group_check_send(zcoll_comm_t *comm, const struct zcoll__gargs *a) {
  return group_check("zcoll_send", comm, a, a->sendbuf);
}
static zcoll_status_t group_check_recv(zcoll_comm_t *comm, const struct zcoll__gargs *a) {
  return group_check("zcoll_recv", comm, a, a->recvbuf);
}
static zcoll_status_t group_send(zcoll_comm_t *comm, const struct zcoll__gargs *a,
                                 zcoll_request_t **req) {
  return req ? zcoll_isend(comm, a->sendbuf, a->count, a->dtype, a->root, a->tag, req)
             : zcoll_send(comm, a->sendbuf, a->count, a->dtype, a->root, a->tag);
}
static zcoll_status_t group_recv(zcoll_comm_t *comm, const struct zcoll__gargs *a,
                                 zcoll_request_t **req) {
  return req ? zcoll_irecv(comm, a->recvbuf, a->count, a->dtype, a->root, a->tag, req)
             : zcoll_recv(comm, a->recvbuf, a->count, a->dtype, a->root, a->tag);
}
static zcoll_status_t group_add(zcoll_comm_t *comm, int is_send, const void *buf, size_t count,
                                zcoll_dtype_t dtype, int peer, int tag, int nb,
                                zcoll_request_t **req) {
  const char *fn = is_send ? (nb ? "zcoll_isend" : "zcoll_send")
                           : (nb ? "zcoll_irecv" : "zcoll_recv");
  struct zcoll__gargs a = {.count = count, .dtype = dtype, .root = peer, .tag = tag};
  if (is_send)
    a.sendbuf = buf;
  else
    a.recvbuf = (void *)(uintptr_t)buf;
  return zcoll__group_add(comm, fn, &a, is_send ? group_check_send : group_check_recv,
                          is_send ? group_send : group_recv, nb, req);
}

static zcoll_status_t blocking(zcoll_comm_t *comm, int is_send, const void *buf, size_t count,
                               zcoll_dtype_t dtype, int peer, int tag) {
  const char *fn = is_send ? "zcoll_send" : "zcoll_recv";
  if (!comm) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: comm is NULL", fn);
  if (zcoll__group_open(comm))
    return group_add(comm, is_send, buf, count, dtype, peer, tag, 0, NULL);
  zcoll_status_t st = zcoll__enter(comm, fn);
  if (st != ZCOLL_OK) return st;
  struct zcoll__p2p_req *q = NULL;
  st = post(comm, is_send, buf, count, dtype, peer, tag, 1, &q);
  if (st == ZCOLL_OK) {
    st = wait_for(q, -1);
    if (q->state == P2P_FINISHED) drop(comm->p2p, q);
  }
  st = zcoll__report(comm, st);
  zcoll__leave(comm);
  return st;
}

static zcoll_status_t nonblocking(zcoll_comm_t *comm, int is_send, const void *buf, size_t count,
                                  zcoll_dtype_t dtype, int peer, int tag, zcoll_request_t **req) {
  const char *fn = is_send ? "zcoll_isend" : "zcoll_irecv";
  if (!comm) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: comm is NULL", fn);
  if (!req) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: req is NULL", fn);
  if (zcoll__group_open(comm))
    return group_add(comm, is_send, buf, count, dtype, peer, tag, 1, req);
  zcoll_status_t st = zcoll__enter(comm, fn);
  if (st != ZCOLL_OK) return st;
  struct zcoll__p2p_req *q = NULL;
  zcoll_request_t *h = NULL;
  st = post(comm, is_send, buf, count, dtype, peer, tag, 0, &q);
  if (st == ZCOLL_OK && comm->p2p->nhspare) {
    h = comm->p2p->hspare[--comm->p2p->nhspare];
    zcoll__request_rebind(h, q);
  } else if (st == ZCOLL_OK && !(h = zcoll__request_wrap(comm, &p2p_request_ops, q))) {
    /* Posted already: it cannot be taken back, so it ends with the communicator. */
    st = zcoll__comm_break(comm, zcoll__fail(ZCOLL_ERR_NO_MEMORY, "%s: out of memory", fn));
    fail_all(comm->p2p, st, zcoll__last_error());
  }
  if (h) {
    q->handle = h;
    *req = h;
  }
  st = zcoll__report(comm, st);
  zcoll__leave(comm);
  return st;
}

zcoll_status_t zcoll_send(zcoll_comm_t *comm, const void *buf, size_t count, zcoll_dtype_t dtype,
                          int peer, int tag) {
  return blocking(comm, 1, buf, count, dtype, peer, tag);
}

zcoll_status_t zcoll_recv(zcoll_comm_t *comm, void *buf, size_t count, zcoll_dtype_t dtype,
                          int peer, int tag) {
  return blocking(comm, 0, buf, count, dtype, peer, tag);
}

zcoll_status_t zcoll_isend(zcoll_comm_t *comm, const void *buf, size_t count, zcoll_dtype_t dtype,
                           int peer, int tag, zcoll_request_t **req) {
  return nonblocking(comm, 1, buf, count, dtype, peer, tag, req);
}

zcoll_status_t zcoll_irecv(zcoll_comm_t *comm, void *buf, size_t count, zcoll_dtype_t dtype,
                           int peer, int tag, zcoll_request_t **req) {
  return nonblocking(comm, 0, buf, count, dtype, peer, tag, req);
}

/* ---- destroy ---- */

void zcoll__p2p_release(zcoll_comm_t *comm) {
  struct zcoll__p2p *P = comm->p2p;
  if (!P) return;
  if (P->pumped) zcoll__pump_remove(comm, pump_pass, P);
  for (struct zcoll__p2p_req *q = P->all, *next; q; q = next) {
    next = q->all_next;
    if (q->handle) zcoll__request_forget(q->handle);
    /* Its registration's hold went with the registrations (comm.c frees them first). */
    if (q->rkey) comm->p2p_chans[comm->chan_of[q->peer]].ops->rkey_release(q->rkey);
    free(q);
  }
  P->all = NULL;
  while (P->spare) {
    struct zcoll__p2p_req *q = P->spare;
    P->spare = q->next;
    free(q);
  }
  for (int i = 0; i < P->nhspare; i++) zcoll__request_forget(P->hspare[i]);
  for (int i = 0; i < comm->nchans; i++) {
    struct zcoll__p2p_peer *pe = &P->peers[i];
    for (int k = 0; k < 2; k++)
      for (struct zcoll__p2p_unexp *u = k ? pe->notes.head : pe->unexp.head, *next; u; u = next) {
        next = u->next;
        free(u);
      }
    while (pe->ctl.head) {
      struct zcoll__p2p_ctl *k = pe->ctl.head;
      pe->ctl.head = k->next;
      free(k);
    }
  }
  free(P->peers);
  free(P);
  comm->p2p = NULL;
  comm->p2p_pump = NULL;
}
