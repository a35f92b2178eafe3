/*
 * zcoll_partial.h -- averaging that does not wait for stragglers: the partial (quorum)
 * allreduce. Included by zcoll.h; docs/partial.md has the contract, the design and figures.
 */
#ifndef ZCOLL_PARTIAL_H_PUBLIC
#define ZCOLL_PARTIAL_H_PUBLIC

#include "zcoll.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A persistent request whose every zcoll_start offers this rank's sendbuf (count x dtype,
 * a built-in op; ZCOLL_IN_PLACE: recvbuf) to the round forming when the offer arrives. A
 * round is decided by its quorum-th offer and holds exactly the first quorum offers, one
 * per rank at most; the start completes (zcoll_test, zcoll_wait) when its round's result
 * is in recvbuf -- the same on every member of the round. ZCOLL_AVG divides by the number
 * of offers in the round. Every offer is in exactly one round's result.
 * Collective over comm (every rank calls it, with the same quorum, count, dtype and op:
 * else ZCOLL_ERR_MISMATCH on every rank), in order with comm's other collectives; the
 * request then runs on connections of its own and its rounds are matched among
 * themselves, so other collectives may run on comm between its starts. A round's
 * completion depends on its members only: who they are is decided by a ticket counter
 * the ranks take with remote atomics (shared memory, loopback and UCX have them;
 * ZCOLL_ERR_UNSUPPORTED over a transport without, verbs for now). Free it
 * (zcoll_request_free: collective, a flush first if it was started since the last)
 * before destroying comm; one left behind is freed by zcoll_comm_destroy (as
 * zcoll_request_free would: every rank leaving it alike; after a failure, or with
 * zcoll_comm_abort, locally) and its handle is then invalid, as for comm's other
 * requests. Destroy refuses (ZCOLL_ERR_INVALID_ARG, changing nothing) while its offer is
 * in flight on a working communicator. */
ZCOLL_API zcoll_status_t zcoll_allreduce_partial_init(zcoll_comm_t *comm, const void *sendbuf,
                                                      void *recvbuf, size_t count,
                                                      zcoll_dtype_t dtype, zcoll_op_t op,
                                                      int quorum, zcoll_request_t **req);
/* After a start completed, or a flush: the round's number (rounds count up from 0 across
 * the request's life; UINT64_MAX after a flush that found no offer), how many offers it
 * held, and whether this rank's was among them (always after a start; after a flush, 0
 * for a rank whose last offer was in an earlier round). Any pointer may be NULL. */
ZCOLL_API zcoll_status_t zcoll_request_partial_info(const zcoll_request_t *req, uint64_t *round,
                                                    int *ncontrib, int *mine);
/* Collective, on a request not in flight (zcoll_wait for it first): ends the run of
 * offers. This rank offers no more; once every rank is flushing or waiting in the forming
 * round, that round is decided with the offers it holds (fewer than quorum), so no offer
 * is stranded; then every rank gets the last round's result in recvbuf (untouched when no
 * rank offered since the last flush) and its zcoll_request_partial_info. The request may
 * be started again afterwards. */
ZCOLL_API zcoll_status_t zcoll_partial_flush(zcoll_request_t *req);

#ifdef __cplusplus
}
#endif
#endif
