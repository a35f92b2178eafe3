/* progress_thread.c -- ZCOLL_PROGRESS=thread: one thread per communicator that moves the
 * collectives in flight while the application computes, and hears failure news (and
 * relays it, on rank 0) even when nothing is in flight.
 *
 * Locking. comm->progress.mu guards everything the executor touches; the application's
 * calls take it in zcoll__enter (after the one-thread-at-a-time check) and drop it in
 * zcoll__leave, and the thread takes it for each pass. The thread never sleeps holding it: it arms the
 * transport under the lock, then polls the descriptors without it, so a zcoll_test from
 * the application waits at most one pass.
 *
 * Not spinning. A pass that moves nothing is followed by ZCOLL_SPIN_US of passes with the
 * lock dropped in between, then by a sleep on the transport's descriptor, the wake-up
 * eventfd (a new start, a revoke, the stop) and the rendezvous sockets; with nothing in
 * flight the thread only sleeps. Idle, it costs no CPU.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/comm.h"
#include "base/clock.h"
#include "core/exec.h"
#include "base/log.h"
#include "progress_thread.h"

/* Ends everything in flight; the message waits in the communicator for the
 * application's next call (zcoll__report), not in this thread's. */
static void failed(zcoll_comm_t *comm, zcoll_status_t st) {
  zcoll__comm_break(comm, st);
  snprintf(comm->last_error, sizeof(comm->last_error), "%s", zcoll__last_error());
  comm->last_error_async = 1;
}

/* One pass under the lock: progress what is in flight, or end it on a failure. */
static void pass(zcoll_comm_t *comm, int *progress, int *busy) {
  if (comm->broken == ZCOLL_OK && comm->active) {
    zcoll_status_t st;
    if (atomic_load(&comm->revoked))
      st = zcoll__fail(ZCOLL_ERR_PEER_FAILED,
                       "rank %d's communicator was revoked (zcoll_comm_revoke or "
                       "zcoll_comm_abort)",
                       comm->rank);
    else if ((st = zcoll__departures(comm)) == ZCOLL_OK)
      st = zcoll__progress(comm, progress);
    if (st != ZCOLL_OK) failed(comm, st);
  }
  /* The registered work (the vector interface's keys, a partial round), in its order. */
  for (int k = 0; k < comm->progress.npumps && comm->broken == ZCOLL_OK; k++) {
    zcoll_status_t st = comm->progress.pumps[k].pass(comm->progress.pumps[k].arg, progress);
    if (st != ZCOLL_OK) failed(comm, st);
  }
  int pumping = 0;
  for (int k = 0; k < comm->progress.npumps && !pumping; k++)
    pumping = comm->progress.pumps[k].busy &&
              comm->progress.pumps[k].busy(comm->progress.pumps[k].arg);
  *busy = comm->broken == ZCOLL_OK && (comm->active != NULL || pumping);
}

zcoll_status_t zcoll__pump_add(zcoll_comm_t *comm, zcoll_status_t (*fn)(void *arg, int *progress),
                               int (*busy)(const void *arg), void *arg) {
  if (comm->progress.npumps == ZCOLL_PUMPS_MAX)
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "more than %d kinds of work for the progress thread",
                       ZCOLL_PUMPS_MAX);
  comm->progress.pumps[comm->progress.npumps++] = (struct zcoll__pump){fn, busy, arg};
  return ZCOLL_OK;
}

void zcoll__pump_remove(zcoll_comm_t *comm, zcoll_status_t (*fn)(void *arg, int *progress),
                        const void *arg) {
  for (int k = 0; k < comm->progress.npumps; k++)
    if (comm->progress.pumps[k].pass == fn && comm->progress.pumps[k].arg == arg) {
      memmove(&comm->progress.pumps[k], &comm->progress.pumps[k + 1],
              sizeof(comm->progress.pumps[0]) * (size_t)(comm->progress.npumps - k - 1));
      comm->progress.npumps--;
      return;
    }
}

/* Sleeps until something may have happened (at most 10 ms busy, 100 ms idle); the lock is
 * held on entry and on return, not in between. */
static void sleep_on_fds(zcoll_comm_t *comm, struct pollfd *fds, int busy) {
  int n = 0;
  if (busy && comm->can_block) {
    zcoll_status_t st = zcoll__tl_arm(comm, fds, &n);
    if (st == ZCOLL_IN_PROGRESS) return; /* work pending in the transport: pass again */
    if (st != ZCOLL_OK) n = 0;
  }
  fds[n++] = (struct pollfd){.fd = comm->wake_fd, .events = POLLIN};
  int first_bs = n;
  if (comm->broken == ZCOLL_OK) n += zcoll__bootstrap_pollfds(comm->bs, fds + n, comm->size);
  pthread_mutex_unlock(&comm->progress.mu);
  int rc = poll(fds, (nfds_t)n, busy ? 10 : 100);
  pthread_mutex_lock(&comm->progress.mu);
  zcoll__family_awake(comm);
  if (rc <= 0) return;
  for (int k = 0; k < n; k++)
    if (fds[k].fd == comm->wake_fd && fds[k].revents) {
      uint64_t v;
      ssize_t got = read(comm->wake_fd, &v, sizeof(v)); /* the flags say why */
      (void)got;
    }
  int news = 0;
  for (int k = first_bs; k < n; k++) news |= fds[k].revents != 0;
  if (news && comm->broken == ZCOLL_OK) {
    zcoll_status_t st = zcoll__bootstrap_check(comm->bs);
    if (st != ZCOLL_OK) failed(comm, st);
  }
}

static void *progress_main(void *arg) {
  zcoll_comm_t *comm = arg;
  struct pollfd *fds = calloc((size_t)comm->size + 1 + ZCOLL_TL_MAX, sizeof(*fds));
  zcoll__log_set_rank(comm->rank);
  pthread_mutex_lock(&comm->progress.mu);
  int64_t idle_since = 0;
  while (!atomic_load(&comm->progress.stop) && fds) {
    int progress = 0, busy = 0;
    pass(comm, &progress, &busy);
    if (progress) {
      idle_since = 0;
      continue;
    }
    int64_t now = busy ? zcoll__now_ns() : 0;
    if (busy && !idle_since) idle_since = now;
    if (busy && now - idle_since < (int64_t)comm->cfg->spin_us * 1000) {
      /* Let the application's call in between passes, and the core go to whoever
       * needs it when ranks outnumber cores. */
      pthread_mutex_unlock(&comm->progress.mu);
      sched_yield();
      pthread_mutex_lock(&comm->progress.mu);
      continue;
    }
    sleep_on_fds(comm, fds, busy);
    idle_since = 0;
  }
  pthread_mutex_unlock(&comm->progress.mu);
  free(fds);
  return NULL;
}

zcoll_status_t zcoll__progress_thread_start(zcoll_comm_t *comm) {
  if (pthread_mutex_init(&comm->progress.mu, NULL) != 0)
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "cannot create the progress thread's lock");
  atomic_store(&comm->progress.stop, 0);
  /* The thread takes no signal: the application's handlers run on its own threads. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&comm->progress.tid, NULL, progress_main, comm);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    pthread_mutex_destroy(&comm->progress.mu);
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "cannot start the progress thread: %s", strerror(rc));
  }
  comm->progress.on = 1;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  /* Said once, by the job's first communicator: a split's children would repeat it. */
  if (comm->cfg->local_size > 0 && cores > 0 && 2L * comm->cfg->local_size > cores &&
      !comm->erank_of)
    zcoll_log_warn("ZCOLL_PROGRESS=thread: %d ranks on this host with a progress thread each "
                   "and the application's own: more threads than its %ld cores, so progress "
                   "waits for a core (ZCOLL_PROGRESS=caller avoids the extra threads)",
                   comm->cfg->local_size, cores);
  else
    zcoll_log_info("progress thread started");
  return ZCOLL_OK;
}

void zcoll__progress_thread_wake(zcoll_comm_t *comm) {
  if (!comm->progress.on || comm->wake_fd < 0) return;
  uint64_t one = 1;
  ssize_t rc = write(comm->wake_fd, &one, sizeof(one));
  (void)rc; /* a full counter wakes it as well */
}

void zcoll__progress_thread_stop(zcoll_comm_t *comm, int how) {
  if (!comm->progress.on) return;
  comm->progress.on = 0;              /* zcoll__leave no longer unlocks */
  if (how == ZCOLL_PT_FORKED) return; /* no thread in this process; its lock may be held */
  atomic_store(&comm->progress.stop, 1);
  uint64_t one = 1;
  ssize_t rc = write(comm->wake_fd, &one, sizeof(one));
  (void)rc;
  if (how == ZCOLL_PT_HELD) pthread_mutex_unlock(&comm->progress.mu);
  pthread_join(comm->progress.tid, NULL);
  pthread_mutex_destroy(&comm->progress.mu);
}
