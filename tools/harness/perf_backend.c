/*
 * perf_backend.c -- the harness's calls through a library's ops table (see
 * perf_backend.h). The timed loop lives here with the calls it makes, so that an
 * iteration costs what it did when the harness was header-only: the table's function
 * pointer and nothing more (pt_iteration and the call helpers are static and inline
 * into pt_time_one).
 */
#include "perf_backend.h"

struct pt_reducer pt_reducer_of(const struct pt_backend *be) {
  struct pt_reducer r = {be->ctx, be->rank, be->nranks, be->max_double, be->sum_double};
  return r;
}

static inline int pt_call_blocking(const struct pt_backend *be, const struct pt_call *c) {
  if (c->coll == PT_COLL_BROADCAST)
    return be->broadcast(be->ctx, c->recvbuf, c->count, c->t, c->root);
  if (c->coll == PT_COLL_BARRIER) return be->barrier(be->ctx);
  if (c->coll == PT_COLL_ALLGATHER)
    return be->allgather(be->ctx, c->sendbuf, c->recvbuf, c->count, c->t);
  if (c->coll == PT_COLL_REDUCE_SCATTER)
    return be->reduce_scatter(be->ctx, c->sendbuf, c->recvbuf, c->count, c->t, c->op);
  if (c->coll == PT_COLL_REDUCE)
    return be->reduce(be->ctx, c->sendbuf, c->recvbuf, c->count, c->t, c->op, c->root);
  if (c->coll >= PT_COLL_ALLTOALL)
    return be->xchg(be->ctx, c->coll, c->sendbuf, c->recvbuf, c->count, c->t, c->root);
  return be->allreduce(be->ctx, c->sendbuf, c->recvbuf, c->count, c->t, c->op);
}

/* Whether the backend can post this collective non-blocking. */
static inline bool pt_has_nonblocking(const struct pt_backend *be, enum pt_coll coll) {
  return coll == PT_COLL_BROADCAST        ? be->ibroadcast != NULL
         : coll == PT_COLL_BARRIER        ? be->ibarrier != NULL
         : coll == PT_COLL_ALLGATHER      ? be->iallgather != NULL
         : coll == PT_COLL_REDUCE_SCATTER ? be->ireduce_scatter != NULL
         : coll == PT_COLL_REDUCE         ? be->ireduce != NULL
         : coll >= PT_COLL_ALLTOALL       ? be->ixchg != NULL
                                          : be->iallreduce != NULL;
}

static inline int pt_wait_oldest(const struct pt_backend *be, struct pt_window *w) {
  struct pt_req *r = w->req[w->head];
  w->head = (w->head + 1) % PT_WINDOW;
  w->n--;
  return be->wait(be->ctx, r);
}

int pt_drain(const struct pt_backend *be, struct pt_window *w) {
  while (w->n > 0)
    if (pt_wait_oldest(be, w)) return -1;
  return 0;
}

/* pt_post's body, inline in the timed loop as well */
static inline int pt_post_one(const struct pt_backend *be, struct pt_window *w,
                              const struct pt_call *c) {
  if (w->n == PT_WINDOW && pt_wait_oldest(be, w)) return -1;
  struct pt_req *r;
  int rc = c->coll == PT_COLL_BROADCAST
               ? be->ibroadcast(be->ctx, c->recvbuf, c->count, c->t, c->root, &r)
           : c->coll == PT_COLL_BARRIER ? be->ibarrier(be->ctx, &r)
           : c->coll == PT_COLL_ALLGATHER
               ? be->iallgather(be->ctx, c->sendbuf, c->recvbuf, c->count, c->t, &r)
           : c->coll == PT_COLL_REDUCE_SCATTER
               ? be->ireduce_scatter(be->ctx, c->sendbuf, c->recvbuf, c->count, c->t, c->op, &r)
           : c->coll == PT_COLL_REDUCE
               ? be->ireduce(be->ctx, c->sendbuf, c->recvbuf, c->count, c->t, c->op, c->root, &r)
           : c->coll >= PT_COLL_ALLTOALL
               ? be->ixchg(be->ctx, c->coll, c->sendbuf, c->recvbuf, c->count, c->t, c->root, &r)
               : be->iallreduce(be->ctx, c->sendbuf, c->recvbuf, c->count, c->t, c->op, &r);
  if (rc) return -1;
  w->req[(w->head + w->n) % PT_WINDOW] = r;
  w->n++;
  return 0;
}

int pt_post(const struct pt_backend *be, struct pt_window *w, const struct pt_call *c) {
  return pt_post_one(be, w, c);
}

int pt_one(const struct pt_backend *be, bool nonblocking, const struct pt_call *c) {
  if (!nonblocking || !pt_has_nonblocking(be, c->coll)) return pt_call_blocking(be, c);
  struct pt_window w = {{NULL}, 0, 0};
  if (pt_post(be, &w, c)) return -1;
  return pt_drain(be, &w);
}

/* One timed iteration of agg collectives (group: agg blocking calls queued in one group). */
static inline int pt_iteration(const struct pt_backend *be, long agg, bool blocking, bool group,
                               struct pt_window *w, const struct pt_call *c) {
  if (group) {
    if (be->group_start(be->ctx)) return -1;
    for (long j = 0; j < agg; j++)
      if (pt_call_blocking(be, c)) return be->group_end(be->ctx), -1;
    return be->group_end(be->ctx);
  }
  if (!pt_has_nonblocking(be, c->coll) || (blocking && agg == 1)) {
    for (long j = 0; j < agg; j++)
      if (pt_call_blocking(be, c)) return -1;
    return 0;
  }
  for (long j = 0; j < agg; j++)
    if (pt_post_one(be, w, c)) return -1;
  return blocking ? pt_drain(be, w) : 0;
}

int pt_time_one(const struct pt_opts *o, const struct pt_backend *be, const struct pt_call *c,
                struct pt_cell *cell) {
  /* Copies whose address no library call can hold: the compiler may keep them in
   * registers across the calls instead of reloading them each iteration. */
  const struct pt_call call = *c;
  const long agg = o->agg, iters = o->iters;
  const bool blocking = o->blocking != 0, group = o->group != 0 && be->group_start;
  struct pt_window w = {{NULL}, 0, 0};
  for (long k = 0; k < o->warmup; k++)
    if (pt_iteration(be, agg, blocking, group, &w, &call)) return -1;
  if (pt_drain(be, &w) || be->barrier(be->ctx)) return -1;
  const uint64_t n0 = be->collectives ? be->collectives(be->ctx) : 0;
  struct pt_clock ck = pt_clock_start();
  for (long k = 0; k < iters; k++)
    if (pt_iteration(be, agg, blocking, group, &w, &call)) return -1;
  if (pt_drain(be, &w)) return -1;
  pt_clock_stop(&ck, (double)iters * (double)agg, &cell->time_us, &cell->cpu_us);
  cell->timed = be->collectives ? be->collectives(be->ctx) - n0 : 0;
  return 0;
}
