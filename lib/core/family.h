/*
 * family.h -- transport instances shared by a communicator and those split from it.
 *
 * The first communicator of a process (made by zcoll_comm_init or from a unique id) opens
 * its transport instances and connects them; a communicator split from it (split.c) may
 * run its channels over the same instances and endpoints instead of opening and
 * connecting its own. Together they are a family, numbered by the first one's ranks (the
 * instances' numbering: "engine ranks"), each with its own channel set (channel.h: the
 * set in every immediate tells the receiver whose a piece is), slots, sequence numbers
 * and lifetime. The last one destroyed closes the instances.
 *
 * Sharing is for communicators of one host, over an instance with ZCOLL_TL_CAP_PEER_LOSS
 * (shm, loopback): a member that dies is one lost peer there, which breaks the
 * communicators it belongs to and no other. A split per host of a job on many hosts
 * shares the parent's shm instance; one across hosts opens instances of its own.
 *
 * Threads. Each communicator is used by one thread at a time, but the communicators of a
 * family may be used by different threads at once; what they share is the instances. So
 * while a family has more than one communicator, every call into a shared instance is
 * made under the family's lock, and nothing else is: no thread touches another
 * communicator's state. An event polled by one communicator's thread for another goes to
 * that one's inbox (its own events stay in order: the inbox is emptied before the
 * instance is polled again for it) and wakes it if it sleeps. The lock is never held
 * while waiting.
 */
#ifndef ZCOLL_FAMILY_H
#define ZCOLL_FAMILY_H

#include <pthread.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>

#include "channel.h"
#include "tl/evq.h"
#include "tl/transport.h"
#include "zcoll.h"

struct zcoll__ftl { /* a shared instance */
  const struct zcoll_tl_ops *ops;
  struct zcoll_tl *tl;
  int idx;                 /* in zcoll__transports */
  int refs;                /* communicators whose channels run over it */
  struct zcoll_ep **ep_of; /* engine rank -> its endpoint, NULL: not connected */
};

struct zcoll__family {
  pthread_mutex_t mu;
  atomic_int shared; /* more than one communicator: instance calls take mu */
  int refs;          /* communicators (under mu) */
  int rank, size;    /* engine numbering */
  struct zcoll__ftl tls[ZCOLL_TL_MAX];
  int ntls;
  struct zcoll_comm *set_comm[ZCOLL_CHAN_SETS]; /* whose each set is, NULL: nobody's */
  uint16_t gen[ZCOLL_CHAN_SETS];                /* each set's latest generation here */
  /* Sets never to be used again here: released without draining what peers may still
   * have sent on them (after a failure or an abort). */
  uint64_t burnt;
  int sleepers; /* communicators asleep on an instance's descriptor (under mu) */
};

/* The inbox of one communicator: events another's thread polled for it. */
struct zcoll__finbox {
  struct zcoll__evq q;
  int sleeping;    /* its thread sleeps (or is about to) on the descriptors: wake it */
  atomic_int lost; /* a member was lost (engine rank + 1); -1: an event could not be kept */
};

struct zcoll_comm;

/* Makes comm (wired, with its own instances) the first of a new family. */
zcoll_status_t zcoll__family_create(struct zcoll_comm *comm);
/* Adds comm, split from a member of fam, with channel set `set` of generation gen (higher,
 * mod 2^10, than any the members had for it: split.c): comm's tlis use fam's instances
 * (their ftl set by the caller). */
void zcoll__family_join(struct zcoll__family *fam, struct zcoll_comm *comm, int set, int gen);
/* Takes comm out of its family (its set free for reuse if drained, else burnt) and
 * closes the instances nobody uses any more; frees the family with its last member.
 * local: in a forked child, where the instances are the parent process's. */
void zcoll__family_leave(struct zcoll_comm *comm, int drained, int local);
/* Sets free here for a new communicator: a bit each (never set 0, the first's); and each
 * set's latest generation here, into gen[ZCOLL_CHAN_SETS]. */
uint64_t zcoll__family_free_sets(struct zcoll__family *fam, uint16_t *gen);
/* The instance of comm's family that a communicator split from comm may share with the
 * other ranks on this host (one with CAP_PEER_LOSS: shm, loopback, which serve only this
 * host): its index in zcoll__transports, or -1 if there is none. */
int zcoll__family_local_tl(const struct zcoll_comm *comm);

static inline int zcoll__family_locks(const struct zcoll__family *fam) {
  return fam && atomic_load_explicit(&fam->shared, memory_order_acquire);
}
/* Around calls into a shared instance; nothing while the family has one member. */
static inline int zcoll__tl_lock(struct zcoll__family *fam) {
  if (!zcoll__family_locks(fam)) return 0;
  pthread_mutex_lock(&fam->mu);
  return 1;
}
static inline void zcoll__tl_unlock(struct zcoll__family *fam, int locked) {
  if (locked) pthread_mutex_unlock(&fam->mu);
}

/* Polls instance k of comm for up to max events of comm's own (inbox first), routing the
 * others' to their inboxes. An error is the instance's. */
zcoll_status_t zcoll__family_poll(struct zcoll_comm *comm, int k, struct zcoll_tl_event *ev,
                                  int max, int *n);
/* After destroy's last meeting, when no peer sends on comm's set any more: takes in what
 * they sent before (credit returns), so that the set is free for reuse. */
zcoll_status_t zcoll__family_drain(struct zcoll_comm *comm);
/* Before and after sleeping on comm's descriptors: arms its instances (IN_PROGRESS if
 * events wait, its inbox's included) and marks it asleep; then unmarks it. */
zcoll_status_t zcoll__family_arm(struct zcoll_comm *comm, struct pollfd *fds, int *n);
void zcoll__family_awake(struct zcoll_comm *comm);

#endif
