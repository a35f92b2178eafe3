/* mem.c -- zcoll_mem_alloc: memory this host's ranks can map. Where the communicator has
 * the shared-memory transport it comes from the transport's mem_alloc, a memfd its peers
 * can open (the same kind as the receive slots), so that a collective may one day read a
 * peer's vector where it lies; elsewhere it is anonymous memory. */
#include "mem.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/log.h"
#include "exec.h"
#include "flight.h"

struct zcoll__mem {
  char *addr;
  size_t len;
  struct zcoll__tli *t;   /* the instance that made it; NULL: anonymous */
  uint64_t serial;        /* for the peers' caches of mapped regions (onehost_big.c) */
  struct zcoll_tl_mr *mr; /* registered for the peers to map, once asked (zcoll__mem_place) */
  uint32_t keylen;
  unsigned char key[sizeof(((struct zcoll__oh_place *)0)->key)];
  struct zcoll__mem *next; /* in its communicator's comm->mems */
  /* In the process's list (under regions_mu), with the collectives that hold it: those of
   * any communicator, on any thread, so not in comm->mems, which only its owner reads. */
  struct zcoll__mem *gnext;
  int holds;
  struct zcoll__mem_user holder; /* the latest */
  int detached; /* some pages are private copies now (zcoll__mem_detach): peers copy */
};

/* Region numbers, unique in the process: a reader tells a region from a later one at the
 * same address by it, and a hold the regions it took from those made after it. */
static _Atomic uint64_t serials;

/* Every region alive in the process. Taken twice per collective on such memory (a few in
 * a process): a short list under one lock. */
static pthread_mutex_t regions_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t regions_once = PTHREAD_ONCE_INIT;
static struct zcoll__mem *regions;
_Atomic long zcoll__mem_live;

/* fork(): the child must find the lock free (another thread may have held it). */
static void before_fork(void) { pthread_mutex_lock(&regions_mu); }
static void after_fork(void) { pthread_mutex_unlock(&regions_mu); }
static void after_fork_child(void) { pthread_mutex_init(&regions_mu, NULL); }
static void regions_setup(void) { pthread_atfork(before_fork, after_fork, after_fork_child); }

static void regions_lock(void) {
  pthread_once(&regions_once, regions_setup);
  pthread_mutex_lock(&regions_mu);
}

static void regions_add(struct zcoll__mem *m) {
  regions_lock();
  m->gnext = regions;
  regions = m;
  atomic_fetch_add_explicit(&zcoll__mem_live, 1, memory_order_relaxed);
  pthread_mutex_unlock(&regions_mu);
}

/* Unlinks m unless held; returns its holds (0: unlinked). Called with regions_mu held. */
static int regions_take(struct zcoll__mem *m) {
  if (m->holds) return m->holds;
  struct zcoll__mem **p = &regions;
  while (*p && *p != m) p = &(*p)->gnext;
  if (*p) {
    *p = m->gnext;
    atomic_fetch_sub_explicit(&zcoll__mem_live, 1, memory_order_relaxed);
  }
  return 0;
}

static int touches(const struct zcoll__mem *m, const struct zcoll__mem_hold *h) {
  for (int i = 0; i < ZCOLL_MEM_HOLD_SPANS; i++)
    if (h->len[i] && h->at[i] < m->addr + m->len && m->addr < h->at[i] + h->len[i]) return 1;
  return 0;
}

void zcoll__mem_hold_slow(struct zcoll__mem_hold *h, const struct zcoll__mem_user *who) {
  regions_lock();
  /* Regions made later than this are not the hold's, whatever they touch: the unhold
   * leaves them alone (a later mapping cannot cover a buffer in use, but a buffer freed
   * under a collective must not make the counts wrong). */
  h->upto = atomic_load_explicit(&serials, memory_order_relaxed);
  int any = 0;
  h->who = *who;
  for (struct zcoll__mem *m = regions; m; m = m->gnext)
    if (touches(m, h)) {
      m->holds++;
      m->holder = *who;
      any = 1;
    }
  if (!any) h->upto = 0;
  pthread_mutex_unlock(&regions_mu);
}

void zcoll__mem_unhold_slow(struct zcoll__mem_hold *h) {
  regions_lock();
  for (struct zcoll__mem *m = regions; m; m = m->gnext)
    if (m->serial <= h->upto && m->holds && touches(m, h)) {
      m->holds--;
      /* The name goes with its collective: free names a collective still in flight. */
      const struct zcoll__mem_user *u = &m->holder;
      if (u->kind == h->who.kind && u->ordinal == h->who.ordinal && u->rank == h->who.rank &&
          u->size == h->who.size)
        m->holder.kind = 0;
    }
  pthread_mutex_unlock(&regions_mu);
  h->upto = 0;
}

static struct zcoll__tli *allocator(zcoll_comm_t *comm) {
  for (int k = 0; k < comm->ntlis; k++)
    if (comm->tlis[k].ops->mem_alloc && comm->tlis[k].ops->mem_forget) return &comm->tlis[k];
  return NULL;
}

zcoll_status_t zcoll__mem_alloc(zcoll_comm_t *comm, size_t len, void **ptr) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (len > SIZE_MAX - page)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_mem_alloc: %zu bytes overflow", len);
  len = (len + page - 1) / page * page;
  struct zcoll__mem *m = calloc(1, sizeof(*m));
  if (!m) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "zcoll_mem_alloc: out of memory");
  m->len = len;
  m->t = allocator(comm);
  m->serial = atomic_fetch_add(&serials, 1) + 1;
  zcoll_status_t st = ZCOLL_OK;
  if (m->t) {
    void *p = NULL;
    int locked = zcoll__tl_lock(comm->fam); /* an instance a split shares */
    st = m->t->ops->mem_alloc(m->t->tl, len, &p);
    zcoll__tl_unlock(comm->fam, locked);
    m->addr = p;
  } else {
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "zcoll_mem_alloc: cannot map %zu bytes: %m", len);
    else
      m->addr = p;
  }
  if (st != ZCOLL_OK) {
    free(m);
    return st;
  }
  m->next = comm->mems;
  comm->mems = m;
  regions_add(m);
  *ptr = m->addr;
  return ZCOLL_OK;
}

static void release(zcoll_comm_t *comm, struct zcoll__mem *m, int unmap) {
  int locked = zcoll__tl_lock(comm->fam);
  if (m->mr) m->t->ops->mem_dereg(m->mr);
  if (m->t && unmap)
    m->t->ops->mem_free(m->t->tl, m->addr, m->len);
  else if (m->t)
    m->t->ops->mem_forget(m->t->tl, m->addr);
  else if (unmap)
    munmap(m->addr, m->len);
  zcoll__tl_unlock(comm->fam, locked);
  free(m);
}

zcoll_status_t zcoll__mem_free(zcoll_comm_t *comm, void *ptr) {
  struct zcoll__mem **p = &comm->mems;
  while (*p && (*p)->addr != ptr) p = &(*p)->next;
  if (!*p)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "zcoll_mem_free: %p is not memory zcoll_mem_alloc of this communicator "
                       "returned (or it was freed already)",
                       ptr);
  struct zcoll__mem *m = *p;
  regions_lock();
  int holds = regions_take(m);
  struct zcoll__mem_user u = m->holder;
  pthread_mutex_unlock(&regions_mu);
  if (holds && u.kind)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "zcoll_mem_free: %s #%llu (rank %d of a communicator of %d) is in flight "
                       "and uses the memory at %p%s: zcoll_wait for it (or free its request) "
                       "first",
                       zcoll__flight_kind_name(u.kind), (unsigned long long)u.ordinal, u.rank,
                       u.size, ptr, holds > 1 ? ", and so do other collectives" : "");
  if (holds)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "zcoll_mem_free: %d collectives in flight use the memory at %p: "
                       "zcoll_wait for them (or free their requests) first",
                       holds, ptr);
  *p = m->next;
  release(comm, m, 1);
  return ZCOLL_OK;
}

void zcoll__mem_forget_all(zcoll_comm_t *comm, int local) {
  while (comm->mems) {
    struct zcoll__mem *m = comm->mems;
    comm->mems = m->next;
    /* Still mapped: a collective of another communicator that holds it goes on safely;
     * its unhold no longer finds it. */
    regions_lock();
    m->holds = 0;
    regions_take(m);
    pthread_mutex_unlock(&regions_mu);
    if (local) /* a forked child: the transport's state is the parent's */
      free(m);
    else
      release(comm, m, 0);
  }
}

/* Puts a private copy over [lo, lo + n) (whole pages): 1, or 0 (logged) if it cannot. */
static int swap_pages(char *lo, size_t n, int writer) {
  void *copy = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (copy == MAP_FAILED) {
    zcoll_log_error("one-host allreduce: rank %d is still writing into this rank's result, and "
                    "there is no memory for a private copy of %zu bytes of it (%m): waiting "
                    "for it",
                    writer, n);
    return 0;
  }
  memcpy(copy, lo, n);
  /* One call moves the copy over the shared pages: the range is never unmapped. */
  if (mremap(copy, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, lo) == MAP_FAILED) {
    zcoll_log_error("one-host allreduce: cannot put a private copy over this rank's result "
                    "(%m): waiting for rank %d to finish writing into it",
                    writer);
    munmap(copy, n);
    return 0;
  }
  return 1;
}

int zcoll__mem_detach(zcoll_comm_t *comm, void *addr, size_t len, int writer) {
  char *a = addr;
  struct zcoll__mem *m = comm->mems;
  while (m && !(a >= m->addr && a < m->addr + m->len)) m = m->next;
  if (!m || !m->t || !len) return 1;
  size_t page = (size_t)sysconf(_SC_PAGESIZE), off = (size_t)(a - m->addr);
  size_t end = off + len > m->len ? m->len : off + len;
  size_t lo = off / page * page, hi = (end + page - 1) / page * page;
  hi = hi > m->len ? m->len : hi;
  /* The pages wholly inside the result first: nothing but the result is written there (the
   * application leaves a collective's buffers alone). Then a page it shares with other
   * bytes at either end, each alone: a store of another thread of this process into those
   * bytes between that page's copy and its swap (a few microseconds) would be lost. */
  size_t in_lo = (off + page - 1) / page * page, in_hi = end / page * page;
  if (end == m->len) in_hi = hi;
  int ok = 1;
  if (in_lo < in_hi) ok = swap_pages(m->addr + in_lo, in_hi - in_lo, writer);
  if (ok && lo < in_lo) ok = swap_pages(m->addr + lo, page, writer);
  if (ok && in_hi < hi && in_hi >= in_lo) ok = swap_pages(m->addr + in_hi, page, writer);
  if (!ok) return 0;
  m->detached = 1;
  zcoll_log_warn("one-host allreduce: rank %d is still writing into this rank's result after "
                 "the call failed: its %zu bytes are now a private copy here, and the late "
                 "writes land in pages this process no longer maps",
                 writer, hi - lo);
  return 1;
}

int zcoll__mem_place(zcoll_comm_t *comm, const void *addr, size_t len,
                     struct zcoll__oh_place *place) {
  memset(place, 0, sizeof(*place));
  const char *a = addr;
  struct zcoll__mem *m = comm->mems;
  while (m && !(a >= m->addr && len <= m->len && (size_t)(a - m->addr) <= m->len - len))
    m = m->next;
  if (!m || !m->t || m->detached) return 0;
  if (!m->mr) { /* the first call from it: registered for peers to map, and kept so */
    int locked = zcoll__tl_lock(comm->fam);
    size_t klen = sizeof(m->key);
    struct zcoll_tl_mr *mr = NULL;
    if (m->t->ops->mem_reg(m->t->tl, m->addr, m->len, 1, &mr) == ZCOLL_OK &&
        m->t->ops->rkey_pack(mr, m->key, &klen) == ZCOLL_OK) {
      m->mr = mr;
      m->keylen = (uint32_t)klen;
    } else if (mr) {
      m->t->ops->mem_dereg(mr);
    }
    zcoll__tl_unlock(comm->fam, locked);
    if (!m->mr) return 0; /* the peers will copy, as from any memory */
  }
  place->serial = m->serial;
  place->off = (uint64_t)(a - m->addr);
  place->keylen = m->keylen;
  memcpy(place->key, m->key, m->keylen);
  return 1;
}
