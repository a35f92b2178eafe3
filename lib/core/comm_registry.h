/*
 * comm_registry.h -- the communicators of this process: which are alive, which are being
 * created, destroyed or aborted right now.
 *
 * Two promises rest on it. zcoll_comm_abort may come from a watchdog thread at any time,
 * also while zcoll_comm_destroy runs on another thread or after it has returned: abort
 * must then never touch memory destroy frees, so both decide under one process-wide lock
 * who frees, and abort only touches a communicator it found alive under that lock. And
 * two threads of one process must not create a communicator of the same job as the same
 * rank at the same time: which of them pairs with which thread of another process would
 * be undefined, and the fingerprints cannot tell (the data of the wrong thread would be
 * summed in, every call OK).
 */
#ifndef ZCOLL_COMM_REGISTRY_H
#define ZCOLL_COMM_REGISTRY_H

#include "zcoll.h"

struct zcoll_comm;

/* A creation as rank `rank` of the job whose rendezvous is `root` (host:port, or "" when
 * a launcher gives it, or rank 0's inherited listening socket root_fd when that is all it
 * has) and id `job_id`: ZCOLL_OK, with *token to pass to zcoll__registry_created; or
 * ZCOLL_ERR_INVALID_ARG when another thread of this process is creating a communicator as
 * that rank of that job. */
zcoll_status_t zcoll__registry_creating(int rank, int size, const char *root, int root_fd,
                                        const char *job_id, int *token);
/* The creation `token` is over: comm (NULL if it failed) is alive from now on. */
void zcoll__registry_created(int token, struct zcoll_comm *comm);

/* zcoll_comm_destroy's first step: ZCOLL_OK if comm is alive and nobody else destroys or
 * aborts it (it is then marked as being destroyed); else why not, touching nothing. */
zcoll_status_t zcoll__registry_destroy_begin(struct zcoll_comm *comm);
/* Destroy gave up before freeing anything (a call is running on another thread). */
void zcoll__registry_destroy_cancel(struct zcoll_comm *comm);
/* The last step before comm is freed (destroy, abort, or init's failure): not alive any
 * more; an abort waiting for it returns. */
void zcoll__registry_remove(struct zcoll_comm *comm);

/* zcoll_comm_abort's first step. ZCOLL_OK: comm is alive and now marked as being
 * aborted, the caller frees it. ZCOLL_IN_PROGRESS: destroy was running on another
 * thread; comm has been revoked (so that destroy ends now with ZCOLL_ERR_PEER_FAILED
 * and tells the peers) and destroy has freed it within `seconds`. ZCOLL_OK too when that
 * call gave up without freeing (destroy refused, comm alive again): abort frees it. Else
 * an error (recorded): not a live communicator, or destroy did not end in time. */
zcoll_status_t zcoll__registry_abort_begin(struct zcoll_comm *comm, double seconds);
/* Abort gave up before freeing (the call inside did not leave): comm stays alive. */
void zcoll__registry_abort_cancel(struct zcoll_comm *comm);

/* For a call from any thread at any time (zcoll_comm_dump): ZCOLL_OK if comm is alive,
 * and then it stays so (destroy and abort wait) until zcoll__registry_unhold; else an
 * error naming fn, and nothing is held. */
zcoll_status_t zcoll__registry_hold(struct zcoll_comm *comm, const char *fn);
void zcoll__registry_unhold(void);

#endif
