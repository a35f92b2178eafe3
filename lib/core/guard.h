/*
 * guard.h -- who may be inside a communicator, and when it must refuse.
 *
 * Every public call on a communicator enters through zcoll__enter and leaves through
 * zcoll__leave: one thread at a time (a second one is refused, not queued: two threads
 * interleaving collectives on one communicator would make the ranks disagree on their
 * order), never from a child forked after the communicator was created (its transport
 * state belongs to the parent), and not after a revoke. zcoll_comm_revoke and
 * zcoll_comm_abort are the exceptions: they may come from any thread while a call is
 * inside, and they are what makes a blocked call return.
 */
#ifndef ZCOLL_GUARD_H
#define ZCOLL_GUARD_H

#include "zcoll.h"

struct zcoll_comm;

/* Which fork generation this process is: increases in every child forked after the
 * first communicator was created (registers the fork handler on first use). */
unsigned zcoll__guard_fork_gen(void);
/* Is this process a child forked after comm was created? */
int zcoll__guard_forked(const struct zcoll_comm *comm);
/* ZCOLL_OK: the caller is now the one thread inside comm. Otherwise why not (nothing is
 * recorded in comm: the thread inside owns it). */
zcoll_status_t zcoll__enter(struct zcoll_comm *comm, const char *fn);
/* The same, except that ZCOLL_IN_PROGRESS (nothing recorded, nothing entered) says the
 * progress thread is inside a pass, instead of waiting for the pass to end. */
zcoll_status_t zcoll__enter_unless_busy(struct zcoll_comm *comm, const char *fn);
void zcoll__leave(struct zcoll_comm *comm);
/* Enters if no other thread is inside (and, with a progress thread, it is not inside a
 * pass): 1, to be left with zcoll__leave; else 0, and nothing recorded. */
int zcoll__try_enter(struct zcoll_comm *comm);
/* Waits up to `seconds` for the thread inside (if any) to leave, and takes the
 * communicator for good (every later call is refused); 0 if the thread did not leave. */
int zcoll__guard_take_over(struct zcoll_comm *comm, double seconds);
/* zcoll_comm_revoke may come from a signal handler while destroy frees comm: it touches
 * only a communicator it finds in a lock-free table. Init adds comm once it is made;
 * release takes it out, and returns once no revoke that may have found it still runs. */
void zcoll__guard_revocable(struct zcoll_comm *comm);
void zcoll__guard_unrevocable(struct zcoll_comm *comm);

#endif
