/* progress.c -- verbs data movement: RDMA writes with immediate, their completions,
 * receives for the immediates, and the events that poll() hands to the executor. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/log.h"
#include "base/clock.h"
#include "verbs.h"

#define WR_RECV (1ull << 63)
#define CHECK_EVENTS_EVERY 256

/* A failed completion is the fabric's news, not a peer's death: TRANSPORT, naming where.
 * A peer known dead (the job's rendezvous saw it go) is PEER_FAILED
 * elsewhere -- and the executor reports that cause, not this echo, when it comes within a
 * moment (exec_wait.c). */
zcoll_status_t zcoll__verbs_wc_status(enum ibv_wc_status s) {
  return s == IBV_WC_SUCCESS ? ZCOLL_OK : ZCOLL_ERR_TRANSPORT;
}

/* What a failed completion's status most likely means, for the message. */
static const char *wc_hint(const struct zcoll_tl *tl, enum ibv_wc_status s, char *buf, size_t len) {
  switch (s) {
  case IBV_WC_RETRY_EXC_ERR:
    snprintf(buf, len,
             ": no acknowledgement after %d retries of 4.096 us x 2^%d each (ZCOLL_IB_RETRY_CNT, "
             "ZCOLL_IB_TIMEOUT) -- the peer, its link or the fabric between",
             tl->cfg->ib_retry_cnt, tl->cfg->ib_timeout);
    return buf;
  case IBV_WC_RNR_RETRY_EXC_ERR: return ": the peer posted no receive in time (it stalled)";
  case IBV_WC_REM_ACCESS_ERR: return ": the peer refused the address or key written to";
  case IBV_WC_WR_FLUSH_ERR: return ": the queue pair had already failed";
  default: return "";
  }
}

zcoll_status_t zcoll__verbs_push(struct zcoll_tl *tl, const struct zcoll_tl_event *ev) {
  zcoll_status_t st = zcoll__evq_push(&tl->evq, ev);
  if (st != ZCOLL_OK && !tl->failed) tl->failed = st;
  return st;
}

/* wr_id: the endpoint's index in bits 32..62, the rail in 24..26, the send ring's slot
 * below (sq_depth <= 2^20); a receive: WR_RECV, the rail and the index. */
#define WR_RAIL_SHIFT 24
#define WR_SLOT_MASK 0xffffffu

static uint64_t wr_id(const struct zcoll_ep *ep, int rail, uint32_t slot) {
  return ((uint64_t)ep->index << 32) | ((uint64_t)rail << WR_RAIL_SHIFT) | slot;
}

zcoll_status_t zcoll__verbs_post_recvs(struct zcoll_ep *ep, int rail, uint32_t n) {
  /* The data goes where the writer says; a receive only catches the immediate, so it
   * needs no buffer at all. */
  struct zcoll__verbs_qp *q = &ep->q[rail];
  struct ibv_recv_wr wr[ZCOLL_VERBS_RECV_BATCH], *bad;
  while (n) {
    uint32_t k = n < ZCOLL_VERBS_RECV_BATCH ? n : ZCOLL_VERBS_RECV_BATCH;
    for (uint32_t i = 0; i < k; i++)
      wr[i] = (struct ibv_recv_wr){.wr_id = WR_RECV | wr_id(ep, rail, 0),
                                   .next = i + 1 < k ? &wr[i + 1] : NULL,
                                   .sg_list = NULL,
                                   .num_sge = 0};
    if (ibv_post_recv(q->qp, wr, &bad))
      return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: cannot post receives for rank %d on %s: %s",
                         ep->peer, ep->tl->rail[rail].dev_name, strerror(errno));
    q->recv_posted += k;
    n -= k;
  }
  return ZCOLL_OK;
}

zcoll_status_t zcoll__verbs_post(struct zcoll_ep *ep, int rail, struct ibv_send_wr *wr,
                                 uint64_t cookie, int report) {
  struct zcoll_tl *tl = ep->tl;
  struct zcoll__verbs_qp *q = &ep->q[rail];
  if (q->wr_count + 1 >= (uint32_t)tl->sq_depth)
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: send queue to rank %d on %s is full", ep->peer,
                       tl->rail[rail].dev_name);
  uint32_t slot = (q->wr_head + q->wr_count) % (uint32_t)tl->sq_depth;
  q->wrs[slot] = (struct zcoll__verbs_wr){cookie, (uint8_t)report};
  wr->wr_id = wr_id(ep, rail, slot);
  /* Selective signalling: one signalled completion retires every earlier write. A
   * write posted while none is signalled is signalled itself, so that light traffic
   * needs no extra flush write (each costs a packet). */
  if (++q->since_signal >= ZCOLL_VERBS_SIGNAL_EVERY || report != ZCOLL_VERBS_WR_PUT ||
      !q->signal_pending) {
    wr->send_flags |= IBV_SEND_SIGNALED;
    q->since_signal = 0;
    q->signal_pending++;
  }
  struct ibv_send_wr *bad;
  int rc = ibv_post_send(q->qp, wr, &bad);
  if (rc) {
    if (wr->send_flags & IBV_SEND_SIGNALED) q->signal_pending--;
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: cannot post %s to rank %d on %s: %s",
                       report == ZCOLL_VERBS_WR_AMO ? "an atomic" : "a write", ep->peer,
                       tl->rail[rail].dev_name, strerror(rc));
  }
  q->wr_count++;
  return ZCOLL_OK;
}

zcoll_status_t zcoll__verbs_put(struct zcoll_ep *ep, const void *src, struct zcoll_tl_mr *lmr,
                                struct zcoll_tl_rkey *rkey, uint64_t roff, size_t len, uint32_t imm,
                                uint64_t cookie) {
  struct zcoll_tl *tl = ep->tl;
  /* The rails in turn, the next one after each put with data; the peer hands the
   * notifications out by the same rule (order_arrivals). */
  int rail = ep->tx_rail;
  struct zcoll__verbs_rail *r = &tl->rail[rail];
  /* The caller's mistakes first (INVALID_ARG), then the instance's state (transport.h). */
  if (len > UINT32_MAX || (len && (!rkey || roff > rkey->len || len > rkey->len - roff)))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "verbs: a write of %zu bytes overruns rank %d's region", len, ep->peer);
  int inl = len && len <= r->max_inline;
  if (len && !inl && !lmr)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "verbs: a write of %zu bytes from unregistered memory", len);
  /* Outside lmr the NIC would fail the write with a protection error and break the
   * queue pair: the caller's mistake, said as such before anything is posted. */
  uintptr_t s = (uintptr_t)src, base = lmr ? (uintptr_t)lmr->mr[0]->addr : 0;
  if (len && lmr && (s < base || len > lmr->mr[0]->length || s - base > lmr->mr[0]->length - len))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "verbs: a write of %zu bytes from outside its source registration", len);
  if (tl->failed) return tl->failed;
  if (ep->failed) return zcoll__fail(ZCOLL_ERR_PEER_FAILED, "verbs: rank %d is gone", ep->peer);
  struct ibv_sge sge = {(uintptr_t)src, (uint32_t)len, lmr ? lmr->mr[rail]->lkey : 0};
  struct ibv_send_wr wr = {.sg_list = &sge,
                           .num_sge = len ? 1 : 0,
                           .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
                           .send_flags = inl ? IBV_SEND_INLINE : 0,
                           .imm_data = htonl(imm)};
  /* A zero-length write needs no address or key (IBA C9-88). */
  wr.wr.rdma.remote_addr = rkey ? rkey->addr + roff : 0;
  wr.wr.rdma.rkey = rkey ? rkey->rkey[rail] : 0;
  zcoll_status_t st = zcoll__verbs_post(ep, rail, &wr, cookie, ZCOLL_VERBS_WR_PUT);
  if (st == ZCOLL_OK && len) {
    ep->tx_rail = (rail + 1) % ep->nrails;
    r->bytes += len;
  }
  return st;
}

/* Everything up to and including `slot` on the rail's send queue is complete. */
static void retire(struct zcoll_ep *ep, int rail, uint32_t slot) {
  struct zcoll_tl *tl = ep->tl;
  struct zcoll__verbs_qp *q = &ep->q[rail];
  q->signal_pending--;
  while (q->wr_count) {
    uint32_t s = q->wr_head;
    struct zcoll__verbs_wr *w = &q->wrs[s];
    if (w->report == ZCOLL_VERBS_WR_AMO) tl->amo_done = 1;
    if (w->report == ZCOLL_VERBS_WR_PUT) {
      struct zcoll_tl_event ev = {
          .kind = ZCOLL_TL_EV_PUT_DONE, .peer = ep->peer, .cookie = w->cookie, .status = ZCOLL_OK};
      zcoll__verbs_push(tl, &ev);
    }
    q->wr_head = (q->wr_head + 1) % (uint32_t)tl->sq_depth;
    q->wr_count--;
    if (s == slot) break;
  }
}

static void fail_wc(struct zcoll_tl *tl, int rail, const struct ibv_wc *wc, struct zcoll_ep *ep) {
  if (ep) ep->failed = 1;
  if (tl->failed) return;
  char hint[256];
  const struct zcoll__verbs_qp *q = ep ? &ep->q[rail] : NULL;
  tl->failed = zcoll__fail(
      zcoll__verbs_wc_status(wc->status),
      "verbs: %s rank %d failed on %s port %u: %s (status %d)%s",
      wc->wr_id & WR_RECV ? "a receive from"
      : q && q->wrs[(uint32_t)(wc->wr_id & WR_SLOT_MASK) % (uint32_t)tl->sq_depth].report ==
                  ZCOLL_VERBS_WR_AMO
          ? "an atomic at"
          : "a write to",
      ep ? ep->peer : -1, tl->rail[rail].dev_name, (unsigned)tl->rail[rail].port,
      ibv_wc_status_str(wc->status), (int)wc->status, wc_hint(tl, wc->status, hint, sizeof(hint)));
}

/* A rail's receives come back only as its held notifications are handed out: a rail's
 * posted receives and held notifications together never pass rq_depth, so a writer that
 * runs ahead on one rail while another's notification is late waits (RNR, retried
 * forever) rather than overrunning the ring. */
static void repost(struct zcoll_tl *tl, struct zcoll_ep *ep, int rail) {
  struct zcoll__verbs_qp *q = &ep->q[rail];
  if (q->recv_posted + q->held_count + ZCOLL_VERBS_RECV_BATCH <= (uint32_t)tl->rq_depth &&
      zcoll__verbs_post_recvs(ep, rail, ZCOLL_VERBS_RECV_BATCH) != ZCOLL_OK && !tl->failed)
    tl->failed = ZCOLL_ERR_TRANSPORT; /* out of receives, the peer would stall */
}

/* Hands out ep's held notifications whose turn has come: the writer moved to the next
 * rail after each put with data, each rail delivers in order, so following the same rule
 * gives the puts' order. */
static void order_arrivals(struct zcoll_tl *tl, struct zcoll_ep *ep) {
  for (;;) {
    int rail = ep->rx_rail;
    struct zcoll__verbs_qp *q = &ep->q[rail];
    if (!q->held_count) return;
    struct zcoll__verbs_arrival a = q->held[q->held_head];
    q->held_head = (q->held_head + 1) % (uint32_t)tl->rq_depth;
    q->held_count--;
    if (a.len) ep->rx_rail = (ep->rx_rail + 1) % ep->nrails;
    struct zcoll_tl_event ev = {
        .kind = ZCOLL_TL_EV_ARRIVED, .peer = ep->peer, .imm = a.imm, .len = a.len};
    zcoll__verbs_push(tl, &ev);
    repost(tl, ep, rail);
  }
}

static void arrived(struct zcoll_tl *tl, struct zcoll_ep *ep, int rail, const struct ibv_wc *wc) {
  struct zcoll__verbs_qp *q = &ep->q[rail];
  /* A completion per posted receive: with repost's bound the ring cannot be full. */
  if (!q->recv_posted || q->held_count == (uint32_t)tl->rq_depth) {
    if (!tl->failed)
      tl->failed = zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: rank %d overran its receives on %s",
                               ep->peer, tl->rail[rail].dev_name);
    return;
  }
  q->recv_posted--;
  q->held[(q->held_head + q->held_count) % (uint32_t)tl->rq_depth] = (struct zcoll__verbs_arrival){
      ntohl(wc->imm_data), wc->byte_len};
  q->held_count++;
  order_arrivals(tl, ep);
}

/* Drains the rail's completion queue into events; returns how many completions it saw. */
static int drain_rail(struct zcoll_tl *tl, int rail, size_t want) {
  struct ibv_wc wc[32];
  int total = 0;
  while (tl->evq.len < want) {
    int n = ibv_poll_cq(tl->rail[rail].cq, 32, wc);
    if (n < 0) {
      if (!tl->failed) tl->failed = zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: ibv_poll_cq failed");
      break;
    }
    for (int i = 0; i < n; i++) {
      uint32_t idx = (uint32_t)((wc[i].wr_id >> 32) & 0x7fffffff);
      struct zcoll_ep *ep = idx < (uint32_t)tl->neps ? tl->eps[idx] : NULL;
      if (wc[i].status != IBV_WC_SUCCESS || !ep) {
        fail_wc(tl, rail, &wc[i], ep);
        continue;
      }
      if (wc[i].wr_id & WR_RECV)
        arrived(tl, ep, rail, &wc[i]);
      else
        retire(ep, rail, (uint32_t)(wc[i].wr_id & WR_SLOT_MASK));
    }
    total += n;
    if (n < 32) break;
  }
  return total;
}

static int drain_cq(struct zcoll_tl *tl, size_t want) {
  int total = 0;
  for (int r = 0; r < tl->nrails; r++)
    if (tl->rail[r].cq) total += drain_rail(tl, r, want);
  return total;
}

void zcoll__verbs_drain(struct zcoll_tl *tl) { drain_cq(tl, SIZE_MAX); }

/* Writes left unsignalled at the tail of a queue would never report completion: close
 * each such tail with a signalled zero-length plain write, which the peer never sees. */
static void flush_tails(struct zcoll_tl *tl) {
  for (int i = 0; i < tl->neps; i++) {
    struct zcoll_ep *ep = tl->eps[i];
    for (int r = 0; r < ep->nrails && !ep->failed; r++) {
      struct zcoll__verbs_qp *q = &ep->q[r];
      if (!q->wr_count || q->signal_pending) continue;
      struct ibv_send_wr wr = {.sg_list = NULL, .num_sge = 0, .opcode = IBV_WR_RDMA_WRITE};
      if (zcoll__verbs_post(ep, r, &wr, 0, ZCOLL_VERBS_WR_QUIET) != ZCOLL_OK && !tl->failed)
        tl->failed = ZCOLL_ERR_TRANSPORT;
    }
  }
}

static void rail_events(struct zcoll_tl *tl, const struct zcoll__verbs_rail *r) {
  struct ibv_async_event e;
  while (ibv_get_async_event(r->ctx, &e) == 0) {
    enum ibv_event_type t = e.event_type;
    /* A port event names its port; another port of the device is not ours to fail on. */
    int port_ev = t == IBV_EVENT_PORT_ERR || t == IBV_EVENT_PORT_ACTIVE ||
                  t == IBV_EVENT_LID_CHANGE || t == IBV_EVENT_GID_CHANGE ||
                  t == IBV_EVENT_PKEY_CHANGE || t == IBV_EVENT_SM_CHANGE;
    unsigned port = port_ev ? (unsigned)e.element.port_num : r->port;
    ibv_ack_async_event(&e);
    int ours = !port_ev || port == r->port;
    if (ours &&
        (t == IBV_EVENT_QP_FATAL || t == IBV_EVENT_QP_REQ_ERR || t == IBV_EVENT_QP_ACCESS_ERR ||
         t == IBV_EVENT_CQ_ERR || t == IBV_EVENT_DEVICE_FATAL || t == IBV_EVENT_PORT_ERR)) {
      if (!tl->failed)
        tl->failed = zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: %s port %u: %s%s", r->dev_name, port,
                                 ibv_event_type_str(t),
                                 t == IBV_EVENT_PORT_ERR ? " (the link went down)" : "");
    } else {
      zcoll_log_info("verbs: %s port %u: %s", r->dev_name, port, ibv_event_type_str(t));
    }
  }
}

void zcoll__verbs_async_events(struct zcoll_tl *tl) {
  /* Each rail has its own context, so each reads its own copy of a device's events. */
  for (int i = 0; i < tl->nrails; i++) rail_events(tl, &tl->rail[i]);
}

static void check_events(struct zcoll_tl *tl) {
  for (int i = 0; i < tl->nrails; i++) {
    struct ibv_cq *cq;
    void *ctx;
    /* Consume the channel's notification so that the descriptor goes quiet again. */
    while (tl->rail[i].comp_ch && ibv_get_cq_event(tl->rail[i].comp_ch, &cq, &ctx) == 0)
      ibv_ack_cq_events(cq, 1);
  }
  zcoll__verbs_async_events(tl);
}

zcoll_status_t zcoll__verbs_poll(struct zcoll_tl *tl, struct zcoll_tl_event *ev, int max, int *n) {
  if (++tl->polls >= CHECK_EVENTS_EVERY) {
    tl->polls = 0;
    check_events(tl);
  }
  drain_cq(tl, (size_t)max);
  flush_tails(tl);
  *n = zcoll__evq_pop(&tl->evq, ev, max);
  return tl->failed;
}

int zcoll__verbs_event_fd(struct zcoll_tl *tl) { return tl->epfd; }

void zcoll__verbs_quiesce(struct zcoll_tl *tl) {
  /* Writes from registered user memory may still be reading it: put every queue pair
   * into the error state, which flushes all its work requests, and reap the flushes. */
  for (int i = 0; i < tl->neps; i++) {
    for (int r = 0; r < ZCOLL_VERBS_MAX_RAILS; r++) {
      struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
      if (tl->eps[i]->q[r].qp) ibv_modify_qp(tl->eps[i]->q[r].qp, &a, IBV_QP_STATE);
    }
    tl->eps[i]->failed = 1;
  }
  int64_t deadline = zcoll__deadline(1.0);
  for (;;) {
    int busy = 0;
    for (int i = 0; i < tl->neps && !busy; i++)
      for (int r = 0; r < ZCOLL_VERBS_MAX_RAILS && !busy; r++)
        busy = tl->eps[i]->q[r].wr_count != 0;
    if (!busy || zcoll__now_ms() >= deadline) break;
    for (int r = 0; r < tl->nrails; r++) {
      struct ibv_wc wc[32];
      int n = tl->rail[r].cq ? ibv_poll_cq(tl->rail[r].cq, 32, wc) : 0;
      for (int k = 0; k < n; k++) {
        if (wc[k].wr_id & WR_RECV) continue;
        uint32_t idx = (uint32_t)((wc[k].wr_id >> 32) & 0x7fffffff);
        if (idx >= (uint32_t)tl->neps) continue;
        struct zcoll__verbs_qp *q = &tl->eps[idx]->q[r];
        if (q->wr_count) { /* flushed writes complete one by one, signalled or not */
          q->wr_head = (q->wr_head + 1) % (uint32_t)tl->sq_depth;
          q->wr_count--;
        }
      }
    }
  }
  /* Then to RESET. A queue pair in ERR may still hold the responder's reference to one of
   * our regions: soft-RoCE (rdma_rxe, 6.1) keeps the region of a write cut off mid-way
   * until the queue pair is reset or destroyed, and a deregistration before that waits
   * 50 s in the kernel (rxe_dereg_mr, seen in the fault matrix's init..destroy cycles).
   * The endpoints go only after the registrations (comm.c), so the reset comes here; a
   * broken instance posts nothing more, and RESET is a legal move from any state. */
  for (int i = 0; i < tl->neps; i++)
    for (int r = 0; r < ZCOLL_VERBS_MAX_RAILS; r++) {
      struct ibv_qp_attr a = {.qp_state = IBV_QPS_RESET};
      if (tl->eps[i]->q[r].qp) ibv_modify_qp(tl->eps[i]->q[r].qp, &a, IBV_QP_STATE);
    }
  tl->evq.len = 0;
}

zcoll_status_t zcoll__verbs_arm(struct zcoll_tl *tl) {
  check_events(tl);
  if (tl->failed) return tl->failed;
  if (tl->evq.len) return ZCOLL_IN_PROGRESS;
  for (int r = 0; r < tl->nrails; r++)
    if (tl->rail[r].cq && ibv_req_notify_cq(tl->rail[r].cq, 0))
      return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: ibv_req_notify_cq: %s", strerror(errno));
  /* A completion that slipped in before the request would not wake us: look again. */
  if (drain_cq(tl, 1) || tl->evq.len) return ZCOLL_IN_PROGRESS;
  return ZCOLL_OK;
}
