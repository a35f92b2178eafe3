/* ep.c -- verbs endpoints: RC queue pairs connected with RDMA CM. The lower rank of a
 * pair listens, the higher one connects, so every pair meets exactly once. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/log.h"
#include "base/clock.h"
#include "verbs.h"

static zcoll_status_t create_qp(struct zcoll_tl *tl, struct zcoll_ep *ep, struct rdma_cm_id *id) {
  if (id->verbs != tl->ctx)
    return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                       "verbs: the route to rank %d leaves through another device than %s",
                       ep->peer, tl->dev_name);
  struct ibv_qp_init_attr a = {
      .send_cq = tl->cq,
      .recv_cq = tl->cq,
      .cap = {.max_send_wr = (uint32_t)tl->sq_depth,
              .max_recv_wr = (uint32_t)tl->rq_depth,
              .max_send_sge = 1,
              .max_recv_sge = 1,
              .max_inline_data = 256},
      .qp_type = IBV_QPT_RC,
      .sq_sig_all = 0,
  };
  if (rdma_create_qp(id, tl->pd, &a)) {
    /* Some devices take no inline data: ask again without. */
    a.cap.max_inline_data = 0;
    if (rdma_create_qp(id, tl->pd, &a))
      return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: cannot create a queue pair for rank %d: %m",
                         ep->peer);
  }
  tl->max_inline = a.cap.max_inline_data;
  ep->id = id;
  ep->qp = id->qp;
  id->context = ep;
  /* ZCOLL_IB_TIMEOUT: 16 (268 ms a try, 7 tries: a dead peer in ~2 s); never 0 (config.c),
   * which turns retransmission off and hangs on one lost packet. */
  uint8_t t = (uint8_t)tl->cfg->ib_timeout;
  if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof(t)))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                       "verbs: cannot set the ack timeout (ZCOLL_IB_TIMEOUT=%d) for rank %d: %m",
                       tl->cfg->ib_timeout, ep->peer);
  return zcoll__verbs_post_recvs(ep, (uint32_t)tl->rq_depth);
}

/* What the queue pair got (info): where the ZCOLL_IB_* settings show on a live QP. */
static void log_qp(const struct zcoll_tl *tl, const struct zcoll_ep *ep) {
  struct ibv_qp_attr a;
  struct ibv_qp_init_attr ia;
  if (ZCOLL_LOG_INFO > zcoll__log_level ||
      ibv_query_qp(ep->qp, &a, IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_CAP, &ia))
    return;
  zcoll_log_info("verbs: queue pair to rank %d on %s port %u: GID index %u, traffic class %u, "
                 "ack timeout %u, retry count %u, %u send and %u receive work requests",
                 ep->peer, tl->dev_name, tl->port, a.ah_attr.grh.sgid_index,
                 a.ah_attr.grh.traffic_class, a.timeout, a.retry_cnt, ia.cap.max_send_wr,
                 ia.cap.max_recv_wr);
}

/* One atomic in flight each way where the communicator asks for atomics: with a responder
 * resource RDMA CM also grants the queue pair remote atomic access. */
static struct rdma_conn_param conn_param(const struct zcoll_tl *tl,
                                         const struct zcoll__verbs_conn *pd) {
  struct rdma_conn_param p = {.private_data = pd,
                              .private_data_len = sizeof(*pd),
                              .responder_resources = tl->atomics ? 1 : 0,
                              .initiator_depth = tl->atomics ? 1 : 0,
                              .retry_count = (uint8_t)tl->cfg->ib_retry_cnt,
                              .rnr_retry_count = 7}; /* 7: retry forever if out of receives */
  return p;
}

static struct zcoll_ep *ep_of_rank(struct zcoll_ep **eps, int n, int rank) {
  for (int i = 0; i < n; i++)
    if (eps[i]->peer == rank) return eps[i];
  return NULL;
}

/* Handles one CM event during connection setup; *done counts established peers. */
static zcoll_status_t setup_event(struct zcoll_tl *tl, struct rdma_cm_event *e,
                                  struct zcoll_ep **eps, int n, const struct zcoll__verbs_addr *pa,
                                  int *done, struct rdma_cm_id **rejected) {
  struct zcoll_ep *ep = e->event == RDMA_CM_EVENT_CONNECT_REQUEST ? NULL : e->id->context;
  switch (e->event) {
  case RDMA_CM_EVENT_ADDR_RESOLVED: {
    zcoll_status_t st = zcoll__verbs_set_tos(tl, e->id);
    if (st != ZCOLL_OK) return st;
    if (rdma_resolve_route(e->id, 5000))
      return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: route to rank %d: %m", ep->peer);
    return ZCOLL_OK;
  }
  case RDMA_CM_EVENT_ROUTE_RESOLVED: {
    zcoll_status_t st = create_qp(tl, ep, e->id);
    if (st != ZCOLL_OK) return st;
    struct zcoll__verbs_conn c = {tl->rank, 0, 0};
    for (int i = 0; i < n; i++)
      if (eps[i] == ep) c.nonce = pa[i].nonce;
    struct rdma_conn_param p = conn_param(tl, &c);
    if (rdma_connect(e->id, &p))
      return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: connect to rank %d: %m", ep->peer);
    return ZCOLL_OK;
  }
  case RDMA_CM_EVENT_CONNECT_REQUEST: {
    struct zcoll__verbs_conn c;
    const void *pd = e->param.conn.private_data;
    if (!pd || e->param.conn.private_data_len < sizeof(c)) goto reject;
    memcpy(&c, pd, sizeof(c));
    ep = ep_of_rank(eps, n, c.rank);
    /* Only our expected, higher-ranked peers, naming this instance, get in. */
    if (c.nonce != tl->nonce || !ep || ep->id || c.rank <= tl->rank) goto reject;
    zcoll_status_t st = create_qp(tl, ep, e->id);
    if (st != ZCOLL_OK) return st;
    struct zcoll__verbs_conn mine = {tl->rank, 0, tl->nonce};
    struct rdma_conn_param p = conn_param(tl, &mine);
    if (rdma_accept(e->id, &p))
      return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: accept from rank %d: %m", ep->peer);
    return ZCOLL_OK;
  reject:
    zcoll_log_warn("verbs: rejected an unexpected connection request");
    rdma_reject(e->id, NULL, 0);
    *rejected = e->id; /* destroyed once the event is acknowledged */
    return ZCOLL_OK;
  }
  case RDMA_CM_EVENT_ESTABLISHED:
    if (!ep->established) (*done)++;
    ep->established = 1;
    log_qp(tl, ep);
    return ZCOLL_OK;
  default:
    return zcoll__fail(e->event == RDMA_CM_EVENT_REJECTED ? ZCOLL_ERR_PEER_FAILED
                                                          : ZCOLL_ERR_TRANSPORT,
                       "verbs: connecting to rank %d: %s (status %d)", ep ? ep->peer : -1,
                       rdma_event_str(e->event), e->status);
  }
}

zcoll_status_t zcoll__verbs_connect(struct zcoll_tl *tl, int n, const int *ranks,
                                    const void *const *addrs, const size_t *lens,
                                    struct zcoll_ep **out) {
  /* The caller's mistake first, before anything is made (transport.h). */
  for (int i = 0; i < n; i++)
    if (ranks[i] < 0 || ranks[i] >= tl->size || ranks[i] == tl->rank)
      return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "verbs: cannot connect to rank %d", ranks[i]);
  if (tl->neps)
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: connect may be called once per instance");
  /* Every piece, credit and flush write of a channel fits: the executor keeps at most
   * PIPELINE_DEPTH (<= 256) pieces in flight per peer. Sized within what the device takes,
   * or refused naming the limit -- never a bare errno from ibv_create_*. */
  tl->sq_depth = tl->rq_depth = tl->cfg->ib_qp_depth ? tl->cfg->ib_qp_depth : ZCOLL_IB_QP_DEPTH_MIN;
  if (tl->sq_depth > tl->dev.max_qp_wr)
    return zcoll__fail(ZCOLL_ERR_UNSUPPORTED,
                       "verbs: queue pairs of %d work requests (ZCOLL_IB_QP_DEPTH%s) are more than "
                       "%s allows (max_qp_wr %d)",
                       tl->sq_depth, tl->cfg->ib_qp_depth ? "" : " automatic", tl->dev_name,
                       tl->dev.max_qp_wr);
  long cqe = (long)(n ? n : 1) * (tl->sq_depth + tl->rq_depth) + 16;
  if (cqe > tl->dev.max_cqe)
    return zcoll__fail(ZCOLL_ERR_UNSUPPORTED,
                       "verbs: %d peers need a completion queue of %ld entries (2 x %d work "
                       "requests each), more than %s allows (max_cqe %d)",
                       n, cqe, tl->sq_depth, tl->dev_name, tl->dev.max_cqe);
  tl->cq_size = (int)cqe;
  if (!(tl->cq = ibv_create_cq(tl->ctx, tl->cq_size, NULL, tl->comp_ch, 0)))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: cannot create a completion queue of %d: %m",
                       tl->cq_size);
  struct zcoll__verbs_addr *pa = calloc((size_t)(n ? n : 1), sizeof(*pa));
  tl->eps = calloc((size_t)(n ? n : 1), sizeof(struct zcoll_ep *));
  if (!pa || !tl->eps) {
    free(pa);
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "verbs: out of memory");
  }
  zcoll_status_t st = ZCOLL_OK;
  for (int i = 0; i < n && st == ZCOLL_OK; i++) {
    struct zcoll_ep *ep = calloc(1, sizeof(*ep));
    if (ep) ep->wrs = calloc((size_t)tl->sq_depth, sizeof(*ep->wrs));
    if (!ep || !ep->wrs) {
      free(ep);
      st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "verbs: out of memory");
      break;
    }
    ep->tl = tl;
    ep->index = i;
    ep->peer = ranks[i];
    tl->eps[tl->neps++] = ep;
    if (lens[i] < sizeof(pa[i]))
      st = zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: rank %d sent a malformed address", ranks[i]);
    else
      memcpy(&pa[i], addrs[i], sizeof(pa[i]));
  }
  /* The higher rank of each pair starts the handshake. */
  for (int i = 0; i < n && st == ZCOLL_OK; i++) {
    struct zcoll_ep *ep = tl->eps[i];
    if (ep->peer > tl->rank) continue;
    struct rdma_cm_id *id;
    struct sockaddr_in src = tl->ip;
    src.sin_port = 0;
    if (rdma_create_id(tl->cm_ch, &id, ep, RDMA_PS_TCP) ||
        rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&pa[i].sin, 5000))
      st = zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: resolving rank %d's address: %m", ep->peer);
    else
      ep->id = id; /* so that a failure can destroy it; the QP comes later */
  }
  int done = 0;
  int64_t deadline = zcoll__deadline(tl->cfg->timeout);
  while (st == ZCOLL_OK && done < n) {
    struct pollfd p = {tl->cm_ch->fd, POLLIN, 0};
    int64_t left = deadline == INT64_MAX ? 1000 : deadline - zcoll__now_ms();
    if (left <= 0) {
      st = zcoll__fail(ZCOLL_ERR_TIMEOUT, "verbs: only %d of %d peers connected in %.0f s", done, n,
                       tl->cfg->timeout);
      break;
    }
    if (poll(&p, 1, left > 1000 ? 1000 : (int)left) <= 0) {
      /* A rank that failed elsewhere will never connect: do not wait out the timeout. */
      if (tl->alive && (st = tl->alive(tl->alive_arg)) != ZCOLL_OK) break;
      continue;
    }
    struct rdma_cm_event *e;
    while (st == ZCOLL_OK && rdma_get_cm_event(tl->cm_ch, &e) == 0) {
      struct rdma_cm_id *rejected = NULL;
      st = setup_event(tl, e, tl->eps, n, pa, &done, &rejected);
      rdma_ack_cm_event(e);
      if (rejected) rdma_destroy_id(rejected);
    }
  }
  free(pa);
  if (st != ZCOLL_OK) return st;
  for (int i = 0; i < n; i++) out[i] = tl->eps[i];
  return ZCOLL_OK;
}

zcoll_status_t zcoll__verbs_cm_events(struct zcoll_tl *tl) {
  struct rdma_cm_event *e;
  while (rdma_get_cm_event(tl->cm_ch, &e) == 0) {
    struct zcoll_ep *ep = e->id ? e->id->context : NULL;
    if (e->event == RDMA_CM_EVENT_DISCONNECTED || e->event == RDMA_CM_EVENT_DEVICE_REMOVAL) {
      if (ep && ep != (void *)tl) ep->failed = 1;
      if (!tl->failed)
        tl->failed = zcoll__fail(
            e->event == RDMA_CM_EVENT_DISCONNECTED ? ZCOLL_ERR_PEER_FAILED : ZCOLL_ERR_TRANSPORT,
            "verbs: %s from rank %d on %s port %u", rdma_event_str(e->event),
            ep && ep != (void *)tl ? ep->peer : -1, tl->dev_name, (unsigned)tl->port);
    } else if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
      rdma_reject(e->id, NULL, 0); /* setup is over: nobody else may join */
      struct rdma_cm_id *id = e->id;
      rdma_ack_cm_event(e);
      rdma_destroy_id(id);
      continue;
    }
    rdma_ack_cm_event(e);
  }
  return tl->failed;
}

void zcoll__verbs_close_eps(struct zcoll_tl *tl) {
  for (int i = 0; i < tl->neps; i++) {
    struct zcoll_ep *ep = tl->eps[i];
    if (ep->id) {
      if (ep->qp) rdma_destroy_qp(ep->id);
      rdma_destroy_id(ep->id);
    } else if (ep->qp) { /* the queue pair to itself (amo.c) */
      ibv_destroy_qp(ep->qp);
    }
    free(ep->wrs);
    free(ep);
  }
  free(tl->eps);
  tl->eps = NULL;
  tl->neps = 0;
  tl->self = NULL;
}
