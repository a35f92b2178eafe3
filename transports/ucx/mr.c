/* mr.c -- UCX regions. Active messages need no remote keys: a region is an id that
 * the target maps back to its own address range, bounds-checking every write. A region
 * peers write into is also mapped for UCP's atomics (amo.c), where UCX can: its key then
 * travels with the id. */
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "ucx.h"

zcoll_status_t zcoll__ucx_mem_reg(struct zcoll_tl *tl, void *addr, size_t len, int remote,
                                  struct zcoll_tl_mr **out) {
  uint32_t id = 0;
  while (id < tl->nregions && tl->regions[id]) id++;
  if (id == tl->nregions) {
    struct zcoll_tl_mr **r = realloc(tl->regions,
                                     sizeof(struct zcoll_tl_mr *) * (tl->nregions + 1));
    if (!r) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "ucx: out of memory");
    tl->regions = r;
    tl->regions[tl->nregions++] = NULL;
  }
  struct zcoll_tl_mr *mr = malloc(sizeof(*mr));
  if (!mr) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "ucx: out of memory");
  *mr = (struct zcoll_tl_mr){tl, id, addr, len, remote, NULL};
  if (remote && len && tl->atomics) { /* not fatal: only atomics need it */
    ucp_mem_map_params_t mp = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                                             UCP_MEM_MAP_PARAM_FIELD_LENGTH,
                               .address = addr,
                               .length = len};
    if (zcoll__ucp.mem_map(tl->ctx, &mp, &mr->memh) != UCS_OK) mr->memh = NULL;
  }
  tl->regions[id] = mr;
  *out = mr;
  return ZCOLL_OK;
}

void zcoll__ucx_mem_dereg(struct zcoll_tl_mr *mr) {
  if (!mr) return;
  if (mr->memh) zcoll__ucp.mem_unmap(mr->tl->ctx, mr->memh);
  mr->tl->regions[mr->id] = NULL;
  free(mr);
}

zcoll_status_t zcoll__ucx_rkey_pack(struct zcoll_tl_mr *mr, void *buf, size_t *len) {
  if (!mr->remote) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "ucx: a source region has no key");
  struct zcoll__ucx_key k = {mr->id, 0, mr->len, (uint64_t)(uintptr_t)mr->base};
  if (*len < sizeof(k)) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "ucx: rkey buffer too short");
  void *ub = NULL;
  size_t ulen = 0;
  /* The UCP key where it fits the caller's buffer; without it the key is good for puts. */
  if (mr->memh && zcoll__ucp.rkey_pack(mr->tl->ctx, mr->memh, &ub, &ulen) == UCS_OK) {
    if (ulen <= *len - sizeof(k)) {
      k.ulen = (uint32_t)ulen;
      memcpy((char *)buf + sizeof(k), ub, ulen);
    }
    zcoll__ucp.rkey_buffer_release(ub);
  }
  memcpy(buf, &k, sizeof(k));
  *len = sizeof(k) + k.ulen;
  return ZCOLL_OK;
}

zcoll_status_t zcoll__ucx_rkey_unpack(struct zcoll_ep *ep, const void *buf, size_t len,
                                      struct zcoll_tl_rkey **out) {
  struct zcoll__ucx_key k;
  if (len < sizeof(k))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "ucx: malformed region key from rank %d", ep->peer);
  memcpy(&k, buf, sizeof(k));
  if (k.ulen > len - sizeof(k))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "ucx: malformed region key from rank %d", ep->peer);
  struct zcoll_tl_rkey *r = malloc(sizeof(*r));
  if (!r) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "ucx: out of memory");
  *r = (struct zcoll_tl_rkey){k.id, k.len, k.addr, NULL};
  if (k.ulen && ep->ep &&
      zcoll__ucp.ep_rkey_unpack(ep->ep, (const char *)buf + sizeof(k), &r->urkey) != UCS_OK)
    r->urkey = NULL; /* puts still work; atomics will say why not */
  *out = r;
  return ZCOLL_OK;
}

void zcoll__ucx_rkey_release(struct zcoll_tl_rkey *rkey) {
  if (!rkey) return;
  if (rkey->urkey) zcoll__ucp.rkey_destroy(rkey->urkey);
  free(rkey);
}
