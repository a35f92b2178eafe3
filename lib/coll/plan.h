/*
 * plan.h -- planning a collective: checks, algorithm, cached schedule (plan.c,
 * allreduce.c, broadcast.c).
 */
#ifndef ZCOLL_PLAN_H
#define ZCOLL_PLAN_H

#include <stddef.h>

#include "core/comm.h"

/* A collective ready to start: its schedule (cached and pinned, or its own), what it is,
 * and its buffers. */
struct zcoll__plan {
  const struct zcoll__sched *s;
  struct zcoll__sched_cache_entry *entry; /* pinned cache entry, or NULL */
  struct zcoll__sched *owned;             /* a schedule of its own, or NULL */
  struct zcoll__coll_desc desc;
  const void *src;
  void *dst;
  const struct zcoll__op_def *op; /* a created op, referenced while the plan lives; NULL */
};

/* The argument errors zcoll__allreduce_plan finds for a built-in op (a created op's are
 * its plan's), without a plan: what a group checks at the call (group_coll.c). */
zcoll_status_t zcoll__allreduce_check(const void *sendbuf, void *recvbuf, size_t count,
                                      zcoll_dtype_t dtype, zcoll_op_t op);
/* Argument checks, algorithm and schedule of an allreduce (local: nothing is counted). */
zcoll_status_t zcoll__allreduce_plan(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                     size_t count, zcoll_dtype_t dtype, zcoll_op_t op,
                                     struct zcoll__plan *pl);
/* A created op's function may fail on one rank after the others have all they need from
 * it (allreduce.c): does pl's collective end with an agreement -- one byte, a kind of its
 * own, every rank needing every other's word? And that agreement's plan, over *word. */
int zcoll__plan_agrees(const zcoll_comm_t *comm, const struct zcoll__plan *pl);
zcoll_status_t zcoll__agree_plan(zcoll_comm_t *comm, uint8_t *word, struct zcoll__plan *pl);
/* The allreduce algorithm for count x dtype (ZCOLL_ALGO, the table, hosts), and why. */
int zcoll__pick_allreduce(const zcoll_comm_t *comm, size_t count, zcoll_dtype_t dtype, char *why,
                          size_t why_len);
/* ZCOLL_WIRE_DTYPE (compressed averaging): the 16-bit dtype that float32 data of a sum, an
 * average or a premul sum (uop) travels as, or 0: everything else travels as it is. */
uint8_t zcoll__wire_of(const zcoll_comm_t *comm, zcoll_dtype_t dtype, zcoll_op_t op,
                       const struct zcoll__op_def *uop);
/* A created op (fn names the call in messages): referenced by pl, checked against the
 * dtype and count, and the element the schedule moves (*n of them) widened to the op's. */
zcoll_status_t zcoll__plan_op(zcoll_comm_t *comm, const char *fn, size_t count, zcoll_dtype_t dtype,
                              zcoll_op_t op, struct zcoll__plan *pl, size_t *n);
/* Runs the agreement that follows a collective with a created op's function. */
zcoll_status_t zcoll__agree(zcoll_comm_t *comm);
/* Allgather, reduce-scatter and reduce plans (allgather_reduce.c): MPI's arguments. */
zcoll_status_t zcoll__allgather_plan(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                     size_t sendcount, zcoll_dtype_t dtype, struct zcoll__plan *pl);
zcoll_status_t zcoll__reduce_scatter_plan(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                          size_t recvcount, zcoll_dtype_t dtype, zcoll_op_t op,
                                          struct zcoll__plan *pl);
zcoll_status_t zcoll__reduce_plan(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                  size_t count, zcoll_dtype_t dtype, zcoll_op_t op, int root,
                                  struct zcoll__plan *pl);
/* A barrier's plan (barrier.c), over the one byte at *token. */
zcoll_status_t zcoll__barrier_plan(zcoll_comm_t *comm, uint8_t *token, struct zcoll__plan *pl);
/* The same for a broadcast (broadcast.c). */
zcoll_status_t zcoll__broadcast_plan(zcoll_comm_t *comm, void *buf, size_t count,
                                     zcoll_dtype_t dtype, int root, struct zcoll__plan *pl);
/* The schedule of (kind, algorithm, count, in place, root), from the cache or built
 * (*built = 1), pinned in pl. kind (kind.h) names the builder, not the call: a barrier
 * runs the allreduce's butterfly. */
zcoll_status_t zcoll__sched_get(zcoll_comm_t *comm, int kind, int algo, size_t count, int in_place,
                                int root, struct zcoll__plan *pl, int *built);
/* A collective call whose plan failed with st: it counts as this rank's call, and breaks
 * the communicator telling the peers why (an argument error: zcoll__poison). */
zcoll_status_t zcoll__plan_failed(zcoll_comm_t *comm, zcoll_status_t st);
void zcoll__plan_release(struct zcoll__plan *pl);

#endif
