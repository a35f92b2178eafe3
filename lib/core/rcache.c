/* rcache.c -- the registration cache (rcache.h says what and why). */
#include <dlfcn.h>
#include <pthread.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ucm/api/ucm.h>

#include "core/guard.h"
#include "base/log.h"
#include "rcache.h"
#include "base/trace.h"
#include "base/ucx_dlopen.h"

/* Entries are a fixed array: the unmap callback may run inside malloc or munmap on any
 * thread, so nothing it touches may be reallocated (nor may it allocate itself). */
#define RC_MAX 256
#define UCM_PRIORITY 1000
/* After a registration failed even with every idle entry released (locked memory is
 * used up: ulimit -l), this many misses are staged before the next attempt. */
#define RC_BACKOFF 64

struct entry {
  uintptr_t start, end; /* page-aligned */
  struct zcoll_tl_mr *mr;
  uint64_t used; /* clock of the last lookup that returned it */
  int invalid;   /* unmapped since: never returned again */
};

struct zcoll__rcache {
  const struct zcoll_tl_ops *ops;
  struct zcoll_tl *tl;
  size_t max_bytes;
  uintptr_t page;
  uint64_t clock;
  unsigned fork_gen; /* the process's fork generation at creation (guard.c) */
  int backoff;       /* misses still to stage before registering again */
  /* lock: entries, n, unmaps and stats.invalidations/bytes, against the callback. */
  pthread_mutex_t lock;
  uint64_t unmaps; /* unmap events seen (any range) */
  int n;
  struct entry e[RC_MAX];
  struct zcoll__rcache_stats stats;
};

/* libucm, loaded on the first cache and never unloaded (its hooks stay in the process;
 * unloading it under them would crash). */
static struct {
  ucs_status_t (*set)(int events, int priority, ucm_event_callback_t cb, void *arg);
  void (*unset)(int events, ucm_event_callback_t cb, void *arg);
  char why[256];
} ucm;
static pthread_once_t ucm_once = PTHREAD_ONCE_INIT;

/* libucm needs libucs loaded (it calls into it), so it comes in as libucs's dependency
 * and its functions are found through libucs's handle. */
static void ucm_load(void) {
  void *h = zcoll__ucx_dlopen("libucs.so.0", ucm.why, sizeof(ucm.why));
  if (!h) return;
  *(void **)&ucm.set = dlsym(h, "ucm_set_event_handler");
  *(void **)&ucm.unset = dlsym(h, "ucm_unset_event_handler");
  if (!ucm.set || !ucm.unset) {
    ucm.set = NULL;
    snprintf(ucm.why, sizeof(ucm.why), "libucm has no ucm_set_event_handler");
  }
}

/* Before the pages go: every entry they overlap is never found again. */
static void on_unmap(ucm_event_type_t type, ucm_event_t *ev, void *arg) {
  struct zcoll__rcache *rc = arg;
  if (type != UCM_EVENT_VM_UNMAPPED) return;
  /* In a child forked while another thread held the lock, the lock stays held forever;
   * the child's communicator only releases locally and never sends from the cache. */
  if (zcoll__guard_fork_gen() != rc->fork_gen) return;
  uintptr_t a = (uintptr_t)ev->vm_unmapped.address, b = a + ev->vm_unmapped.size;
  pthread_mutex_lock(&rc->lock);
  rc->unmaps++;
  for (int i = 0; i < rc->n; i++) {
    struct entry *e = &rc->e[i];
    if (e->start < b && a < e->end) {
      if (!e->invalid) rc->stats.invalidations++;
      e->invalid = 1;
    }
  }
  pthread_mutex_unlock(&rc->lock);
}

struct zcoll__rcache *zcoll__rcache_create(const struct zcoll_tl_ops *ops, struct zcoll_tl *tl,
                                           size_t max_bytes) {
  if (!max_bytes) return NULL;
  pthread_once(&ucm_once, ucm_load);
  if (!ucm.set) {
    zcoll_log_info("no registration cache (sends from unregistered buffers are staged): %s",
                   ucm.why);
    return NULL;
  }
  struct zcoll__rcache *rc = calloc(1, sizeof(*rc));
  if (!rc) return NULL;
  rc->ops = ops;
  rc->tl = tl;
  /* Registered bytes count against the locked-memory limit, with the communicators'
   * own slots: take at most half of it. */
  struct rlimit ml;
  if (getrlimit(RLIMIT_MEMLOCK, &ml) == 0 && ml.rlim_cur != RLIM_INFINITY &&
      max_bytes > ml.rlim_cur / 2) {
    zcoll_log_info("registration cache: %zu bytes asked, %llu (half of ulimit -l) kept", max_bytes,
                   (unsigned long long)(ml.rlim_cur / 2));
    max_bytes = ml.rlim_cur / 2;
  }
  if (!max_bytes) {
    free(rc);
    return NULL;
  }
  rc->max_bytes = max_bytes;
  rc->fork_gen = zcoll__guard_fork_gen();
  long page = sysconf(_SC_PAGESIZE);
  rc->page = page > 0 ? (uintptr_t)page : 4096;
  pthread_mutex_init(&rc->lock, NULL);
  ucs_status_t st = ucm.set(UCM_EVENT_VM_UNMAPPED, UCM_PRIORITY, on_unmap, rc);
  if (st != UCS_OK) {
    zcoll_log_info("no registration cache (sends from unregistered buffers are staged): "
                   "libucm refused the memory-event handler (status %d)",
                   (int)st);
    pthread_mutex_destroy(&rc->lock);
    free(rc);
    return NULL;
  }
  zcoll_log_debug("registration cache: up to %zu bytes, invalidated by libucm", max_bytes);
  return rc;
}

void zcoll__rcache_destroy(struct zcoll__rcache *rc, int local) {
  if (!rc) return;
  ucm.unset(UCM_EVENT_VM_UNMAPPED, on_unmap, rc); /* no callback after this returns */
  if (local) { /* a forked child: the registrations, and perhaps the lock, are the parent's */
    free(rc);
    return;
  }
  zcoll_log_info("registration cache: %llu hits, %llu misses, %llu evictions, %llu "
                 "invalidations, %llu uncached, %.3f ms registering",
                 (unsigned long long)rc->stats.hits, (unsigned long long)rc->stats.misses,
                 (unsigned long long)rc->stats.evictions,
                 (unsigned long long)rc->stats.invalidations,
                 (unsigned long long)rc->stats.uncached, (double)rc->stats.reg_ns * 1e-6);
  for (int i = 0; i < rc->n; i++) rc->ops->mem_dereg(rc->e[i].mr);
  pthread_mutex_destroy(&rc->lock);
  free(rc);
}

uint64_t zcoll__rcache_clock(const struct zcoll__rcache *rc) { return rc->clock; }

void zcoll__rcache_stats(const struct zcoll__rcache *rc, struct zcoll__rcache_stats *st) {
  pthread_mutex_lock((pthread_mutex_t *)&rc->lock);
  *st = rc->stats;
  pthread_mutex_unlock((pthread_mutex_t *)&rc->lock);
}

/* Under the lock: takes entry i out of the array, its registration into gone[]. */
static void take(struct zcoll__rcache *rc, int i, struct zcoll_tl_mr **gone, int *ng) {
  gone[(*ng)++] = rc->e[i].mr;
  rc->stats.bytes -= rc->e[i].end - rc->e[i].start;
  rc->e[i] = rc->e[--rc->n];
}

/* Releases the unmapped entries, then the least recently used ones until `bytes` more
 * (and one more entry) fit -- never one used at or after keep_since. Deregistration
 * happens outside the lock: it may free memory, which may call on_unmap. Returns 1 if
 * the room is there. */
static int sweep(struct zcoll__rcache *rc, uint64_t keep_since, size_t bytes) {
  struct zcoll_tl_mr *gone[RC_MAX];
  int ng = 0;
  pthread_mutex_lock(&rc->lock);
  for (int i = 0; i < rc->n;) {
    if (rc->e[i].invalid && rc->e[i].used < keep_since)
      take(rc, i, gone, &ng);
    else
      i++;
  }
  while (rc->stats.bytes + bytes > rc->max_bytes || rc->n == RC_MAX) {
    int lru = -1;
    for (int i = 0; i < rc->n; i++)
      if (rc->e[i].used < keep_since && (lru < 0 || rc->e[i].used < rc->e[lru].used)) lru = i;
    if (lru < 0) break;
    take(rc, lru, gone, &ng);
    rc->stats.evictions++;
  }
  int room = rc->stats.bytes + bytes <= rc->max_bytes && rc->n < RC_MAX;
  pthread_mutex_unlock(&rc->lock);
  for (int k = 0; k < ng; k++) rc->ops->mem_dereg(gone[k]);
  return room;
}

static zcoll_status_t reg(struct zcoll__rcache *rc, uintptr_t start, size_t bytes,
                          struct zcoll_tl_mr **mr) {
  int64_t t0 = zcoll__now_ns();
  zcoll__log_mute(1); /* a buffer that cannot be registered is staged, not an error */
  zcoll_status_t st = rc->ops->mem_reg(rc->tl, (void *)start, bytes, 0, mr);
  zcoll__log_mute(0);
  rc->stats.reg_ns += (uint64_t)(zcoll__now_ns() - t0);
  return st;
}

struct zcoll_tl_mr *zcoll__rcache_get(struct zcoll__rcache *rc, const void *addr, size_t len,
                                      uint64_t keep_since) {
  uintptr_t a = (uintptr_t)addr, b = a + len;
  uint64_t now = ++rc->clock;
  if (len > UINTPTR_MAX - a) return NULL; /* wraps: not a buffer */
  pthread_mutex_lock(&rc->lock);
  for (int i = 0; i < rc->n; i++) {
    struct entry *e = &rc->e[i];
    if (!e->invalid && e->start <= a && b <= e->end) {
      e->used = now;
      rc->stats.hits++;
      struct zcoll_tl_mr *mr = e->mr;
      pthread_mutex_unlock(&rc->lock);
      return mr;
    }
  }
  uint64_t unmaps = rc->unmaps;
  pthread_mutex_unlock(&rc->lock);
  rc->stats.misses++;
  uintptr_t start = a & ~(rc->page - 1), end = (b + rc->page - 1) & ~(rc->page - 1);
  if (end < b || end - start > rc->max_bytes || rc->backoff > 0 ||
      !sweep(rc, keep_since, end - start)) {
    if (rc->backoff > 0) rc->backoff--;
    rc->stats.uncached++;
    return NULL;
  }
  struct zcoll_tl_mr *mr = NULL;
  zcoll_status_t st = reg(rc, start, end - start, &mr);
  if (st != ZCOLL_OK) {
    /* Most likely the locked-memory limit: give back every idle registration, once. */
    sweep(rc, keep_since, rc->max_bytes);
    st = reg(rc, start, end - start, &mr);
  }
  if (st != ZCOLL_OK) {
    zcoll_log_debug("registration cache: cannot register %#lx+%zu (%s): staging the next "
                    "%d misses",
                    (unsigned long)start, (size_t)(end - start), zcoll__last_error(), RC_BACKOFF);
    rc->backoff = RC_BACKOFF;
    rc->stats.uncached++;
    return NULL;
  }
  pthread_mutex_lock(&rc->lock);
  /* Something was unmapped while we registered, perhaps this range (the callback only
   * sees entries already listed): use the registration for this call (the caller's
   * buffer is live, or it broke the rules), never again. */
  rc->e[rc->n++] = (struct entry){start, end, mr, now, rc->unmaps != unmaps};
  rc->stats.bytes += end - start;
  pthread_mutex_unlock(&rc->lock);
  return mr;
}
