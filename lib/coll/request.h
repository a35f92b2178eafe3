/*
 * request.h -- non-blocking and persistent collectives (request.c), for the layers
 * that keep requests of their own (the task interface, the partial allreduce) and for
 * destroy.
 */
#ifndef ZCOLL_REQUEST_H
#define ZCOLL_REQUEST_H

#include <stdint.h>

#include "core/comm.h"

/* The request calls' bodies for layers inside the library (tasks.c), on a communicator
 * already entered: a persistent allreduce (described as a vector key's round, the key
 * named by key_tag), started, tested, waited for, freed. */
zcoll_status_t zcoll__request_prepare(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                      size_t count, zcoll_dtype_t dtype, zcoll_op_t op,
                                      int32_t key_tag, zcoll_request_t **req);
/* The non-blocking form of a collective whose arguments coll_args does not hold: a public
 * i-form's body (the communicator not yet entered), `plan` planning it from arg during the
 * call (lib/coll/xchg_api.c). */
struct zcoll__plan;
typedef zcoll_status_t (*zcoll__planner)(zcoll_comm_t *comm, const void *arg,
                                         struct zcoll__plan *pl);
zcoll_status_t zcoll__request_issue(zcoll_comm_t *comm, zcoll__planner plan, const void *arg,
                                    zcoll_request_t **req, const char *fn);
zcoll_status_t zcoll__request_start(zcoll_request_t *q);
zcoll_status_t zcoll__request_test(zcoll_request_t *q);
zcoll_status_t zcoll__request_wait(zcoll_request_t *q);
zcoll_status_t zcoll__request_free(zcoll_request_t *q);
/* Frees every request of comm (request.c), at destroy or abort. */
void zcoll__requests_release(zcoll_comm_t *comm); /* and the pool */
/* Deregisters the result buffers that requests exposed to peers (before the transport
 * closes); local: in a forked child, forget them instead. */
void zcoll__requests_revoke_grants(zcoll_comm_t *comm, int local);
/* How many requests of comm are in flight. */
int zcoll__requests_active(const zcoll_comm_t *comm);

/* A kind of request: what each call on one does. The public calls (zcoll_start, zcoll_test,
 * zcoll_wait, zcoll_wait_timeout, zcoll_request_free) hand the request to its kind's:
 * request.c's own for the collectives it issues (the task interface's rounds among them,
 * through the bodies above), partial.c's for the partial allreduce. A kind other than
 * request.c's keeps its state in the handle's impl and enters communicators itself. */
struct zcoll__request_ops {
  zcoll_status_t (*start)(zcoll_request_t *q);
  zcoll_status_t (*test)(zcoll_request_t *q);
  zcoll_status_t (*wait)(zcoll_request_t *q, int timeout_ms); /* < 0: no bound */
  zcoll_status_t (*free)(zcoll_request_t *q);
};
/* A handle of another kind on comm, in no list of comm's (its kind owns it); impl back from
 * a handle (NULL: not of that kind); the handle freed, and nothing else. */
zcoll_request_t *zcoll__request_wrap(zcoll_comm_t *comm, const struct zcoll__request_ops *ops,
                                     void *impl);
void *zcoll__request_impl(const zcoll_request_t *q, const struct zcoll__request_ops *ops);
void zcoll__request_forget(zcoll_request_t *q);
/* A wrapped handle its kind kept after zcoll_request_free, given to a new request of the
 * same kind (impl its state). */
void zcoll__request_rebind(zcoll_request_t *q, void *impl);

#endif
