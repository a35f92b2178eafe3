/*
 * partial_home.h -- the partial allreduce's ticket counter (partial.c says what its words
 * hold): 64-bit words at rank 0 of the request's communicator, which every rank updates
 * with the transport's fetch_add and rank 0 with the CPU's atomics on the same memory.
 */
#ifndef ZCOLL_PARTIAL_HOME_H
#define ZCOLL_PARTIAL_HOME_H

#include <stddef.h>
#include <stdint.h>

#include "core/comm.h"

struct zcoll__phome {
  zcoll_comm_t *pc;
  /* Rank 0 has the words, the others a key to them. */
  uint64_t *words;
  size_t len;
  struct zcoll__tli *alloc; /* whose mem_alloc made them; NULL: mmap */
  struct zcoll_tl_mr *mr[ZCOLL_TL_MAX];
  /* The instance, endpoint and key that reach rank 0's words: the others', and rank 0's own
   * where they use a device's atomics (NULL key: the CPU's). */
  struct zcoll__tli *t;
  struct zcoll_ep *ep;
  struct zcoll_tl_rkey *key;
  int swap; /* the device returns the old value byte-swapped */
};

/* Collective over pc: rank 0 makes nwords words (zeroed), the others reach them; every
 * rank learns whether all did. mine: this rank's status so far (an error is passed on,
 * after taking its part, since the others wait in it). */
zcoll_status_t zcoll__phome_setup(struct zcoll__phome *h, zcoll_comm_t *pc, size_t nwords,
                                  zcoll_status_t mine);
/* *old = the word at byte offset off; then it grows by add, atomically with every rank's. */
zcoll_status_t zcoll__phome_add(struct zcoll__phome *h, uint32_t off, uint64_t add, uint64_t *old);
/* Lets go of the words (rank 0: only once no rank may reach them any more). */
void zcoll__phome_close(struct zcoll__phome *h);

#endif
