/* mem.c -- zcoll_mem_alloc: memory this host's ranks can map. Where the communicator has
 * the shared-memory transport it comes from the transport's mem_alloc, a memfd its peers
 * can open (the same kind as the receive slots), so that a collective may one day read a
 * peer's vector where it lies; elsewhere it is anonymous memory. */
#include "mem.h"

#include <stdatomic.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/log.h"
#include "exec.h"

struct zcoll__mem {
  char *addr;
  size_t len;
  struct zcoll__tli *t;   /* the instance that made it; NULL: anonymous */
  uint64_t serial;        /* for the peers' caches of mapped regions (onehost_big.c) */
  struct zcoll_tl_mr *mr; /* registered for the peers to map, once asked (zcoll__mem_place) */
  uint32_t keylen;
  unsigned char key[sizeof(((struct zcoll__oh_place *)0)->key)];
  struct zcoll__mem *next;
};

/* Region numbers, unique in the process: a reader tells a region from a later one at the
 * same address by it. */
static _Atomic uint64_t serials;

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
  *ptr = m->addr;
  return ZCOLL_OK;
}

/* Does a collective in flight read or write [a, a + len)? */
static int in_use(const zcoll_comm_t *comm, const char *a, size_t len) {
  for (const struct zcoll__run *r = comm->active; r; r = r->next)
    for (int k = 0; k < ZCOLL_NBUFS; k++)
      if (r->buf[k] && r->buf[k] >= a && r->buf[k] < a + len) return 1;
  return 0;
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
  if (in_use(comm, (*p)->addr, (*p)->len))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "zcoll_mem_free: a collective in flight uses the memory at %p (zcoll_wait "
                       "for it first)",
                       ptr);
  struct zcoll__mem *m = *p;
  *p = m->next;
  release(comm, m, 1);
  return ZCOLL_OK;
}

void zcoll__mem_forget_all(zcoll_comm_t *comm, int local) {
  while (comm->mems) {
    struct zcoll__mem *m = comm->mems;
    comm->mems = m->next;
    if (local) /* a forked child: the transport's state is the parent's */
      free(m);
    else
      release(comm, m, 0);
  }
}

int zcoll__mem_place(zcoll_comm_t *comm, const void *addr, size_t len,
                     struct zcoll__oh_place *place) {
  memset(place, 0, sizeof(*place));
  const char *a = addr;
  struct zcoll__mem *m = comm->mems;
  while (m && !(a >= m->addr && len <= m->len && (size_t)(a - m->addr) <= m->len - len))
    m = m->next;
  if (!m || !m->t) return 0;
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
