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
#include "config.h"
#include "verbs.h"

/* Every piece, credit and flush write of a channel fits: the executor keeps at most
 * PIPELINE_DEPTH (<= 256) pieces in flight per peer. Sized within what the device takes,
 * or refused naming the limit -- never a bare errno from ibv_create_*. */
static zcoll_status_t make_cq(struct zcoll_tl *tl, struct zcoll__verbs_rail *r, int n) {
  tl->sq_depth = tl->rq_depth = tl->cfg->ib_qp_depth ? tl->cfg->ib_qp_depth : ZCOLL_IB_QP_DEPTH_MIN;
  if (tl->sq_depth > r->dev.max_qp_wr)
    return zcoll__fail(ZCOLL_ERR_UNSUPPORTED,
                       "verbs: queue pairs of %d work requests (ZCOLL_IB_QP_DEPTH%s) are more than "
                       "%s allows (max_qp_wr %d)",
                       tl->sq_depth, tl->cfg->ib_qp_depth ? "" : " automatic", r->dev_name,
                       r->dev.max_qp_wr);
  long cqe = (long)(n ? n : 1) * (tl->sq_depth + tl->rq_depth) + 16;
  if (cqe > r->dev.max_cqe)
    return zcoll__fail(ZCOLL_ERR_UNSUPPORTED,
                       "verbs: %d peers need a completion queue of %ld entries (2 x %d work "
                       "requests each), more than %s allows (max_cqe %d)",
                       n, cqe, tl->sq_depth, r->dev_name, r->dev.max_cqe);
  r->cq_size = (int)cqe;
  if (!(r->cq = ibv_create_cq(r->ctx, r->cq_size, NULL, r->comp_ch, 0)))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                       "verbs: cannot create a completion queue of %d on %s: %m", r->cq_size,
                       r->dev_name);
  return ZCOLL_OK;
}

zcoll_status_t zcoll__verbs_qp_init(struct zcoll_tl *tl, int rail, struct ibv_qp *qp, int peer) {
  const struct zcoll__verbs_rail *r = &tl->rail[rail];
  /* Atomics go through rail 0 alone (amo.c). */
  struct ibv_qp_attr a = {
      .qp_state = IBV_QPS_INIT,
      .pkey_index = r->pkey_index,
      .port_num = r->port,
      .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                         (tl->atomics && rail == 0 ? IBV_ACCESS_REMOTE_ATOMIC : 0)};
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: the queue pair to rank %d to INIT on %s: %m",
                       peer, r->dev_name);
  return ZCOLL_OK;
}

zcoll_status_t zcoll__verbs_qp_ready(struct zcoll_tl *tl, int rail, struct ibv_qp *qp, int peer,
                                     const struct zcoll__verbs_port *pa, uint32_t qpn,
                                     uint32_t rpsn, uint32_t psn) {
  const struct zcoll__verbs_rail *r = &tl->rail[rail];
  int atomics = tl->atomics && rail == 0;
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR,
                          .path_mtu = pa->mtu < r->pa.mtu ? pa->mtu : r->pa.mtu,
                          .dest_qp_num = qpn,
                          .rq_psn = rpsn,
                          .max_dest_rd_atomic = atomics ? 1 : 0,
                          .min_rnr_timer = 12};
  a.ah_attr.port_num = r->port;
  a.ah_attr.sl = (uint8_t)tl->cfg->ib_sl;
  if (pa->gid_index >= 0) {
    a.ah_attr.is_global = 1;
    memcpy(a.ah_attr.grh.dgid.raw, pa->gid.raw, sizeof(pa->gid.raw));
    a.ah_attr.grh.sgid_index = (uint8_t)r->pa.gid_index;
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
                       peer, where, r->dev_name, r->port);
  memset(&a, 0, sizeof(a));
  a.qp_state = IBV_QPS_RTS;
  /* ZCOLL_IB_TIMEOUT: 16 (268 ms a try, 7 tries: a dead peer in ~2 s); never 0 (config.c),
   * which turns retransmission off and hangs on one lost packet. */
  a.timeout = (uint8_t)tl->cfg->ib_timeout;
  a.retry_cnt = (uint8_t)tl->cfg->ib_retry_cnt;
  a.rnr_retry = 7; /* retry forever if out of receives */
  a.sq_psn = psn;
  a.max_rd_atomic = atomics ? 1 : 0;
  if (ibv_modify_qp(qp, &a,
                    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                        IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: the queue pair to rank %d to RTS on %s: %m",
                       peer, r->dev_name);
  return ZCOLL_OK;
}

void zcoll__verbs_free_ep(struct zcoll_ep *ep) {
  for (int i = 0; i < ZCOLL_VERBS_MAX_RAILS; i++) {
    if (ep->q[i].qp) ibv_destroy_qp(ep->q[i].qp);
    free(ep->q[i].wrs);
    free(ep->q[i].held);
  }
  free(ep);
}

/* A queue pair of ep on a rail, in INIT with every receive posted. */
static zcoll_status_t make_qp(struct zcoll_tl *tl, struct zcoll_ep *ep, int rail) {
  struct zcoll__verbs_rail *r = &tl->rail[rail];
  struct zcoll__verbs_qp *q = &ep->q[rail];
  q->wrs = calloc((size_t)tl->sq_depth, sizeof(*q->wrs));
  q->held = calloc((size_t)tl->rq_depth, sizeof(*q->held));
  if (!q->wrs || !q->held) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "verbs: out of memory");
  struct ibv_qp_init_attr a = {
      .send_cq = r->cq,
      .recv_cq = r->cq,
      .cap = {.max_send_wr = (uint32_t)tl->sq_depth,
              .max_recv_wr = (uint32_t)tl->rq_depth,
              .max_send_sge = 1,
              .max_recv_sge = 1,
              .max_inline_data = 256},
      .qp_type = IBV_QPT_RC,
      .sq_sig_all = 0,
  };
  if (!(q->qp = ibv_create_qp(r->pd, &a))) {
    /* Some devices take no inline data: ask again without. */
    a.cap.max_inline_data = 0;
    if (!(q->qp = ibv_create_qp(r->pd, &a)))
      return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                         "verbs: cannot create a queue pair for rank %d on %s: %m", ep->peer,
                         r->dev_name);
  }
  r->max_inline = a.cap.max_inline_data;
  /* A random first PSN, as rc_pingpong's: a stale packet of an earlier queue pair that got
   * the same number is not taken for this one's. */
  if (getrandom(&q->psn, sizeof(q->psn), 0) != sizeof(q->psn)) q->psn = q->qp->qp_num;
  q->psn &= 0xffffff;
  zcoll_status_t st = zcoll__verbs_qp_init(tl, rail, q->qp, ep->peer);
  if (st == ZCOLL_OK) st = zcoll__verbs_post_recvs(ep, rail, (uint32_t)tl->rq_depth);
  return st;
}

/* The endpoint to rank peer: a queue pair on every rail (the peer may have fewer: connect
 * uses those both have). */
static zcoll_status_t make_ep(struct zcoll_tl *tl, int peer, struct zcoll_ep **out) {
  struct zcoll_ep *ep = calloc(1, sizeof(*ep));
  if (!ep) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "verbs: out of memory");
  ep->tl = tl;
  ep->index = tl->neps;
  ep->peer = peer;
  ep->nrails = tl->nrails;
  tl->eps[tl->neps++] = ep; /* closed with the instance from here on */
  *out = ep;
  zcoll_status_t st = ZCOLL_OK;
  for (int i = 0; i < tl->nrails && st == ZCOLL_OK; i++) st = make_qp(tl, ep, i);
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
  size_t size = sizeof(struct zcoll__verbs_part) * (size_t)tl->nrails;
  if (*each < size) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "verbs: address buffer short");
  if (tl->rail[0].cq)
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: peer_address may be called once per instance");
  zcoll_status_t st = ZCOLL_OK;
  for (int r = 0; r < tl->nrails && st == ZCOLL_OK; r++) st = make_cq(tl, &tl->rail[r], m);
  if (st == ZCOLL_OK && !(tl->eps = calloc((size_t)(m ? m : 1), sizeof(struct zcoll_ep *))))
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "verbs: out of memory");
  for (int i = 0; i < n && st == ZCOLL_OK; i++) {
    struct zcoll__verbs_part part[ZCOLL_VERBS_MAX_RAILS] = {{0, 0}};
    struct zcoll_ep *ep = NULL;
    if (ranks[i] >= 0 && (st = make_ep(tl, ranks[i], &ep)) == ZCOLL_OK)
      for (int r = 0; r < tl->nrails; r++)
        part[r] = (struct zcoll__verbs_part){ep->q[r].qp->qp_num, ep->q[r].psn};
    memcpy((char *)buf + (size_t)i * size, part, size);
  }
  *each = size;
  return st;
}

/* What the queue pair got (info): where the ZCOLL_IB_* settings show on a live QP. */
static void log_qp(const struct zcoll_tl *tl, const struct zcoll_ep *ep, int rail) {
  struct ibv_qp_attr a;
  struct ibv_qp_init_attr ia;
  if (ZCOLL_LOG_INFO > zcoll__log_level ||
      ibv_query_qp(ep->q[rail].qp, &a, IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_CAP,
                   &ia))
    return;
  zcoll_log_info("verbs: queue pair to rank %d on %s port %u: GID index %d, traffic class %u, "
                 "service level %u, ack timeout %u, retry count %u, %u send and %u receive "
                 "work requests",
                 ep->peer, tl->rail[rail].dev_name, tl->rail[rail].port,
                 a.ah_attr.is_global ? (int)a.ah_attr.grh.sgid_index : -1,
                 a.ah_attr.grh.traffic_class, a.ah_attr.sl, a.timeout, a.retry_cnt,
                 ia.cap.max_send_wr, ia.cap.max_recv_wr);
}

static const char *kind_name(int kind) {
  return kind == ZCOLL_VERBS_GID_IPV4   ? "an IPv4-mapped"
         : kind == ZCOLL_VERBS_GID_IPV6 ? "a global IPv6"
                                        : "a link-local IPv6";
}

/* Rank peer's port on a rail, from its address; TRANSPORT if this rail's port cannot talk
 * to it. */
static zcoll_status_t peer_port(const struct zcoll_tl *tl, int rail, int peer,
                                const struct zcoll__verbs_addr_port *ap,
                                struct zcoll__verbs_port *pa) {
  const struct zcoll__verbs_rail *r = &tl->rail[rail];
  memset(pa, 0, sizeof(*pa));
  pa->link_layer = ap->link_layer;
  pa->lid = ap->lid;
  pa->mtu = (enum ibv_mtu)ap->mtu;
  pa->gid_index = ap->global ? 0 : -1;
  memcpy(pa->gid.raw, ap->gid, sizeof(ap->gid));
  pa->gid_kind = ap->gid_kind;
  pa->roce_v2 = ap->roce_v2;
  if (ap->link_layer != r->pa.link_layer)
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: rank %d's port is %s, %s port %u %s", peer,
                       ap->link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand",
                       r->dev_name, r->port,
                       r->pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand");
  if (ap->global != (r->pa.gid_index >= 0))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                       "verbs: rank %d routes by %s, this rank by %s (set ZCOLL_IB_GID_INDEX "
                       "alike on every rank)",
                       peer, ap->global ? "GID" : "LID", ap->global ? "LID" : "GID");
  if (ap->global && (ap->gid_kind != r->pa.gid_kind || ap->roce_v2 != r->pa.roce_v2))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                       "verbs: rank %d uses %s %s GID, %s port %u %s %s one: they cannot talk "
                       "(set ZCOLL_IB_GID_INDEX to entries of one kind)",
                       peer, kind_name(ap->gid_kind), ap->roce_v2 ? "RoCE v2" : "RoCE v1",
                       r->dev_name, r->port, kind_name(r->pa.gid_kind),
                       r->pa.roce_v2 ? "RoCE v2" : "RoCE v1");
  return ZCOLL_OK;
}

/* ep's queue pairs to RTS toward rank peer's, as its address says: on the rails both have. */
static zcoll_status_t connect_ep(struct zcoll_tl *tl, struct zcoll_ep *ep, const void *buf,
                                 size_t len) {
  struct zcoll__verbs_addr a;
  if (len >= sizeof(a)) memcpy(&a, buf, sizeof(a));
  if (len < sizeof(a) || a.magic != ZCOLL_VERBS_ADDR_MAGIC || a.rank != ep->peer || !a.nrails ||
      a.nrails > ZCOLL_VERBS_MAX_RAILS ||
      len < sizeof(a) + a.nrails * (sizeof(struct zcoll__verbs_addr_port) +
                                    sizeof(struct zcoll__verbs_part)))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                       "verbs: rank %d sent a malformed address (another zcoll version?)",
                       ep->peer);
  ep->nrails = (int)a.nrails < tl->nrails ? (int)a.nrails : tl->nrails;
  if (ep->nrails < tl->nrails || (int)a.nrails > tl->nrails)
    zcoll_log_info("verbs: rank %d has %u rails, this rank %d: %d between them", ep->peer, a.nrails,
                   tl->nrails, ep->nrails);
  const char *ports = (const char *)buf + sizeof(a);
  const char *parts = ports + a.nrails * sizeof(struct zcoll__verbs_addr_port);
  for (int r = 0; r < ep->nrails; r++) {
    struct zcoll__verbs_addr_port ap;
    struct zcoll__verbs_part part;
    memcpy(&ap, ports + (size_t)r * sizeof(ap), sizeof(ap));
    memcpy(&part, parts + (size_t)r * sizeof(part), sizeof(part));
    if (!part.qpn)
      return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                         "verbs: rank %d sent a malformed address (no queue pair for this rank)",
                         ep->peer);
    /* Rails (ZCOLL_IB_HCA) meet by their place among the ports that are up: a port down
     * on one host shifts its rails against the other's, which a fabric with a plane per
     * rail may not route. Said once; it may still work (one switched fabric). Without the
     * list a rank's one port is its local rank's pick, unrelated to the peer's. */
    if (tl->cfg->ib_hca[0] && ap.listed != tl->rail[r].listed && !tl->rails_shifted) {
      tl->rails_shifted = 1;
      zcoll_log_warn("verbs: rank %d's rail %d is the port %d of its ZCOLL_IB_HCA list, this "
                     "rank's (%s:%u) the port %d: a port is down on one of the hosts, and rails "
                     "on separate fabric planes would not reach each other",
                     ep->peer, r, ap.listed + 1, tl->rail[r].dev_name, tl->rail[r].port,
                     tl->rail[r].listed + 1);
    }
    struct zcoll__verbs_port pa;
    zcoll_status_t st = peer_port(tl, r, ep->peer, &ap, &pa);
    if (st == ZCOLL_OK)
      st = zcoll__verbs_qp_ready(tl, r, ep->q[r].qp, ep->peer, &pa, part.qpn, part.psn,
                                 ep->q[r].psn);
    if (st != ZCOLL_OK) return st;
    log_qp(tl, ep, r);
  }
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
    zcoll_status_t st = connect_ep(tl, ep, addrs[i], lens[i]);
    if (st != ZCOLL_OK) return st;
  }
  for (int i = 0; i < n; i++)
    for (int k = 0; k < tl->neps; k++)
      if (tl->eps[k]->peer == ranks[i]) out[i] = tl->eps[k];
  return ZCOLL_OK;
}

void zcoll__verbs_close_eps(struct zcoll_tl *tl) {
  for (int i = 0; i < tl->neps; i++) zcoll__verbs_free_ep(tl->eps[i]);
  free(tl->eps);
  tl->eps = NULL;
  tl->neps = 0;
  tl->self = NULL;
}
