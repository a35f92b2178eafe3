/*
 * progress_thread.h -- ZCOLL_PROGRESS=thread (progress_thread.c).
 */
#ifndef ZCOLL_PROGRESS_THREAD_H
#define ZCOLL_PROGRESS_THREAD_H

#include "core/comm.h"

/* ZCOLL_PROGRESS=thread: starts the communicator's progress thread (progress_thread.c). */
zcoll_status_t zcoll__progress_thread_start(zcoll_comm_t *comm);
/* A collective was started: the thread should look (no-op without a thread). */
void zcoll__progress_thread_wake(zcoll_comm_t *comm);
/* Stops and joins it; how: the caller holds comm->progress.mu (inside a call), or not, or
 * this is a child forked after init (no thread to join). */
enum { ZCOLL_PT_HELD, ZCOLL_PT_NOT_HELD, ZCOLL_PT_FORKED };
void zcoll__progress_thread_stop(zcoll_comm_t *comm, int how);

/* Registers work for the thread's passes (comm.h: struct zcoll__pump), and takes it off
 * again (by fn and arg); the caller has entered comm or holds its lock. A pump runs in
 * the thread's passes only: a caller's own progress moves its work itself. */
zcoll_status_t zcoll__pump_add(zcoll_comm_t *comm, zcoll_status_t (*fn)(void *arg, int *progress),
                               int (*busy)(const void *arg), void *arg);
void zcoll__pump_remove(zcoll_comm_t *comm, zcoll_status_t (*fn)(void *arg, int *progress),
                        const void *arg);

#endif
