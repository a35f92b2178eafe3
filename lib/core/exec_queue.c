/* exec_queue.c -- the collectives in flight on a communicator: started in the order they
 * were issued, progressed together, ended together when one fails. */
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "base/log.h"

void zcoll__exec_free(struct zcoll__exec_state *e) {
  if (!e) return;
  free(e->pos);
  free(e->issued);
  free(e->finished);
  free(e->src_mr);
  free(e->send_cur);
  free(e->recv_cur);
  free(e->chan);
  free(e->peer_of_chan);
  free(e->hdr_sent);
  free(e->hdr_seen);
  free(e->pair);
  free(e->awaited_ns);
  free(e->gfrom);
  free(e->gto);
  free(e->grant_cur);
  free(e->gkey); /* the keys themselves went with their run */
  free(e->gbase);
  free(e->tmp);
  free(e);
}

zcoll_status_t zcoll__exec_reserve(struct zcoll__exec_state **ep, int nops, int npeers,
                                   int nchans) {
  struct zcoll__exec_state *e = *ep;
  if (!e && !(e = *ep = calloc(1, sizeof(*e))))
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for the executor");
  if (nops > e->cap_ops) {
    size_t n = (size_t)nops;
    size_t *pos = realloc(e->pos, n * sizeof(size_t));
    if (pos) e->pos = pos;
    size_t *issued = realloc(e->issued, n * sizeof(size_t));
    if (issued) e->issued = issued;
    uint8_t *fin = realloc(e->finished, n);
    if (fin) e->finished = fin;
    struct zcoll_tl_mr **m = realloc(e->src_mr, n * sizeof(struct zcoll_tl_mr *));
    if (m) e->src_mr = m;
    size_t *gf = realloc(e->gfrom, n * sizeof(size_t));
    if (gf) e->gfrom = gf;
    size_t *gt = realloc(e->gto, n * sizeof(size_t));
    if (gt) e->gto = gt;
    if (!pos || !issued || !fin || !m || !gf || !gt)
      return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for the executor");
    e->cap_ops = nops;
  }
  if (npeers > e->cap_peers) {
    size_t n = (size_t)npeers;
    int *a = realloc(e->send_cur, n * sizeof(int));
    if (a) e->send_cur = a;
    int *b = realloc(e->recv_cur, n * sizeof(int));
    if (b) e->recv_cur = b;
    int *c = realloc(e->chan, n * sizeof(int));
    if (c) e->chan = c;
    uint8_t *hs = realloc(e->hdr_sent, n), *hr = hs ? realloc(e->hdr_seen, n) : NULL;
    if (hs) e->hdr_sent = hs;
    if (hr) e->hdr_seen = hr;
    int64_t *aw = realloc(e->awaited_ns, n * sizeof(int64_t));
    if (aw) e->awaited_ns = aw;
    int *gc = realloc(e->grant_cur, n * sizeof(int));
    if (gc) e->grant_cur = gc;
    uint64_t *gb = realloc(e->gbase, n * sizeof(uint64_t));
    if (gb) e->gbase = gb;
    struct zcoll_tl_rkey **gk = realloc(e->gkey, n * sizeof(struct zcoll_tl_rkey *));
    if (gk) {
      /* No key is held between runs: the new entries start empty like the old. */
      for (int k = e->cap_peers; k < npeers; k++) gk[k] = NULL;
      e->gkey = gk;
    }
    if (!a || !b || !c || !hs || !hr || !aw || !gc || !gb || !gk)
      return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for the executor");
    e->cap_peers = npeers;
  }
  if (nchans > e->cap_chans) {
    int *m = realloc(e->peer_of_chan, sizeof(int) * (size_t)nchans);
    if (!m) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for the executor");
    e->peer_of_chan = m;
    e->cap_chans = nchans;
  }
  return ZCOLL_OK;
}

zcoll_status_t zcoll__run_start(zcoll_comm_t *comm, struct zcoll__run *r,
                                const struct zcoll__sched *s, struct zcoll__exec_state *e,
                                const struct zcoll__coll_desc *desc, uint64_t ordinal,
                                const void *src, void *dst) {
  zcoll_status_t st = zcoll__run_init(comm, r, s, e, desc, ordinal, src, dst);
  if (st != ZCOLL_OK) return st;
  r->fl = zcoll__flight_start(&comm->flight, ordinal, desc, 0);
  r->next = NULL;
  if (r->remaining == 0) { /* nothing to move (one rank, in place): done already */
    if (r->started_ns)
      zcoll__trace_event(&comm->trace, ZCOLL_STAGE_COLLECTIVE, r->started_ns, zcoll__now_ns(), -1,
                         0);
    r->status = ZCOLL_OK;
    zcoll__mem_unhold(&r->hold);
    zcoll__flight_end(r->fl, ordinal, ZCOLL_OK, 0);
    atomic_store_explicit(&r->ended, 1, memory_order_release);
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
  struct zcoll__run *prev = NULL;
  for (struct zcoll__run *r = comm->active; r;) {
    struct zcoll__run *next = r->next;
    if (r->remaining == 0) {
      if (r->ngkeys) zcoll__run_drop_grants(r);
      r->status = ZCOLL_OK;
      zcoll__mem_unhold(&r->hold);
      zcoll__flight_end(r->fl, r->ordinal, ZCOLL_OK, 0);
      atomic_store_explicit(&r->ended, 1, memory_order_release);
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

void zcoll__runs_end(zcoll_comm_t *comm, zcoll_status_t st) {
  for (struct zcoll__run *r = comm->active, *next; r; r = next) {
    next = r->next;
    /* Peers may still be writing into this result: their writes must fail from here on,
     * before the error reaches the application. */
    zcoll__grant_revoke(comm, r->grant);
    if (r->ngkeys) zcoll__run_drop_grants(r);
    r->status = st;
    zcoll__mem_unhold(&r->hold);
    zcoll__flight_end(r->fl, r->ordinal, st, 0);
    atomic_store_explicit(&r->ended, 1, memory_order_release);
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

zcoll_status_t zcoll__comm_break(zcoll_comm_t *comm, zcoll_status_t st) {
  st = zcoll__exec_broken(comm, st);
  zcoll__runs_end(comm, st);
  return st;
}

zcoll_status_t zcoll__run_wait(zcoll_comm_t *comm, struct zcoll__run *r) {
  struct zcoll__idle id = {0};
  while (r->status == ZCOLL_IN_PROGRESS) {
    int progress = 0;
    zcoll_status_t st = zcoll__progress(comm, &progress);
    if (st == ZCOLL_OK && !progress) st = zcoll__idle_wait(comm, comm->active, &id);
    if (st != ZCOLL_OK) return zcoll__comm_break(comm, st);
    if (progress) zcoll__idle_done(comm, &id);
  }
  return r->status;
}
