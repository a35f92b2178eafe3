/*
 * report.h -- a communicator's errors (report.c).
 */
#ifndef ZCOLL_REPORT_H
#define ZCOLL_REPORT_H

#include <stdatomic.h>

#include "comm.h"

/* Records a failure for zcoll_comm_last_error and returns it. */
zcoll_status_t zcoll__report(zcoll_comm_t *comm, zcoll_status_t st);
/* Breaks the communicator over a collective this rank cannot make (an argument error),
 * telling the peers why; counts the call. */
zcoll_status_t zcoll__poison(zcoll_comm_t *comm, zcoll_status_t st);
/* ZCOLL_OK, or why no collective may start on comm (broken, revoked). Inline: every
 * call asks, and the answer is almost always yes. */
zcoll_status_t zcoll__check_usable_slow(zcoll_comm_t *comm);
static inline zcoll_status_t zcoll__check_usable(zcoll_comm_t *comm) {
  if (!comm->broken && !atomic_load_explicit(&comm->revoked, memory_order_relaxed)) return ZCOLL_OK;
  return zcoll__check_usable_slow(comm);
}

#endif
