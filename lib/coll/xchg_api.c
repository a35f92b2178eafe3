/* xchg_api.c -- the public calls of the rest of MPI's set, blocking and non-blocking: each
 * gathers its arguments into a struct zcoll__xargs and hands it to xchg.c's planner, through
 * the executor (blocking) or a request (request.c). */
#include "base/log.h"
#include "core/exec.h"
#include "core/guard.h"
#include "core/kind.h"
#include "core/report.h"
#include "group.h"
#include "request.h"
#include "xchg.h"

static zcoll_status_t plan_of(zcoll_comm_t *comm, const void *arg, struct zcoll__plan *pl) {
  return zcoll__xchg_plan(comm, arg, pl);
}

/* A blocking call: entered, planned, run to its end, reported, left. */
static zcoll_status_t call(zcoll_comm_t *comm, const struct zcoll__xargs *x, const char *fn) {
  if (!comm) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: comm is NULL", fn);
  zcoll_status_t st = zcoll__enter(comm, fn);
  if (st != ZCOLL_OK) return st;
  if ((st = zcoll__check_usable(comm)) == ZCOLL_OK) {
    struct zcoll__plan pl;
    if ((st = zcoll__xchg_plan(comm, x, &pl)) != ZCOLL_OK) {
      st = zcoll__plan_failed(comm, st);
    } else {
      st = zcoll__execute(comm, pl.s, &pl.desc, pl.src, pl.dst);
      zcoll__plan_release(&pl);
    }
  }
  st = zcoll__report(comm, st);
  zcoll__leave(comm);
  return st;
}

/* Blocking (req NULL) or not. */
static zcoll_status_t go(zcoll_comm_t *comm, const struct zcoll__xargs *x, zcoll_request_t **req,
                         int nb, const char *fn) {
  if (zcoll__group_open(comm)) {
    const struct zcoll__gargs a = {.kind = x->kind,
                                   .sendbuf = x->sendbuf,
                                   .recvbuf = x->recvbuf,
                                   .sendcounts = x->sendcounts,
                                   .sdispls = x->sdispls,
                                   .recvcounts = x->recvcounts,
                                   .rdispls = x->rdispls,
                                   .count = x->count,
                                   .dtype = x->dtype,
                                   .root = x->root};
    return zcoll__group_coll(comm, fn, &a, nb, req);
  }
  return nb ? zcoll__request_issue(comm, plan_of, x, req, fn) : call(comm, x, fn);
}

static zcoll_status_t alltoall(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                               zcoll_dtype_t dtype, zcoll_request_t **req, int nb) {
  struct zcoll__xargs x = {.kind = ZCOLL_COLL_ALLTOALL,
                           .sendbuf = sendbuf,
                           .recvbuf = recvbuf,
                           .count = count,
                           .dtype = dtype,
                           .root = -1};
  return go(comm, &x, req, nb, nb ? "zcoll_ialltoall" : "zcoll_alltoall");
}
zcoll_status_t zcoll_alltoall(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                              zcoll_dtype_t dtype) {
  return alltoall(comm, sendbuf, recvbuf, count, dtype, NULL, 0);
}
zcoll_status_t zcoll_ialltoall(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                               zcoll_dtype_t dtype, zcoll_request_t **req) {
  return alltoall(comm, sendbuf, recvbuf, count, dtype, req, 1);
}

static zcoll_status_t alltoallv(zcoll_comm_t *comm, const void *sendbuf, const size_t *sendcounts,
                                const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                                const size_t *rdispls, zcoll_dtype_t dtype, zcoll_request_t **req,
                                int nb) {
  struct zcoll__xargs x = {.kind = ZCOLL_COLL_ALLTOALLV,
                           .sendbuf = sendbuf,
                           .sendcounts = sendcounts,
                           .sdispls = sdispls,
                           .recvbuf = recvbuf,
                           .recvcounts = recvcounts,
                           .rdispls = rdispls,
                           .dtype = dtype,
                           .root = -1};
  return go(comm, &x, req, nb, nb ? "zcoll_ialltoallv" : "zcoll_alltoallv");
}
zcoll_status_t zcoll_alltoallv(zcoll_comm_t *comm, const void *sendbuf, const size_t *sendcounts,
                               const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                               const size_t *rdispls, zcoll_dtype_t dtype) {
  return alltoallv(comm, sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dtype, NULL,
                   0);
}
zcoll_status_t zcoll_ialltoallv(zcoll_comm_t *comm, const void *sendbuf, const size_t *sendcounts,
                                const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                                const size_t *rdispls, zcoll_dtype_t dtype, zcoll_request_t **req) {
  return alltoallv(comm, sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dtype, req, 1);
}

/* allgatherv and gatherv: one block out, counts and displacements in. */
static zcoll_status_t gathers(int kind, zcoll_comm_t *comm, const void *sendbuf, size_t sendcount,
                              void *recvbuf, const size_t *recvcounts, const size_t *displs,
                              zcoll_dtype_t dtype, int root, zcoll_request_t **req, int nb,
                              const char *fn) {
  struct zcoll__xargs x = {.kind = kind,
                           .sendbuf = sendbuf,
                           .recvbuf = recvbuf,
                           .recvcounts = recvcounts,
                           .rdispls = displs,
                           .count = sendcount,
                           .dtype = dtype,
                           .root = root};
  return go(comm, &x, req, nb, fn);
}
zcoll_status_t zcoll_allgatherv(zcoll_comm_t *comm, const void *sendbuf, size_t sendcount,
                                void *recvbuf, const size_t *recvcounts, const size_t *displs,
                                zcoll_dtype_t dtype) {
  return gathers(ZCOLL_COLL_ALLGATHERV, comm, sendbuf, sendcount, recvbuf, recvcounts, displs,
                 dtype, -1, NULL, 0, "zcoll_allgatherv");
}
zcoll_status_t zcoll_iallgatherv(zcoll_comm_t *comm, const void *sendbuf, size_t sendcount,
                                 void *recvbuf, const size_t *recvcounts, const size_t *displs,
                                 zcoll_dtype_t dtype, zcoll_request_t **req) {
  return gathers(ZCOLL_COLL_ALLGATHERV, comm, sendbuf, sendcount, recvbuf, recvcounts, displs,
                 dtype, -1, req, 1, "zcoll_iallgatherv");
}
zcoll_status_t zcoll_gatherv(zcoll_comm_t *comm, const void *sendbuf, size_t sendcount,
                             void *recvbuf, const size_t *recvcounts, const size_t *displs,
                             zcoll_dtype_t dtype, int root) {
  return gathers(ZCOLL_COLL_GATHERV, comm, sendbuf, sendcount, recvbuf, recvcounts, displs, dtype,
                 root, NULL, 0, "zcoll_gatherv");
}
zcoll_status_t zcoll_igatherv(zcoll_comm_t *comm, const void *sendbuf, size_t sendcount,
                              void *recvbuf, const size_t *recvcounts, const size_t *displs,
                              zcoll_dtype_t dtype, int root, zcoll_request_t **req) {
  return gathers(ZCOLL_COLL_GATHERV, comm, sendbuf, sendcount, recvbuf, recvcounts, displs, dtype,
                 root, req, 1, "zcoll_igatherv");
}

/* gather and scatter: blocks of count to or from the root. */
static zcoll_status_t rooted(int kind, zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                             size_t count, zcoll_dtype_t dtype, int root, zcoll_request_t **req,
                             int nb, const char *fn) {
  struct zcoll__xargs x = {.kind = kind,
                           .sendbuf = sendbuf,
                           .recvbuf = recvbuf,
                           .count = count,
                           .dtype = dtype,
                           .root = root};
  return go(comm, &x, req, nb, fn);
}
zcoll_status_t zcoll_gather(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                            zcoll_dtype_t dtype, int root) {
  return rooted(ZCOLL_COLL_GATHER, comm, sendbuf, recvbuf, count, dtype, root, NULL, 0,
                "zcoll_gather");
}
zcoll_status_t zcoll_igather(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                             zcoll_dtype_t dtype, int root, zcoll_request_t **req) {
  return rooted(ZCOLL_COLL_GATHER, comm, sendbuf, recvbuf, count, dtype, root, req, 1,
                "zcoll_igather");
}
zcoll_status_t zcoll_scatter(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                             zcoll_dtype_t dtype, int root) {
  return rooted(ZCOLL_COLL_SCATTER, comm, sendbuf, recvbuf, count, dtype, root, NULL, 0,
                "zcoll_scatter");
}
zcoll_status_t zcoll_iscatter(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                              zcoll_dtype_t dtype, int root, zcoll_request_t **req) {
  return rooted(ZCOLL_COLL_SCATTER, comm, sendbuf, recvbuf, count, dtype, root, req, 1,
                "zcoll_iscatter");
}

static zcoll_status_t scatterv(zcoll_comm_t *comm, const void *sendbuf, const size_t *sendcounts,
                               const size_t *displs, void *recvbuf, size_t recvcount,
                               zcoll_dtype_t dtype, int root, zcoll_request_t **req, int nb) {
  struct zcoll__xargs x = {.kind = ZCOLL_COLL_SCATTERV,
                           .sendbuf = sendbuf,
                           .sendcounts = sendcounts,
                           .sdispls = displs,
                           .recvbuf = recvbuf,
                           .count = recvcount,
                           .dtype = dtype,
                           .root = root};
  return go(comm, &x, req, nb, nb ? "zcoll_iscatterv" : "zcoll_scatterv");
}
zcoll_status_t zcoll_scatterv(zcoll_comm_t *comm, const void *sendbuf, const size_t *sendcounts,
                              const size_t *displs, void *recvbuf, size_t recvcount,
                              zcoll_dtype_t dtype, int root) {
  return scatterv(comm, sendbuf, sendcounts, displs, recvbuf, recvcount, dtype, root, NULL, 0);
}
zcoll_status_t zcoll_iscatterv(zcoll_comm_t *comm, const void *sendbuf, const size_t *sendcounts,
                               const size_t *displs, void *recvbuf, size_t recvcount,
                               zcoll_dtype_t dtype, int root, zcoll_request_t **req) {
  return scatterv(comm, sendbuf, sendcounts, displs, recvbuf, recvcount, dtype, root, req, 1);
}
