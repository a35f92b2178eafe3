/* amo.c -- the remote fetch-and-add (transport.h's fetch_add) as a UCP atomic on a region
 * mapped for it (mr.c). Where the peers share memory with a UCX transport that has device
 * atomics, no CPU of the owner takes part; elsewhere (TCP) UCX emulates the atomic with a
 * message its owner's worker answers when it progresses -- docs/partial.md says what that
 * means for a partial allreduce's rounds. Blocking: progresses the worker until done. */
#include "base/clock.h"
#include "base/log.h"
#include "ucx.h"

zcoll_status_t zcoll__ucx_fetch_add(struct zcoll_ep *ep, struct zcoll_tl_rkey *rkey, uint64_t roff,
                                    uint64_t add, uint64_t *old) {
  struct zcoll_tl *tl = ep->tl;
  if (!rkey || (roff & 7) || roff > rkey->len || rkey->len - roff < 8)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "ucx: an atomic at offset %llu is outside rank %d's region or unaligned",
                       (unsigned long long)roff, ep->peer);
  if (!rkey->urkey)
    return zcoll__fail(ZCOLL_ERR_UNSUPPORTED,
                       "ucx: rank %d's region has no UCP key for atomics (UCX could not map it)",
                       ep->peer);
  if (tl->failed) return tl->failed;
  if (ep->failed || !ep->ep)
    return zcoll__fail(ZCOLL_ERR_PEER_FAILED, "ucx: the connection to rank %d is closed", ep->peer);
  tl->amo_reply = 0;
  ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE |
                                           UCP_OP_ATTR_FIELD_REPLY_BUFFER,
                           .datatype = ucp_dt_make_contig(8),
                           .reply_buffer = &tl->amo_reply};
  ucs_status_ptr_t r = zcoll__ucp.atomic_op_nbx(ep->ep, UCP_ATOMIC_OP_ADD, &add, 1,
                                                rkey->addr + roff, rkey->urkey, &p);
  ucs_status_t s = UCS_OK;
  zcoll_status_t st = ZCOLL_OK;
  if (UCS_PTR_IS_ERR(r)) {
    s = UCS_PTR_STATUS(r);
  } else if (r) {
    /* UCX does not watch a peer on this host for death (ep.c): the job's news does, and a
     * peer that dies or fails elsewhere ends the wait; so does ZCOLL_TIMEOUT. */
    int64_t start = zcoll__now_ns(), last = start;
    for (unsigned k = 1; (s = zcoll__ucp.request_check_status(r)) == UCS_INPROGRESS; k++) {
      zcoll__ucp.worker_progress(tl->worker);
      if (k % 1024) continue;
      int64_t now = zcoll__now_ns();
      if (now - last < 10000000) continue;
      last = now;
      if (tl->alive && (st = tl->alive(tl->alive_arg)) != ZCOLL_OK) break;
      if (tl->timeout > 0 && now - start > (int64_t)(tl->timeout * 1e9)) {
        st = zcoll__fail(ZCOLL_ERR_TIMEOUT, "ucx: an atomic at rank %d took over %.0f s", ep->peer,
                         tl->timeout);
        break;
      }
    }
    if (st != ZCOLL_OK) zcoll__ucp.request_cancel(tl->worker, r);
    zcoll__ucp.request_free(r);
  }
  if (st != ZCOLL_OK) return st;
  if (s != UCS_OK)
    return zcoll__fail(zcoll__ucx_status(s), "ucx: an atomic at rank %d failed: %s", ep->peer,
                       zcoll__ucp.status_string(s));
  *old = tl->amo_reply;
  return ZCOLL_OK;
}
