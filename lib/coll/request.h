/*
 * request.h -- non-blocking and persistent collectives (request.c), for the layers
 * that keep requests of their own (the task interface) and for destroy.
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

#endif
