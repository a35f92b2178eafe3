/* ep.c -- loopback endpoints: a peer is another instance in this process. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "loopback.h"

zcoll_status_t zcoll__lb_connect(struct zcoll_tl *tl, int n, const int *ranks,
                                 const void *const *addrs, const size_t *lens,
                                 struct zcoll_ep **eps) {
  /* The caller's mistake first, before anything is made (transport.h). */
  for (int i = 0; i < n; i++)
    if (ranks[i] < 0 || ranks[i] >= tl->size || ranks[i] == tl->rank)
      return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "loopback: cannot connect to rank %d", ranks[i]);
  struct zcoll_ep **all = realloc(tl->eps, sizeof(struct zcoll_ep *) * (size_t)(tl->neps + n));
  if (!all) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "loopback: out of memory");
  tl->eps = all;
  for (int i = 0; i < n; i++) {
    struct zcoll__lb_addr a;
    if (lens[i] != sizeof(a))
      return zcoll__fail(ZCOLL_ERR_TRANSPORT, "loopback: rank %d sent a malformed address",
                         ranks[i]);
    memcpy(&a, addrs[i], sizeof(a));
    if (a.pid != getpid())
      return zcoll__fail(ZCOLL_ERR_UNSUPPORTED,
                         "loopback transport: rank %d is process %d, not this one (%d); "
                         "loopback needs every rank to be a thread of one process",
                         ranks[i], (int)a.pid, (int)getpid());
    struct zcoll_ep *ep = calloc(1, sizeof(*ep));
    if (!ep) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "loopback: out of memory");
    ep->tl = tl;
    ep->peer_tl = a.tl;
    zcoll__lb_ref(a.tl);
    ep->peer = ranks[i];
    tl->eps[tl->neps++] = ep;
    eps[i] = ep;
  }
  return ZCOLL_OK;
}
