/* mr.c -- verbs registrations: pinned regions and the keys peers write with, one per
 * rail (a registration belongs to one device's protection domain). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "verbs.h"

zcoll_status_t zcoll__verbs_mem_reg(struct zcoll_tl *tl, void *addr, size_t len, int remote,
                                    struct zcoll_tl_mr **out) {
  struct zcoll_tl_mr *mr = calloc(1, sizeof(*mr));
  if (!mr) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "verbs: out of memory");
  mr->remote = remote;
  for (int i = 0; i < tl->nrails; i++) {
    /* Only receive slots are writable by peers; sources are registered for local use. A
     * communicator that asks for atomics (the partial allreduce's) gets them on its
     * regions, on rail 0, the atomics' (amo.c). */
    int access = IBV_ACCESS_LOCAL_WRITE;
    if (remote)
      access |= IBV_ACCESS_REMOTE_WRITE | (tl->atomics && !i ? IBV_ACCESS_REMOTE_ATOMIC : 0);
    if ((mr->mr[i] = ibv_reg_mr(tl->rail[i].pd, addr, len, access))) continue;
    int e = errno;
    zcoll__verbs_mem_dereg(mr);
    return zcoll__fail(e == ENOMEM ? ZCOLL_ERR_NO_MEMORY : ZCOLL_ERR_TRANSPORT,
                       "verbs: cannot register %zu bytes on %s: %s%s", len, tl->rail[i].dev_name,
                       strerror(e),
                       e == ENOMEM ? " (raise the locked-memory limit: ulimit -l)" : "");
  }
  *out = mr;
  return ZCOLL_OK;
}

void zcoll__verbs_mem_dereg(struct zcoll_tl_mr *mr) {
  if (!mr) return;
  for (int i = 0; i < ZCOLL_VERBS_MAX_RAILS; i++)
    if (mr->mr[i]) ibv_dereg_mr(mr->mr[i]);
  free(mr);
}

zcoll_status_t zcoll__verbs_rkey_pack(struct zcoll_tl_mr *mr, void *buf, size_t *len) {
  if (!mr->remote)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "verbs: a source region has no remote key");
  struct zcoll_tl_rkey k;
  memset(&k, 0, sizeof(k)); /* padding included: it goes on the wire */
  k.addr = (uintptr_t)mr->mr[0]->addr;
  k.len = mr->mr[0]->length;
  for (int i = 0; i < ZCOLL_VERBS_MAX_RAILS && mr->mr[i]; i++) k.rkey[k.nrails++] = mr->mr[i]->rkey;
  if (*len < sizeof(k)) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "verbs: rkey buffer too short");
  memcpy(buf, &k, sizeof(k));
  *len = sizeof(k);
  return ZCOLL_OK;
}

zcoll_status_t zcoll__verbs_rkey_unpack(struct zcoll_ep *ep, const void *buf, size_t len,
                                        struct zcoll_tl_rkey **out) {
  struct zcoll_tl_rkey k;
  if (len >= sizeof(k)) memcpy(&k, buf, sizeof(k));
  /* A key for every rail the endpoint writes over. */
  if (len < sizeof(k) || k.nrails > ZCOLL_VERBS_MAX_RAILS || (int)k.nrails < ep->nrails)
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: malformed key from rank %d", ep->peer);
  struct zcoll_tl_rkey *p = malloc(sizeof(*p));
  if (!p) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "verbs: out of memory");
  *p = k;
  *out = p;
  return ZCOLL_OK;
}

void zcoll__verbs_rkey_release(struct zcoll_tl_rkey *rkey) { free(rkey); }
