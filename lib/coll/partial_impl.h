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
#include "request.h"

#define W_TICKETS 0u
#define W_FLUSHING 8u
#define W_FIN 16u
#define W_FIN_ROUNDS 24u
#define W_SEG 32u
#define W_SEG_ROUNDS 40u
#define W_ENTRY 48u /* rank r's two words at W_ENTRY + 16 r */
#define W_WORDS(p) (W_ENTRY / 8 + 2 * (size_t)(p))

enum { P_IDLE, P_GATHER, P_RUN, P_DONE, P_FAILED };

struct zcoll__partial {
  zcoll_comm_t *pc;                            /* the request's own communicator */
  zcoll_status_t (*destroy)(zcoll_comm_t *pc); /* its destroy, lib/comm's (partial.h) */
  zcoll_request_t *q;
  const void *src; /* what the schedule reads: recvbuf in place */
  void *dst;
  size_t count, bytes;
  zcoll_dtype_t dtype;
  zcoll_op_t op;
  int quorum, in_place, p, rank;
  struct zcoll__phome home; /* the ticket counter's words (partial_home.c) */
  /* The epoch: the offers since the last flush. Every count is 64 bits wide: none wraps
   * (2^64 offers are 5 million years at 100000 a second). */
  uint64_t epoch, base_t;
  uint64_t base_round;
  uint64_t my_entry, my_lo; /* this rank's ENTRY words */
  uint64_t seg, seg_rounds; /* SEG and SEG_ROUNDS when this rank offered */
  uint64_t fin_rounds;      /* FIN_ROUNDS: the rounds of the epoch before */
  uint64_t lo;              /* the first ticket of its round */
  int need_flush;           /* offered since the last flush, or never flushed: free flushes */
  /* The offer in flight, or the last one. */
  int state;
  zcoll_status_t status;
  uint64_t ticket;
  uint64_t round;
  int ncontrib, mine;
  int *members; /* the round's ranks, ascending */
  struct zcoll__sched sched;
  int have_sched;
  struct zcoll__exec_state *e;
  struct zcoll__run run;
  struct zcoll__idle idle;
  void *keep;                 /* the lowest member's copy of its round's result, for the flush */
  zcoll_comm_t *parent;       /* the user's communicator it was made from, until freed */
  struct zcoll__partial *sib; /* the next in parent->coll.partials */
  int64_t news_ns;            /* when offer() last heard the job's news */
  /* zcoll_mem_alloc memory of the user's buffers, held from the offer until it ends (its
   * round's run holds them too, but only once the round is decided). */
  struct zcoll__mem_hold hold;
};

/* Tests only (partial_make.c): where the ticket counter starts, 0 as in a real job. A test
 * sets it to run offers across 2^32 without making 2^32 of them; process-wide, so its
 * ranks are threads (tests/coll/test_partial.c). */
extern uint64_t zcoll__partial_first_ticket;

/* Takes P off its parent's list (partial_make.c): zcoll_request_free has freed it. */
void zcoll__partial_orphan(struct zcoll__partial *P);

/* Frees what the request holds beside its communicator (partial.c). */
void zcoll__partial_release(struct zcoll__partial *P);

/* The partial request's kind (request.h): its handles' calls (partial.c). */
extern const struct zcoll__request_ops zcoll__partial_request_ops;

#endif
