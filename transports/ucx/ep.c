/* ep.c -- UCX endpoints: one per peer, created from the exchanged worker addresses.
 *
 * Error handling. Between hosts an endpoint uses UCX's peer error handling: a lost peer
 * is a callback (-> ZCOLL_ERR_PEER_FAILED from poll) and its requests complete as
 * failed, instead of UCX asserting at teardown. On one host it does not: in UCX 1.13
 * peer error handling rules out shared memory (measured here: every local peer went
 * over TCP, 8 KiB allreduce 4 us -> 14 us, 8 MiB 2.7 -> 1.5 GB/s), and a local peer's
 * death reaches us through the rendezvous anyway. A broken instance closes its endpoints
 * to other hosts with UCP_EP_CLOSE_FLAG_FORCE, which completes every request on them as
 * cancelled; UCX refuses that without peer error handling, so those on this host stay
 * open until the worker is destroyed (progress.c's quiesce says what it waits for), and
 * the worker is destroyed only once UCX owns no request of ours (iface.c).
 */
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/clock.h"
#include "ucx.h"

void zcoll__ucx_ep_error(void *arg, ucp_ep_h uep, ucs_status_t status) {
  (void)uep;
  struct zcoll_ep *ep = arg;
  ep->failed = 1;
  if (ep->tl->failed == ZCOLL_OK)
    ep->tl->failed = zcoll__fail(ZCOLL_ERR_PEER_FAILED, "ucx: connection to rank %d failed: %s",
                                 ep->peer, zcoll__ucp.status_string(status));
}

zcoll_status_t zcoll__ucx_connect(struct zcoll_tl *tl, int n, const int *ranks,
                                  const void *const *addrs, const size_t *lens,
                                  struct zcoll_ep **eps) {
  /* The caller's mistake first, before any endpoint is made (transport.h). */
  for (int i = 0; i < n; i++)
    if (ranks[i] < 0 || ranks[i] >= tl->size || ranks[i] == tl->rank)
      return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "ucx: cannot connect to rank %d", ranks[i]);
  struct zcoll_ep **all = realloc(tl->eps, sizeof(struct zcoll_ep *) * (size_t)(tl->neps + n));
  if (!all) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "ucx: out of memory");
  tl->eps = all;
  for (int i = 0; i < n; i++) {
    struct zcoll__ucx_addr_hdr h;
    if (lens[i] <= sizeof(h))
      return zcoll__fail(ZCOLL_ERR_TRANSPORT, "ucx: rank %d's address is %zu bytes", ranks[i],
                         lens[i]);
    memcpy(&h, addrs[i], sizeof(h));
    if (h.magic != ZCOLL_UCX_ADDR_MAGIC || h.len != lens[i] - sizeof(h))
      return zcoll__fail(ZCOLL_ERR_TRANSPORT, "ucx: rank %d sent a malformed address", ranks[i]);
    struct zcoll_ep *ep = calloc(1, sizeof(*ep));
    if (!ep) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "ucx: out of memory");
    ep->tl = tl;
    ep->peer = ranks[i];
    ep->local = memcmp(h.node, tl->node, sizeof(h.node)) == 0;
    ucp_ep_params_t p = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER,
        .address = (const ucp_address_t *)((const char *)addrs[i] + sizeof(h)),
        .err_mode = ep->local ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER,
        .err_handler = {.cb = zcoll__ucx_ep_error, .arg = ep}};
    ucs_status_t s = zcoll__ucp.ep_create(tl->worker, &p, &ep->ep);
    if (s != UCS_OK) {
      free(ep);
      return zcoll__fail(zcoll__ucx_status(s), "ucx: cannot create an endpoint to rank %d: %s",
                         ranks[i], zcoll__ucp.status_string(s));
    }
    zcoll_log_debug("ucx: endpoint to rank %d (%s, %s error handling)", ranks[i],
                    ep->local ? "this host" : "another host", ep->local ? "no" : "peer");
    tl->eps[tl->neps++] = ep;
    eps[i] = ep;
  }
  return ZCOLL_OK;
}

int zcoll__ucx_close_eps(struct zcoll_tl *tl, int force, int64_t deadline) {
  for (int i = 0; i < tl->neps; i++) {
    struct zcoll_ep *ep = tl->eps[i];
    if (!ep->ep) continue;
    /* UCX refuses to force shut an endpoint without peer error handling (every one on
     * this host; UCS_ERR_INVALID_PARAM in 1.13), and a flush would wait for the peer:
     * it stays open, and ucp_worker_destroy destroys it. */
    if (force && ep->local) continue;
    /* A flush to a lost peer may never finish, and UCX requires a forced close after
     * an endpoint's error callback. */
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                             .flags = force || ep->failed ? UCP_EP_CLOSE_FLAG_FORCE : 0};
    void *r = zcoll__ucp.ep_close_nbx(ep->ep, &p);
    ep->ep = NULL;
    if (UCS_PTR_IS_PTR(r)) ep->close_req = r;
  }
  int pending;
  for (;;) {
    pending = 0;
    for (int i = 0; i < tl->neps; i++) {
      struct zcoll_ep *ep = tl->eps[i];
      if (ep->close_req && zcoll__ucp.request_check_status(ep->close_req) != UCS_INPROGRESS) {
        zcoll__ucp.request_free(ep->close_req);
        ep->close_req = NULL;
      }
      pending += ep->close_req != NULL;
    }
    if (!pending || zcoll__now_ms() >= deadline) break;
    zcoll__ucp.worker_progress(tl->worker);
  }
  return pending;
}

void zcoll__ucx_free_eps(struct zcoll_tl *tl) {
  for (int i = 0; i < tl->neps; i++) free(tl->eps[i]);
  free(tl->eps);
  tl->eps = NULL;
  tl->neps = 0;
}
