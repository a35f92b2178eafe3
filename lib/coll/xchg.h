/*
 * xchg.h -- the rest of MPI's set (xchg.c plans them, xchg_api.c holds the public calls).
 */
#ifndef ZCOLL_XCHG_H
#define ZCOLL_XCHG_H

#include <stddef.h>

#include "plan.h"

/* A call's arguments, whichever of the seven it is (kind: ZCOLL_COLL_*): count is the
 * uniform kinds' block, the v-forms' own block (allgatherv's and gatherv's sendcount,
 * scatterv's recvcount); rdispls is allgatherv's and gatherv's displs, sdispls scatterv's. */
struct zcoll__xargs {
  int kind;
  const void *sendbuf;
  const size_t *sendcounts, *sdispls;
  void *recvbuf;
  const size_t *recvcounts, *rdispls;
  size_t count;
  zcoll_dtype_t dtype;
  int root;
};

/* Argument checks, algorithm and schedule of one of them (local: nothing is counted). */
zcoll_status_t zcoll__xchg_plan(zcoll_comm_t *comm, const struct zcoll__xargs *x,
                                struct zcoll__plan *pl);
/* The kind (ZCOLL_COLL_*) of one of them by name ("alltoall"), 0 for any other name. */
int zcoll__xchg_kind_named(const char *coll);
/* Its algorithm (an index of its kind's list), and why. */
int zcoll__xchg_algo(const zcoll_comm_t *comm, const struct zcoll__xargs *x, char *why, size_t len);

#endif
