/* mr.c -- UCX regions. Active messages need no remote keys: a region is an id that
 * the target maps back to its own address range, bounds-checking every write. */
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
  *mr = (struct zcoll_tl_mr){tl, id, addr, len, remote};
  tl->regions[id] = mr;
  *out = mr;
  return ZCOLL_OK;
}

void zcoll__ucx_mem_dereg(struct zcoll_tl_mr *mr) {
  if (!mr) return;
  mr->tl->regions[mr->id] = NULL;
  free(mr);
}

zcoll_status_t zcoll__ucx_rkey_pack(struct zcoll_tl_mr *mr, void *buf, size_t *len) {
  if (!mr->remote) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "ucx: a source region has no key");
  struct zcoll_tl_rkey k = {mr->id, mr->len};
  if (*len < sizeof(k)) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "ucx: rkey buffer too short");
  memcpy(buf, &k, sizeof(k));
  *len = sizeof(k);
  return ZCOLL_OK;
}

zcoll_status_t zcoll__ucx_rkey_unpack(struct zcoll_ep *ep, const void *buf, size_t len,
                                      struct zcoll_tl_rkey **out) {
  if (len < sizeof(struct zcoll_tl_rkey))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "ucx: malformed region key from rank %d", ep->peer);
  struct zcoll_tl_rkey *k = malloc(sizeof(*k));
  if (!k) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "ucx: out of memory");
  memcpy(k, buf, sizeof(*k));
  *out = k;
  return ZCOLL_OK;
}

void zcoll__ucx_rkey_release(struct zcoll_tl_rkey *rkey) { free(rkey); }
