/* amo.c -- the remote fetch-and-add (transport.h's fetch_add) as an
 * IBV_WR_ATOMIC_FETCH_AND_ADD, for the partial allreduce's ticket counter; and a queue
 * pair to this rank itself (self_ep). A NIC's atomics are atomic only with that NIC's: a
 * CPU's locked add on the same word can interleave with the NIC's read and write (rxe does
 * its atomics under a kernel lock the CPU never takes), so the counter's own rank must go
 * through its NIC as well.
 *
 * Only the instances of a communicator that asks for atomics (cfg->atomics) register
 * remote regions with IBV_ACCESS_REMOTE_ATOMIC and connect with an atomic responder
 * resource. Blocking: the caller waits for the completion; the completions of puts it
 * reaps meanwhile become events as in poll. */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/log.h"
#include "verbs.h"

static zcoll_status_t reply_buffer(struct zcoll_tl *tl) {
  if (tl->amo_mr) return ZCOLL_OK;
  if (posix_memalign((void **)&tl->amo_buf, 64, 64))
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "verbs: out of memory");
  if (!(tl->amo_mr = ibv_reg_mr(tl->pd, tl->amo_buf, 64, IBV_ACCESS_LOCAL_WRITE))) {
    free(tl->amo_buf);
    tl->amo_buf = NULL;
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: cannot register an atomic's reply: %m");
  }
  return ZCOLL_OK;
}

zcoll_status_t zcoll__verbs_fetch_add(struct zcoll_ep *ep, struct zcoll_tl_rkey *rkey,
                                      uint64_t roff, uint64_t add, uint64_t *old) {
  struct zcoll_tl *tl = ep->tl;
  if (!rkey || (roff & 7) || roff > rkey->len || rkey->len - roff < 8 || ((rkey->addr + roff) & 7))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "verbs: an atomic at offset %llu is outside rank %d's region or unaligned",
                       (unsigned long long)roff, ep->peer);
  if (!tl->atomics)
    return zcoll__fail(ZCOLL_ERR_UNSUPPORTED,
                       "verbs: %s has no atomics here (the device has none, or this instance "
                       "was not opened for them)",
                       tl->dev_name);
  if (tl->failed) return tl->failed;
  if (ep->failed) return zcoll__fail(ZCOLL_ERR_PEER_FAILED, "verbs: rank %d is gone", ep->peer);
  zcoll_status_t st = reply_buffer(tl);
  if (st != ZCOLL_OK) return st;
  struct ibv_sge sge = {(uintptr_t)tl->amo_buf, 8, tl->amo_mr->lkey};
  struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD};
  wr.wr.atomic.remote_addr = rkey->addr + roff;
  wr.wr.atomic.compare_add = add;
  wr.wr.atomic.rkey = rkey->rkey;
  tl->amo_done = 0;
  if ((st = zcoll__verbs_post(ep, &wr, 0, ZCOLL_VERBS_WR_AMO)) != ZCOLL_OK) return st;
  /* rxe does the atomic in the kernel, on this core maybe: yield it after a short spin. A
   * peer that dies ends the wait through the queue pair's retries (about 2 s) or the job's
   * news; so does ZCOLL_TIMEOUT. */
  int64_t start = zcoll__now_ns(), last = start;
  for (unsigned k = 1; !tl->amo_done; k++) {
    zcoll__verbs_drain(tl);
    if (tl->amo_done) break;
    if (tl->failed) return tl->failed;
    if (ep->failed) return zcoll__fail(ZCOLL_ERR_PEER_FAILED, "verbs: rank %d is gone", ep->peer);
    if (k < 64) continue;
    sched_yield();
    int64_t now = zcoll__now_ns();
    if (now - last < 10000000) continue;
    last = now;
    zcoll__verbs_async_events(tl);
    zcoll__verbs_cm_events(tl);
    if (tl->alive && (st = tl->alive(tl->alive_arg)) != ZCOLL_OK) return st;
    if (tl->cfg->timeout > 0 && now - start > (int64_t)(tl->cfg->timeout * 1e9))
      return zcoll__fail(ZCOLL_ERR_TIMEOUT, "verbs: an atomic at rank %d took over %.0f s",
                         ep->peer, tl->cfg->timeout);
  }
  *old = *(volatile uint64_t *)tl->amo_buf;
  return ZCOLL_OK;
}

/* The self queue pair takes its route from a connected one: the same port and source
 * GID, with this device's own address (GID or LID) as the destination. */
static zcoll_status_t self_route(struct zcoll_tl *tl, struct ibv_ah_attr *ah, enum ibv_mtu *mtu) {
  struct zcoll_ep *ref = NULL;
  for (int i = 0; i < tl->neps && !ref; i++)
    if (tl->eps[i]->qp && tl->eps[i]->id) ref = tl->eps[i];
  if (!ref)
    return zcoll__fail(ZCOLL_ERR_UNSUPPORTED,
                       "verbs: no connected queue pair to take a route to this rank from");
  struct ibv_qp_attr a;
  struct ibv_qp_init_attr ia;
  if (ibv_query_qp(ref->qp, &a, IBV_QP_AV | IBV_QP_PATH_MTU, &ia))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: cannot query a queue pair: %m");
  *ah = a.ah_attr;
  *mtu = a.path_mtu;
  if (ah->is_global) {
    if (ibv_query_gid(tl->ctx, ah->port_num, ah->grh.sgid_index, &ah->grh.dgid))
      return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: cannot read %s's GID: %m", tl->dev_name);
  } else {
    struct ibv_port_attr pa;
    if (ibv_query_port(tl->ctx, ah->port_num, &pa))
      return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: cannot query %s's port: %m", tl->dev_name);
    ah->dlid = pa.lid;
  }
  return ZCOLL_OK;
}

static zcoll_status_t self_connect(struct zcoll_tl *tl, struct ibv_qp *qp) {
  struct ibv_ah_attr ah;
  enum ibv_mtu mtu = IBV_MTU_1024;
  zcoll_status_t st = self_route(tl, &ah, &mtu);
  if (st != ZCOLL_OK) return st;
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
                          .pkey_index = 0,
                          .port_num = ah.port_num,
                          .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                             IBV_ACCESS_REMOTE_ATOMIC};
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: self queue pair to INIT: %m");
  memset(&a, 0, sizeof(a));
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = mtu;
  a.dest_qp_num = qp->qp_num;
  a.rq_psn = 0;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr = ah;
  if (ibv_modify_qp(qp, &a,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: self queue pair to RTR: %m");
  memset(&a, 0, sizeof(a));
  a.qp_state = IBV_QPS_RTS;
  a.timeout = (uint8_t)tl->cfg->ib_timeout; /* as ep.c's: never 0 (config.c) */
  a.retry_cnt = (uint8_t)tl->cfg->ib_retry_cnt;
  a.rnr_retry = 7;
  a.sq_psn = 0;
  a.max_rd_atomic = 1;
  if (ibv_modify_qp(qp, &a,
                    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                        IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: self queue pair to RTS: %m");
  return ZCOLL_OK;
}

zcoll_status_t zcoll__verbs_self_ep(struct zcoll_tl *tl, struct zcoll_ep **out) {
  if (tl->self) {
    *out = tl->self;
    return ZCOLL_OK;
  }
  if (!tl->atomics)
    return zcoll__fail(ZCOLL_ERR_UNSUPPORTED, "verbs: %s has no atomics here", tl->dev_name);
  struct zcoll_ep **eps = realloc(tl->eps, sizeof(struct zcoll_ep *) * (size_t)(tl->neps + 1));
  if (!eps) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "verbs: out of memory");
  tl->eps = eps;
  struct zcoll_ep *ep = calloc(1, sizeof(*ep));
  if (ep) ep->wrs = calloc((size_t)tl->sq_depth, sizeof(*ep->wrs));
  if (!ep || !ep->wrs) {
    free(ep);
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "verbs: out of memory");
  }
  struct ibv_qp_init_attr ia = {.send_cq = tl->cq,
                                .recv_cq = tl->cq,
                                .cap = {.max_send_wr = (uint32_t)tl->sq_depth,
                                        .max_recv_wr = 1,
                                        .max_send_sge = 1,
                                        .max_recv_sge = 1},
                                .qp_type = IBV_QPT_RC};
  ep->qp = ibv_create_qp(tl->pd, &ia);
  zcoll_status_t st = ep->qp ? self_connect(tl, ep->qp)
                             : zcoll__fail(ZCOLL_ERR_TRANSPORT,
                                           "verbs: cannot create a self queue pair: %m");
  if (st != ZCOLL_OK) {
    if (ep->qp) ibv_destroy_qp(ep->qp);
    free(ep->wrs);
    free(ep);
    return st;
  }
  ep->tl = tl;
  ep->peer = tl->rank;
  ep->index = tl->neps;
  ep->established = 1;
  tl->eps[tl->neps++] = ep;
  tl->self = ep;
  zcoll_log_info("verbs: rank %d reaches its own memory through %s for atomics", tl->rank,
                 tl->dev_name);
  *out = ep;
  return ZCOLL_OK;
}

void zcoll__verbs_amo_close(struct zcoll_tl *tl) {
  if (tl->amo_mr) ibv_dereg_mr(tl->amo_mr);
  free(tl->amo_buf);
  tl->amo_mr = NULL;
  tl->amo_buf = NULL;
}
