/* exec_queue.c -- the collectives in flight on a communicator: started in the order they
 * were issued, progressed together, ended together when one fails. */
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "log.h"

zcoll_status_t zcoll__run_start(zcoll_comm_t *comm, struct run *r, const struct zcoll__sched *s,
                                struct zcoll__exec_state *e, const struct zcoll__coll_desc *desc,
                                uint64_t ordinal, const void *src, void *dst) {
  zcoll_status_t st = zcoll__run_init(comm, r, s, e, desc, ordinal, src, dst);
  if (st != ZCOLL_OK) return st;
  r->next = NULL;
  if (r->remaining == 0) { /* nothing to move (one rank, in place): done already */
    if (r->started_ns)
      zcoll__trace_event(&comm->trace, ZCOLL_STAGE_COLLECTIVE, r->started_ns,
                         zcoll__trace_now(), -1, 0);
    r->status = ZCOLL_OK;
    return ZCOLL_OK;
  }
  if (comm->active_tail)
    comm->active_tail->next = r;
  else
    comm->active = r;
  comm->active_tail = r;
  return ZCOLL_OK;
}

void zcoll__reap(zcoll_comm_t *comm) {
  struct run *prev = NULL;
  for (struct run *r = comm->active; r;) {
    struct run *next = r->next;
    if (r->remaining == 0) {
      r->status = ZCOLL_OK;
      if (prev)
        prev->next = next;
      else
        comm->active = next;
      if (comm->active_tail == r) comm->active_tail = prev;
      r->next = NULL;
    } else {
      prev = r;
    }
    r = next;
  }
}

void zcoll__runs_fail(zcoll_comm_t *comm, zcoll_status_t st) {
  for (struct run *r = comm->active, *next; r; r = next) {
    next = r->next;
    r->status = st;
    r->next = NULL;
  }
  comm->active = comm->active_tail = NULL;
  /* Completions still to come belong to no run any more. */
  for (int c = 0; c < comm->nchans; c++)
    for (int k = 0; k < comm->depth; k++) {
      comm->chans[c].inflight[k].op = -1;
      comm->chans[c].inflight[k].run = NULL;
    }
}

zcoll_status_t zcoll__fail_runs(zcoll_comm_t *comm, zcoll_status_t st) {
  st = zcoll__exec_broken(comm, st);
  zcoll__runs_fail(comm, st);
  return st;
}

zcoll_status_t zcoll__run_wait(zcoll_comm_t *comm, struct run *r) {
  struct idle id = {0, 0};
  while (r->status == ZCOLL_IN_PROGRESS) {
    int progress = 0;
    zcoll_status_t st = zcoll__progress(comm, &progress);
    if (st == ZCOLL_OK && !progress) st = zcoll__idle_wait(comm, comm->active, &id);
    if (st != ZCOLL_OK) return zcoll__fail_runs(comm, st);
    if (progress) id.since_ns = 0;
  }
  return r->status;
}

zcoll_status_t zcoll__execute(zcoll_comm_t *comm, const struct zcoll__sched *s,
                              const struct zcoll__coll_desc *desc, const void *src, void *dst) {
  /* The number is taken whatever happens next: ranks count calls, not successes. */
  uint64_t ordinal = comm->ordinal++;
  struct run r;
  zcoll_status_t st = zcoll__exec_reserve(&comm->exec, s->nops, s->npeers, comm->nchans);
  if (st == ZCOLL_OK) st = zcoll__run_start(comm, &r, s, comm->exec, desc, ordinal, src, dst);
  /* Whatever fails from here on, the peers are in this collective: break and tell them. */
  if (st != ZCOLL_OK) return zcoll__fail_runs(comm, st);
  return zcoll__run_wait(comm, &r);
}
