/* evq.c -- a growable ring of transport events. */
#include "evq.h"

#include <stdlib.h>

#include "base/log.h"

zcoll_status_t zcoll__evq_push(struct zcoll__evq *q, const struct zcoll_tl_event *ev) {
  if (q->len == q->cap) {
    size_t ncap = q->cap ? q->cap * 2 : 64;
    struct zcoll_tl_event *n = malloc(ncap * sizeof(*n));
    if (!n) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory queueing a transport event");
    for (size_t i = 0; i < q->len; i++) n[i] = q->ev[(q->head + i) % q->cap];
    free(q->ev);
    q->ev = n;
    q->cap = ncap;
    q->head = 0;
  }
  q->ev[(q->head + q->len++) % q->cap] = *ev;
  return ZCOLL_OK;
}

int zcoll__evq_pop(struct zcoll__evq *q, struct zcoll_tl_event *out, int max) {
  int k = 0;
  while (k < max && q->len) {
    out[k++] = q->ev[q->head];
    q->head = (q->head + 1) % q->cap;
    q->len--;
  }
  return k;
}

void zcoll__evq_free(struct zcoll__evq *q) {
  free(q->ev);
  q->ev = NULL;
  q->head = q->len = q->cap = 0;
}
