/* group_coll.c -- this layer's collectives inside a group: what each checks when it is
 * recorded, and how zcoll_group_end makes it (group.h's checker and issuer).
 *
 * The check is the call's own plan, made and let go: every argument error the call would
 * find outside a group it finds here, at the call, with the same consequence (an argument
 * error poisons the communicator, as the peers will issue theirs). */
#include "base/log.h"
#include "core/kind.h"
#include "group.h"
#include "plan.h"
#include "xchg.h"

static struct zcoll__xargs xargs_of(const struct zcoll__gargs *a) {
  return (struct zcoll__xargs){.kind = a->kind,
                               .sendbuf = a->sendbuf,
                               .sendcounts = a->sendcounts,
                               .sdispls = a->sdispls,
                               .recvbuf = a->recvbuf,
                               .recvcounts = a->recvcounts,
                               .rdispls = a->rdispls,
                               .count = a->count,
                               .dtype = a->dtype,
                               .root = a->root};
}

static zcoll_status_t plan(zcoll_comm_t *comm, const struct zcoll__gargs *a,
                           struct zcoll__plan *pl) {
  uint8_t token;
  switch (a->kind) {
  case ZCOLL_COLL_ALLREDUCE:
    return zcoll__allreduce_plan(comm, a->sendbuf, a->recvbuf, a->count, a->dtype, a->op, pl);
  case ZCOLL_COLL_BROADCAST:
    return zcoll__broadcast_plan(comm, a->recvbuf, a->count, a->dtype, a->root, pl);
  case ZCOLL_COLL_BARRIER: return zcoll__barrier_plan(comm, &token, pl);
  case ZCOLL_COLL_ALLGATHER:
    return zcoll__allgather_plan(comm, a->sendbuf, a->recvbuf, a->count, a->dtype, pl);
  case ZCOLL_COLL_REDUCE_SCATTER:
    return zcoll__reduce_scatter_plan(comm, a->sendbuf, a->recvbuf, a->count, a->dtype, a->op, pl);
  case ZCOLL_COLL_REDUCE:
    return zcoll__reduce_plan(comm, a->sendbuf, a->recvbuf, a->count, a->dtype, a->op, a->root, pl);
  default: {
    struct zcoll__xargs x = xargs_of(a);
    return zcoll__xchg_plan(comm, &x, pl);
  }
  }
}

zcoll_status_t zcoll__group_coll_check(zcoll_comm_t *comm, const struct zcoll__gargs *a) {
  struct zcoll__plan pl;
  zcoll_status_t st;
  /* The common case, the small allreduces a group fuses: their argument errors are the
   * plan's checks, without making and dropping a plan (a third of a queued call's cost). */
  if (a->kind == ZCOLL_COLL_ALLREDUCE && (unsigned)a->op < ZCOLL_OP_COUNT) {
    st = zcoll__allreduce_check(a->sendbuf, a->recvbuf, a->count, a->dtype, a->op);
    return st == ZCOLL_OK ? st : zcoll__plan_failed(comm, st);
  }
  st = plan(comm, a, &pl);
  if (st != ZCOLL_OK) return zcoll__plan_failed(comm, st);
  zcoll__plan_release(&pl);
  return ZCOLL_OK;
}

/* The seven of xchg_api.c, by their public calls. */
static zcoll_status_t issue_xchg(zcoll_comm_t *comm, const struct zcoll__gargs *a,
                                 zcoll_request_t **r) {
  const void *s = a->sendbuf;
  void *d = a->recvbuf;
  zcoll_dtype_t t = a->dtype;
  switch (a->kind) {
  case ZCOLL_COLL_ALLTOALL:
    return r ? zcoll_ialltoall(comm, s, d, a->count, t, r)
             : zcoll_alltoall(comm, s, d, a->count, t);
  case ZCOLL_COLL_ALLTOALLV:
    return r ? zcoll_ialltoallv(comm, s, a->sendcounts, a->sdispls, d, a->recvcounts, a->rdispls, t,
                                r)
             : zcoll_alltoallv(comm, s, a->sendcounts, a->sdispls, d, a->recvcounts, a->rdispls, t);
  case ZCOLL_COLL_ALLGATHERV:
    return r ? zcoll_iallgatherv(comm, s, a->count, d, a->recvcounts, a->rdispls, t, r)
             : zcoll_allgatherv(comm, s, a->count, d, a->recvcounts, a->rdispls, t);
  case ZCOLL_COLL_GATHER:
    return r ? zcoll_igather(comm, s, d, a->count, t, a->root, r)
             : zcoll_gather(comm, s, d, a->count, t, a->root);
  case ZCOLL_COLL_GATHERV:
    return r ? zcoll_igatherv(comm, s, a->count, d, a->recvcounts, a->rdispls, t, a->root, r)
             : zcoll_gatherv(comm, s, a->count, d, a->recvcounts, a->rdispls, t, a->root);
  case ZCOLL_COLL_SCATTER:
    return r ? zcoll_iscatter(comm, s, d, a->count, t, a->root, r)
             : zcoll_scatter(comm, s, d, a->count, t, a->root);
  default:
    return r ? zcoll_iscatterv(comm, s, a->sendcounts, a->sdispls, d, a->count, t, a->root, r)
             : zcoll_scatterv(comm, s, a->sendcounts, a->sdispls, d, a->count, t, a->root);
  }
}

zcoll_status_t zcoll__group_coll_issue(zcoll_comm_t *comm, const struct zcoll__gargs *a,
                                       zcoll_request_t **r) {
  const void *s = a->sendbuf;
  void *d = a->recvbuf;
  zcoll_dtype_t t = a->dtype;
  switch (a->kind) {
  case ZCOLL_COLL_ALLREDUCE:
    return r ? zcoll_iallreduce(comm, s, d, a->count, t, a->op, r)
             : zcoll_allreduce(comm, s, d, a->count, t, a->op);
  case ZCOLL_COLL_BROADCAST:
    return r ? zcoll_ibroadcast(comm, d, a->count, t, a->root, r)
             : zcoll_broadcast(comm, d, a->count, t, a->root);
  case ZCOLL_COLL_BARRIER: return r ? zcoll_ibarrier(comm, r) : zcoll_barrier(comm);
  case ZCOLL_COLL_ALLGATHER:
    return r ? zcoll_iallgather(comm, s, d, a->count, t, r)
             : zcoll_allgather(comm, s, d, a->count, t);
  case ZCOLL_COLL_REDUCE_SCATTER:
    return r ? zcoll_ireduce_scatter(comm, s, d, a->count, t, a->op, r)
             : zcoll_reduce_scatter(comm, s, d, a->count, t, a->op);
  case ZCOLL_COLL_REDUCE:
    return r ? zcoll_ireduce(comm, s, d, a->count, t, a->op, a->root, r)
             : zcoll_reduce(comm, s, d, a->count, t, a->op, a->root);
  default: return issue_xchg(comm, a, r);
  }
}
