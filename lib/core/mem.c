/* mem.c -- zcoll_mem_alloc: memory this host's ranks can map. Where the communicator has
 * the shared-memory transport it comes from the transport's mem_alloc, a memfd its peers
 * can open (the same kind as the receive slots), so that a collective may one day read a
 * peer's vector where it lies; elsewhere it is anonymous memory. */
#include "mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/log.h"
#include "exec.h"
#include "guard.h"
#include "report.h"

struct zcoll__mem {
  char *addr;
  size_t len;
  struct zcoll__tli *t; /* the instance that made it; NULL: anonymous */
  struct zcoll__mem *next;
};

static struct zcoll__tli *allocator(zcoll_comm_t *comm) {
  for (int k = 0; k < comm->ntlis; k++)
    if (comm->tlis[k].ops->mem_alloc && comm->tlis[k].ops->mem_forget) return &comm->tlis[k];
  return NULL;
}

static zcoll_status_t mem_alloc(zcoll_comm_t *comm, size_t len, void **ptr) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (len > SIZE_MAX - page)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_mem_alloc: %zu bytes overflow", len);
  len = (len + page - 1) / page * page;
  struct zcoll__mem *m = calloc(1, sizeof(*m));
  if (!m) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "zcoll_mem_alloc: out of memory");
  m->len = len;
  m->t = allocator(comm);
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

zcoll_status_t zcoll_mem_alloc(zcoll_comm_t *comm, size_t len, void **ptr) {
  if (!comm || !ptr || !len)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_mem_alloc: %s",
                       !comm  ? "comm is NULL"
                       : !ptr ? "ptr is NULL"
                              : "len is 0");
  zcoll_status_t st = zcoll__enter(comm, "zcoll_mem_alloc");
  if (st != ZCOLL_OK) return st;
  st = zcoll__report(comm, mem_alloc(comm, len, ptr));
  zcoll__leave(comm);
  return st;
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
  if (m->t && unmap)
    m->t->ops->mem_free(m->t->tl, m->addr, m->len);
  else if (m->t)
    m->t->ops->mem_forget(m->t->tl, m->addr);
  else if (unmap)
    munmap(m->addr, m->len);
  zcoll__tl_unlock(comm->fam, locked);
  free(m);
}

zcoll_status_t zcoll_mem_free(zcoll_comm_t *comm, void *ptr) {
  if (!comm || !ptr)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_mem_free: %s",
                       !comm ? "comm is NULL" : "ptr is NULL");
  zcoll_status_t st = zcoll__enter(comm, "zcoll_mem_free");
  if (st != ZCOLL_OK) return st;
  struct zcoll__mem **p = &comm->mems;
  while (*p && (*p)->addr != ptr) p = &(*p)->next;
  if (!*p) {
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                     "zcoll_mem_free: %p is not memory zcoll_mem_alloc of this communicator "
                     "returned (or it was freed already)",
                     ptr);
  } else if (in_use(comm, (*p)->addr, (*p)->len)) {
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                     "zcoll_mem_free: a collective in flight uses the memory at %p (zcoll_wait "
                     "for it first)",
                     ptr);
  } else {
    struct zcoll__mem *m = *p;
    *p = m->next;
    release(comm, m, 1);
  }
  st = zcoll__report(comm, st);
  zcoll__leave(comm);
  return st;
}

void zcoll__mem_forget_all(zcoll_comm_t *comm, int local) {
  while (comm->mems) {
    struct zcoll__mem *m = comm->mems;
    comm->mems = m->next;
    if (local) /* a forked child: the transport's list is the parent's */
      free(m);
    else
      release(comm, m, 0);
  }
}
