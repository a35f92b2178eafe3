/*
 * perf_backend.h -- the seam between the benchmark driver and a collective library
 * (zcoll_perf.c, perf/mpi_allreduce_perf.c): a table of the library's calls, and the
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
  /* optional: the algorithm name for the last column */
  int (*algorithm)(void *ctx, size_t count, enum pt_dtype t, enum pt_op op, const char **name);
  /* optional, both or neither (PT_HAS_NONBLOCKING): post one allreduce; end one: wait
   * for it and free it, also when it ended with an error. At most PT_WINDOW in flight. */
  int (*iallreduce)(void *ctx, const void *sendbuf, void *recvbuf, size_t count, enum pt_dtype t,
                    enum pt_op op, struct pt_req **req);
  int (*wait)(void *ctx, struct pt_req *req);
  /* optional (PT_HAS_REGISTER): register [addr, addr + len) until deregister_all */
  int (*register_mem)(void *ctx, void *addr, size_t len);
  int (*deregister_all)(void *ctx);
};

static inline struct pt_reducer pt_reducer_of(const struct pt_backend *be)
{
  struct pt_reducer r = {be->ctx, be->rank, be->nranks, be->max_double, be->sum_double};
  return r;
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
static inline int pt_post(const struct pt_backend *be, struct pt_window *w, const void *sendbuf,
                          void *recvbuf, size_t count, enum pt_dtype t, enum pt_op op)
{
  if (w->n == PT_WINDOW && pt_wait_oldest(be, w)) return -1;
  struct pt_req *r;
  if (be->iallreduce(be->ctx, sendbuf, recvbuf, count, t, op, &r)) return -1;
  w->req[(w->head + w->n) % PT_WINDOW] = r;
  w->n++;
  return 0;
}

/* One collective, blocking: the blocking call, or post and wait (-z 0 checks the
 * non-blocking path it timed). */
static inline int pt_one(const struct pt_backend *be, bool nonblocking, const void *sendbuf,
                         void *recvbuf, size_t count, enum pt_dtype t, enum pt_op op)
{
  if (!nonblocking) return be->allreduce(be->ctx, sendbuf, recvbuf, count, t, op);
  struct pt_window w = {{NULL}, 0, 0};
  if (pt_post(be, &w, sendbuf, recvbuf, count, t, op)) return -1;
  return pt_drain(be, &w);
}

#endif /* ZCOLL_PERF_BACKEND_H */
