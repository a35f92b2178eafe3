/*
 * group.h -- zcoll_group_start / zcoll_group_end (group.c): the calls made between them,
 * recorded and issued together at the end.
 *
 * A call that may be queued asks zcoll__group_open first; if a group is open it hands its
 * arguments, a checker and an issuer to zcoll__group_add instead of running. The issuer is
 * how the end makes the call later (its i-form, or the blocking form with req NULL): a
 * layer above this one (lib/p2p) records its calls through it, so that nothing here calls
 * that layer by name.
 */
#ifndef ZCOLL_GROUP_H
#define ZCOLL_GROUP_H

#include <stddef.h>

#include "core/comm.h"

/* A call's arguments, as recorded (its buffers are read at the end, not here). */
struct zcoll__gargs {
  int kind; /* ZCOLL_COLL_* of a collective; 0 a point-to-point call */
  const void *sendbuf;
  void *recvbuf;
  /* a v-form's arrays (comm->size entries each): copied by zcoll__group_add */
  const size_t *sendcounts, *sdispls, *recvcounts, *rdispls;
  size_t count;
  zcoll_dtype_t dtype;
  zcoll_op_t op;
  int root; /* a point-to-point call's peer */
  int tag;
};

/* The checks a call can make alone (comm entered and usable); ZCOLL_OK or the call's error,
 * after whatever that error does outside a group (an argument error of a collective
 * poisons the communicator: zcoll__plan_failed). */
typedef zcoll_status_t (*zcoll__group_checker)(zcoll_comm_t *comm, const struct zcoll__gargs *a);
/* Makes the call (comm not entered): its i-form into *req, or, req NULL, the blocking form. */
typedef zcoll_status_t (*zcoll__group_issuer)(zcoll_comm_t *comm, const struct zcoll__gargs *a,
                                              zcoll_request_t **req);

/* What the calls reach the group through: a table group.c installs in the communicator
 * at zcoll_group_start, so that the calls it issues at the end (allreduce.c, request.c,
 * lib/p2p ...) do not call it by name and no circle of files forms (ci/cycles.py). add
 * records a call made inside a group: entered, checked, queued; nb: an i-form, whose *req
 * gets a request that ends when zcoll_group_end has issued and ended the call. coll_check
 * and coll_issue are this layer's collectives' (group_coll.c). */
struct zcoll__group_hooks {
  zcoll_status_t (*add)(zcoll_comm_t *comm, const char *fn, const struct zcoll__gargs *a,
                        zcoll__group_checker check, zcoll__group_issuer issue, int nb,
                        zcoll_request_t **req);
  zcoll__group_checker coll_check;
  zcoll__group_issuer coll_issue;
};

/* Is a group open on comm? (Read before entering: one thread at a time, as every call.) */
static inline int zcoll__group_open(const zcoll_comm_t *comm) {
  return comm && comm->coll.group_depth > 0;
}
/* A call recorded in the open group (zcoll__group_open said so). */
static inline zcoll_status_t zcoll__group_add(zcoll_comm_t *comm, const char *fn,
                                              const struct zcoll__gargs *a,
                                              zcoll__group_checker check, zcoll__group_issuer issue,
                                              int nb, zcoll_request_t **req) {
  return comm->coll.group_hooks->add(comm, fn, a, check, issue, nb, req);
}
/* One of this layer's collectives, recorded. */
static inline zcoll_status_t zcoll__group_coll(zcoll_comm_t *comm, const char *fn,
                                               const struct zcoll__gargs *a, int nb,
                                               zcoll_request_t **req) {
  const struct zcoll__group_hooks *h = comm->coll.group_hooks;
  return h->add(comm, fn, a, h->coll_check, h->coll_issue, nb, req);
}
/* The same, from a call's arguments: kind ZCOLL_COLL_*, root -1 where it has none; nb an
 * i-form's (req its). */
static inline zcoll_status_t zcoll__group_call(zcoll_comm_t *comm, const char *fn, int kind,
                                               const void *sendbuf, void *recvbuf, size_t count,
                                               zcoll_dtype_t dtype, zcoll_op_t op, int root, int nb,
                                               zcoll_request_t **req) {
  const struct zcoll__gargs a = {.kind = kind,
                                 .sendbuf = sendbuf,
                                 .recvbuf = recvbuf,
                                 .count = count,
                                 .dtype = dtype,
                                 .op = op,
                                 .root = root};
  return zcoll__group_coll(comm, fn, &a, nb, req);
}
/* group_coll.c's: a collective's checks at the call, and its issue at the end. */
zcoll_status_t zcoll__group_coll_check(zcoll_comm_t *comm, const struct zcoll__gargs *a);
zcoll_status_t zcoll__group_coll_issue(zcoll_comm_t *comm, const struct zcoll__gargs *a,
                                       zcoll_request_t **req);
/* At destroy: whatever is queued is dropped, and every request a group made is freed. */
void zcoll__group_release(zcoll_comm_t *comm);

#endif
