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
  if (!(tl->amo_mr = ibv_reg_mr(tl->rail[0].pd, tl->amo_buf, 64, IBV_ACCESS_LOCAL_WRITE))) {
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
                       tl->rail[0].dev_name);
  if (tl->failed) return tl->failed;
  if (ep->failed) return zcoll__fail(ZCOLL_ERR_PEER_FAILED, "verbs: rank %d is gone", ep->peer);
  zcoll_status_t st = reply_buffer(tl);
  if (st != ZCOLL_OK) return st;
  struct ibv_sge sge = {(uintptr_t)tl->amo_buf, 8, tl->amo_mr->lkey};
  struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD};
  wr.wr.atomic.remote_addr = rkey->addr + roff;
  wr.wr.atomic.compare_add = add;
  wr.wr.atomic.rkey = rkey->rkey[0];
  tl->amo_done = 0;
  if ((st = zcoll__verbs_post(ep, 0, &wr, 0, ZCOLL_VERBS_WR_AMO)) != ZCOLL_OK) return st;
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
    if (tl->alive && (st = tl->alive(tl->alive_arg)) != ZCOLL_OK) return st;
    if (tl->cfg->timeout > 0 && now - start > (int64_t)(tl->cfg->timeout * 1e9))
      return zcoll__fail(ZCOLL_ERR_TIMEOUT, "verbs: an atomic at rank %d took over %.0f s",
                         ep->peer, tl->cfg->timeout);
  }
  *old = *(volatile uint64_t *)tl->amo_buf;
  return ZCOLL_OK;
}

/* The self queue pair is its own peer: rail 0's port address, its own number. */
static zcoll_status_t self_connect(struct zcoll_tl *tl, struct ibv_qp *qp) {
  zcoll_status_t st = zcoll__verbs_qp_init(tl, 0, qp, tl->rank);
  if (st == ZCOLL_OK)
    st = zcoll__verbs_qp_ready(tl, 0, qp, tl->rank, &tl->rail[0].pa, qp->qp_num, 0, 0);
  return st;
}

zcoll_status_t zcoll__verbs_self_ep(struct zcoll_tl *tl, struct zcoll_ep **out) {
  if (tl->self) {
    *out = tl->self;
    return ZCOLL_OK;
  }
  struct zcoll__verbs_rail *r = &tl->rail[0];
  if (!tl->atomics)
    return zcoll__fail(ZCOLL_ERR_UNSUPPORTED, "verbs: %s has no atomics here", r->dev_name);
  if (!r->cq)
    return zcoll__fail(ZCOLL_ERR_UNSUPPORTED, "verbs: no queue pairs yet (a rank without peers)");
  struct zcoll_ep **eps = realloc(tl->eps, sizeof(struct zcoll_ep *) * (size_t)(tl->neps + 1));
  if (!eps) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "verbs: out of memory");
  tl->eps = eps;
  struct zcoll_ep *ep = calloc(1, sizeof(*ep));
  if (ep) ep->q[0].wrs = calloc((size_t)tl->sq_depth, sizeof(*ep->q[0].wrs));
  if (!ep || !ep->q[0].wrs) {
    free(ep);
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "verbs: out of memory");
  }
  struct ibv_qp_init_attr ia = {.send_cq = r->cq,
                                .recv_cq = r->cq,
                                .cap = {.max_send_wr = (uint32_t)tl->sq_depth,
                                        .max_recv_wr = 1,
                                        .max_send_sge = 1,
                                        .max_recv_sge = 1},
                                .qp_type = IBV_QPT_RC};
  ep->q[0].qp = ibv_create_qp(r->pd, &ia);
  zcoll_status_t st = ep->q[0].qp ? self_connect(tl, ep->q[0].qp)
                                  : zcoll__fail(ZCOLL_ERR_TRANSPORT,
                                                "verbs: cannot create a self queue pair: %m");
  if (st != ZCOLL_OK) {
    zcoll__verbs_free_ep(ep);
    return st;
  }
  ep->tl = tl;
  ep->peer = tl->rank;
  ep->index = tl->neps;
  ep->nrails = 1;
  tl->eps[tl->neps++] = ep;
  tl->self = ep;
  zcoll_log_info("verbs: rank %d reaches its own memory through %s for atomics", tl->rank,
                 r->dev_name);
  *out = ep;
  return ZCOLL_OK;
}

void zcoll__verbs_amo_close(struct zcoll_tl *tl) {
  if (tl->amo_mr) ibv_dereg_mr(tl->amo_mr);
  free(tl->amo_buf);
  tl->amo_mr = NULL;
  tl->amo_buf = NULL;
}
