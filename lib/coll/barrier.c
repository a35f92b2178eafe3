/* barrier.c -- zcoll_barrier: no rank leaves before every rank has entered.
 *
 * A one-byte butterfly (recursive doubling, algorithms/butterfly.c) of a kind of its own:
 * in step k each rank swaps a byte with rank ^ 2^k, and a step's send waits for the
 * previous step's receive, so after its last step a rank has heard, through a chain of
 * them, from every rank. That is ceil(log2 p) rounds of one small message each -- the
 * dissemination barrier's count, the helpers of a p that is not a power of two folding
 * in -- over channels the allreduce already has (dissemination's peers, rank + 2^k,
 * would add up to 2 log2 p connections a rank). Each message carries the header that
 * the ordinal and fingerprint checks read: a barrier met by any other call is
 * ZCOLL_ERR_MISMATCH, as between any two kinds. */
#include <string.h>

#include "base/log.h"
#include "core/comm.h"
#include "core/exec.h"
#include "core/guard.h"
#include "core/report.h"
#include "group.h"
#include "plan.h"

zcoll_status_t zcoll__barrier_plan(zcoll_comm_t *comm, uint8_t *token, struct zcoll__plan *pl) {
  memset(pl, 0, sizeof(*pl));
  *token = 0;
  int built = 0;
  zcoll_status_t st = zcoll__sched_get(comm, ZCOLL_COLL_ALLREDUCE, comm->plan.butterfly_algo, 1, 1,
                                       -1, pl, &built);
  if (st != ZCOLL_OK) return st;
  pl->desc = (struct zcoll__coll_desc){.kind = ZCOLL_COLL_BARRIER,
                                       .dtype = ZCOLL_UINT8,
                                       .op = ZCOLL_MAX,
                                       .algo = (uint8_t)comm->plan.butterfly_algo,
                                       .root = -1,
                                       .count = 1};
  pl->src = pl->dst = token;
  return ZCOLL_OK;
}

static zcoll_status_t barrier(zcoll_comm_t *comm) {
  zcoll_status_t st = zcoll__check_usable(comm);
  if (st != ZCOLL_OK) return st;
  uint8_t token;
  struct zcoll__plan pl;
  if ((st = zcoll__barrier_plan(comm, &token, &pl)) != ZCOLL_OK)
    return zcoll__plan_failed(comm, st);
  st = zcoll__execute(comm, pl.s, &pl.desc, pl.src, pl.dst);
  zcoll__plan_release(&pl);
  return st;
}

zcoll_status_t zcoll_barrier(zcoll_comm_t *comm) {
  if (!comm) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "barrier: comm is NULL");
  if (zcoll__group_open(comm))
    return zcoll__group_call(comm, "zcoll_barrier", ZCOLL_COLL_BARRIER, NULL, NULL, 0, ZCOLL_UINT8,
                             ZCOLL_SUM, -1, 0, NULL);
  zcoll_status_t st = zcoll__enter(comm, "zcoll_barrier");
  if (st != ZCOLL_OK) return st;
  st = zcoll__report(comm, barrier(comm));
  zcoll__leave(comm);
  return st;
}
