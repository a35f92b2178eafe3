/* broadcast.c -- the public broadcast: argument checks, algorithm choice, execution.
 * Its schedules (algorithms/broadcast.c) run on the allreduce's executor and channels. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/comm.h"
#include "core/guard.h"
#include "base/log.h"
#include "group.h"
#include "plan.h"
#include "core/exec.h"
#include "core/report.h"

/* ZCOLL_BCAST_ALGO, else the selection table's broadcast rules (algorithms/select.c: the
 * tree below 256 KiB, the chain from there, unless ZCOLL_TUNING_FILE says otherwise);
 * why, if not NULL, gets the reason for the log. */
static int pick(const zcoll_comm_t *comm, size_t bytes, char *why, size_t why_len) {
  if (comm->plan.forced_bcast_algo >= 0) {
    if (why) snprintf(why, why_len, "forced by ZCOLL_BCAST_ALGO");
    return comm->plan.forced_bcast_algo;
  }
  return zcoll__select_bcast(&comm->plan.selector, comm->size, bytes, why, why_len);
}

zcoll_status_t zcoll__broadcast_plan(zcoll_comm_t *comm, void *buf, size_t count,
                                     zcoll_dtype_t dtype, int root, struct zcoll__plan *pl) {
  memset(pl, 0, sizeof(*pl));
  if ((unsigned)dtype >= ZCOLL_DTYPE_COUNT)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "broadcast: unknown dtype %d", (int)dtype);
  if (root < 0 || root >= comm->size)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "broadcast: root %d is not a rank (0..%d)", root,
                       comm->size - 1);
  size_t dsize = zcoll__dsize(dtype);
  if (count > (size_t)PTRDIFF_MAX / dsize)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "broadcast: count %zu of %s overflows the address space", count,
                       zcoll_dtype_name(dtype));
  if (count && !buf) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "broadcast: buf is NULL");
  int algo = pick(comm, count * dsize, NULL, 0), built = 0;
  zcoll_status_t st = zcoll__sched_get(comm, ZCOLL_COLL_BROADCAST, algo, count, 1, root, pl,
                                       &built);
  if (st != ZCOLL_OK) return st;
  if (built && zcoll__log_level >= ZCOLL_LOG_INFO) {
    char why[256];
    pick(comm, count * dsize, why, sizeof(why));
    zcoll_log_info("broadcast of %zu x %s from rank %d on %d ranks: %s (%s)", count,
                   zcoll_dtype_name(dtype), root, comm->size, zcoll__bcast_algos[algo]->name, why);
  }
  int tree = strcmp(zcoll__bcast_algos[algo]->name, "tree") == 0;
  pl->desc = (struct zcoll__coll_desc){.kind = ZCOLL_COLL_BROADCAST,
                                       .dtype = (uint8_t)dtype,
                                       .algo = (uint8_t)algo,
                                       .arity = tree ? (uint16_t)comm->plan.algo_params.tree_arity
                                                     : 0,
                                       .root = root,
                                       .count = count};
  pl->src = buf;
  pl->dst = buf;
  return ZCOLL_OK;
}

static zcoll_status_t broadcast(zcoll_comm_t *comm, void *buf, size_t count, zcoll_dtype_t dtype,
                                int root) {
  zcoll_status_t st = zcoll__check_usable(comm);
  if (st != ZCOLL_OK) return st;
  struct zcoll__plan pl;
  if ((st = zcoll__broadcast_plan(comm, buf, count, dtype, root, &pl)) != ZCOLL_OK)
    return zcoll__plan_failed(comm, st);
  st = zcoll__execute(comm, pl.s, &pl.desc, pl.src, pl.dst);
  zcoll__plan_release(&pl);
  return st;
}

zcoll_status_t zcoll_broadcast(zcoll_comm_t *comm, void *buf, size_t count, zcoll_dtype_t dtype,
                               int root) {
  if (!comm) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "broadcast: comm is NULL");
  if (zcoll__group_open(comm))
    return zcoll__group_call(comm, "zcoll_broadcast", ZCOLL_COLL_BROADCAST, NULL, buf, count, dtype,
                             ZCOLL_SUM, root, 0, NULL);
  zcoll_status_t st = zcoll__enter(comm, "zcoll_broadcast");
  if (st != ZCOLL_OK) return st;
  st = zcoll__report(comm, broadcast(comm, buf, count, dtype, root));
  zcoll__leave(comm);
  return st;
}

zcoll_status_t zcoll_broadcast_algorithm(zcoll_comm_t *comm, size_t count, zcoll_dtype_t dtype,
                                         int root, const char **name) {
  if (!comm || !name)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_broadcast_algorithm: NULL argument");
  if ((unsigned)dtype >= ZCOLL_DTYPE_COUNT || root < 0 || root >= comm->size)
    return zcoll__report(comm, zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                                           "zcoll_broadcast_algorithm: unknown dtype %d or root "
                                           "%d not a rank",
                                           (int)dtype, root));
  /* the choice depends on the size only: the root just has to be a rank */
  *name = zcoll__bcast_algos[pick(comm, count * zcoll__dsize(dtype), NULL, 0)]->name;
  return ZCOLL_OK;
}
