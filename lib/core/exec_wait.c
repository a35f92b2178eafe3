/* exec_wait.c -- what the executor does when nothing moves: wait cheaply, hear failure
 * news and revokes, time out naming the peer to blame, and break the communicator. */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "exec.h"
#include "base/log.h"
#include "onehost.h"

/* Is this rank waiting on schedule peer j: for its next piece, or for a credit? */
static int stuck_on(const struct zcoll__run *r, int j) {
  const struct zcoll__chan *c = &r->comm->chans[r->e->chan[j]];
  if (r->e->recv_cur[j] < r->s->peer_sends[j + 1] && !c->slots[c->recv_slot].arrived) return 1;
  return r->e->send_cur[j] < r->s->peer_recvs[j] && !c->credits;
}

/* Notes, every 10 ms of idleness, since when each peer keeps us waiting (reset when a
 * piece of it is consumed). */
static void note_waits(const struct zcoll__run *r, int64_t now) {
  if (!r) return;
  for (int j = 0; j < r->s->npeers; j++) {
    if (!stuck_on(r, j))
      r->e->awaited_ns[j] = 0;
    else if (!r->e->awaited_ns[j])
      r->e->awaited_ns[j] = now;
  }
  if (r->fl) zcoll__flight_awaited(r);
}

/* The peer to blame for a timeout: the one awaited longest. A stopped rank's neighbours
 * wait on it first; ranks further on wait on them later. */
static int waiting_on(const struct zcoll__run *r) {
  if (!r) return -1;
  if (r->ops->waiting_on) return r->ops->waiting_on(r); /* a run that is no schedule's */
  int best = -1;
  for (int j = 0; j < r->s->npeers; j++)
    if (r->e->awaited_ns[j] && (best < 0 || r->e->awaited_ns[j] < r->e->awaited_ns[best])) best = j;
  for (int j = 0; best < 0 && j < r->s->npeers; j++)
    if (r->e->recv_cur[j] < r->s->peer_sends[j + 1] || r->e->send_cur[j] < r->s->peer_recvs[j])
      best = j;
  return best < 0 ? -1 : r->s->peers[best];
}

zcoll_status_t zcoll__departures(zcoll_comm_t *comm) {
  int who;
  uint64_t n;
  if (!zcoll__bootstrap_departed(comm->bs, &who, &n)) return ZCOLL_OK;
  for (const struct zcoll__run *a = comm->active; a; a = a->next)
    if (a->ordinal >= n)
      return zcoll__fail(ZCOLL_ERR_PEER_FAILED,
                         "rank %d left (zcoll_comm_destroy) after %llu collectives, while rank %d "
                         "is in collective %llu: every rank must make the same collectives",
                         who, (unsigned long long)n, comm->rank,
                         (unsigned long long)a->ordinal + 1);
  return ZCOLL_OK;
}

zcoll_status_t zcoll__news_at_start(zcoll_comm_t *comm) {
  /* Not a communicator's first collective (its number taken already: 1 and up): init's
   * barrier has just heard every rank, and failing it before a byte moved closes UCX
   * endpoints with their wireup still pending, which trips an assertion of Debian 12's
   * UCX (removed upstream, openucx/ucx#8175) in the fault matrix's init-fail cycles. */
  if (comm->ordinal <= 1) return ZCOLL_OK;
  int64_t now = zcoll__now_us_coarse();
  if (now - comm->news_us < 10000) return ZCOLL_OK;
  comm->news_us = now;
  return zcoll__bootstrap_check(comm->bs);
}

/* Failure news from the rendezvous, and departures that leave a collective in flight
 * waiting in vain. */
static zcoll_status_t news(zcoll_comm_t *comm) {
  zcoll_status_t st = zcoll__bootstrap_check(comm->bs);
  return st != ZCOLL_OK ? st : zcoll__departures(comm);
}

static zcoll_status_t revoked(zcoll_comm_t *comm) {
  return zcoll__fail(ZCOLL_ERR_PEER_FAILED,
                     "rank %d's communicator was revoked (zcoll_comm_revoke or zcoll_comm_abort "
                     "called while this call was waiting)",
                     comm->rank);
}

/* The spin phase adapts. Spinning pays while the peer runs on another core: its piece
 * lands within microseconds and a yield would only add a system call. It costs the whole
 * spin on every step when the peer needs our core -- two ranks on one core because
 * something else holds the other, which a shared host does often: 30-50 us a call at
 * 8 B against 6-13 us without spinning (perf/sim/README.md). So a wait that outlasts the
 * spin halves it, and one that ends inside it (by the clock: a rank that lost the core
 * while spinning did not gain by it) doubles it, between ZCOLL_SPIN_US and a floor. One
 * wait in SPIN_PROBE spins the whole ZCOLL_SPIN_US again, because from the floor only
 * the shortest waits could show that spinning pays: a probe that ends inside restores
 * it. A ZCOLL_SPIN_US the user set is kept as set. */
#define SPIN_FLOOR_NS 2000
#define SPIN_PROBE 64

static int64_t spin_max(const zcoll_comm_t *comm) { return (int64_t)comm->cfg->spin_us * 1000; }

static int64_t spin_now(const zcoll_comm_t *comm) {
  int64_t ns = spin_max(comm) - atomic_load_explicit(&comm->spin_cut_ns, memory_order_relaxed);
  return ns > 0 ? ns : 0;
}

static void spin_set(zcoll_comm_t *comm, int64_t ns) {
  int64_t max = spin_max(comm), floor = max < SPIN_FLOOR_NS ? max : SPIN_FLOOR_NS;
  ns = ns < floor ? floor : ns > max ? max : ns;
  atomic_store_explicit(&comm->spin_cut_ns, max - ns, memory_order_relaxed);
}

/* The spin for a wait that starts now. While spinning pays (the spin is whole) this is
 * one relaxed load: the hot path of a small call on dedicated cores. */
static int64_t spin_for_wait(zcoll_comm_t *comm) {
  int64_t max = spin_max(comm), now = spin_now(comm);
  if (!comm->spin_adapts || now == max) return max;
  /* Racy increments among waiting threads may lose a count: a probe comes a little late. */
  unsigned k = atomic_load_explicit(&comm->spin_waits, memory_order_relaxed) + 1;
  atomic_store_explicit(&comm->spin_waits, k, memory_order_relaxed);
  return k % SPIN_PROBE ? now : max;
}

void zcoll__idle_done(zcoll_comm_t *comm, struct zcoll__idle *id) {
  /* Positive: the wait had not left its spin at the last look at the clock. A whole spin
   * that paid has nothing to raise, so the clock is read only below it. */
  if (id->since_ns > 0 && comm->spin_adapts && spin_now(comm) < spin_max(comm) &&
      zcoll__now_ns() - id->since_ns < id->spin_ns)
    spin_set(comm, id->spin_ns == spin_max(comm) ? id->spin_ns : 2 * id->spin_ns);
  id->since_ns = 0;
}

/* Nothing moved. Three phases, because a piece is often microseconds away but ranks may
 * outnumber cores: spin (adaptive, above), then poll and yield the core between polls
 * (ZCOLL_YIELD_US) so a runnable peer gets it at once, then sleep on the transport's and
 * the bootstrap's descriptors. Failure news and the deadline are checked every 10 ms. */
zcoll_status_t zcoll__idle_wait(zcoll_comm_t *comm, struct zcoll__run *r, struct zcoll__idle *id) {
  if (atomic_load_explicit(&comm->revoked, memory_order_relaxed)) return revoked(comm);
  if (id->since_ns && (++id->calls & 15)) {
    if (id->since_ns < 0) sched_yield(); /* past the spin phase */
    return ZCOLL_OK;
  }
  int64_t t = zcoll__now_ns();
  id->seen_ns = t;
  if (r && r->fl) zcoll__flight_seen(r->fl, r->ordinal, t);
  if (!id->since_ns) {
    id->since_ns = t;
    id->spin_ns = spin_for_wait(comm);
    id->last_check_ns = t;
    return ZCOLL_OK;
  }
  int64_t since = id->since_ns < 0 ? -id->since_ns : id->since_ns;
  int64_t idle_ns = t - since;
  if (idle_ns < id->spin_ns) return ZCOLL_OK;
  if (id->since_ns > 0 && comm->spin_adapts) /* the spin did not pay this time */
    spin_set(comm, spin_now(comm) / 2);
  id->since_ns = -since; /* negative: spinning is over, yield between polls */
  int check = t - id->last_check_ns >= 10000000;
  if (check) {
    id->last_check_ns = t;
    note_waits(r, t);
    double timeout = comm->cfg->timeout;
    if (timeout > 0 && idle_ns > (int64_t)(timeout * 1e9))
      return zcoll__fail(ZCOLL_ERR_TIMEOUT,
                         "no progress for %.0f s (ZCOLL_TIMEOUT) waiting for rank %d", timeout,
                         waiting_on(r));
    zcoll_status_t st = zcoll__onehost_crosscheck(comm);
    if (st != ZCOLL_OK) return st;
  }
  int sleep = comm->can_block && idle_ns >= spin_max(comm) + (int64_t)comm->cfg->yield_us * 1000;
  if (!sleep) {
    if (check) {
      zcoll_status_t st = news(comm);
      if (st != ZCOLL_OK) return st;
    }
    sched_yield();
    return ZCOLL_OK;
  }
  /* Every rank's socket (rank 0 watches them all), and the 10 ms check regardless. */
  struct pollfd *fds = comm->pollfds;
  int ntl = 0;
  zcoll_status_t st = zcoll__tl_arm(comm, fds, &ntl);
  if (st == ZCOLL_IN_PROGRESS) {
    /* Work pending inside the transport (a queue to flush): poll again, but still
     * hand over the core and hear failure news while it lasts. */
    if (check && (st = news(comm)) != ZCOLL_OK) return st;
    sched_yield();
    return ZCOLL_OK;
  }
  if (st != ZCOLL_OK) return st;
  /* Armed: a peer's mailbox published since would not wake us (onehost.h). */
  if (zcoll__onehost_ready(comm)) return ZCOLL_OK;
  fds[ntl] = (struct pollfd){.fd = comm->wake_fd, .events = POLLIN};
  int nbs = zcoll__bootstrap_pollfds(comm->bs, fds + ntl + 1, comm->size);
  int rc = poll(fds, (nfds_t)ntl + 1 + (nfds_t)nbs, 10);
  zcoll__family_awake(comm);
  if (rc < 0 && errno != EINTR)
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "poll on the transport failed: %s", strerror(errno));
  if (atomic_load_explicit(&comm->revoked, memory_order_relaxed)) return revoked(comm);
  if (rc > 0 && fds[ntl].revents) { /* a wakeup without a revoke: drain it, or poll spins */
    uint64_t n;
    ssize_t got = read(comm->wake_fd, &n, sizeof(n));
    (void)got;
  }
  int bs_news = check;
  for (int k = ntl + 1; k < ntl + 1 + nbs && rc > 0; k++) bs_news |= fds[k].revents != 0;
  if (bs_news) return news(comm);
  return ZCOLL_OK;
}

zcoll_status_t zcoll__tl_arm(zcoll_comm_t *comm, struct pollfd *fds, int *n) {
  return zcoll__family_arm(comm, fds, n);
}

zcoll_status_t zcoll__exec_broken(zcoll_comm_t *comm, zcoll_status_t st) {
  if (comm->broken == ZCOLL_OK) {
    /* A transport error is often the echo of a peer that already gave up (its memory
     * deregistered, its queue pairs gone): if the rendezvous brings that news within a
     * moment, report the cause rather than the echo. */
    if ((st == ZCOLL_ERR_TRANSPORT || st == ZCOLL_ERR_PEER_FAILED) &&
        !atomic_load(&comm->revoked)) {
      char echo[512];
      snprintf(echo, sizeof(echo), "%s", zcoll__last_error());
      int n = zcoll__bootstrap_pollfds(comm->bs, comm->pollfds, comm->size + 1);
      zcoll_status_t cause = ZCOLL_OK;
      if (n > 0 && poll(comm->pollfds, (nfds_t)n, 200) > 0)
        cause = zcoll__bootstrap_check(comm->bs);
      if (cause != ZCOLL_OK)
        st = cause;
      else
        zcoll__record_error(st, "%s", echo);
    }
    comm->broken = st;
    zcoll__bootstrap_abort(comm->bs, st, zcoll__last_error());
    char why[512];
    snprintf(why, sizeof(why), "%s", zcoll__last_error());
    zcoll__log_mute(1); /* cancellations report errors of their own: not news */
    for (int k = 0; k < comm->ntlis; k++)
      if (comm->tlis[k].ops->quiesce) comm->tlis[k].ops->quiesce(comm->tlis[k].tl);
    zcoll__onehost_quiesce(comm);
    zcoll__log_mute(0);
    zcoll__record_error(st, "%s", why);
    zcoll__flight_dump_failure(comm, st, NULL);
  }
  return st;
}
