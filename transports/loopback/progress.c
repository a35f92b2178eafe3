/* progress.c -- loopback data movement: put copies and queues the two events. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/copy.h"
#include "base/log.h"
#include "loopback.h"

zcoll_status_t zcoll__lb_push_locked(struct zcoll_tl *tl, const struct zcoll_tl_event *ev) {
  zcoll_status_t st = zcoll__evq_push(&tl->evq, ev);
  uint64_t one = 1;
  /* The counter only fails when it would overflow, and then the owner is awake. */
  ssize_t w = write(tl->efd, &one, sizeof(one));
  (void)w;
  return st;
}

struct copy_args {
  char *dst;
  const void *src;
  size_t len;
};
static void copy_fn(void *arg) {
  struct copy_args *a = arg;
  zcoll__copy(a->dst, a->src, a->len);
}

struct fadd_args {
  uint64_t *word, add, old;
};
static void fadd_fn(void *arg) {
  struct fadd_args *a = arg;
  a->old = __atomic_fetch_add(a->word, a->add, __ATOMIC_SEQ_CST);
}

/* One address space: the remote atomic is a local one, on a region still registered. */
zcoll_status_t zcoll__lb_fetch_add(struct zcoll_ep *ep, struct zcoll_tl_rkey *rkey, uint64_t roff,
                                   uint64_t add, uint64_t *old) {
  if (!rkey || (roff & 7) || roff > rkey->len || rkey->len - roff < 8)
    return zcoll__fail(
        ZCOLL_ERR_INVALID_ARG,
        "loopback: an atomic at offset %llu is outside rank %d's region or unaligned",
        (unsigned long long)roff, ep->peer);
  struct fadd_args a = {(uint64_t *)(void *)(rkey->base + roff), add, 0};
  struct zcoll_tl *peer = ep->peer_tl;
  pthread_mutex_lock(&peer->lock);
  zcoll_status_t st = peer->closed ? zcoll__fail(ZCOLL_ERR_PEER_FAILED,
                                                 "loopback: rank %d has left", ep->peer)
                                   : zcoll__lb_with_region(rkey, fadd_fn, &a);
  pthread_mutex_unlock(&peer->lock);
  if (st == ZCOLL_OK) *old = a.old;
  return st;
}

zcoll_status_t zcoll__lb_put(struct zcoll_ep *ep, const void *src, struct zcoll_tl_mr *lmr,
                             struct zcoll_tl_rkey *rkey, uint64_t roff, size_t len, uint32_t imm,
                             uint64_t cookie) {
  if (len) {
    const char *s = src;
    if (!lmr || s < lmr->base || len > lmr->len || (size_t)(s - lmr->base) > lmr->len - len)
      return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                         "loopback: put source of %zu bytes is not inside its registration", len);
    if (!rkey || roff > rkey->len || len > rkey->len - roff)
      return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                         "loopback: put of %zu bytes at offset %llu overruns rank %d's region", len,
                         (unsigned long long)roff, ep->peer);
  }
  struct zcoll_tl_event arrived = {
      .kind = ZCOLL_TL_EV_ARRIVED, .peer = ep->tl->rank, .imm = imm, .len = (uint32_t)len};
  struct zcoll_tl_event done = {.kind = ZCOLL_TL_EV_PUT_DONE, .peer = ep->peer, .cookie = cookie};
  struct zcoll_tl *peer = ep->peer_tl;
  pthread_mutex_lock(&peer->lock);
  if (peer->closed) {
    pthread_mutex_unlock(&peer->lock);
    return zcoll__fail(ZCOLL_ERR_PEER_FAILED, "loopback: rank %d has left", ep->peer);
  }
  zcoll_status_t st = ZCOLL_OK;
  if (len) {
    struct copy_args cp = {rkey->base + roff, src, len};
    st = zcoll__lb_with_region(rkey, copy_fn, &cp);
  }
  if (st == ZCOLL_OK) st = zcoll__lb_push_locked(peer, &arrived);
  pthread_mutex_unlock(&peer->lock);
  if (st != ZCOLL_OK) return st;
  pthread_mutex_lock(&ep->tl->lock);
  st = zcoll__lb_push_locked(ep->tl, &done);
  pthread_mutex_unlock(&ep->tl->lock);
  return st;
}

zcoll_status_t zcoll__lb_poll(struct zcoll_tl *tl, struct zcoll_tl_event *ev, int max, int *n) {
  pthread_mutex_lock(&tl->lock);
  *n = zcoll__evq_pop(&tl->evq, ev, max);
  pthread_mutex_unlock(&tl->lock);
  return ZCOLL_OK;
}

int zcoll__lb_event_fd(struct zcoll_tl *tl) { return tl->efd; }

zcoll_status_t zcoll__lb_arm(struct zcoll_tl *tl) {
  uint64_t v;
  /* Drain the counter first, then look: an event queued after the look writes the
   * counter again and wakes the poll. */
  while (read(tl->efd, &v, sizeof(v)) < 0 && errno == EINTR) {
  }
  pthread_mutex_lock(&tl->lock);
  size_t pending = tl->evq.len;
  pthread_mutex_unlock(&tl->lock);
  return pending ? ZCOLL_IN_PROGRESS : ZCOLL_OK;
}
