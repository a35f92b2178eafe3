/*
 * onehost.h -- the one-host small allreduce: every rank of a communicator on one host
 * (the shm transport, which lets us map the peers' receive regions) publishes its vector
 * in a mailbox at the start of its own receive region and reads everybody else's from
 * theirs, reducing all of them in rank order.
 *
 * An 8-byte allreduce through the executor costs a put and a notification each way,
 * credits, a header check and ~2,500 instructions; here it is one cache line written and
 * one read per peer, which is where Open MPI's shared-memory collectives sit (coll/sm,
 * xhc). Every rank computes x_0 op x_1 op ... op x_{p-1} in that order, so the result is
 * the same bits on every rank.
 *
 * A mailbox has two boxes, used alternately by a rank's one-host calls (they are blocking
 * calls only: one at a time per rank). A rank that publishes its n-th such call in box
 * n % 2 has finished its (n-1)-th, for which it read every peer's box (n-1) % 2 -- so
 * when this rank has seen every peer's n-th call, it may overwrite its box n % 2 at the
 * (n+2)-th: nobody reads it any more. No acknowledgements, no credits.
 *
 * A box says which collective it holds (seq = the collective's number + 1, written last
 * with release), its fingerprint and its description, so a rank that reads it checks it
 * exactly as a channel header is checked. A peer that is in another collective at the
 * same number -- one that goes through the executor -- is caught from both ends: a piece
 * of it arriving where this rank expected a mailbox (onehost_step), and a mailbox holding
 * this rank's collective number while this rank waits in the executor
 * (zcoll__onehost_crosscheck, on the 10 ms checks of a wait).
 *
 * A peer asleep in its wait is knocked awake by the transport after each publication,
 * and a rank about to sleep looks at its mailboxes after arming (zcoll__onehost_ready):
 * each side fences between its store and its load, so one of them sees the other.
 */
#ifndef ZCOLL_ONEHOST_H
#define ZCOLL_ONEHOST_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "comm.h"

struct zcoll__run;

/* The mailbox: the first bytes of every rank's receive region (comm_setup.c keeps them
 * free of slots), two boxes. */
#define ZCOLL_ONEHOST_MAILBOX_BYTES 2048

/* The largest vector it takes, in bytes: beyond it the executor's pipeline wins
 * (perf/ab.sh; docs/performance.md). */
#define ZCOLL_ONEHOST_MAX_BYTES 512
/* Ranks it serves: every rank reads every other's box. */
#define ZCOLL_ONEHOST_MAX_RANKS 64

struct zcoll__onehost {
  char **box;                /* per rank: its mailbox (two boxes), ours included */
  int publishes;             /* our one-host calls so far: the next one's box is publishes % 2 */
  struct zcoll__sched sched; /* an empty schedule: the runs' s */
};

/* After the channels are wired: comm->oh if every peer's receive region is mapped here
 * (shm), else nothing. An error only for memory. */
zcoll_status_t zcoll__onehost_setup(zcoll_comm_t *comm);
void zcoll__onehost_free(zcoll_comm_t *comm);

/* Does a blocking allreduce of this shape go through the mailboxes? The same answer on
 * every rank for the same call: the communicator's setup, the shape and the settings. */
static inline int zcoll__onehost_fits(const zcoll_comm_t *comm, size_t count, zcoll_dtype_t dtype,
                                      zcoll_op_t op) {
  return comm->oh && count && (unsigned)op < ZCOLL_OP_COUNT &&
         (unsigned)dtype < ZCOLL_DTYPE_COUNT &&
         count <= ZCOLL_ONEHOST_MAX_BYTES / zcoll__dsize(dtype) && comm->forced_algo < 0 &&
         !(dtype == ZCOLL_FLOAT32 && comm->cfg->wire_dtype && (op == ZCOLL_SUM || op == ZCOLL_AVG));
}

/* The rest of run_init (exec_run.c) for a run through the mailboxes (desc.algo
 * ZCOLL_ALGO_ONEHOST; its schedule the empty one above). */
void zcoll__onehost_init(struct zcoll__run *r);
/* Publishes (first time), reads what peers published, ends r when all have. */
zcoll_status_t zcoll__onehost_step(struct zcoll__run *r, int *progress);
/* After arming, before sleeping: has a peer a one-host run in flight waits on published? */
int zcoll__onehost_ready(const zcoll_comm_t *comm);
/* The peer a one-host run waits on (for a timeout's message), -1 if none. */
int zcoll__onehost_waiting_on(const struct zcoll__run *r);
/* A wait's periodic check: a peer that is through its mailbox at a collective this rank
 * runs otherwise, or out of step with it (MISMATCH). */
zcoll_status_t zcoll__onehost_crosscheck(zcoll_comm_t *comm);

#endif
