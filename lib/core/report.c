/* report.c -- a communicator's errors: the record zcoll_comm_last_error reads, whether a
 * collective may start, and breaking the communicator over a call this rank cannot make. */
#include "report.h"

#include <stdatomic.h>
#include <stdio.h>

#include "base/log.h"
#include "boot/bootstrap.h"
#include "exec.h"
#include "flight.h"

zcoll_status_t zcoll__report(zcoll_comm_t *comm, zcoll_status_t st) {
  if (st == ZCOLL_OK || st == ZCOLL_IN_PROGRESS || !comm) return st;
  if (comm->last_error_async) { /* what the progress thread found: this call's error too */
    comm->last_error_async = 0;
    return zcoll__record_error(st, "%s", comm->last_error);
  }
  snprintf(comm->last_error, sizeof(comm->last_error), "%s", zcoll__last_error());
  return st;
}

zcoll_status_t zcoll__check_usable_slow(zcoll_comm_t *comm) {
  /* A revoke between calls: this call must fail (and tell the peers) even if its pieces
   * are already here and it would never wait. */
  if (atomic_load_explicit(&comm->revoked, memory_order_relaxed) && !comm->broken)
    return zcoll__comm_break(comm, zcoll__fail(ZCOLL_ERR_PEER_FAILED,
                                               "rank %d's communicator was revoked",
                                               comm->rank)); /* requests in flight end too */
  if (comm->broken) {
    /* Already reported when it happened: record it for this call, do not log again. */
    char why[sizeof(comm->last_error)];
    snprintf(why, sizeof(why), "%s", comm->last_error);
    return zcoll__record_error(comm->broken,
                               "the communicator is unusable after an earlier error: %s", why);
  }
  return ZCOLL_OK;
}

/* A collective this rank cannot make is one the others cannot finish: rather than let
 * them wait (or, worse, pair their call with this rank's next one), the argument error
 * revokes the communicator and tells them, naming this rank and the reason. */
zcoll_status_t zcoll__poison(zcoll_comm_t *comm, zcoll_status_t st) {
  char why[512];
  snprintf(why, sizeof(why), "rank %d's collective #%llu failed its argument checks: %s",
           comm->rank, (unsigned long long)comm->ordinal, zcoll__last_error());
  comm->ordinal++;
  zcoll__bootstrap_abort(comm->bs, ZCOLL_ERR_MISMATCH, why); /* the first news is what peers see */
  zcoll__flight_dump_failure(comm, st, NULL);
  if (!comm->active) {
    comm->broken = st;
    return st;
  }
  /* Collectives in flight end too, with the transport stopped before they return. */
  char mine[512];
  snprintf(mine, sizeof(mine), "%s", zcoll__last_error());
  zcoll__comm_break(comm, st);
  return zcoll__record_error(st, "%s", mine);
}
