/* mr.c -- loopback registrations: a region is its address range, an rkey the same. */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "loopback.h"

zcoll_status_t zcoll__lb_mem_reg(struct zcoll_tl *tl, void *addr, size_t len, int remote,
                                 struct zcoll_tl_mr **out) {
  (void)tl;
  struct zcoll_tl_mr *mr = malloc(sizeof(*mr));
  if (!mr) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "loopback: out of memory");
  mr->base = addr;
  mr->len = len;
  mr->remote = remote;
  *out = mr;
  return ZCOLL_OK;
}

void zcoll__lb_mem_dereg(struct zcoll_tl_mr *mr) { free(mr); }

zcoll_status_t zcoll__lb_rkey_pack(struct zcoll_tl_mr *mr, void *buf, size_t *len) {
  if (!mr->remote)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "loopback: a local-only region has no remote key");
  struct zcoll_tl_rkey k = {mr->base, mr->len};
  if (*len < sizeof(k)) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "loopback: rkey buffer short");
  memcpy(buf, &k, sizeof(k));
  *len = sizeof(k);
  return ZCOLL_OK;
}

zcoll_status_t zcoll__lb_rkey_unpack(struct zcoll_ep *ep, const void *buf, size_t len,
                                     struct zcoll_tl_rkey **out) {
  if (len != sizeof(struct zcoll_tl_rkey))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "loopback: malformed rkey from rank %d", ep->peer);
  struct zcoll_tl_rkey *k = malloc(sizeof(*k));
  if (!k) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "loopback: out of memory");
  memcpy(k, buf, sizeof(*k));
  *out = k;
  return ZCOLL_OK;
}

void zcoll__lb_rkey_release(struct zcoll_tl_rkey *rkey) { free(rkey); }
