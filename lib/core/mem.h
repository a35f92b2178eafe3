/* mem.h -- zcoll_mem_alloc's regions: memory this host's ranks can map (mem.c). */
#ifndef ZCOLL_MEM_H
#define ZCOLL_MEM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "comm.h"
#include "onehost.h"

/* A collective's hold on the zcoll_mem_alloc regions its buffers touch -- any byte of
 * them, whichever communicator made them (a split child's collectives use the parent's
 * regions): zcoll_mem_free refuses a held region, naming the collective. A buffer may
 * run over several regions (adjacent mappings): it holds them all. */
enum { ZCOLL_MEM_HOLD_SPANS = 2 };
/* Who holds: for free's message. */
struct zcoll__mem_user {
  int kind; /* ZCOLL_COLL_* (channel.h); 0: nobody named */
  uint64_t ordinal;
  int rank, size; /* of its communicator */
};
struct zcoll__mem_hold {
  uint64_t upto; /* 0: holds nothing; else the regions of serial <= upto it touches */
  const char *at[ZCOLL_MEM_HOLD_SPANS];
  size_t len[ZCOLL_MEM_HOLD_SPANS];
  struct zcoll__mem_user who;
};

/* Regions alive in the process: while there are none (most programs), a hold costs one
 * load. */
extern _Atomic long zcoll__mem_live;
void zcoll__mem_hold_slow(struct zcoll__mem_hold *h, const struct zcoll__mem_user *who);
void zcoll__mem_unhold_slow(struct zcoll__mem_hold *h);

/* Holds [a0, a0 + n0) and [a1, a1 + n1) (NULL or 0 bytes: nothing) for who until unhold.
 * h must hold nothing. */
static inline void zcoll__mem_hold(struct zcoll__mem_hold *h, const struct zcoll__mem_user *who,
                                   const void *a0, size_t n0, const void *a1, size_t n1) {
  h->upto = 0;
  if (!atomic_load_explicit(&zcoll__mem_live, memory_order_relaxed)) return;
  h->at[0] = a0;
  h->len[0] = a0 ? n0 : 0;
  h->at[1] = a1;
  h->len[1] = a1 ? n1 : 0; /* in place the same start: the longer span counts, once */
  zcoll__mem_hold_slow(h, who);
}
/* Lets go of what h holds (nothing: nothing); h then holds nothing. */
static inline void zcoll__mem_unhold(struct zcoll__mem_hold *h) {
  if (h->upto) zcoll__mem_unhold_slow(h);
}

/* zcoll_mem_alloc and zcoll_mem_free (lib/comm/mem_api.c checks the arguments and
 * reports): len > 0, any pointer. Free refuses a region a collective holds. */
zcoll_status_t zcoll__mem_alloc(zcoll_comm_t *comm, size_t len, void **ptr);
zcoll_status_t zcoll__mem_free(zcoll_comm_t *comm, void *ptr);
/* At destroy: every region left is forgotten, not unmapped (zcoll.h). local: in a forked
 * child, where the transport's state is the parent's. */
void zcoll__mem_forget_all(zcoll_comm_t *comm, int local);
/* A failed call's result that peer `writer` may still be writing into (onehost_big.c): the
 * pages of the zcoll_mem_alloc region under [addr, addr + len) are replaced, in this
 * process, by private ones holding the same bytes; the writer's stores land in the shared
 * pages, which nothing here maps any more. The region is then never offered to peers
 * again (zcoll__mem_place: 0). Nothing if addr is not in such a region. 0 (logged) if
 * there was no memory for the copy: the caller must wait for the writer after all. */
int zcoll__mem_detach(zcoll_comm_t *comm, void *addr, size_t len, int writer);
/* Where [addr, addr + len) lies for the peers to map: 1 and *place filled if inside a
 * zcoll_mem_alloc region of the shm transport's (registered for them on first use), else 0
 * and *place cleared. */
int zcoll__mem_place(zcoll_comm_t *comm, const void *addr, size_t len,
                     struct zcoll__oh_place *place);

#endif
