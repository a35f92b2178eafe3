/* family.c -- transport instances shared by a communicator and those split from it
 * (family.h): membership, the routing of events among the members, sleeping. */
#include "family.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "comm.h"

zcoll_status_t zcoll__family_create(zcoll_comm_t *comm) {
  struct zcoll__family *fam = calloc(1, sizeof(*fam));
  if (!fam || pthread_mutex_init(&fam->mu, NULL) != 0) {
    free(fam);
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
  }
  fam->refs = 1;
  fam->rank = comm->rank;
  fam->size = comm->size;
  for (int k = 0; k < comm->ntlis; k++) {
    struct zcoll__ftl *f = &fam->tls[k];
    struct zcoll__tli *t = &comm->tlis[k];
    *f = (struct zcoll__ftl){t->ops, t->tl, t->idx, 1, calloc((size_t)comm->size, sizeof(void *))};
    if (!f->ep_of) {
      for (int j = 0; j < k; j++) free(fam->tls[j].ep_of);
      pthread_mutex_destroy(&fam->mu);
      free(fam);
      return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
    }
    t->ftl = f;
  }
  fam->ntls = comm->ntlis;
  for (int i = 0; i < comm->nchans; i++) {
    const struct zcoll__chan *c = &comm->chans[i];
    if (c->t && c->t->ftl) c->t->ftl->ep_of[c->peer] = c->ep;
  }
  fam->set_comm[0] = fam->set_comm[ZCOLL_CHAN_P2P_SET(0)] = comm;
  comm->fam = fam;
  comm->set = 0;
  return ZCOLL_OK;
}

void zcoll__family_join(struct zcoll__family *fam, zcoll_comm_t *comm, int set, int gen) {
  pthread_mutex_lock(&fam->mu);
  fam->refs++;
  fam->set_comm[set] = fam->set_comm[ZCOLL_CHAN_P2P_SET(set)] = comm;
  fam->gen[set] = fam->gen[ZCOLL_CHAN_P2P_SET(set)] = (uint16_t)gen;
  for (int k = 0; k < comm->ntlis; k++) comm->tlis[k].ftl->refs++;
  atomic_store_explicit(&fam->shared, 1, memory_order_release);
  pthread_mutex_unlock(&fam->mu);
  comm->fam = fam;
  comm->set = set;
  comm->set_gen = gen;
}

void zcoll__family_leave(zcoll_comm_t *comm, int drained, int local) {
  struct zcoll__family *fam = comm->fam;
  if (!fam) {
    zcoll__evq_free(&comm->inbox.q);
    return;
  }
  struct zcoll__ftl *done[ZCOLL_TL_MAX];
  int ndone = 0;
  pthread_mutex_lock(&fam->mu);
  if (fam->set_comm[comm->set] == comm)
    fam->set_comm[comm->set] = fam->set_comm[ZCOLL_CHAN_P2P_SET(comm->set)] = NULL;
  if (!drained) fam->burnt |= 1ull << comm->set;
  if (comm->inbox.sleeping) fam->sleepers--;
  for (int k = 0; k < comm->ntlis; k++) {
    struct zcoll__ftl *f = comm->tlis[k].ftl;
    if (f && --f->refs == 0) done[ndone++] = f;
  }
  int last = --fam->refs == 0;
  if (fam->refs <= 1) atomic_store_explicit(&fam->shared, 0, memory_order_release);
  /* Only now: until its set was taken back, another member's thread could still put an
   * event for it here. */
  zcoll__evq_free(&comm->inbox.q);
  pthread_mutex_unlock(&fam->mu);
  /* Endpoints go with the instance, before the memory they might still write. */
  for (int i = 0; i < ndone; i++) {
    if (!local) done[i]->ops->close(done[i]->tl);
    free(done[i]->ep_of);
    done[i]->ep_of = NULL;
    done[i]->tl = NULL;
  }
  comm->fam = NULL;
  if (!last) return;
  pthread_mutex_destroy(&fam->mu);
  free(fam);
}

uint64_t zcoll__family_free_sets(struct zcoll__family *fam, uint16_t *gen) {
  pthread_mutex_lock(&fam->mu);
  uint64_t used = fam->burnt | 1u; /* set 0 is the first communicator's, even once it is gone */
  for (int s = 0; s < ZCOLL_CHAN_SETS; s++) {
    if (fam->set_comm[s]) used |= 1ull << s;
    gen[s] = fam->gen[s];
  }
  pthread_mutex_unlock(&fam->mu);
  /* A communicator takes a pair (channel.h): its set below the half, its messages' above. */
  uint64_t half = (1ull << (ZCOLL_CHAN_SETS / 2)) - 1;
  return ~(used | used >> (ZCOLL_CHAN_SETS / 2)) & half;
}

int zcoll__family_local_tl(const zcoll_comm_t *comm) {
  for (int k = 0; comm->fam && k < comm->ntlis; k++)
    if (comm->tlis[k].ftl && comm->tlis[k].ftl->tl &&
        (comm->tlis[k].ops->caps & ZCOLL_TL_CAP_PEER_LOSS))
      return comm->tlis[k].idx;
  return -1;
}

/* ---- events ------------------------------------------------------------------------- */

/* The set an event is for: from the immediate, or from the cookie the put was given
 * (executor.c puts its set there); -1 for a lost peer, which is every member's news. */
static int set_of(const struct zcoll_tl_event *ev) {
  switch (ev->kind) {
  case ZCOLL_TL_EV_ARRIVED: return (int)zcoll__imm_set(ev->imm);
  case ZCOLL_TL_EV_PUT_DONE: return (int)zcoll__cookie_set(ev->cookie);
  default: return -1;
  }
}

/* A credit return of an earlier communicator on the set (channel.h): nobody's now. */
static int stale(const struct zcoll__family *fam, const struct zcoll_tl_event *ev, int s) {
  return ev->kind == ZCOLL_TL_EV_ARRIVED && (ev->imm & ZCOLL_IMM_CREDIT) && fam->set_comm[s] &&
         zcoll__imm_gen(ev->imm) != (uint32_t)fam->set_comm[s]->set_gen;
}

static void wake(zcoll_comm_t *comm) {
  if (!comm->inbox.sleeping || comm->wake_fd < 0) return;
  uint64_t one = 1;
  ssize_t w = write(comm->wake_fd, &one, sizeof(one));
  (void)w;
}

/* Under the lock: the events of ev[0..n) that are not comm's go where they belong (or
 * nowhere: a set nobody has any more); comm's stay, in order. Returns how many stay. */
static int route(struct zcoll__family *fam, zcoll_comm_t *comm, struct zcoll_tl_event *ev, int n) {
  int kept = 0;
  for (int i = 0; i < n; i++) {
    int s = set_of(&ev[i]);
    if (s < 0) { /* a lost peer: news for every member it belongs to */
      for (int t = 0; t < ZCOLL_CHAN_SETS; t++) {
        zcoll_comm_t *x = fam->set_comm[t];
        if (!x || x == comm || ev[i].peer < 0 || ev[i].peer >= fam->size) continue;
        if (x->crank_of ? x->crank_of[ev[i].peer] >= 0 : 1) {
          atomic_store(&x->inbox.lost, ev[i].peer + 1);
          wake(x);
        }
      }
      ev[kept++] = ev[i];
    } else if (stale(fam, &ev[i], s)) {
      zcoll_log_debug("dropped a credit return of an older communicator on channel set %d", s);
    } else if (s == comm->set || s == ZCOLL_CHAN_P2P_SET(comm->set)) {
      ev[kept++] = ev[i];
    } else if (fam->set_comm[s]) {
      zcoll_comm_t *x = fam->set_comm[s];
      if (zcoll__evq_push(&x->inbox.q, &ev[i]) != ZCOLL_OK)
        atomic_store(&x->inbox.lost, -1); /* out of memory: it cannot go on */
      wake(x);
    } else {
      zcoll_log_debug("dropped a notification of channel set %d, which nobody has here", s);
    }
  }
  return kept;
}

zcoll_status_t zcoll__family_poll(zcoll_comm_t *comm, int k, struct zcoll_tl_event *ev, int max,
                                  int *n) {
  struct zcoll__tli *t = &comm->tlis[k];
  struct zcoll__family *fam = comm->fam;
  *n = 0;
  if (!t->ftl) return t->ops->poll(t->tl, ev, max, n); /* not shared, ever */
  int locked = zcoll__tl_lock(fam);
  int got = comm->inbox.q.len ? zcoll__evq_pop(&comm->inbox.q, ev, max) : 0;
  zcoll_status_t st = ZCOLL_OK;
  /* Only once the inbox is empty: what it held came before what the instance holds. */
  while (st == ZCOLL_OK && got < max && !comm->inbox.q.len) {
    int m = 0;
    st = t->ops->poll(t->tl, ev + got, max - got, &m);
    if (st != ZCOLL_OK || !m) break;
    int kept = route(fam, comm, ev + got, m);
    got += kept;
    if (kept == m) break; /* all ours: the caller polls again if it wants more */
  }
  /* Polling took the instance out of its armed state (shm clears the sleeping flag,
   * loopback drains its counter): members asleep on it would miss what comes next. */
  if (st == ZCOLL_OK && locked && fam->sleepers > (comm->inbox.sleeping ? 1 : 0) &&
      t->ops->arm(t->tl) != ZCOLL_OK) {
    for (int s = 0; s < ZCOLL_CHAN_SETS; s++)
      if (fam->set_comm[s] && fam->set_comm[s] != comm) wake(fam->set_comm[s]);
  }
  zcoll__tl_unlock(fam, locked);
  *n = got;
  return st;
}

zcoll_status_t zcoll__family_drain(zcoll_comm_t *comm) {
  struct zcoll_tl_event ev[64];
  for (int k = 0; k < comm->ntlis; k++) {
    if (!comm->tlis[k].ftl) continue;
    for (;;) {
      int n = 0;
      zcoll_status_t st = zcoll__family_poll(comm, k, ev, 64, &n);
      if (st != ZCOLL_OK) return st;
      if (!n) break;
    }
  }
  return ZCOLL_OK;
}

zcoll_status_t zcoll__family_arm(zcoll_comm_t *comm, struct pollfd *fds, int *n) {
  struct zcoll__family *fam = comm->fam;
  *n = 0;
  int locked = zcoll__tl_lock(fam);
  zcoll_status_t st = ZCOLL_OK;
  if (comm->inbox.q.len || atomic_load(&comm->inbox.lost)) st = ZCOLL_IN_PROGRESS;
  for (int k = 0; st == ZCOLL_OK && k < comm->ntlis; k++) {
    struct zcoll__tli *t = &comm->tlis[k];
    if ((st = t->ops->arm(t->tl)) != ZCOLL_OK) break;
    fds[(*n)++] = (struct pollfd){.fd = t->ops->event_fd(t->tl), .events = POLLIN};
  }
  if (st == ZCOLL_OK && locked && !comm->inbox.sleeping) {
    comm->inbox.sleeping = 1;
    fam->sleepers++;
  }
  zcoll__tl_unlock(fam, locked);
  return st;
}

void zcoll__family_awake(zcoll_comm_t *comm) {
  struct zcoll__family *fam = comm->fam;
  if (!fam || !comm->inbox.sleeping) return;
  pthread_mutex_lock(&fam->mu);
  if (comm->inbox.sleeping) {
    comm->inbox.sleeping = 0;
    fam->sleepers--;
  }
  pthread_mutex_unlock(&fam->mu);
}
