/*
 * perf_backend.h -- the seam between the benchmark harness and a collective library
 * (tools/zcoll_perf.c, perf/mpi_allreduce_perf.c): the ops table of the library's calls
 * that a program fills and hands to pt_run (perf_driver.h), one collective call as the
 * harness describes it (whichever collective -t chose), and the calls the harness makes
 * through the table: one collective, the window of non-blocking requests it keeps in
 * flight, and the timed loop.
 */
#ifndef ZCOLL_PERF_BACKEND_H
#define ZCOLL_PERF_BACKEND_H

#include "perf_measure.h"

#define PT_WINDOW 32 /* non-blocking collectives in flight at most (-z 0) */

struct pt_req; /* a backend's request, opaque to the harness */

/* What the harness needs from a collective library. Every function returns 0, or -1
 * after printing its own error message; after -1 the harness returns at once and the
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
  /* optional: post one barrier, ended by wait (-t barrier times `barrier` above, or this
   * with -z 0) */
  int (*ibarrier)(void *ctx, struct pt_req **req);
  /* optional (PT_HAS_GATHER): MPI_Allgather (sendbuf NULL: in place, rank's block of
   * recvbuf) and MPI_Reduce_scatter_block (sendbuf NULL: the input in recvbuf, the block to
   * its start), count per rank; their non-blocking forms, optional, ended by wait */
  int (*allgather)(void *ctx, const void *sendbuf, void *recvbuf, size_t count, enum pt_dtype t);
  int (*iallgather)(void *ctx, const void *sendbuf, void *recvbuf, size_t count, enum pt_dtype t,
                    struct pt_req **req);
  int (*reduce_scatter)(void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                        enum pt_dtype t, enum pt_op op);
  int (*ireduce_scatter)(void *ctx, const void *sendbuf, void *recvbuf, size_t count,
                         enum pt_dtype t, enum pt_op op, struct pt_req **req);
  /* optional (PT_HAS_REDUCE): MPI_Reduce to root (sendbuf NULL: in place, the root's input
   * in recvbuf; a non-root's in recvbuf, which it must leave as it was; recvbuf is the
   * result on the root only), and its non-blocking form, optional, ended by wait */
  int (*reduce)(void *ctx, const void *sendbuf, void *recvbuf, size_t count, enum pt_dtype t,
                enum pt_op op, int root);
  int (*ireduce)(void *ctx, const void *sendbuf, void *recvbuf, size_t count, enum pt_dtype t,
                 enum pt_op op, int root, struct pt_req **req);
  /* optional (PT_HAS_XCHG): one of the exchanges (perf_xchg.h), count per rank: alltoall,
   * alltoallv and allgatherv (their counts: pt_xchg_count's, packed), gather to root and
   * scatter from root (recvbuf and sendbuf read at the root only). sendbuf NULL: in place,
   * as perf_xchg.h lays it out (a gather's non-root sends from recvbuf; a scatter's root
   * sends from recvbuf and keeps its block there). ixchg, optional, posts one, ended by
   * wait */
  int (*xchg)(void *ctx, enum pt_coll coll, const void *sendbuf, void *recvbuf, size_t count,
              enum pt_dtype t, int root);
  int (*ixchg)(void *ctx, enum pt_coll coll, const void *sendbuf, void *recvbuf, size_t count,
               enum pt_dtype t, int root, struct pt_req **req);
  /* optional (PT_HAS_REGISTER): register [addr, addr + len) until deregister_all */
  int (*register_mem)(void *ctx, void *addr, size_t len);
  int (*deregister_all)(void *ctx);
  /* optional (PT_HAS_MEM_ALLOC): len bytes of the library's memory (NULL after a message),
   * and its release */
  void *(*mem_alloc)(void *ctx, size_t len);
  void (*mem_free)(void *ctx, void *ptr);
  /* optional (-v): how many collectives this rank has issued so far, as the library
   * counts them, so that -v shows what -n, -w and -m made each rank run */
  uint64_t (*collectives)(void *ctx);
  /* optional, both or neither (PT_HAS_GROUP): the calls between them are queued and
   * issued together by group_end, which returns when all have ended (zcoll_group_*) */
  int (*group_start)(void *ctx);
  int (*group_end)(void *ctx);
};

/* The two reductions of the table that -a's combination needs. */
struct pt_reducer pt_reducer_of(const struct pt_backend *be);

/* One collective call as the harness makes it: the backend entry is chosen by coll. */
struct pt_call {
  enum pt_coll coll;
  unsigned char *sendbuf; /* NULL: in place, the data is in recvbuf (a broadcast: always) */
  unsigned char *recvbuf; /* a broadcast's only buffer */
  size_t count;           /* an allgather's, a reduce-scatter's, an exchange's: per rank */
  enum pt_dtype t;
  enum pt_op op; /* an allreduce's, a reduce-scatter's */
  int root;      /* a broadcast's, a reduce's, a gather's, a scatter's */
};

/* The requests in flight, oldest first (a ring). */
struct pt_window {
  struct pt_req *req[PT_WINDOW];
  unsigned head, n;
};

/* Posts one more, first waiting for the oldest when PT_WINDOW are in flight. */
int pt_post(const struct pt_backend *be, struct pt_window *w, const struct pt_call *c);

/* Ends every request in flight, oldest first. */
int pt_drain(const struct pt_backend *be, struct pt_window *w);

/* One collective, blocking: the blocking call, or post and wait (-z 0 checks the
 * non-blocking path it timed). */
int pt_one(const struct pt_backend *be, bool nonblocking, const struct pt_call *c);

/* o's warmup iterations, a barrier, then its timed ones, each of -m collectives made as
 * -z says: the mean wall and CPU time per collective on this rank, and the collectives
 * the library counted (cell->wrong is left alone). Nothing is left in flight. */
int pt_time_one(const struct pt_opts *o, const struct pt_backend *be, const struct pt_call *c,
                struct pt_cell *cell);

#endif /* ZCOLL_PERF_BACKEND_H */
