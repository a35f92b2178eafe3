/* request.c -- non-blocking and persistent allreduce: a request owns a collective's run
 * state, its schedule (pinned in the cache) and its executor arrays.
 *
 * Rules (zcoll.h states them for users):
 * - A request is in flight from zcoll_iallreduce / zcoll_start until zcoll_test or
 *   zcoll_wait has seen it end; it progresses whenever the thread calls into the
 *   communicator (ZCOLL_PROGRESS=caller).
 * - Collectives start in the order they are issued on the communicator, blocking or not,
 *   and every rank must issue them in the same order (each takes the next ordinal).
 * - zcoll_request_free refuses a request in flight; it frees a completed or inactive
 *   one. zcoll_comm_destroy refuses while requests are in flight and frees the others.
 * - When the communicator breaks, every request in flight ends with the error, after the
 *   transport has stopped touching user memory.
 */
#include <stdlib.h>
#include <string.h>

#include "core/exec.h"
#include "core/guard.h"
#include "base/log.h"
#include "base/clock.h"
#include "boot/sock.h"
#include "group.h"
#include "plan.h"
#include "progress_thread.h"
#include "request.h"
#include "core/report.h"

struct zcoll_request {
  zcoll_comm_t *comm;
  struct zcoll_request *prev, *next; /* comm->coll.requests */
  int persistent;
  int started; /* persistent: at least once */
  int open;    /* started, and the application has not yet seen it end (its calls
                   * alone read and write this: no lock needed) */
  int pooled;  /* freed, kept for reuse: a call on it is the application's mistake */
  struct zcoll__plan plan;
  struct zcoll__exec_state *e;
  struct zcoll__grant_src grant; /* persistent: the result, registered for peers; mr NULL */
  struct zcoll__run run;         /* run.status: ZCOLL_IN_PROGRESS while in flight */
  /* A created op's function may fail on one rank after the others have all they need
   * from it: the collective then ends with an agreement (allreduce.c's), a run of its own
   * fenced behind the data, so that no rank's request ends OK from a failed collective. */
  int agrees;
  uint8_t word;
  uint8_t token; /* a barrier's byte */
  struct zcoll__plan agree_plan;
  struct zcoll__exec_state *agree_e;
  struct zcoll__run agree_run;
  int wait_ms;             /* zcoll_wait_timeout's bound, for its body */
  struct zcoll__idle idle; /* zcoll_wait_timeout: the wait so far, kept across its calls */
  const struct zcoll__request_ops *ops; /* its kind (request.h): ordinary, unless wrapped */
  void *impl;                           /* a wrapped kind's own state */
};

static const struct zcoll__request_ops ordinary;

/* How q's collective stands: in progress until its last run has ended; the data run's
 * error before the agreement's. */
static zcoll_status_t status_of(const struct zcoll_request *q) {
  return q->run.status != ZCOLL_OK || !q->agrees ? q->run.status : q->agree_run.status;
}

static int in_flight(const struct zcoll_request *q) {
  return q->started && status_of(q) == ZCOLL_IN_PROGRESS;
}

int zcoll__requests_active(const zcoll_comm_t *comm) {
  int n = 0;
  for (const struct zcoll_request *q = comm->coll.requests; q; q = q->next) n += in_flight(q);
  return n;
}

/* Freed requests are kept, executor arrays and all, for the next zcoll_iallreduce: a
 * request and its arrays are some fourteen allocations, the better part of a microsecond
 * against an 8-byte collective's half. Bounded: a burst of frees keeps no more. */
#define REQUEST_POOL_MAX 64
#define REQUEST_POOL_TMP_MAX ((size_t)1 << 20)

static void request_free(struct zcoll_request *q) {
  zcoll_comm_t *comm = q->comm;
  if (q->prev)
    q->prev->next = q->next;
  else
    comm->coll.requests = q->next;
  if (q->next) q->next->prev = q->prev;
  zcoll__plan_release(&q->plan);
  if (q->agrees) zcoll__plan_release(&q->agree_plan);
  zcoll__grant_revoke(comm, &q->grant);
  /* A reduce-scatter's scratch is its input's size: a pooled request keeps a small one. */
  if (q->e && q->e->tmp_cap > REQUEST_POOL_TMP_MAX) {
    free(q->e->tmp);
    q->e->tmp = NULL;
    q->e->tmp_cap = 0;
  }
  if (comm->coll.request_pool_len < REQUEST_POOL_MAX) {
    q->pooled = 1;
    q->prev = NULL;
    q->next = comm->coll.request_pool;
    comm->coll.request_pool = q;
    comm->coll.request_pool_len++;
    return;
  }
  zcoll__exec_free(q->e);
  zcoll__exec_free(q->agree_e);
  free(q);
}

void zcoll__requests_release(zcoll_comm_t *comm) {
  /* request_free unlinks it first; the analyzer assumes the calls after may relink it. */
  while (comm->coll.requests)
    request_free(comm->coll.requests); /* NOLINT(clang-analyzer-unix.Malloc) */
  while (comm->coll.request_pool) {
    struct zcoll_request *q = comm->coll.request_pool;
    comm->coll.request_pool = q->next;
    zcoll__exec_free(q->e);
    zcoll__exec_free(q->agree_e);
    free(q);
  }
  comm->coll.request_pool_len = 0;
}

void zcoll__requests_revoke_grants(zcoll_comm_t *comm, int local) {
  for (struct zcoll_request *q = comm->coll.requests; q; q = q->next) {
    if (local)
      q->grant.mr = NULL; /* the parent's registration */
    else
      zcoll__grant_revoke(comm, &q->grant);
    if (q->run.ngkeys && !local) zcoll__run_drop_grants(&q->run);
  }
}

/* Persistent means zero-copy where the writer places the data (RDMA): the result is
 * registered for the peers once, here, and each start grants them ranges of it
 * (grant.c), so that the pieces it only copies arrive in place. Where that cannot be
 * (the transport places data itself, the buffer cannot be registered), the request
 * works as before, through the slots. */
static void grant_setup(zcoll_comm_t *comm, struct zcoll_request *q) {
  const struct zcoll__sched *s = q->plan.s;
  size_t bytes = (size_t)q->plan.desc.count * zcoll__dsize((zcoll_dtype_t)q->plan.desc.dtype);
  int copies = 0;
  for (int i = 0; i < s->nops; i++) copies |= s->ops[i].kind == ZCOLL_SOP_RECV_COPY;
  /* Compressed averaging widens what arrives: nothing lands in place. */
  if (copies && bytes > comm->slot_bytes && q->plan.dst && !q->plan.desc.wire)
    zcoll__grant_open(comm, q->plan.dst, bytes, &q->grant);
}

/* A cleared request, from the pool if it has one (its executor arrays kept). */
static struct zcoll_request *request_alloc(zcoll_comm_t *comm) {
  struct zcoll_request *q = comm->coll.request_pool;
  if (!q) return calloc(1, sizeof(*q));
  comm->coll.request_pool = q->next;
  comm->coll.request_pool_len--;
  struct zcoll__exec_state *e = q->e, *agree_e = q->agree_e;
  memset(q, 0, sizeof(*q));
  q->e = e;
  q->agree_e = agree_e;
  return q;
}

/* What a call asks for, and how its kind plans it: each public call names its kind's
 * planner below (an allreduce, a broadcast with recvbuf its buffer, a barrier ...), so
 * that a new collective adds an entry point and a planner, not a branch here. */
struct coll_args;
typedef zcoll_status_t (*coll_planner)(zcoll_comm_t *comm, const struct coll_args *a,
                                       struct zcoll_request *q);
struct coll_args {
  coll_planner plan;
  const void *sendbuf;
  void *recvbuf;
  size_t count;
  zcoll_dtype_t dtype;
  zcoll_op_t op;
  int root;
  zcoll__planner ext; /* plan_ext's: a planner of arguments of its own (request.h) */
  const void *ext_arg;
};

static zcoll_status_t plan_allreduce(zcoll_comm_t *comm, const struct coll_args *a,
                                     struct zcoll_request *q) {
  return zcoll__allreduce_plan(comm, a->sendbuf, a->recvbuf, a->count, a->dtype, a->op, &q->plan);
}
static zcoll_status_t plan_broadcast(zcoll_comm_t *comm, const struct coll_args *a,
                                     struct zcoll_request *q) {
  return zcoll__broadcast_plan(comm, a->recvbuf, a->count, a->dtype, a->root, &q->plan);
}
static zcoll_status_t plan_barrier(zcoll_comm_t *comm, const struct coll_args *a,
                                   struct zcoll_request *q) {
  (void)a;
  return zcoll__barrier_plan(comm, &q->token, &q->plan);
}
static zcoll_status_t plan_allgather(zcoll_comm_t *comm, const struct coll_args *a,
                                     struct zcoll_request *q) {
  return zcoll__allgather_plan(comm, a->sendbuf, a->recvbuf, a->count, a->dtype, &q->plan);
}
static zcoll_status_t plan_reduce_scatter(zcoll_comm_t *comm, const struct coll_args *a,
                                          struct zcoll_request *q) {
  return zcoll__reduce_scatter_plan(comm, a->sendbuf, a->recvbuf, a->count, a->dtype, a->op,
                                    &q->plan);
}
static zcoll_status_t plan_reduce(zcoll_comm_t *comm, const struct coll_args *a,
                                  struct zcoll_request *q) {
  return zcoll__reduce_plan(comm, a->sendbuf, a->recvbuf, a->count, a->dtype, a->op, a->root,
                            &q->plan);
}

static zcoll_status_t plan_ext(zcoll_comm_t *comm, const struct coll_args *a,
                               struct zcoll_request *q) {
  return a->ext(comm, a->ext_arg, &q->plan);
}

/* A request with its plan and executor arrays, not in flight. */
static zcoll_status_t request_new(zcoll_comm_t *comm, const struct coll_args *a, int persistent,
                                  struct zcoll_request **out) {
  struct zcoll_request *q = request_alloc(comm);
  if (!q) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for a request");
  q->comm = comm;
  q->ops = &ordinary;
  q->persistent = persistent;
  zcoll_status_t st = a->plan(comm, a, q);
  if (st == ZCOLL_OK)
    st = zcoll__exec_reserve(&q->e, q->plan.s->nops, q->plan.s->npeers, comm->nchans);
  if (st == ZCOLL_OK && zcoll__plan_agrees(comm, &q->plan)) { /* created ops only */
    if ((st = zcoll__agree_plan(comm, &q->word, &q->agree_plan)) == ZCOLL_OK) {
      q->agrees = 1;
      const struct zcoll__sched *s = q->agree_plan.s;
      st = zcoll__exec_reserve(&q->agree_e, s->nops, s->npeers, comm->nchans);
    }
  }
  if (st != ZCOLL_OK) {
    zcoll__plan_release(&q->plan);
    if (q->agrees) zcoll__plan_release(&q->agree_plan);
    zcoll__exec_free(q->e);
    zcoll__exec_free(q->agree_e);
    free(q);
    return st;
  }
  q->next = comm->coll.requests;
  if (q->next) q->next->prev = q;
  comm->coll.requests = q;
  *out = q;
  return ZCOLL_OK;
}

/* Issues q's collective: the next ordinal, after everything in flight (and its
 * agreement the one after). */
static zcoll_status_t request_start(struct zcoll_request *q) {
  zcoll_comm_t *comm = q->comm;
  /* Both numbers are taken whatever happens next: ranks count calls, not successes. */
  uint64_t ordinal = comm->ordinal;
  comm->ordinal += 1 + (uint64_t)q->agrees;
  q->started = 1;
  q->idle = (struct zcoll__idle){0};
  zcoll_status_t st = zcoll__news_at_start(comm);
  if (st == ZCOLL_OK)
    st = zcoll__run_start(comm, &q->run, q->plan.s, q->e, &q->plan.desc, ordinal, q->plan.src,
                          q->plan.dst);
  if (st == ZCOLL_OK && q->agrees) {
    q->word = 0;
    st = zcoll__run_start(comm, &q->agree_run, q->agree_plan.s, q->agree_e, &q->agree_plan.desc,
                          ordinal + 1, q->agree_plan.src, q->agree_plan.dst);
    q->agree_run.fence = 1; /* listed, not yet stepped */
  }
  if (st != ZCOLL_OK) {
    st = zcoll__comm_break(comm, st); /* ends what was listed */
    q->run.status = q->agree_run.status = st;
    atomic_store_explicit(&q->agree_run.ended, 1, memory_order_release);
  } else {
    if (q->grant.mr) {
      q->run.grant = &q->grant;
      q->run.grant_base = 0;
    }
    zcoll__progress_thread_wake(comm);
  }
  q->open = st == ZCOLL_OK;
  return st;
}

/* The non-blocking form of a collective: planned, issued, handed back in flight. */
static zcoll_status_t issue(zcoll_comm_t *comm, const struct coll_args *a, zcoll_request_t **req,
                            const char *fn) {
  if (req) *req = NULL;
  if (!comm) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: comm is NULL", fn);
  zcoll_status_t st = zcoll__enter(comm, fn);
  if (st != ZCOLL_OK) return st;
  if ((st = zcoll__check_usable(comm)) == ZCOLL_OK) {
    struct zcoll_request *q = NULL;
    if (!req)
      st = zcoll__poison(comm, zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: req is NULL", fn));
    else if ((st = request_new(comm, a, 0, &q)) != ZCOLL_OK)
      st = zcoll__plan_failed(comm, st);
    else if ((st = request_start(q)) != ZCOLL_OK)
      request_free(q);
    else
      *req = q;
  }
  st = zcoll__report(comm, st);
  zcoll__leave(comm);
  return st;
}

/* The persistent form: planned (and its result opened to the peers), not issued. */
static zcoll_status_t prepare(zcoll_comm_t *comm, const struct coll_args *a, zcoll_request_t **req,
                              const char *fn) {
  if (req) *req = NULL;
  if (!comm) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: comm is NULL", fn);
  if (!req) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: req is NULL", fn);
  zcoll_status_t st = zcoll__enter(comm, fn);
  if (st != ZCOLL_OK) return st;
  /* Local: nothing is issued, so an argument error here breaks nothing. */
  if ((st = zcoll__check_usable(comm)) == ZCOLL_OK &&
      (st = request_new(comm, a, 1, req)) == ZCOLL_OK)
    grant_setup(comm, *req);
  st = zcoll__report(comm, st);
  zcoll__leave(comm);
  return st;
}

zcoll_status_t zcoll_iallreduce(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                size_t count, zcoll_dtype_t dtype, zcoll_op_t op,
                                zcoll_request_t **req) {
  if (zcoll__group_open(comm))
    return zcoll__group_call(comm, "zcoll_iallreduce", ZCOLL_COLL_ALLREDUCE, sendbuf, recvbuf,
                             count, dtype, op, -1, 1, req);
  struct coll_args a = {plan_allreduce, sendbuf, recvbuf, count, dtype, op, -1};
  return issue(comm, &a, req, "zcoll_iallreduce");
}

zcoll_status_t zcoll_allreduce_init(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                    size_t count, zcoll_dtype_t dtype, zcoll_op_t op,
                                    zcoll_request_t **req) {
  struct coll_args a = {plan_allreduce, sendbuf, recvbuf, count, dtype, op, -1};
  return prepare(comm, &a, req, "zcoll_allreduce_init");
}

zcoll_status_t zcoll_ibroadcast(zcoll_comm_t *comm, void *buf, size_t count, zcoll_dtype_t dtype,
                                int root, zcoll_request_t **req) {
  if (zcoll__group_open(comm))
    return zcoll__group_call(comm, "zcoll_ibroadcast", ZCOLL_COLL_BROADCAST, NULL, buf, count,
                             dtype, ZCOLL_SUM, root, 1, req);
  struct coll_args a = {plan_broadcast, buf, buf, count, dtype, ZCOLL_SUM, root};
  return issue(comm, &a, req, "zcoll_ibroadcast");
}

zcoll_status_t zcoll_ibarrier(zcoll_comm_t *comm, zcoll_request_t **req) {
  if (zcoll__group_open(comm))
    return zcoll__group_call(comm, "zcoll_ibarrier", ZCOLL_COLL_BARRIER, NULL, NULL, 0, ZCOLL_UINT8,
                             ZCOLL_SUM, -1, 1, req);
  struct coll_args a = {plan_barrier, NULL, NULL, 0, ZCOLL_UINT8, ZCOLL_MAX, -1};
  return issue(comm, &a, req, "zcoll_ibarrier");
}

zcoll_status_t zcoll_iallgather(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                size_t sendcount, zcoll_dtype_t dtype, zcoll_request_t **req) {
  if (zcoll__group_open(comm))
    return zcoll__group_call(comm, "zcoll_iallgather", ZCOLL_COLL_ALLGATHER, sendbuf, recvbuf,
                             sendcount, dtype, ZCOLL_SUM, -1, 1, req);
  struct coll_args a = {plan_allgather, sendbuf, recvbuf, sendcount, dtype, ZCOLL_SUM, -1};
  return issue(comm, &a, req, "zcoll_iallgather");
}

zcoll_status_t zcoll_ireduce_scatter(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                     size_t recvcount, zcoll_dtype_t dtype, zcoll_op_t op,
                                     zcoll_request_t **req) {
  if (zcoll__group_open(comm))
    return zcoll__group_call(comm, "zcoll_ireduce_scatter", ZCOLL_COLL_REDUCE_SCATTER, sendbuf,
                             recvbuf, recvcount, dtype, op, -1, 1, req);
  struct coll_args a = {plan_reduce_scatter, sendbuf, recvbuf, recvcount, dtype, op, -1};
  return issue(comm, &a, req, "zcoll_ireduce_scatter");
}

zcoll_status_t zcoll_ireduce(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                             zcoll_dtype_t dtype, zcoll_op_t op, int root, zcoll_request_t **req) {
  if (zcoll__group_open(comm))
    return zcoll__group_call(comm, "zcoll_ireduce", ZCOLL_COLL_REDUCE, sendbuf, recvbuf, count,
                             dtype, op, root, 1, req);
  struct coll_args a = {plan_reduce, sendbuf, recvbuf, count, dtype, op, root};
  return issue(comm, &a, req, "zcoll_ireduce");
}

zcoll_status_t zcoll_broadcast_init(zcoll_comm_t *comm, void *buf, size_t count,
                                    zcoll_dtype_t dtype, int root, zcoll_request_t **req) {
  struct coll_args a = {plan_broadcast, buf, buf, count, dtype, ZCOLL_SUM, root};
  return prepare(comm, &a, req, "zcoll_broadcast_init");
}

/* The calls on a request: one thread inside the communicator, errors recorded in it.
 * unless_busy (q open, not pooled): while the progress thread is inside a pass, a request
 * whose run has not ended is in progress -- say so at once rather than wait for the pass;
 * one that has ended waits for the lock to report its end as usual. */
static zcoll_status_t on_request_how(struct zcoll_request *q, const char *fn,
                                     zcoll_status_t (*body)(struct zcoll_request *q),
                                     int unless_busy) {
  if (!q) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: request is NULL", fn);
  zcoll_comm_t *comm = q->comm;
  zcoll_status_t st = unless_busy ? zcoll__enter_unless_busy(comm, fn) : zcoll__enter(comm, fn);
  if (st == ZCOLL_IN_PROGRESS) {
    const struct zcoll__run *last = q->agrees ? &q->agree_run : &q->run;
    if (!atomic_load_explicit(&last->ended, memory_order_acquire)) return st;
    st = zcoll__enter(comm, fn);
  }
  if (st != ZCOLL_OK) return st;
  if (q->pooled)
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: the request was freed (zcoll_request_free)", fn);
  else
    st = body(q);
  st = zcoll__report(comm, st);
  zcoll__leave(comm);
  return st;
}

static zcoll_status_t on_request(struct zcoll_request *q, const char *fn,
                                 zcoll_status_t (*body)(struct zcoll_request *q)) {
  return on_request_how(q, fn, body, 0);
}

static zcoll_status_t start_again(struct zcoll_request *q) {
  if (!q->persistent)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "zcoll_start: the request is not persistent (zcoll_iallreduce starts its "
                       "collective itself; zcoll_allreduce_init makes one to start)");
  if (in_flight(q))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "zcoll_start: the request is still in flight (zcoll_wait or zcoll_test it "
                       "to completion before starting it again)");
  zcoll_status_t st = zcoll__check_usable(q->comm);
  return st == ZCOLL_OK ? request_start(q) : st;
}

/* A request in flight on a communicator revoked (or broken) since: it ends now. */
static int ended_by_revoke(struct zcoll_request *q) {
  zcoll_status_t st = zcoll__check_usable(q->comm);
  if (st != ZCOLL_OK && in_flight(q)) zcoll__runs_end(q->comm, st);
  return st != ZCOLL_OK;
}

static zcoll_status_t test_end(struct zcoll_request *q) {
  if (in_flight(q) && !ended_by_revoke(q)) {
    int progress = 0;
    zcoll_status_t st = zcoll__progress(q->comm, &progress);
    if (st != ZCOLL_OK) zcoll__comm_break(q->comm, st);
  }
  zcoll_status_t st = q->started ? status_of(q) : ZCOLL_OK; /* never started: complete */
  if (st != ZCOLL_IN_PROGRESS) q->open = 0;
  return st;
}

static zcoll_status_t wait_end(struct zcoll_request *q) {
  q->open = 0;
  if (!q->started) return ZCOLL_OK;
  if (in_flight(q) && !ended_by_revoke(q)) {
    zcoll_status_t st = zcoll__run_wait(q->comm, &q->run);
    return st == ZCOLL_OK && q->agrees ? zcoll__run_wait(q->comm, &q->agree_run) : st;
  }
  return status_of(q);
}

/* wait_end in slices: the same progress and the same idle waiting (so ZCOLL_TIMEOUT counts
 * the whole wait: q->idle lives across the calls), but back with ZCOLL_IN_PROGRESS once
 * wait_ms have passed with nothing moving -- for a caller that must look at something
 * else now and then (Python's signal handlers, for Ctrl-C). */
static zcoll_status_t wait_end_for(struct zcoll_request *q) {
  if (!q->started || !in_flight(q) || ended_by_revoke(q)) return wait_end(q);
  zcoll_comm_t *comm = q->comm;
  int64_t until = zcoll__now_ms() + q->wait_ms;
  while (status_of(q) == ZCOLL_IN_PROGRESS) {
    int progress = 0;
    zcoll_status_t st = zcoll__progress(comm, &progress);
    if (st == ZCOLL_OK && !progress) st = zcoll__idle_wait(comm, comm->active, &q->idle);
    if (st != ZCOLL_OK) return zcoll__comm_break(comm, st);
    if (progress)
      zcoll__idle_done(comm, &q->idle);
    else if (zcoll__now_ms() >= until)
      return ZCOLL_IN_PROGRESS;
  }
  return wait_end(q);
}

static zcoll_status_t free_ended(struct zcoll_request *q) {
  /* Freeing one in flight would leave the collective half done on this rank and the
   * peers waiting for it, or free memory the transport still writes. */
  if (in_flight(q))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "zcoll_request_free: the request is still in flight (zcoll_wait for it "
                       "first)");
  request_free(q);
  return ZCOLL_OK;
}

/* The ordinary kind's calls (request.h). */
static zcoll_status_t ordinary_start(struct zcoll_request *q) {
  return on_request(q, "zcoll_start", start_again);
}
/* zcoll_test never waits for the progress thread's pass (copies and reductions of
 * hundreds of microseconds, more when the thread lost its core holding the lock). */
static zcoll_status_t ordinary_test(struct zcoll_request *q) {
  return on_request_how(q, "zcoll_test", test_end, q && q->open && !q->pooled);
}
static zcoll_status_t ordinary_wait(struct zcoll_request *q, int timeout_ms) {
  if (timeout_ms < 0) return on_request(q, "zcoll_wait", wait_end);
  if (q && !q->pooled) q->wait_ms = timeout_ms;
  return on_request(q, "zcoll_wait_timeout", wait_end_for);
}
static zcoll_status_t ordinary_free(struct zcoll_request *q) {
  return on_request(q, "zcoll_request_free", free_ended);
}
static const struct zcoll__request_ops ordinary = {ordinary_start, ordinary_test, ordinary_wait,
                                                   ordinary_free};

/* A NULL request goes to the ordinary calls, which say so. */
static const struct zcoll__request_ops *kind(const struct zcoll_request *q) {
  return q && q->ops ? q->ops : &ordinary;
}

zcoll_status_t zcoll_start(zcoll_request_t *q) { return kind(q)->start(q); }
zcoll_status_t zcoll_test(zcoll_request_t *q) { return kind(q)->test(q); }
zcoll_status_t zcoll_wait(zcoll_request_t *q) { return kind(q)->wait(q, -1); }
zcoll_status_t zcoll_wait_timeout(zcoll_request_t *q, int timeout_ms) {
  return kind(q)->wait(q, timeout_ms > 0 ? timeout_ms : 0);
}
zcoll_status_t zcoll_request_free(zcoll_request_t *q) { return kind(q)->free(q); }

/* Another kind's handle: on its communicator, in no list (its kind owns it). */
zcoll_request_t *zcoll__request_wrap(zcoll_comm_t *comm, const struct zcoll__request_ops *ops,
                                     void *impl) {
  struct zcoll_request *q = calloc(1, sizeof(*q));
  if (!q) return NULL;
  q->comm = comm;
  q->persistent = 1;
  q->ops = ops;
  q->impl = impl;
  return q;
}
void *zcoll__request_impl(const zcoll_request_t *q, const struct zcoll__request_ops *ops) {
  return q && q->ops == ops ? q->impl : NULL;
}
void zcoll__request_forget(zcoll_request_t *q) { free(q); }
void zcoll__request_rebind(zcoll_request_t *q, void *impl) { q->impl = impl; }

/* ---- for layers inside the library (tasks.c): the calls' bodies, on a communicator the
 * caller has entered (or whose lock the progress thread holds). ---- */

zcoll_status_t zcoll__request_prepare(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                      size_t count, zcoll_dtype_t dtype, zcoll_op_t op,
                                      int32_t key_tag, zcoll_request_t **req) {
  struct coll_args a = {plan_allreduce, sendbuf, recvbuf, count, dtype, op, -1};
  zcoll_status_t st = request_new(comm, &a, 1, req);
  if (st != ZCOLL_OK) return st;
  /* A key's round is an allreduce that no other call may pair with: described as what
   * it is, an allreduce of the same shape issued meanwhile is a mismatch. */
  (*req)->plan.desc.kind = ZCOLL_COLL_VEC;
  (*req)->plan.desc.root = key_tag;
  grant_setup(comm, *req);
  return ZCOLL_OK;
}

zcoll_status_t zcoll__request_issue(zcoll_comm_t *comm, zcoll__planner plan, const void *arg,
                                    zcoll_request_t **req, const char *fn) {
  struct coll_args a = {plan_ext, NULL, NULL, 0, ZCOLL_UINT8, ZCOLL_SUM, -1, plan, arg};
  return issue(comm, &a, req, fn);
}

zcoll_status_t zcoll__request_start(zcoll_request_t *q) { return start_again(q); }
zcoll_status_t zcoll__request_test(zcoll_request_t *q) { return test_end(q); }
zcoll_status_t zcoll__request_wait(zcoll_request_t *q) { return wait_end(q); }
zcoll_status_t zcoll__request_free(zcoll_request_t *q) { return free_ended(q); }
