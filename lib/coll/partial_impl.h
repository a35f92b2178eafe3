/*
 * partial_impl.h -- the partial allreduce's request as partial.c (its rounds and calls) and
 * partial_make.c (its making) share it; the home words' layout is partial.c's comment.
 */
#ifndef ZCOLL_PARTIAL_IMPL_H
#define ZCOLL_PARTIAL_IMPL_H

#include "core/exec.h"
#include "partial.h"
#include "partial_home.h"
#include "plan.h"

#define W_TICKETS 0u
#define W_FIN 8u
#define W_SEG 16u
#define W_ENTRY 24u

enum { P_IDLE, P_GATHER, P_RUN, P_DONE, P_FAILED };

struct zcoll__partial {
  zcoll_comm_t *pc; /* the request's own communicator */
  zcoll_request_t *q;
  const void *src; /* what the schedule reads: recvbuf in place */
  void *dst;
  size_t count, bytes;
  zcoll_dtype_t dtype;
  zcoll_op_t op;
  int quorum, in_place, p, rank;
  struct zcoll__phome home; /* the ticket counter's words (partial_home.c) */
  /* The epoch: the offers since the last flush. */
  uint32_t epoch, base_t;
  uint64_t base_round;
  uint64_t my_entry;
  uint64_t seg;        /* SEG when this rank offered */
  uint32_t fin_rounds; /* FIN's low half: the rounds of the epoch before */
  uint32_t lo;         /* the first ticket of its round */
  int need_flush;      /* offered since the last flush, or never flushed: free flushes */
  /* The offer in flight, or the last one. */
  int state;
  zcoll_status_t status;
  uint32_t ticket;
  uint64_t round;
  int ncontrib, mine;
  int *members; /* the round's ranks, ascending */
  struct zcoll__sched sched;
  int have_sched;
  struct zcoll__exec_state *e;
  struct zcoll__run run;
  struct zcoll__idle idle;
  void *keep;      /* the lowest member's copy of its round's result, for the flush */
  int64_t news_ns; /* when offer() last heard the job's news */
  /* zcoll_mem_alloc memory of the user's buffers, held from the offer until it ends (its
   * round's run holds them too, but only once the round is decided). */
  struct zcoll__mem_hold hold;
};

/* Frees what the request holds beside its communicator (partial.c). */
void zcoll__partial_release(struct zcoll__partial *P);

#endif
