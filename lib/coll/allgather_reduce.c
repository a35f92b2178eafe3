/* allgather_reduce.c -- the public allgather, reduce-scatter and reduce: argument checks,
 * algorithm choice, schedule, execution. Their schedules are in algorithms/ (allgather.c,
 * reduce_scatter.c, reduce.c) and run on the allreduce's executor and channels. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "algorithms/algorithms.h"
#include "algorithms/select.h"
#include "base/log.h"
#include "core/comm.h"
#include "core/exec.h"
#include "core/guard.h"
#include "core/report.h"
#include "kernels/op.h"
#include "group.h"
#include "plan.h"
#include "xchg.h"

static int overlap(const void *a, size_t alen, const void *b, size_t blen) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return alen && blen && x < y + blen && y < x + alen;
}

/* dtype known, op known (or created), count * blocks elements addressable. */
static zcoll_status_t check_shape(const char *fn, size_t count, size_t blocks, zcoll_dtype_t dtype,
                                  int with_op, zcoll_op_t op) {
  if ((unsigned)dtype >= ZCOLL_DTYPE_COUNT)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: unknown dtype %d", fn, (int)dtype);
  if (with_op && (unsigned)op >= ZCOLL_OP_COUNT && (unsigned)op < ZCOLL_OP_USER_BASE)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: unknown op %d", fn, (int)op);
  if (count > (size_t)PTRDIFF_MAX / zcoll__dsize(dtype) / blocks)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "%s: %zu x %zu elements of %s overflow the address space", fn, blocks, count,
                       zcoll_dtype_name(dtype));
  return ZCOLL_OK;
}

/* Input of in_bytes, result of out_bytes: both there, apart unless in place. */
static zcoll_status_t check_bufs(const char *fn, const void *sendbuf, size_t in_bytes,
                                 const void *recvbuf, size_t out_bytes) {
  if (!in_bytes && !out_bytes) return ZCOLL_OK;
  if (!recvbuf) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: recvbuf is NULL", fn);
  if (!sendbuf) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: sendbuf is NULL", fn);
  if (sendbuf != ZCOLL_IN_PLACE && overlap(sendbuf, in_bytes, recvbuf, out_bytes))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "%s: sendbuf and recvbuf overlap; pass ZCOLL_IN_PLACE for the in-place "
                       "form",
                       fn);
  return ZCOLL_OK;
}

/* Once per schedule built: the choice and the rule that made it (coll_rs as
 * zcoll__select_gather's, -1: the chain, for a non-commutative op). Formatted only then:
 * a loop of small calls must not pay for the words. */
static void log_choice(const zcoll_comm_t *comm, const char *fn, int coll_rs, size_t count,
                       zcoll_dtype_t dtype, size_t bytes, const char *algo) {
  if (zcoll__log_level < ZCOLL_LOG_INFO) return;
  char why[160];
  if (coll_rs < 0)
    snprintf(why, sizeof(why), "a non-commutative op combines in rank order");
  else
    zcoll__select_gather(coll_rs, comm->size, bytes, why, sizeof(why));
  zcoll_log_info("%s of %zu x %s on %d ranks: %s (%s)", fn, count, zcoll_dtype_name(dtype),
                 comm->size, algo, why);
}

zcoll_status_t zcoll__allgather_plan(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                     size_t sendcount, zcoll_dtype_t dtype,
                                     struct zcoll__plan *pl) {
  const char *fn = "allgather";
  memset(pl, 0, sizeof(*pl));
  size_t p = (size_t)comm->size;
  zcoll_status_t st = check_shape(fn, sendcount, p, dtype, 0, ZCOLL_SUM);
  if (st != ZCOLL_OK) return st;
  size_t dsize = zcoll__dsize(dtype), total = sendcount * p;
  if ((st = check_bufs(fn, sendbuf, sendcount * dsize, recvbuf, total * dsize)) != ZCOLL_OK)
    return st;
  int in_place = sendbuf == ZCOLL_IN_PLACE, built = 0;
  int algo = zcoll__select_gather(0, comm->size, total * dsize, NULL, 0);
  if ((st = zcoll__sched_get(comm, ZCOLL_COLL_ALLGATHER, algo, total, in_place, -1, pl, &built)))
    return st;
  if (built) log_choice(comm, fn, 0, sendcount, dtype, total * dsize, zcoll__ag_algos[algo]->name);
  pl->desc = (struct zcoll__coll_desc){.kind = ZCOLL_COLL_ALLGATHER,
                                       .dtype = (uint8_t)dtype,
                                       .algo = (uint8_t)algo,
                                       .root = -1,
                                       .count = sendcount};
  pl->src = in_place ? recvbuf : sendbuf;
  pl->dst = recvbuf;
  return ZCOLL_OK;
}

zcoll_status_t zcoll__reduce_scatter_plan(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                          size_t recvcount, zcoll_dtype_t dtype, zcoll_op_t op,
                                          struct zcoll__plan *pl) {
  const char *fn = "reduce_scatter";
  memset(pl, 0, sizeof(*pl));
  size_t p = (size_t)comm->size;
  zcoll_status_t st = check_shape(fn, recvcount, p, dtype, 1, op);
  if (st != ZCOLL_OK) return st;
  size_t dsize = zcoll__dsize(dtype), n = recvcount;
  int in_place = sendbuf == ZCOLL_IN_PLACE;
  if ((st = check_bufs(fn, sendbuf, recvcount * p * dsize, recvbuf,
                       (in_place ? p : 1) * recvcount * dsize)) != ZCOLL_OK)
    return st;
  if ((unsigned)op >= ZCOLL_OP_COUNT &&
      (st = zcoll__plan_op(comm, fn, recvcount, dtype, op, pl, &n)))
    return st;
  int chain = pl->op && !pl->op->commutative, built = 0;
  int algo = chain ? zcoll__rs_algo_find("chain")
                   : zcoll__select_gather(1, comm->size, recvcount * p * dsize, NULL, 0);
  if ((st = zcoll__sched_get(comm, ZCOLL_COLL_REDUCE_SCATTER, algo, n * p, in_place, -1, pl,
                             &built))) {
    zcoll__plan_release(pl);
    return st;
  }
  if (built)
    log_choice(comm, fn, chain ? -1 : 1, recvcount, dtype, recvcount * p * dsize,
               zcoll__rs_algos[algo]->name);
  pl->desc = (struct zcoll__coll_desc){.kind = ZCOLL_COLL_REDUCE_SCATTER,
                                       .dtype = (uint8_t)dtype,
                                       .op = (uint8_t)op,
                                       .algo = (uint8_t)algo,
                                       .wire = zcoll__wire_of(comm, dtype, op, pl->op),
                                       .root = -1,
                                       .op_tag = pl->op ? zcoll__op_tag(pl->op) : 0,
                                       .count = recvcount};
  pl->src = in_place ? recvbuf : sendbuf;
  pl->dst = recvbuf;
  return ZCOLL_OK;
}

/* A reduce's algorithm (an allreduce algorithm's index, or ZCOLL_REDUCE_TREE): the chain
 * for a non-commutative op (rank order); the tree folded toward the root where the
 * allreduce's choice is latency-bound (the butterfly or the tree); else the allreduce's. */
static int reduce_algo(const zcoll_comm_t *comm, size_t count, zcoll_dtype_t dtype, int noncomm,
                       char *why, size_t len) {
  if (noncomm) {
    if (why) snprintf(why, len, "a non-commutative op combines in rank order");
    return comm->plan.chain_algo;
  }
  char ar[256];
  int algo = zcoll__pick_allreduce(comm, count, dtype, why ? ar : NULL, sizeof(ar));
  int tree = zcoll__reduce_takes_tree(zcoll__algos[algo]->name);
  if (why)
    snprintf(why, len, "%s%s: %s",
             tree ? "the tree toward the root, where the allreduce's choice is "
                  : "the allreduce's choice, ",
             zcoll__algos[algo]->name, ar);
  return tree ? ZCOLL_REDUCE_TREE : algo;
}

zcoll_status_t zcoll__reduce_plan(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                  size_t count, zcoll_dtype_t dtype, zcoll_op_t op, int root,
                                  struct zcoll__plan *pl) {
  const char *fn = "reduce";
  memset(pl, 0, sizeof(*pl));
  if (root < 0 || root >= comm->size)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: root %d is not a rank (0..%d)", fn, root,
                       comm->size - 1);
  zcoll_status_t st = check_shape(fn, count, 1, dtype, 1, op);
  if (st != ZCOLL_OK) return st;
  size_t dsize = zcoll__dsize(dtype), n = count;
  int in_place = sendbuf == ZCOLL_IN_PLACE, is_root = comm->rank == root;
  if (in_place && !is_root)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "%s: ZCOLL_IN_PLACE is the root's only (rank %d is not root %d)", fn,
                       comm->rank, root);
  if (is_root)
    st = check_bufs(fn, sendbuf, count * dsize, recvbuf, count * dsize);
  else if (count && !sendbuf)
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: sendbuf is NULL", fn);
  if (st != ZCOLL_OK) return st;
  if ((unsigned)op >= ZCOLL_OP_COUNT && (st = zcoll__plan_op(comm, fn, count, dtype, op, pl, &n)))
    return st;
  int noncomm = pl->op && !pl->op->commutative, built = 0;
  int algo = reduce_algo(comm, count, dtype, noncomm, NULL, 0);
  if ((st = zcoll__sched_get(comm, ZCOLL_COLL_REDUCE, algo, n, in_place, root, pl, &built))) {
    zcoll__plan_release(pl);
    return st;
  }
  if (built && zcoll__log_level >= ZCOLL_LOG_INFO) {
    char why[320];
    reduce_algo(comm, count, dtype, noncomm, why, sizeof(why));
    zcoll_log_info("%s of %zu x %s to rank %d on %d ranks: %s (%s)", fn, count,
                   zcoll_dtype_name(dtype), root, comm->size, zcoll__reduce_algo_name(algo), why);
  }
  pl->desc = (struct zcoll__coll_desc){.kind = ZCOLL_COLL_REDUCE,
                                       .dtype = (uint8_t)dtype,
                                       .op = (uint8_t)op,
                                       .algo = (uint8_t)algo,
                                       .arity = algo == comm->plan.tree_algo ||
                                                        algo == ZCOLL_REDUCE_TREE
                                                    ? (uint16_t)comm->plan.algo_params.tree_arity
                                                    : 0,
                                       .wire = zcoll__wire_of(comm, dtype, op, pl->op),
                                       .root = root,
                                       .op_tag = pl->op ? zcoll__op_tag(pl->op) : 0,
                                       .count = count};
  pl->src = in_place ? recvbuf : sendbuf;
  pl->dst = is_root ? recvbuf : NULL;
  return ZCOLL_OK;
}

/* A planned collective, run to its end (and its agreement, for a created op's function). */
static zcoll_status_t run(zcoll_comm_t *comm, zcoll_status_t st, struct zcoll__plan *pl) {
  if (st != ZCOLL_OK) return zcoll__plan_failed(comm, st);
  st = zcoll__execute(comm, pl->s, &pl->desc, pl->src, pl->dst);
  int fn = zcoll__plan_agrees(comm, pl);
  zcoll__plan_release(pl);
  if (fn && st == ZCOLL_OK) st = zcoll__agree(comm);
  return st;
}

/* The public calls' frame: the communicator entered and usable (else left, with the
 * error reported), and left with the outcome reported. */
static zcoll_status_t leave(zcoll_comm_t *comm, zcoll_status_t st) {
  st = zcoll__report(comm, st);
  zcoll__leave(comm);
  return st;
}

static zcoll_status_t enter(zcoll_comm_t *comm, const char *fn) {
  if (!comm) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: comm is NULL", fn + 6);
  zcoll_status_t st = zcoll__enter(comm, fn);
  if (st != ZCOLL_OK) return st;
  if ((st = zcoll__check_usable(comm)) != ZCOLL_OK) return leave(comm, st);
  return ZCOLL_OK;
}

zcoll_status_t zcoll_allgather(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                               size_t sendcount, zcoll_dtype_t dtype) {
  if (zcoll__group_open(comm))
    return zcoll__group_call(comm, "zcoll_allgather", ZCOLL_COLL_ALLGATHER, sendbuf, recvbuf,
                             sendcount, dtype, ZCOLL_SUM, -1, 0, NULL);
  zcoll_status_t st = enter(comm, "zcoll_allgather");
  if (st != ZCOLL_OK) return st;
  struct zcoll__plan pl;
  st = zcoll__allgather_plan(comm, sendbuf, recvbuf, sendcount, dtype, &pl);
  return leave(comm, run(comm, st, &pl));
}

zcoll_status_t zcoll_reduce_scatter(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                    size_t recvcount, zcoll_dtype_t dtype, zcoll_op_t op) {
  if (zcoll__group_open(comm))
    return zcoll__group_call(comm, "zcoll_reduce_scatter", ZCOLL_COLL_REDUCE_SCATTER, sendbuf,
                             recvbuf, recvcount, dtype, op, -1, 0, NULL);
  zcoll_status_t st = enter(comm, "zcoll_reduce_scatter");
  if (st != ZCOLL_OK) return st;
  struct zcoll__plan pl;
  st = zcoll__reduce_scatter_plan(comm, sendbuf, recvbuf, recvcount, dtype, op, &pl);
  return leave(comm, run(comm, st, &pl));
}

zcoll_status_t zcoll_reduce(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                            zcoll_dtype_t dtype, zcoll_op_t op, int root) {
  if (zcoll__group_open(comm))
    return zcoll__group_call(comm, "zcoll_reduce", ZCOLL_COLL_REDUCE, sendbuf, recvbuf, count,
                             dtype, op, root, 0, NULL);
  zcoll_status_t st = enter(comm, "zcoll_reduce");
  if (st != ZCOLL_OK) return st;
  struct zcoll__plan pl;
  st = zcoll__reduce_plan(comm, sendbuf, recvbuf, count, dtype, op, root, &pl);
  return leave(comm, run(comm, st, &pl));
}

zcoll_status_t zcoll_collective_algorithm(zcoll_comm_t *comm, const char *coll, size_t count,
                                          zcoll_dtype_t dtype, zcoll_op_t op, int root,
                                          const char **name) {
  if (!comm || !coll || !name)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_collective_algorithm: NULL argument");
  int ag = !strcmp(coll, "allgather"), rs = !strcmp(coll, "reduce_scatter");
  if (!strcmp(coll, "allreduce")) return zcoll_allreduce_algorithm(comm, count, dtype, op, name);
  if (!strcmp(coll, "reduce")) {
    zcoll_status_t st = zcoll_allreduce_algorithm(comm, count, dtype, op, name);
    if (st == ZCOLL_OK && zcoll__reduce_takes_tree(*name)) *name = zcoll__reduce_tree.name;
    return st;
  }
  if (!strcmp(coll, "broadcast")) return zcoll_broadcast_algorithm(comm, count, dtype, root, name);
  int xk = zcoll__xchg_kind_named(coll); /* the rest of MPI's set (xchg.c) */
  if (xk && (unsigned)dtype < ZCOLL_DTYPE_COUNT) {
    struct zcoll__xargs x = {.kind = xk, .count = count, .dtype = dtype, .root = root};
    *name = zcoll__kind_algo_name(xk, zcoll__xchg_algo(comm, &x, NULL, 0));
    return ZCOLL_OK;
  }
  if (!strcmp(coll, "barrier")) {
    *name = zcoll__algos[comm->plan.butterfly_algo]->name;
    return ZCOLL_OK;
  }
  if ((!ag && !rs) || (unsigned)dtype >= ZCOLL_DTYPE_COUNT)
    return zcoll__report(comm, zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                                           "zcoll_collective_algorithm: unknown collective '%s' "
                                           "or dtype %d",
                                           coll, (int)dtype));
  const struct zcoll__op_def *d = rs && (unsigned)op >= ZCOLL_OP_COUNT
                                      ? zcoll__op_get(op, "zcoll_collective_algorithm")
                                      : NULL;
  size_t bytes = count * (size_t)comm->size * zcoll__dsize(dtype);
  if (d && !d->commutative)
    *name = "chain";
  else if (rs)
    *name = zcoll__rs_algos[zcoll__select_gather(1, comm->size, bytes, NULL, 0)]->name;
  else
    *name = zcoll__ag_algos[zcoll__select_gather(0, comm->size, bytes, NULL, 0)]->name;
  zcoll__op_put(d);
  return ZCOLL_OK;
}
