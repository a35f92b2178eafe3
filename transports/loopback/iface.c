/* iface.c -- loopback transport: instance lifecycle and the ops table. */
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/log.h"
#include "loopback.h"

static zcoll_status_t lb_probe(const zcoll_config_t *cfg, char *why, size_t why_len) {
  (void)cfg, (void)why, (void)why_len;
  return ZCOLL_OK; /* whether the ranks share a process is checked at connect */
}

static zcoll_status_t lb_open(const struct zcoll_tl_params *p, struct zcoll_tl **out) {
  struct zcoll_tl *tl = calloc(1, sizeof(*tl));
  if (!tl) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "loopback: out of memory");
  tl->rank = p->rank;
  tl->size = p->size;
  tl->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (tl->efd < 0) {
    free(tl);
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "loopback: eventfd: %m");
  }
  pthread_mutex_init(&tl->lock, NULL);
  tl->refs = 1;
  *out = tl;
  return ZCOLL_OK;
}

static pthread_mutex_t refs_lock = PTHREAD_MUTEX_INITIALIZER;

void zcoll__lb_unref(struct zcoll_tl *tl) {
  pthread_mutex_lock(&refs_lock);
  int last = --tl->refs == 0;
  pthread_mutex_unlock(&refs_lock);
  if (!last) return;
  close(tl->efd);
  pthread_mutex_destroy(&tl->lock);
  zcoll__evq_free(&tl->evq);
  free(tl);
}

void zcoll__lb_ref(struct zcoll_tl *tl) {
  pthread_mutex_lock(&refs_lock);
  tl->refs++;
  pthread_mutex_unlock(&refs_lock);
}

static void lb_close(struct zcoll_tl *tl) {
  if (!tl) return;
  /* From here on peers' writes fail instead of landing in memory about to go. */
  pthread_mutex_lock(&tl->lock);
  tl->closed = 1;
  pthread_mutex_unlock(&tl->lock);
  for (int i = 0; i < tl->neps; i++) {
    zcoll__lb_unref(tl->eps[i]->peer_tl);
    free(tl->eps[i]);
  }
  free(tl->eps);
  tl->eps = NULL;
  tl->neps = 0;
  zcoll__lb_unref(tl);
}

static zcoll_status_t lb_address(struct zcoll_tl *tl, void *buf, size_t *len) {
  struct zcoll__lb_addr a = {getpid(), tl};
  if (*len < sizeof(a)) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "loopback: address buffer short");
  memcpy(buf, &a, sizeof(a));
  *len = sizeof(a);
  return ZCOLL_OK;
}

const struct zcoll_tl_ops zcoll__tl_loopback = {
    .name = "loopback",
    .caps = ZCOLL_TL_CAP_REMOTE_USER | ZCOLL_TL_CAP_PEER_LOSS,
    .default_chunk_bytes = (size_t)64 * 1024,
    .probe = lb_probe,
    .open = lb_open,
    .close = lb_close,
    .address = lb_address,
    .connect = zcoll__lb_connect,
    .mem_reg = zcoll__lb_mem_reg,
    .mem_dereg = zcoll__lb_mem_dereg,
    .rkey_pack = zcoll__lb_rkey_pack,
    .rkey_unpack = zcoll__lb_rkey_unpack,
    .rkey_release = zcoll__lb_rkey_release,
    .put = zcoll__lb_put,
    .fetch_add = zcoll__lb_fetch_add,
    .poll = zcoll__lb_poll,
    .event_fd = zcoll__lb_event_fd,
    .arm = zcoll__lb_arm,
};
