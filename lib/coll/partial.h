/*
 * partial.h -- the partial (quorum) allreduce's request (partial.c), for its making
 * (lib/comm/partial_init.c) and for the communicator's destroy, which frees those left.
 */
#ifndef ZCOLL_PARTIAL_H
#define ZCOLL_PARTIAL_H

#include "core/comm.h"

struct zcoll__partial;

/* zcoll_allreduce_partial_init's body on pc, the request's own communicator (a split of
 * the user's with a channel to every rank: lib/comm/partial_init.c makes it, and destroys
 * it if this fails -- alike on every rank). destroy: how the request's free destroys pc
 * (lib/comm's zcoll_comm_destroy, handed down: this layer does not call up into comm). */
zcoll_status_t zcoll__partial_make(zcoll_comm_t *pc, const void *sendbuf, void *recvbuf,
                                   size_t count, zcoll_dtype_t dtype, zcoll_op_t op, int quorum,
                                   zcoll_status_t (*destroy)(zcoll_comm_t *pc),
                                   zcoll_request_t **req);

/* The calls on a partial request (its kind's, request.h, hands them on; each enters the
 * request's own communicator itself). */
zcoll_status_t zcoll__partial_start(struct zcoll__partial *P);
zcoll_status_t zcoll__partial_test(struct zcoll__partial *P);
zcoll_status_t zcoll__partial_wait(struct zcoll__partial *P, int timeout_ms);
zcoll_status_t zcoll__partial_free(struct zcoll__partial *P);
/* One pass of the request that arg (its own communicator) carries, under the comm's
 * entry or its progress thread's lock: decides a round that can be, moves the one in
 * flight. The progress thread's pump (progress_thread.h), with busy: has arg's partial
 * request an offer in flight (the thread keeps watching)? */
zcoll_status_t zcoll__partial_pump(void *arg, int *progress);
int zcoll__partial_busy(const void *arg);

/* The partial requests made from comm: zcoll_allreduce_partial_init lists each on comm
 * (adopt), zcoll_request_free takes it off; comm's destroy refuses while one is in flight
 * on a communicator that works (busy: how many), and frees those left behind (free_left;
 * revoke: abort's, or comm broken), as it does comm's other requests: freed as
 * zcoll_request_free would, collectively, where their communicator works and nothing is in
 * flight, else revoked first so that it asks nothing of the other ranks. */
void zcoll__partial_adopt(zcoll_comm_t *comm, zcoll_request_t *req);
int zcoll__partials_busy(zcoll_comm_t *comm);
void zcoll__partials_free_left(zcoll_comm_t *comm, int revoke);

/* P back from a request handle (NULL: not a partial request). */
struct zcoll__partial *zcoll__partial_of(const zcoll_request_t *q);

#endif
