/* progress.c -- shared-memory transport: puts, notifications, polling and sleeping. */
#include <errno.h>
#include <linux/membarrier.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernels/copy.h"
#include "base/log.h"
#include "shm.h"

/* Publishes one notification into the peer's ring; 0 if the ring is full, -1 if the
 * peer's side of it makes no sense (a head past our tail). The tail is ours alone and the
 * head is read again only when the ring looks full: the reader moves it after every poll,
 * so reading it on every push was a cache miss on every notification. */
static int ring_push(struct zcoll_ep *ep, uint64_t ent) {
  struct zcoll__shm_ring *r = ep->out;
  uint64_t tail = ep->out_tail;
  if (tail - ep->out_head >= ZCOLL_SHM_RING) {
    uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    if (head > tail) return -1;
    ep->out_head = head;
    if (tail - head >= ZCOLL_SHM_RING) return 0;
  }
  r->ent[tail % ZCOLL_SHM_RING] = ent;
  /* Release: the payload (written before) and the entry are visible before the tail. */
  atomic_store_explicit(&r->tail, tail + 1, memory_order_release);
  ep->out_tail = tail + 1;
  return 1;
}

/* A full fence between a store and a load (Dekker, below). GCC refuses atomic_thread_fence
 * under -fsanitize=thread, which does not model fences: there, a sequentially consistent
 * read-modify-write of a word of our own, which x86 executes as a full barrier too. */
static inline void full_fence(struct zcoll_tl *tl) {
#ifdef __SANITIZE_THREAD__
  atomic_fetch_add_explicit(&tl->fence_word, 0, memory_order_seq_cst);
#else
  (void)tl;
  atomic_thread_fence(memory_order_seq_cst);
#endif
}

/* The asymmetric handshake (shm.h, Waiting). A writer's fence drained its store buffer on
 * every notification -- nine tenths of a small put's time, a third of an 8-byte message's.
 * With membarrier(2) the writer orders only its own code, and a rank about to sleep has
 * the kernel run a full barrier on every CPU that runs a registered process: either a
 * writer's entry is visible to the sleeper's look that follows, or the writer's load of
 * the flag comes after the barrier and sees it. The sleeper pays a system call beside
 * the one it is about to sleep in. ThreadSanitizer does not model it: there, fences. */
int zcoll__shm_barriers_register(void) {
#ifdef __SANITIZE_THREAD__
  return 0;
#else
  long q = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (q < 0 || !(q & MEMBARRIER_CMD_GLOBAL_EXPEDITED) ||
      !(q & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED))
    return 0;
  return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
#endif
}

static void wake(struct zcoll_ep *ep) {
  /* Pairs with arm(): either the peer sees our entry before it sleeps, or we see its flag
   * here. */
  if (ep->light)
    atomic_signal_fence(memory_order_seq_cst);
  else
    full_fence(ep->tl);
  if (atomic_load_explicit(&ep->peer_inbox->sleeping, memory_order_relaxed)) {
    char b = 1;
    /* EAGAIN: the pipe is full, so it is readable already (or its owner died and
     * nobody drains it: the rendezvous reports the death). */
    if (write(ep->wake_fd, &b, 1) < 0 && errno != EAGAIN)
      zcoll_log_debug("shm: waking rank %d: %s", ep->peer, strerror(errno));
  }
}

void zcoll__shm_knock(struct zcoll_ep *ep) {
  if (!ep->dead) wake(ep);
}

int zcoll__shm_peer_gone(struct zcoll_ep *ep) {
  if (ep->dead) return 1;
  if (ep->pidfd >= 0) { /* readable once the process has ended, zombie or not */
    struct pollfd f = {.fd = ep->pidfd, .events = POLLIN};
    return poll(&f, 1, 0) > 0;
  }
  /* No pidfds (Linux < 5.3): gone, or a zombie nobody reaped yet (zcoll_run reaps its
   * ranks only at the end), by /proc's state letter. */
  char path[64], buf[256];
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)ep->pid);
  FILE *f = fopen(path, "r");
  if (!f) return errno == ENOENT;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *close_paren = strrchr(buf, ')'); /* the name may hold anything but ends so */
  return close_paren && close_paren[1] == ' ' && (close_paren[2] == 'Z' || close_paren[2] == 'X');
}

/* Moves what the full ring held back into it, oldest first; 1 if anything moved. */
static int flush_backlog(struct zcoll_ep *ep) {
  int moved = 0;
  while (ep->backlog && ring_push(ep, ep->backlog->ent) > 0) {
    struct zcoll__shm_pending *p = ep->backlog;
    ep->backlog = p->next;
    if (!ep->backlog) ep->backlog_tail = &ep->backlog;
    free(p);
    moved = 1;
  }
  return moved;
}

static zcoll_status_t notify(struct zcoll_ep *ep, uint64_t ent) {
  /* Older notifications first; whatever reaches the ring, from the backlog or not,
   * must be followed by a knock in case the receiver sleeps. */
  int moved = ep->backlog ? flush_backlog(ep) : 0;
  zcoll_status_t st = ZCOLL_OK;
  int pushed = ep->backlog ? 0 : ring_push(ep, ent);
  if (pushed < 0) {
    st = zcoll__fail(ZCOLL_ERR_TRANSPORT, "shm: rank %d's notification ring is corrupt", ep->peer);
  } else if (pushed) {
    moved = 1;
  } else {
    struct zcoll__shm_pending *p = malloc(sizeof(*p));
    if (p) {
      p->ent = ent;
      p->next = NULL;
      *ep->backlog_tail = p;
      ep->backlog_tail = &p->next;
    } else {
      st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "shm: out of memory queueing a notification");
    }
  }
  if (moved) wake(ep);
  return st;
}

zcoll_status_t zcoll__shm_put(struct zcoll_ep *ep, const void *src, struct zcoll_tl_mr *lmr,
                              struct zcoll_tl_rkey *rkey, uint64_t roff, size_t len, uint32_t imm,
                              uint64_t cookie) {
  (void)lmr; /* any source will do: the copy is ours */
  if (len > UINT32_MAX)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "shm: a %zu-byte put is over the 4 GiB limit", len);
  if (len && (!rkey || roff > rkey->len || len > rkey->len - roff))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "shm: a %zu-byte put at offset %llu is outside rank %d's region", len,
                       (unsigned long long)roff, ep->peer);
  if (ep->dead) /* its ring may still be draining here, but nothing more will read ours */
    return zcoll__fail(ZCOLL_ERR_PEER_FAILED, "shm: rank %d (pid %d) died", ep->peer, (int)ep->pid);
  if (len) zcoll__copy(rkey->base + roff, src, len);
  zcoll_status_t st = notify(ep, (uint64_t)imm | (uint64_t)len << 32);
  if (st != ZCOLL_OK) return st;
  /* The copy is done: src may be reused at once. */
  struct zcoll_tl_event ev = {
      .kind = ZCOLL_TL_EV_PUT_DONE, .peer = ep->peer, .cookie = cookie, .status = ZCOLL_OK};
  return zcoll__evq_push(&ep->tl->evq, &ev);
}

/* The word is in the peer's memfd, which we map: a locked add on it is the remote atomic,
 * and the owner's own __atomic adds on its mapping are the same order. */
zcoll_status_t zcoll__shm_fetch_add(struct zcoll_ep *ep, struct zcoll_tl_rkey *rkey, uint64_t roff,
                                    uint64_t add, uint64_t *old) {
  if (!rkey || (roff & 7) || roff > rkey->len || rkey->len - roff < 8)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "shm: an atomic at offset %llu is outside rank %d's region or unaligned",
                       (unsigned long long)roff, ep->peer);
  if (ep->dead)
    return zcoll__fail(ZCOLL_ERR_PEER_FAILED, "shm: rank %d (pid %d) died", ep->peer, (int)ep->pid);
  *old = __atomic_fetch_add((uint64_t *)(void *)(rkey->base + roff), add, __ATOMIC_SEQ_CST);
  return ZCOLL_OK;
}

/* A peer's pidfd turns readable when it dies: one epoll_wait(0) over them all. A dead
 * peer is only marked here; its death is reported once its ring is empty (below), because
 * a rank that published its last notifications and then exited -- a clean end for it --
 * must not cost the receiver data that is already in its memory. */
static void check_peers(struct zcoll_tl *tl) {
  tl->polls = 0;
  struct epoll_event e[16];
  int k = epoll_wait(tl->epfd, e, 16, 0);
  for (int i = 0; i < k; i++) {
    if (!e[i].data.u32) continue; /* the wake-up pipe */
    int rank = (int)e[i].data.u32 - 1;
    for (int j = 0; j < tl->neps; j++) {
      struct zcoll_ep *ep = tl->eps[j];
      if (ep->peer != rank || ep->dead) continue;
      ep->dead = 1;
      tl->ndead++;
      /* Level-triggered: left in the set, it would wake every later sleep at once. */
      epoll_ctl(tl->epfd, EPOLL_CTL_DEL, ep->pidfd, NULL);
    }
  }
}

/* Dead peers with nothing left in their rings, as PEER_LOST events (ZCOLL_TL_CAP_PEER_LOSS):
 * one each, once. The instance carries on with the others. */
static int dead_and_drained(struct zcoll_tl *tl, struct zcoll_tl_event *ev, int max) {
  int n = 0;
  for (int j = 0; j < tl->neps && n < max; j++) {
    struct zcoll_ep *ep = tl->eps[j];
    if (ep->dead != 1 || atomic_load_explicit(&ep->in->tail, memory_order_acquire) !=
                             atomic_load_explicit(&ep->in->head, memory_order_relaxed))
      continue;
    ep->dead = 2;
    tl->ndead--;
    zcoll__fail(ZCOLL_ERR_PEER_FAILED, "shm: rank %d (pid %d) died", ep->peer, (int)ep->pid);
    ev[n++] = (struct zcoll_tl_event){
        .kind = ZCOLL_TL_EV_PEER_LOST, .peer = ep->peer, .status = ZCOLL_ERR_PEER_FAILED};
  }
  return n;
}

zcoll_status_t zcoll__shm_poll(struct zcoll_tl *tl, struct zcoll_tl_event *ev, int max, int *n) {
  *n = 0;
  /* After a sleep (the event_fd may have woken us for a death), and now and then. */
  if (tl->epfd >= 0 && (tl->armed || ++tl->polls >= ZCOLL_SHM_DEATH_POLLS)) check_peers(tl);
  /* Reported before this round's arrivals: a drained peer has none left. */
  if (tl->ndead) *n = dead_and_drained(tl, ev, max);
  if (tl->armed) {
    /* Awake again: writers need not knock any more; empty the pipe so that it only
     * turns readable for news that comes after the next arm(). */
    tl->armed = 0;
    atomic_store_explicit(&tl->inbox->sleeping, 0, memory_order_relaxed);
    char buf[256];
    while (read(tl->wake[0], buf, sizeof(buf)) > 0) {
    }
  }
  for (int i = 0; i < tl->neps; i++)
    if (tl->eps[i]->backlog && flush_backlog(tl->eps[i])) wake(tl->eps[i]);
  *n += zcoll__evq_pop(&tl->evq, ev + *n, max - *n);
  /* Arrivals, a few per peer per round and starting with a different peer each time,
   * so that one busy peer cannot starve the others. */
  for (int k = 0; k < tl->neps && *n < max; k++) {
    struct zcoll_ep *ep = tl->eps[(tl->next_ep + k) % tl->neps];
    struct zcoll__shm_ring *r = ep->in;
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (head == tail) continue;
    while (head != tail && *n < max) {
      uint64_t e = r->ent[head % ZCOLL_SHM_RING];
      ev[(*n)++] = (struct zcoll_tl_event){.kind = ZCOLL_TL_EV_ARRIVED,
                                           .peer = ep->peer,
                                           .imm = (uint32_t)e,
                                           .len = (uint32_t)(e >> 32)};
      head++;
    }
    /* Release: the entries are read before the writer may overwrite them. */
    atomic_store_explicit(&r->head, head, memory_order_release);
  }
  if (tl->neps) tl->next_ep = (tl->next_ep + 1) % tl->neps;
  return ZCOLL_OK;
}

int zcoll__shm_event_fd(struct zcoll_tl *tl) { return tl->epfd >= 0 ? tl->epfd : tl->wake[0]; }

zcoll_status_t zcoll__shm_arm(struct zcoll_tl *tl) {
  /* A dead peer not yet reported, drained or not, is news for the next poll: its pidfd no
   * longer wakes. */
  if (tl->evq.len || tl->ndead) return ZCOLL_IN_PROGRESS;
  for (int i = 0; i < tl->neps; i++)
    if (tl->eps[i]->backlog) return ZCOLL_IN_PROGRESS; /* retried by polling, not by a wake */
  tl->armed = 1;
  atomic_store_explicit(&tl->inbox->sleeping, 1, memory_order_relaxed);
  full_fence(tl); /* pairs with wake() */
  /* Writers that skip their fence are fenced here; should that fail, this rank polls on
   * rather than sleep past a knock it might miss. */
  if (tl->inbox->barriers && syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) != 0)
    return ZCOLL_IN_PROGRESS;
  for (int i = 0; i < tl->neps; i++) {
    struct zcoll__shm_ring *r = tl->eps[i]->in;
    if (atomic_load_explicit(&r->tail, memory_order_relaxed) !=
        atomic_load_explicit(&r->head, memory_order_relaxed))
      return ZCOLL_IN_PROGRESS;
  }
  return ZCOLL_OK;
}
