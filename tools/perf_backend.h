/*
 * perf_backend.h -- the seam between the benchmark driver and a collective library
 * (zcoll_perf.c, perf/mpi_allreduce_perf.c): a table of the library's calls, one
 * collective call as the driver describes it (whichever collective -t chose), and the
 * window of non-blocking requests the driver keeps in flight.
 */
#ifndef ZCOLL_PERF_BACKEND_H
#define ZCOLL_PERF_BACKEND_H

#include "perf_measure.h"

#define PT_WINDOW 32 /* non-blocking collectives in flight at most (-z 0) */

struct pt_req; /* a backend's request, opaque to the driver */

/* What the driver needs from a collective library. Every function returns 0, or -1
 * after printing its own error message; after -1 the driver returns at once and the
 * program aborts the job (which also releases whatever is left in flight). */
struct pt_backend {
  const char *prog;
  int rank, nranks;
  void *ctx;
  /* sendbuf NULL: in place, the data is in recvbuf */
  int (*allreduce)(void *ctx, const void *sendbuf, void *recvbuf, size_t count, enum pt_dtype t,
                   enum pt_op op);
  int (*barrier)(void *ctx);
  int (*max_double)(void *ctx, double *v, size_t n); /* in place, over all ranks */
  int (*sum_double)(void *ctx, double *v, size_t n);
  int (*sum_u64)(void *ctx, uint64_t *v, size_t n);
  /* optional: the algorithm name for the last column (op: an allreduce's; root: a
   * broadcast's) */
  int (*algorithm)(void *ctx, enum pt_coll coll, size_t count, enum pt_dtype t, enum pt_op op,
                   int root, const char **name);
  /* optional, both or neither (PT_HAS_NONBLOCKING): post one allreduce; end one: wait
   * for it and free it, also when it ended with an error. At most PT_WINDOW in flight. */
  int (*iallreduce)(void *ctx, const void *sendbuf, void *recvbuf, size_t count, enum pt_dtype t,
                    enum pt_op op, struct pt_req **req);
  int (*wait)(void *ctx, struct pt_req *req);
  /* optional (PT_HAS_BROADCAST): root's count elements of buf reach every rank's buf;
   * ibroadcast, optional, posts one, ended by wait (as iallreduce) */
  int (*broadcast)(void *ctx, void *buf, size_t count, enum pt_dtype t, int root);
  int (*ibroadcast)(void *ctx, void *buf, size_t count, enum pt_dtype t, int root,
                    struct pt_req **req);
  /* optional (PT_HAS_REGISTER): register [addr, addr + len) until deregister_all */
  int (*register_mem)(void *ctx, void *addr, size_t len);
  int (*deregister_all)(void *ctx);
  /* optional (-v): how many collectives this rank has issued so far, as the library
   * counts them, so that -v shows what -n, -w and -m made each rank run */
  uint64_t (*collectives)(void *ctx);
};

static inline struct pt_reducer pt_reducer_of(const struct pt_backend *be)
{
  struct pt_reducer r = {be->ctx, be->rank, be->nranks, be->max_double, be->sum_double};
  return r;
}

/* One collective call as the driver makes it: the backend entry is chosen by coll. */
struct pt_call {
  enum pt_coll coll;
  unsigned char *sendbuf; /* NULL: in place, the data is in recvbuf (a broadcast: always) */
  unsigned char *recvbuf; /* a broadcast's only buffer */
  size_t count;
  enum pt_dtype t;
  enum pt_op op; /* an allreduce's */
  int root;      /* a broadcast's */
};

static inline int pt_call_blocking(const struct pt_backend *be, const struct pt_call *c)
{
  if (c->coll == PT_COLL_BROADCAST)
    return be->broadcast(be->ctx, c->recvbuf, c->count, c->t, c->root);
  return be->allreduce(be->ctx, c->sendbuf, c->recvbuf, c->count, c->t, c->op);
}

/* Whether the backend can post this collective non-blocking. */
static inline bool pt_has_nonblocking(const struct pt_backend *be, enum pt_coll coll)
{
  return coll == PT_COLL_BROADCAST ? be->ibroadcast != NULL : be->iallreduce != NULL;
}

/* The requests in flight, oldest first (a ring). */
struct pt_window {
  struct pt_req *req[PT_WINDOW];
  unsigned head, n;
};

static inline int pt_wait_oldest(const struct pt_backend *be, struct pt_window *w)
{
  struct pt_req *r = w->req[w->head];
  w->head = (w->head + 1) % PT_WINDOW;
  w->n--;
  return be->wait(be->ctx, r);
}

/* Ends every request in flight, oldest first. */
static inline int pt_drain(const struct pt_backend *be, struct pt_window *w)
{
  while (w->n > 0)
    if (pt_wait_oldest(be, w)) return -1;
  return 0;
}

/* Posts one more, first waiting for the oldest when PT_WINDOW are in flight. */
static inline int pt_post(const struct pt_backend *be, struct pt_window *w, const struct pt_call *c)
{
  if (w->n == PT_WINDOW && pt_wait_oldest(be, w)) return -1;
  struct pt_req *r;
  int rc = c->coll == PT_COLL_BROADCAST
               ? be->ibroadcast(be->ctx, c->recvbuf, c->count, c->t, c->root, &r)
               : be->iallreduce(be->ctx, c->sendbuf, c->recvbuf, c->count, c->t, c->op, &r);
  if (rc) return -1;
  w->req[(w->head + w->n) % PT_WINDOW] = r;
  w->n++;
  return 0;
}

/* One collective, blocking: the blocking call, or post and wait (-z 0 checks the
 * non-blocking path it timed). */
static inline int pt_one(const struct pt_backend *be, bool nonblocking, const struct pt_call *c)
{
  if (!nonblocking || !pt_has_nonblocking(be, c->coll)) return pt_call_blocking(be, c);
  struct pt_window w = {{NULL}, 0, 0};
  if (pt_post(be, &w, c)) return -1;
  return pt_drain(be, &w);
}

#endif /* ZCOLL_PERF_BACKEND_H */
