/* mr.c -- verbs registrations: pinned regions and the keys peers write with. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "verbs.h"

zcoll_status_t zcoll__verbs_mem_reg(struct zcoll_tl *tl, void *addr, size_t len, int remote,
                                    struct zcoll_tl_mr **out) {
  struct zcoll_tl_mr *mr = malloc(sizeof(*mr));
  if (!mr) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "verbs: out of memory");
  /* Only receive slots are writable by peers; sources are registered for local use. A
   * communicator that asks for atomics (the partial allreduce's) gets them on its regions. */
  int access = IBV_ACCESS_LOCAL_WRITE;
  if (remote) access |= IBV_ACCESS_REMOTE_WRITE | (tl->atomics ? IBV_ACCESS_REMOTE_ATOMIC : 0);
  mr->mr = ibv_reg_mr(tl->pd, addr, len, access);
  mr->remote = remote;
  if (!mr->mr) {
    int e = errno;
    free(mr);
    return zcoll__fail(e == ENOMEM ? ZCOLL_ERR_NO_MEMORY : ZCOLL_ERR_TRANSPORT,
                       "verbs: cannot register %zu bytes on %s: %s%s", len, tl->dev_name,
                       strerror(e),
                       e == ENOMEM ? " (raise the locked-memory limit: ulimit -l)" : "");
  }
  *out = mr;
  return ZCOLL_OK;
}

void zcoll__verbs_mem_dereg(struct zcoll_tl_mr *mr) {
  if (!mr) return;
  ibv_dereg_mr(mr->mr);
  free(mr);
}

zcoll_status_t zcoll__verbs_rkey_pack(struct zcoll_tl_mr *mr, void *buf, size_t *len) {
  if (!mr->remote)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "verbs: a source region has no remote key");
  struct zcoll_tl_rkey k = {(uintptr_t)mr->mr->addr, mr->mr->length, mr->mr->rkey};
  if (*len < sizeof(k)) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "verbs: rkey buffer too short");
  memcpy(buf, &k, sizeof(k));
  *len = sizeof(k);
  return ZCOLL_OK;
}

zcoll_status_t zcoll__verbs_rkey_unpack(struct zcoll_ep *ep, const void *buf, size_t len,
                                        struct zcoll_tl_rkey **out) {
  if (len < sizeof(struct zcoll_tl_rkey))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: malformed key from rank %d", ep->peer);
  struct zcoll_tl_rkey *k = malloc(sizeof(*k));
  if (!k) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "verbs: out of memory");
  memcpy(k, buf, sizeof(*k));
  *out = k;
  return ZCOLL_OK;
}

void zcoll__verbs_rkey_release(struct zcoll_tl_rkey *rkey) { free(rkey); }
