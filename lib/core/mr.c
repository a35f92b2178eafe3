/* mr.c -- explicit registration: user regions pinned with the communicator's transport,
 * so that pieces inside them are put straight from the user's memory, not staged. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "exec.h"
#include "guard.h"
#include "base/log.h"
#include "mr.h"

struct zcoll_mr {
  zcoll_comm_t *comm;
  char *addr;
  size_t len;
  struct zcoll_tl_mr *tl_mr; /* NULL where the transport reads any memory */
  /* Where the writer places the data (RDMA): the region registered a second time, for
   * peers to write results into when a grant says so (grant.c); mr NULL if not. A
   * registration of its own, so that revoking it after a failure leaves the
   * application's local one alone. */
  struct zcoll__grant_src grant;
  uint64_t id; /* its number on the communicator (zcoll__mr_hold) */
  int holds;   /* messages in flight through it (lib/p2p) */
  struct zcoll_mr *next;
};

zcoll_status_t zcoll_mem_register(zcoll_comm_t *comm, void *addr, size_t len, zcoll_mr_t **out) {
  zcoll_status_t st = ZCOLL_OK;
  if (!comm || !addr || !len || !out)
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_mem_register: %s",
                     !comm   ? "comm is NULL"
                     : !addr ? "addr is NULL"
                     : !len  ? "len is 0"
                             : "mr is NULL");
  else if ((uintptr_t)addr + len < (uintptr_t)addr)
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_mem_register: the range wraps around");
  zcoll_mr_t *mr = st == ZCOLL_OK ? calloc(1, sizeof(*mr)) : NULL;
  if (st == ZCOLL_OK && !mr)
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "zcoll_mem_register: out of memory");
  if (st != ZCOLL_OK) {
    if (comm) snprintf(comm->last_error, sizeof(comm->last_error), "%s", zcoll__last_error());
    return st;
  }
  if ((st = zcoll__enter(comm, "zcoll_mem_register")) != ZCOLL_OK) {
    free(mr);
    return st;
  }
  mr->comm = comm;
  mr->addr = addr;
  mr->len = len;
  /* Transports that read any memory gain nothing from pinning it here. */
  if (comm->reg) {
    st = comm->reg->ops->mem_reg(comm->reg->tl, addr, len, 0, &mr->tl_mr);
    if (st != ZCOLL_OK) {
      snprintf(comm->last_error, sizeof(comm->last_error), "%s", zcoll__last_error());
      zcoll__leave(comm);
      free(mr);
      return st;
    }
  }
  /* Where peers may write into it, results inside it need no copy (grant.c). */
  if (mr->tl_mr) zcoll__grant_open(comm, mr->addr, mr->len, &mr->grant);
  mr->id = ++comm->mr_ids;
  mr->next = comm->mrs;
  comm->mrs = mr;
  zcoll__leave(comm);
  *out = mr;
  return ZCOLL_OK;
}

/* local: in a forked child, where the transport's state is the parent's to release. */
static void mr_free(zcoll_mr_t *mr, int local) {
  zcoll_mr_t **p = &mr->comm->mrs;
  while (*p && *p != mr) p = &(*p)->next;
  if (*p) *p = mr->next;
  if (mr->tl_mr && !local) mr->comm->reg->ops->mem_dereg(mr->tl_mr);
  if (!local) zcoll__grant_revoke(mr->comm, &mr->grant);
  free(mr);
}

zcoll_status_t zcoll_mem_deregister(zcoll_mr_t *mr) {
  if (!mr) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_mem_deregister: mr is NULL");
  zcoll_comm_t *comm = mr->comm;
  zcoll_status_t st = zcoll__enter(comm, "zcoll_mem_deregister");
  if (st != ZCOLL_OK) return st;
  zcoll_mr_t **p = &comm->mrs;
  while (*p && *p != mr) p = &(*p)->next;
  int in_use = 0; /* a collective in flight writes its result into the region */
  for (const struct zcoll__run *r = comm->active; r && *p; r = r->next)
    in_use |= r->grant == &mr->grant;
  if (!*p)
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                     "zcoll_mem_deregister: not a registration of this communicator");
  else if (in_use)
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                     "zcoll_mem_deregister: a collective in flight delivers its result into the "
                     "region (zcoll_wait for it first)");
  else if (mr->holds)
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                     "zcoll_mem_deregister: %d message%s in flight go%s through the region "
                     "(zcoll_wait for %s first)",
                     mr->holds, mr->holds == 1 ? "" : "s", mr->holds == 1 ? "es" : "",
                     mr->holds == 1 ? "it" : "them");
  else
    mr_free(mr, 0);
  zcoll__leave(comm);
  return st;
}

struct zcoll_tl_mr *zcoll__mr_find(zcoll_comm_t *comm, const void *addr, size_t len) {
  const char *a = addr;
  for (zcoll_mr_t *mr = comm->mrs; mr; mr = mr->next)
    if (mr->tl_mr && a >= mr->addr && len <= mr->len && (size_t)(a - mr->addr) <= mr->len - len)
      return mr->tl_mr;
  return NULL;
}

struct zcoll__grant_src *zcoll__mr_grant(zcoll_comm_t *comm, const void *addr, size_t len,
                                         uint64_t *base) {
  const char *a = addr;
  for (zcoll_mr_t *mr = comm->mrs; mr; mr = mr->next)
    if (mr->grant.mr && a >= mr->addr && len <= mr->len &&
        (size_t)(a - mr->addr) <= mr->len - len) {
      *base = (uint64_t)(a - mr->addr);
      return &mr->grant;
    }
  return NULL;
}

uint64_t zcoll__mr_hold(zcoll_comm_t *comm, const void *addr, size_t len, int remote,
                        struct zcoll_tl_mr **tl, const struct zcoll__grant_src **grant,
                        uint64_t *base) {
  const char *a = addr;
  for (zcoll_mr_t *mr = comm->mrs; mr; mr = mr->next)
    if (mr->tl_mr && (!remote || mr->grant.mr) && a >= mr->addr && len <= mr->len &&
        (size_t)(a - mr->addr) <= mr->len - len) {
      mr->holds++;
      *tl = mr->tl_mr;
      *grant = &mr->grant;
      *base = (uint64_t)(a - mr->addr);
      return mr->id;
    }
  return 0;
}

void zcoll__mr_unhold(zcoll_comm_t *comm, uint64_t id) {
  for (zcoll_mr_t *mr = comm->mrs; id && mr; mr = mr->next)
    if (mr->id == id) {
      mr->holds--;
      return;
    }
}

void zcoll__mr_release_all(zcoll_comm_t *comm, int local) {
  /* Each is comm's (mr->comm == comm), so mr_free unlinks it: the analyzer cannot know. */
  while (comm->mrs) mr_free(comm->mrs, local); /* NOLINT(clang-analyzer-unix.Malloc) */
}
