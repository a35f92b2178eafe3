/* mr.c -- loopback registrations: a region is its address range, an rkey the same plus
 * the region's number.
 *
 * A NIC refuses writes through the key of a deregistered region; the zero-copy results
 * (lib/core/grant.c) rely on that to stop a peer writing into a user buffer after an error.
 * Loopback keeps the same promise with a process-wide registry of live remote regions:
 * a write holds the registry's read lock while it copies, deregistering takes the write
 * lock, so after mem_dereg returns no write through that key lands. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "loopback.h"

static pthread_rwlock_t reg_lock = PTHREAD_RWLOCK_INITIALIZER;
static uint64_t *live; /* ids of live remote regions, unordered */
static size_t nlive, cap_live;
static uint64_t next_id = 1;

static int is_live(uint64_t id) {
  for (size_t i = 0; i < nlive; i++)
    if (live[i] == id) return 1;
  return 0;
}

zcoll_status_t zcoll__lb_mem_reg(struct zcoll_tl *tl, void *addr, size_t len, int remote,
                                 struct zcoll_tl_mr **out) {
  (void)tl;
  struct zcoll_tl_mr *mr = malloc(sizeof(*mr));
  if (!mr) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "loopback: out of memory");
  mr->base = addr;
  mr->len = len;
  mr->remote = remote;
  mr->id = 0;
  if (remote) {
    pthread_rwlock_wrlock(&reg_lock);
    if (nlive == cap_live) {
      size_t n = cap_live ? 2 * cap_live : 16;
      uint64_t *m = realloc(live, n * sizeof(*m));
      if (!m) {
        pthread_rwlock_unlock(&reg_lock);
        free(mr);
        return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "loopback: out of memory");
      }
      live = m;
      cap_live = n;
    }
    mr->id = next_id++;
    live[nlive++] = mr->id;
    pthread_rwlock_unlock(&reg_lock);
  }
  *out = mr;
  return ZCOLL_OK;
}

void zcoll__lb_mem_dereg(struct zcoll_tl_mr *mr) {
  if (mr && mr->remote) {
    pthread_rwlock_wrlock(&reg_lock);
    for (size_t i = 0; i < nlive; i++)
      if (live[i] == mr->id) {
        live[i] = live[--nlive];
        break;
      }
    if (!nlive) { /* the last one: nothing left behind at exit */
      free(live);
      live = NULL;
      cap_live = 0;
    }
    pthread_rwlock_unlock(&reg_lock);
  }
  free(mr);
}

zcoll_status_t zcoll__lb_with_region(const struct zcoll_tl_rkey *rkey, void (*fn)(void *),
                                     void *arg) {
  pthread_rwlock_rdlock(&reg_lock);
  int ok = is_live(rkey->id);
  if (ok) fn(arg);
  pthread_rwlock_unlock(&reg_lock);
  return ok ? ZCOLL_OK
            : zcoll__fail(ZCOLL_ERR_TRANSPORT,
                          "loopback: a write through the key of a deregistered region");
}

zcoll_status_t zcoll__lb_rkey_pack(struct zcoll_tl_mr *mr, void *buf, size_t *len) {
  if (!mr->remote)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "loopback: a local-only region has no remote key");
  struct zcoll_tl_rkey k = {mr->base, mr->len, mr->id};
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
