/* progress.c -- UCX data movement: puts as active messages, their handler, and the
 * event queue that poll() hands to the executor. */
#include <stdlib.h>
#include <string.h>

#include "kernels/copy.h"
#include "base/log.h"
#include "base/clock.h"
#include "ucx.h"

zcoll_status_t zcoll__ucx_push(struct zcoll_tl *tl, const struct zcoll_tl_event *ev) {
  zcoll_status_t st = zcoll__evq_push(&tl->evq, ev);
  if (st != ZCOLL_OK && !tl->failed) tl->failed = st;
  return st;
}

struct zcoll__ucx_op *zcoll__ucx_op_get(struct zcoll_tl *tl) {
  struct zcoll__ucx_op *op = tl->free_ops;
  if (op)
    tl->free_ops = op->next;
  else if ((op = malloc(sizeof(*op)))) {
    op->all_next = tl->all_ops;
    tl->all_ops = op;
  } else {
    return NULL;
  }
  op->tl = tl;
  op->active = 0;
  op->writes = 0;
  op->ep = NULL;
  op->req = NULL;
  return op;
}

void zcoll__ucx_op_put(struct zcoll_tl *tl, struct zcoll__ucx_op *op) {
  op->next = tl->free_ops;
  tl->free_ops = op;
}

static void put_completed(struct zcoll__ucx_op *op, ucs_status_t s) {
  struct zcoll_tl_event ev = {
      .kind = ZCOLL_TL_EV_PUT_DONE, .peer = op->peer, .cookie = op->cookie, .status = ZCOLL_OK};
  if (s == UCS_OK && op->ep) op->ep->wired = 1;
  if (s != UCS_OK && op->tl->quiesced) /* cancelled after an error: not news */
    ev.status = zcoll__ucx_status(s);
  else if (s != UCS_OK)
    ev.status = zcoll__fail(zcoll__ucx_status(s), "ucx: put to rank %d failed: %s", op->peer,
                            zcoll__ucp.status_string(s));
  zcoll__ucx_push(op->tl, &ev);
  zcoll__ucx_op_put(op->tl, op);
}

static void send_cb(void *request, ucs_status_t s, void *user_data) {
  ((struct zcoll__ucx_op *)user_data)->active = 0;
  put_completed(user_data, s);
  zcoll__ucp.request_free(request);
}

zcoll_status_t zcoll__ucx_put(struct zcoll_ep *ep, const void *src, struct zcoll_tl_mr *lmr,
                              struct zcoll_tl_rkey *rkey, uint64_t roff, size_t len, uint32_t imm,
                              uint64_t cookie) {
  (void)lmr;
  struct zcoll_tl *tl = ep->tl;
  if (len > UINT32_MAX)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "ucx: a %zu-byte put is over the 4 GiB limit", len);
  if (len && (!rkey || roff > rkey->len || len > rkey->len - roff))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "ucx: a %zu-byte put at offset %llu is outside rank %d's region", len,
                       (unsigned long long)roff, ep->peer);
  if (tl->failed) return tl->failed;
  if (ep->failed || !ep->ep)
    return zcoll__fail(ZCOLL_ERR_PEER_FAILED, "ucx: the connection to rank %d is closed", ep->peer);
  struct zcoll__ucx_op *op = zcoll__ucx_op_get(tl);
  if (!op) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "ucx: out of memory");
  op->hdr = (struct zcoll__ucx_hdr){roff, rkey ? rkey->id : UINT32_MAX, imm, tl->rank, 0};
  op->cookie = cookie;
  op->peer = ep->peer;
  op->ep = ep;
  ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
                           .cb.send = send_cb,
                           .user_data = op};
  /* Active before the call: UCX may complete a request (and run send_cb, which frees it
   * and recycles op) before it returns the request -- on an endpoint already failed, for
   * one. Recording that pointer afterwards would make quiesce free it a second time. */
  op->active = 1;
  op->req = NULL;
  ucs_status_ptr_t r = zcoll__ucp.am_send_nbx(ep->ep, ZCOLL_UCX_AM_ID, &op->hdr, sizeof(op->hdr),
                                              src, len, &p);
  if (!op->active) return ZCOLL_OK; /* completed in the call: send_cb reported it */
  if (UCS_PTR_IS_ERR(r)) {
    ucs_status_t s = UCS_PTR_STATUS(r);
    op->active = 0;
    zcoll__ucx_op_put(tl, op);
    return zcoll__fail(zcoll__ucx_status(s), "ucx: send to rank %d failed: %s", ep->peer,
                       zcoll__ucp.status_string(s));
  }
  if (r == NULL) {
    op->active = 0;
    put_completed(op, UCS_OK);
  } else {
    op->req = r;
  }
  return ZCOLL_OK;
}

/* Reports what is done at the head of peer's queue, in order. */
static void release_held(struct zcoll_tl *tl, int peer) {
  struct zcoll__ucx_held *q = &tl->held[peer];
  while (q->head && q->head->done) {
    struct zcoll__ucx_arrival *a = q->head;
    zcoll__ucx_push(tl, &a->ev);
    if (!(q->head = a->next)) q->tail = NULL;
    free(a);
  }
}

/* An arrival from peer, in the order the handler saw it (the order of the peer's puts):
 * reported at once if nothing of peer's is held; else queued, done or not. NULL and the
 * instance failed if that takes memory there is none of. */
static struct zcoll__ucx_arrival *arrived(struct zcoll_tl *tl, int peer, uint32_t imm, uint32_t len,
                                          int placed, int done) {
  struct zcoll_tl_event ev = {
      .kind = ZCOLL_TL_EV_ARRIVED, .peer = peer, .imm = imm, .len = len, .placed = (uint8_t)placed};
  struct zcoll__ucx_held *q = &tl->held[peer];
  if (done && !q->head) {
    zcoll__ucx_push(tl, &ev);
    return NULL;
  }
  struct zcoll__ucx_arrival *a = malloc(sizeof(*a));
  if (!a) {
    if (!tl->failed) tl->failed = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "ucx: out of memory");
    return NULL;
  }
  *a = (struct zcoll__ucx_arrival){ev, done, NULL};
  if (q->tail)
    q->tail->next = a;
  else
    q->head = a;
  q->tail = a;
  return a;
}

void zcoll__ucx_free_held(struct zcoll_tl *tl) {
  for (int i = 0; tl->held && i < tl->size; i++)
    for (struct zcoll__ucx_arrival *a = tl->held[i].head, *next; a; a = next) {
      next = a->next;
      free(a);
    }
  free(tl->held);
  tl->held = NULL;
}

static void rndv_cb(void *request, ucs_status_t s, size_t length, void *user_data) {
  (void)length;
  struct zcoll__ucx_op *op = user_data;
  struct zcoll_tl *tl = op->tl;
  op->active = 0;
  if (s == UCS_OK && op->arrival) {
    op->arrival->done = 1;
    release_held(tl, op->peer);
  } else if (s != UCS_OK && !tl->failed) {
    tl->failed = zcoll__fail(zcoll__ucx_status(s), "ucx: receiving from rank %d failed: %s",
                             op->peer, zcoll__ucp.status_string(s));
  }
  zcoll__ucx_op_put(tl, op);
  zcoll__ucp.request_free(request);
}

ucs_status_t zcoll__ucx_am_handler(void *arg, const void *header, size_t header_length, void *data,
                                   size_t length, const ucp_am_recv_param_t *param) {
  struct zcoll_tl *tl = arg;
  struct zcoll__ucx_hdr h;
  int rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  /* A rendezvous this handler does not take is dropped by returning UCS_OK without calling
   * ucp_am_recv_data_nbx: UCX then acknowledges it (ATS) and frees its descriptor itself.
   * ucp_am_data_release is for a descriptor kept past the handler (UCS_INPROGRESS); called
   * in here it acknowledges a second time, and the sender's UCX asserts (SIGABRT) on the ATS
   * for a request the first one completed. */
  if (tl->quiesced) return UCS_OK; /* an error was returned: nothing more lands in memory */
  if (header_length != sizeof(h)) goto bad;
  memcpy(&h, header, sizeof(h));
  if (h.src < 0 || h.src >= tl->size) goto bad;
  char *dst = NULL;
  int final = 0;
  if (length > UINT32_MAX) goto bad;
  if (length && tl->place) {
    /* The receiver says where, from the notification: the writer's offset is ignored. */
    if (!(dst = tl->place(tl->place_arg, h.src, h.imm, length, &final))) goto bad;
  } else if (length) {
    struct zcoll_tl_mr *mr = h.region < tl->nregions ? tl->regions[h.region] : NULL;
    if (!mr || !mr->remote || h.off > mr->len || length > mr->len - h.off) goto bad;
    dst = mr->base + h.off;
  }
  if (!rndv) {
    if (length) zcoll__copy(dst, data, length);
    arrived(tl, h.src, h.imm, (uint32_t)length, final, 1);
    return UCS_OK;
  }
  struct zcoll__ucx_op *op = zcoll__ucx_op_get(tl);
  if (!op) {
    if (!tl->failed) tl->failed = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "ucx: out of memory");
    return UCS_OK;
  }
  op->hdr = h;
  op->peer = h.src;
  op->len = (uint32_t)length;
  op->writes = 1;
  op->placed = (uint8_t) final;
  if (!(op->arrival = arrived(tl, h.src, h.imm, (uint32_t)length, final, 0))) {
    zcoll__ucx_op_put(tl, op);
    return UCS_OK; /* out of memory: the instance failed */
  }
  ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
                           .cb.recv_am = rndv_cb,
                           .user_data = op};
  /* Straight into the slot: the credit protocol guarantees it is free. Active before the
   * call, as in zcoll__ucx_put: rndv_cb may run inside it. */
  op->active = 1;
  op->req = NULL;
  ucs_status_ptr_t r = zcoll__ucp.am_recv_data_nbx(tl->worker, data, dst, length, &p);
  if (!op->active) return UCS_OK; /* rndv_cb ran already */
  op->active = 0;
  if (UCS_PTR_IS_ERR(r)) {
    /* UCX 1.13 marked the receive started before it failed, so it keeps the descriptor
     * and sends the peer no ATS (nor may we release it now): the peer's put stays
     * unfinished until the instance's failure, set here, reaches the job. */
    if (!tl->failed)
      tl->failed = zcoll__fail(zcoll__ucx_status(UCS_PTR_STATUS(r)),
                               "ucx: receiving from rank %d failed: %s", h.src,
                               zcoll__ucp.status_string(UCS_PTR_STATUS(r)));
    zcoll__ucx_op_put(tl, op);
  } else if (r == NULL) {
    op->arrival->done = 1;
    release_held(tl, h.src);
    zcoll__ucx_op_put(tl, op);
  } else {
    op->req = r;
    op->active = 1;
  }
  return UCS_OK;
bad:
  if (!tl->failed)
    tl->failed = zcoll__fail(ZCOLL_ERR_TRANSPORT,
                             "ucx: dropped a malformed message (header %zu bytes, payload %zu "
                             "bytes) that would write outside its region",
                             header_length, length);
  return UCS_OK;
}

zcoll_status_t zcoll__ucx_poll(struct zcoll_tl *tl, struct zcoll_tl_event *ev, int max, int *n) {
  /* Progress until the worker is idle or we have a batch to hand back. */
  while (tl->evq.len < (size_t)max && zcoll__ucp.worker_progress(tl->worker)) {
  }
  *n = zcoll__evq_pop(&tl->evq, ev, max);
  return tl->failed;
}

int zcoll__ucx_event_fd(struct zcoll_tl *tl) { return tl->efd; }

int zcoll__ucx_cancel_all(struct zcoll_tl *tl, int64_t deadline, int urgent) {
  for (struct zcoll__ucx_op *op = tl->all_ops; op; op = op->all_next)
    if (op->active && op->req) zcoll__ucp.request_cancel(tl->worker, op->req);
  for (;;) {
    int busy = 0;
    for (struct zcoll__ucx_op *op = tl->all_ops; op; op = op->all_next)
      busy += op->active && (!urgent || op->writes || (op->ep && !op->ep->wired));
    if (!busy || zcoll__now_ms() >= deadline) return busy;
    zcoll__ucp.worker_progress(tl->worker);
  }
}

void zcoll__ucx_release_stuck(struct zcoll_tl *tl) {
  /* UCX has no cancel for sends (a rendezvous send waits for a peer that is gone), and
   * ucp_worker_destroy asserts on requests we never released. Released, a request
   * raises no callback; what it still moves stops when nothing progresses the worker,
   * and no one does after quiesce (close does not progress a quiesced instance). */
  for (struct zcoll__ucx_op *op = tl->all_ops; op; op = op->all_next)
    if (op->active) {
      zcoll__ucp.request_free(op->req);
      op->active = 0;
      op->req = NULL;
    }
  for (int i = 0; i < tl->neps; i++)
    if (tl->eps[i]->close_req) {
      zcoll__ucp.request_free(tl->eps[i]->close_req);
      tl->eps[i]->close_req = NULL;
    }
}

void zcoll__ucx_quiesce(struct zcoll_tl *tl) {
  if (tl->quiesced) return;
  /* Nothing may land in the user's memory once the error is returned, and nothing may
   * read it either (the user may free it): the worker is never progressed again after
   * this. No peer writes into it on its own: a put is an active message whose data goes
   * only where our handler says (mr.c registers nothing with UCX). What writes into it:
   * an eager arrival, which the handler drops from now on, and a rendezvous receive we
   * posted. Endpoints to other hosts are forced shut (their requests end as cancelled,
   * their connections go down); the rest is cancelled as far as UCX can (1.13: tag
   * receives only, and no forced close on this host, see ep.c). Then the deadline is
   * only for rendezvous receives -- under progress they end in the time of a copy
   * unless their sender stopped mid-transfer -- and for puts on endpoints whose wireup
   * may not be done: UCX 1.13 asserts in ucp_worker_destroy on a TCP endpoint with its
   * wireup request pending (7 of 60 ranks of the ucx-tcp invalid-arg fault). A put on
   * a wired endpoint only reads memory, and one to a peer that stopped or sleeps
   * outside zcoll never ends: waiting for it made every revoke take the whole deadline
   * for no write. It is released with whatever did not end in time. */
  tl->quiesced = 1;
  if (tl->failed == ZCOLL_OK)
    tl->failed = zcoll__fail(ZCOLL_ERR_TRANSPORT, "ucx: stopped after an error elsewhere");
  int64_t deadline = zcoll__deadline(1.0);
  int stuck = zcoll__ucx_close_eps(tl, 1, deadline);
  stuck += zcoll__ucx_cancel_all(tl, deadline, 1);
  if (stuck) zcoll_log_debug("ucx: %d operations did not stop within 1 s; released", stuck);
  zcoll__ucx_release_stuck(tl);
  tl->evq.len = 0; /* what the cancellations reported is of no further use */
}

void zcoll__ucx_set_placement(struct zcoll_tl *tl, zcoll_tl_place_fn fn, void *arg) {
  tl->place = fn;
  tl->place_arg = arg;
}

zcoll_status_t zcoll__ucx_arm(struct zcoll_tl *tl) {
  if (tl->evq.len) return ZCOLL_IN_PROGRESS;
  ucs_status_t s = zcoll__ucp.worker_arm(tl->worker);
  if (s == UCS_ERR_BUSY) return ZCOLL_IN_PROGRESS;
  if (s != UCS_OK)
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "ucx: ucp_worker_arm: %s", zcoll__ucp.status_string(s));
  return ZCOLL_OK;
}
