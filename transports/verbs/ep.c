/* ep.c -- verbs endpoints: one RC queue pair per peer, connected out of band, as
 * rc_pingpong and NCCL's net_ib do. peer_address makes the queue pairs (INIT, receives
 * posted) and hands each peer the number and first PSN of its own; connect takes the
 * peers' numbers and their ports' GIDs or LIDs from their addresses and moves each queue
 * pair to RTR and RTS. No rank writes before the barrier that follows every rank's connect
 * (comm.c), so no packet finds a queue pair that cannot yet receive it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/config.h"
#include "base/log.h"
#include "verbs.h"

/* Every piece, credit and flush write of a channel fits: the executor keeps at most
 * PIPELINE_DEPTH (<= 256) pieces in flight per peer. Sized within what the device takes,
 * or refused naming the limit -- never a bare errno from ibv_create_*. */
static zcoll_status_t make_cq(struct zcoll_tl *tl, int n) {
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
  return ZCOLL_OK;
}

zcoll_status_t zcoll__verbs_qp_init(struct zcoll_tl *tl, struct ibv_qp *qp, int peer) {
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
                          .pkey_index = tl->pkey_index,
                          .port_num = tl->port,
                          .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                             (tl->atomics ? IBV_ACCESS_REMOTE_ATOMIC : 0)};
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: the queue pair to rank %d to INIT on %s: %m",
                       peer, tl->dev_name);
  return ZCOLL_OK;
}

zcoll_status_t zcoll__verbs_qp_ready(struct zcoll_tl *tl, struct ibv_qp *qp, int peer,
                                     const struct zcoll__verbs_port *pa, uint32_t qpn,
                                     uint32_t rpsn, uint32_t psn) {
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR,
                          .path_mtu = pa->mtu < tl->pa.mtu ? pa->mtu : tl->pa.mtu,
                          .dest_qp_num = qpn,
                          .rq_psn = rpsn,
                          .max_dest_rd_atomic = tl->atomics ? 1 : 0,
                          .min_rnr_timer = 12};
  a.ah_attr.port_num = tl->port;
  a.ah_attr.sl = (uint8_t)tl->cfg->ib_sl;
  if (pa->gid_index >= 0) {
    a.ah_attr.is_global = 1;
    memcpy(a.ah_attr.grh.dgid.raw, pa->gid.raw, sizeof(pa->gid.raw));
    a.ah_attr.grh.sgid_index = (uint8_t)tl->pa.gid_index;
    a.ah_attr.grh.hop_limit = 255;
    a.ah_attr.grh.traffic_class = (uint8_t)(tl->cfg->ib_tc > 0 ? tl->cfg->ib_tc : 0);
  } else {
    a.ah_attr.dlid = pa->lid;
  }
  char where[128];
  zcoll__verbs_port_str(pa, where, sizeof(where));
  if (ibv_modify_qp(qp, &a,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                       "verbs: the queue pair to rank %d (%s) to RTR on %s port %u: %m (no route "
                       "or neighbour to that address?)",
                       peer, where, tl->dev_name, tl->port);
  memset(&a, 0, sizeof(a));
  a.qp_state = IBV_QPS_RTS;
  /* ZCOLL_IB_TIMEOUT: 16 (268 ms a try, 7 tries: a dead peer in ~2 s); never 0 (config.c),
   * which turns retransmission off and hangs on one lost packet. */
  a.timeout = (uint8_t)tl->cfg->ib_timeout;
  a.retry_cnt = (uint8_t)tl->cfg->ib_retry_cnt;
  a.rnr_retry = 7; /* retry forever if out of receives */
  a.sq_psn = psn;
  a.max_rd_atomic = tl->atomics ? 1 : 0;
  if (ibv_modify_qp(qp, &a,
                    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                        IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: the queue pair to rank %d to RTS on %s: %m",
                       peer, tl->dev_name);
  return ZCOLL_OK;
}

/* The endpoint to rank peer: its queue pair in INIT with every receive posted. */
static zcoll_status_t make_ep(struct zcoll_tl *tl, int peer, struct zcoll_ep **out) {
  struct zcoll_ep *ep = calloc(1, sizeof(*ep));
  if (ep) ep->wrs = calloc((size_t)tl->sq_depth, sizeof(*ep->wrs));
  if (!ep || !ep->wrs) {
    free(ep);
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "verbs: out of memory");
  }
  ep->tl = tl;
  ep->index = tl->neps;
  ep->peer = peer;
  tl->eps[tl->neps++] = ep; /* closed with the instance from here on */
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
  if (!(ep->qp = ibv_create_qp(tl->pd, &a))) {
    /* Some devices take no inline data: ask again without. */
    a.cap.max_inline_data = 0;
    if (!(ep->qp = ibv_create_qp(tl->pd, &a)))
      return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: cannot create a queue pair for rank %d: %m",
                         peer);
  }
  tl->max_inline = a.cap.max_inline_data;
  /* A random first PSN, as rc_pingpong's: a stale packet of an earlier queue pair that got
   * the same number is not taken for this one's. */
  if (getrandom(&ep->psn, sizeof(ep->psn), 0) != sizeof(ep->psn))
    ep->psn = (uint32_t)ep->qp->qp_num;
  ep->psn &= 0xffffff;
  zcoll_status_t st = zcoll__verbs_qp_init(tl, ep->qp, peer);
  if (st == ZCOLL_OK) st = zcoll__verbs_post_recvs(ep, (uint32_t)tl->rq_depth);
  *out = ep;
  return st;
}

static int bad_rank(const struct zcoll_tl *tl, int r) {
  return r < 0 || r >= tl->size || r == tl->rank;
}

zcoll_status_t zcoll__verbs_peer_address(struct zcoll_tl *tl, int n, const int *ranks, void *buf,
                                         size_t *each) {
  int m = 0;
  for (int i = 0; i < n; i++) {
    if (ranks[i] < 0) continue;
    if (bad_rank(tl, ranks[i]))
      return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "verbs: cannot connect to rank %d", ranks[i]);
    m++;
  }
  if (*each < sizeof(struct zcoll__verbs_part))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "verbs: address buffer short");
  if (tl->cq)
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: peer_address may be called once per instance");
  zcoll_status_t st = make_cq(tl, m);
  if (st == ZCOLL_OK && !(tl->eps = calloc((size_t)(m ? m : 1), sizeof(struct zcoll_ep *))))
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "verbs: out of memory");
  for (int i = 0; i < n && st == ZCOLL_OK; i++) {
    struct zcoll__verbs_part part = {0, 0};
    struct zcoll_ep *ep = NULL;
    if (ranks[i] >= 0 && (st = make_ep(tl, ranks[i], &ep)) == ZCOLL_OK)
      part = (struct zcoll__verbs_part){ep->qp->qp_num, ep->psn};
    memcpy((char *)buf + (size_t)i * sizeof(part), &part, sizeof(part));
  }
  *each = sizeof(struct zcoll__verbs_part);
  return st;
}

/* What the queue pair got (info): where the ZCOLL_IB_* settings show on a live QP. */
static void log_qp(const struct zcoll_tl *tl, const struct zcoll_ep *ep) {
  struct ibv_qp_attr a;
  struct ibv_qp_init_attr ia;
  if (ZCOLL_LOG_INFO > zcoll__log_level ||
      ibv_query_qp(ep->qp, &a, IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_CAP, &ia))
    return;
  zcoll_log_info("verbs: queue pair to rank %d on %s port %u: GID index %d, traffic class %u, "
                 "service level %u, ack timeout %u, retry count %u, %u send and %u receive "
                 "work requests",
                 ep->peer, tl->dev_name, tl->port,
                 a.ah_attr.is_global ? (int)a.ah_attr.grh.sgid_index : -1,
                 a.ah_attr.grh.traffic_class, a.ah_attr.sl, a.timeout, a.retry_cnt,
                 ia.cap.max_send_wr, ia.cap.max_recv_wr);
}

static const char *kind_name(int kind) {
  return kind == ZCOLL_VERBS_GID_IPV4   ? "an IPv4-mapped"
         : kind == ZCOLL_VERBS_GID_IPV6 ? "a global IPv6"
                                        : "a link-local IPv6";
}

/* Rank peer's port from its address; TRANSPORT if it is not one, or one this port cannot
 * talk to. */
static zcoll_status_t peer_port(const struct zcoll_tl *tl, int peer, const void *buf, size_t len,
                                struct zcoll__verbs_port *pa, struct zcoll__verbs_part *part) {
  struct zcoll__verbs_addr a;
  if (len < sizeof(a) + sizeof(*part))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: rank %d sent a malformed address", peer);
  memcpy(&a, buf, sizeof(a));
  memcpy(part, (const char *)buf + sizeof(a), sizeof(*part));
  if (a.magic != ZCOLL_VERBS_ADDR_MAGIC || a.rank != peer || !part->qpn)
    return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                       "verbs: rank %d sent a malformed address (another zcoll version?)", peer);
  memset(pa, 0, sizeof(*pa));
  pa->link_layer = a.link_layer;
  pa->lid = a.lid;
  pa->mtu = (enum ibv_mtu)a.mtu;
  pa->gid_index = a.global ? 0 : -1;
  memcpy(pa->gid.raw, a.gid, sizeof(a.gid));
  pa->gid_kind = a.gid_kind;
  pa->roce_v2 = a.roce_v2;
  if (a.link_layer != tl->pa.link_layer)
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: rank %d's port is %s, %s port %u %s", peer,
                       a.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand",
                       tl->dev_name, tl->port,
                       tl->pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand");
  if (a.global != (tl->pa.gid_index >= 0))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                       "verbs: rank %d routes by %s, this rank by %s (set ZCOLL_IB_GID_INDEX "
                       "alike on every rank)",
                       peer, a.global ? "GID" : "LID", a.global ? "LID" : "GID");
  if (a.global && (a.gid_kind != tl->pa.gid_kind || a.roce_v2 != tl->pa.roce_v2))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                       "verbs: rank %d uses %s %s GID, %s port %u %s %s one: they cannot talk "
                       "(set ZCOLL_IB_GID_INDEX to entries of one kind)",
                       peer, kind_name(a.gid_kind), a.roce_v2 ? "RoCE v2" : "RoCE v1", tl->dev_name,
                       tl->port, kind_name(tl->pa.gid_kind),
                       tl->pa.roce_v2 ? "RoCE v2" : "RoCE v1");
  return ZCOLL_OK;
}

zcoll_status_t zcoll__verbs_connect(struct zcoll_tl *tl, int n, const int *ranks,
                                    const void *const *addrs, const size_t *lens,
                                    struct zcoll_ep **out) {
  /* The caller's mistake first, before anything is made (transport.h). */
  for (int i = 0; i < n; i++)
    if (bad_rank(tl, ranks[i]))
      return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "verbs: cannot connect to rank %d", ranks[i]);
  if (tl->connected)
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: connect may be called once per instance");
  tl->connected = 1;
  for (int i = 0; i < n; i++) {
    struct zcoll_ep *ep = NULL;
    for (int k = 0; k < tl->neps && !ep; k++)
      if (tl->eps[k]->peer == ranks[i]) ep = tl->eps[k];
    if (!ep)
      return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                         "verbs: no queue pair was made for rank %d (peer_address did not list it)",
                         ranks[i]);
    struct zcoll__verbs_port pa;
    struct zcoll__verbs_part part;
    zcoll_status_t st = peer_port(tl, ranks[i], addrs[i], lens[i], &pa, &part);
    if (st == ZCOLL_OK)
      st = zcoll__verbs_qp_ready(tl, ep->qp, ep->peer, &pa, part.qpn, part.psn, ep->psn);
    if (st != ZCOLL_OK) return st;
    log_qp(tl, ep);
  }
  for (int i = 0; i < n; i++)
    for (int k = 0; k < tl->neps; k++)
      if (tl->eps[k]->peer == ranks[i]) out[i] = tl->eps[k];
  return ZCOLL_OK;
}

void zcoll__verbs_close_eps(struct zcoll_tl *tl) {
  for (int i = 0; i < tl->neps; i++) {
    struct zcoll_ep *ep = tl->eps[i];
    if (ep->qp) ibv_destroy_qp(ep->qp);
    free(ep->wrs);
    free(ep);
  }
  free(tl->eps);
  tl->eps = NULL;
  tl->neps = 0;
  tl->self = NULL;
}
