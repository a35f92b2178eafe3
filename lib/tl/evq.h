/*
 * evq.h -- the FIFO of transport events that callbacks fill and poll() drains, shared
 * by every transport. Not thread-safe: a transport that is written to from other
 * threads (loopback) holds its own lock around these calls.
 */
#ifndef ZCOLL_EVQ_H
#define ZCOLL_EVQ_H

#include <stddef.h>
#include "transport.h"

struct zcoll__evq {
  struct zcoll_tl_event *ev;
  size_t head, len, cap;
};

/* Appends; grows as needed. ZCOLL_ERR_NO_MEMORY (recorded) if it cannot. */
zcoll_status_t zcoll__evq_push(struct zcoll__evq *q, const struct zcoll_tl_event *ev);
/* Moves up to max events, oldest first, into out; returns how many. */
int zcoll__evq_pop(struct zcoll__evq *q, struct zcoll_tl_event *out, int max);
void zcoll__evq_free(struct zcoll__evq *q);

#endif
