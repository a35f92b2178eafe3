/* guard.c -- one thread at a time, no forked children, revoke from anywhere. */
#include "guard.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "comm.h"
#include "base/log.h"

static atomic_uint fork_gen;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* Runs in the child of every fork: a counter, not a pid, so that the check on every
 * call is a load rather than a system call (glibc no longer caches getpid). */
static atomic_int revokers; /* revokes running (below) */

static void in_child(void) {
  atomic_fetch_add(&fork_gen, 1);
  atomic_store(&revokers, 0); /* the parent's threads revoking are not in the child */
}
static void register_fork_handler(void) { pthread_atfork(NULL, NULL, in_child); }

unsigned zcoll__guard_fork_gen(void) {
  pthread_once(&fork_once, register_fork_handler);
  return atomic_load(&fork_gen);
}

int zcoll__guard_forked(const zcoll_comm_t *comm) {
  return atomic_load_explicit(&fork_gen, memory_order_relaxed) != comm->fork_gen;
}

static zcoll_status_t enter(zcoll_comm_t *comm, const char *fn, int unless_busy) {
  if (zcoll__guard_forked(comm))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "%s: called in a child process forked after zcoll_comm_init (pid %ld): a "
                       "communicator belongs to the process that created it; create a new one "
                       "in the child (zcoll_comm_destroy here only releases local memory)",
                       fn, (long)getpid());
  int idle = 0;
  /* Acquire/release, not sequentially consistent: the entry is a lock, and on x86 a
   * seq_cst store is an xchg, a full barrier on every call of the hot path. */
  if (!atomic_compare_exchange_strong_explicit(&comm->inside, &idle, 1, memory_order_acquire,
                                               memory_order_relaxed))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "%s: the communicator is used concurrently by another thread (one call at "
                       "a time per communicator; use one communicator per thread)",
                       fn);
  /* With a progress thread, the executor is shared with it. */
  if (comm->progress.on) {
    if (!unless_busy) {
      pthread_mutex_lock(&comm->progress.mu);
    } else if (pthread_mutex_trylock(&comm->progress.mu) != 0) {
      atomic_store_explicit(&comm->inside, 0, memory_order_release);
      return ZCOLL_IN_PROGRESS;
    }
  }
  return ZCOLL_OK;
}

zcoll_status_t zcoll__enter(zcoll_comm_t *comm, const char *fn) { return enter(comm, fn, 0); }

zcoll_status_t zcoll__enter_unless_busy(zcoll_comm_t *comm, const char *fn) {
  return enter(comm, fn, 1);
}

int zcoll__try_enter(zcoll_comm_t *comm) {
  int idle = 0;
  if (zcoll__guard_forked(comm) ||
      !atomic_compare_exchange_strong_explicit(&comm->inside, &idle, 1, memory_order_acquire,
                                               memory_order_relaxed))
    return 0;
  if (comm->progress.on && pthread_mutex_trylock(&comm->progress.mu) != 0) {
    atomic_store_explicit(&comm->inside, 0, memory_order_release);
    return 0;
  }
  return 1;
}

void zcoll__leave(zcoll_comm_t *comm) {
  if (comm->progress.on) pthread_mutex_unlock(&comm->progress.mu);
  atomic_store_explicit(&comm->inside, 0, memory_order_release);
}

int zcoll__guard_take_over(zcoll_comm_t *comm, double seconds) {
  struct timespec nap = {0, 1000000};
  for (long naps = 0;; naps++) {
    int idle = 0;
    /* One step from "nobody inside" to "refused for good": no call slips in between. */
    if (atomic_compare_exchange_strong(&comm->inside, &idle, 2)) break;
    if ((double)naps * 1e-3 >= seconds) return 0;
    nanosleep(&nap, NULL);
  }
  /* A zcoll_vec_get holds the communicator in turns, with its key in hand in between:
   * it sees the revoke and leaves; no new call may start now. */
  for (long naps = 0; atomic_load(&comm->vec_waiters); naps++) {
    if ((double)naps * 1e-3 >= seconds) return 0;
    nanosleep(&nap, NULL);
  }
  return 1;
}

/* The communicators a revoke may touch. A signal handler cannot take the registry's
 * lock (comm_registry.c): it finds comm here with atomic loads, counted in `revokers`
 * while it does, and release waits for that count after taking comm out. Beyond
 * REVOCABLE_MAX live communicators the rest are revoked unguarded, as before. */
#define REVOCABLE_MAX 256
static _Atomic(zcoll_comm_t *) revocable[REVOCABLE_MAX];
static atomic_int overflow; /* communicators not in the table (beyond its size) */

void zcoll__guard_revocable(zcoll_comm_t *comm) {
  for (int i = 0; i < REVOCABLE_MAX; i++) {
    zcoll_comm_t *none = NULL;
    if (atomic_compare_exchange_strong(&revocable[i], &none, comm)) return;
  }
  atomic_fetch_add(&overflow, 1);
  comm->revoke_unguarded = 1;
}

void zcoll__guard_unrevocable(zcoll_comm_t *comm) {
  if (comm->revoke_unguarded) {
    atomic_fetch_sub(&overflow, 1);
    return;
  }
  for (int i = 0; i < REVOCABLE_MAX; i++) {
    zcoll_comm_t *mine = comm;
    if (atomic_compare_exchange_strong(&revocable[i], &mine, NULL)) break;
  }
  /* A revoke that found comm before it left the table may still be writing to it. A
   * handler that interrupted this thread has ended by the time it runs again. */
  while (atomic_load(&revokers)) sched_yield();
}

static int is_revocable(const zcoll_comm_t *comm) {
  for (int i = 0; i < REVOCABLE_MAX; i++)
    if (atomic_load(&revocable[i]) == comm) return 1;
  return atomic_load(&overflow) > 0; /* maybe one of those: the old, unguarded way */
}

/* Async-signal-safe: atomic loads and stores and a write(2). The call inside (if any)
 * sees the flag at its next idle check or wakes on the eventfd, tells the peers and
 * returns. */
zcoll_status_t zcoll_comm_revoke(zcoll_comm_t *comm) {
  if (!comm) return ZCOLL_ERR_INVALID_ARG;
  atomic_fetch_add(&revokers, 1);
  zcoll_status_t st = ZCOLL_OK;
  /* Not found: destroyed, or being freed by a destroy this revoke interrupted. In a
   * forked child the eventfd is the parent's too: waking it would wake the parent for
   * nothing, forever. */
  if (!is_revocable(comm) || zcoll__guard_forked(comm)) {
    st = ZCOLL_ERR_INVALID_ARG;
  } else {
    atomic_store(&comm->revoked, 1);
    uint64_t one = 1;
    if (comm->wake_fd >= 0) {
      ssize_t rc = write(comm->wake_fd, &one, sizeof(one));
      (void)rc; /* a full counter already wakes the sleeper */
    }
  }
  atomic_fetch_sub(&revokers, 1);
  return st;
}
