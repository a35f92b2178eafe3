/* allreduce.c -- the public allreduce: argument checks, algorithm choice, schedule
 * cache, execution. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "core/guard.h"
#include "base/log.h"
#include "kernels/op.h"
#include "group.h"
#include "plan.h"
#include "core/exec.h"
#include "core/onehost.h"
#include "core/report.h"

#define report zcoll__report

int zcoll__pick_allreduce(const zcoll_comm_t *comm, size_t count, zcoll_dtype_t dtype, char *why,
                          size_t why_len) {
  const struct zcoll__choice c = {&comm->plan.selector, comm->size,          comm->plan.forced_algo,
                                  comm->plan.hier_auto, comm->nhosts,        comm->plan.ring_algo,
                                  comm->plan.rhd_algo,  comm->plan.hier_algo};
  return zcoll__choose(&c, count * zcoll__dsize(dtype), why, why_len);
}

/* What changes from call to call even when the shape does not: the buffers. */
static zcoll_status_t check_bufs(const void *sendbuf, void *recvbuf, size_t bytes) {
  if (!recvbuf) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "allreduce: recvbuf is NULL");
  if (!sendbuf) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "allreduce: sendbuf is NULL");
  if (sendbuf != ZCOLL_IN_PLACE) {
    uintptr_t s = (uintptr_t)sendbuf, r = (uintptr_t)recvbuf;
    if (s < r + bytes && r < s + bytes)
      return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                         "allreduce: sendbuf and recvbuf overlap; pass ZCOLL_IN_PLACE to reduce "
                         "in place");
  }
  return ZCOLL_OK;
}

static zcoll_status_t check_args(const void *sendbuf, void *recvbuf, size_t count,
                                 zcoll_dtype_t dtype, zcoll_op_t op) {
  if ((unsigned)dtype >= ZCOLL_DTYPE_COUNT)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "allreduce: unknown dtype %d", (int)dtype);
  if ((unsigned)op >= ZCOLL_OP_COUNT && (unsigned)op < ZCOLL_OP_USER_BASE)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "allreduce: unknown op %d", (int)op);
  size_t dsize = zcoll__dsize(dtype);
  if (count > (size_t)PTRDIFF_MAX / dsize)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "allreduce: count %zu of %s overflows the address space", count,
                       zcoll_dtype_name(dtype));
  return count ? check_bufs(sendbuf, recvbuf, count * dsize) : ZCOLL_OK;
}

zcoll_status_t zcoll__allreduce_check(const void *sendbuf, void *recvbuf, size_t count,
                                      zcoll_dtype_t dtype, zcoll_op_t op) {
  return check_args(sendbuf, recvbuf, count, dtype, op);
}

/* The memo's shape again: only the buffers need checking, and the plan is the memo's. */
static int plan_from_memo(zcoll_comm_t *comm, size_t count, zcoll_dtype_t dtype, zcoll_op_t op,
                          int in_place, struct zcoll__plan *pl) {
  struct zcoll__plan_memo *mm = &comm->plan.memo;
  struct zcoll__sched_cache_entry *e = mm->entry;
  if (!e || e->gen != mm->gen || mm->count != count || mm->dtype != (int)dtype ||
      mm->op != (int)op || mm->in_place != in_place)
    return 0;
  e->stamp = ++comm->plan.ncolls;
  e->pins++;
  comm->plan.cache_mru = e;
  pl->s = &e->sched;
  pl->entry = e;
  pl->owned = NULL;
  pl->op = NULL; /* never a created op: those plans are not memoized */
  pl->desc = mm->desc;
  return 1;
}

/* A created op: referenced by the plan, checked against the dtype and count, and the
 * element the schedule moves (*n of them) widened to the op's. */
zcoll_status_t zcoll__plan_op(zcoll_comm_t *comm, const char *fn, size_t count, zcoll_dtype_t dtype,
                              zcoll_op_t op, struct zcoll__plan *pl, size_t *n) {
  const struct zcoll__op_def *d = zcoll__op_get(op, fn);
  if (!d) return ZCOLL_ERR_INVALID_ARG;
  pl->op = d;
  size_t dsize = zcoll__dsize(dtype), elem = d->elem_bytes ? d->elem_bytes : dsize;
  zcoll_status_t st = ZCOLL_OK;
  if (d->kind == ZCOLL_OPK_PREMUL && dtype != ZCOLL_FLOAT16 && dtype != ZCOLL_BFLOAT16 &&
      dtype != ZCOLL_FLOAT32 && dtype != ZCOLL_FLOAT64)
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: a premul sum needs a floating-point dtype, not %s",
                     fn, zcoll_dtype_name(dtype));
  else if (elem < dsize)
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                     "%s: op %d's elements (%zu bytes) are smaller than a %s element", fn, (int)op,
                     elem, zcoll_dtype_name(dtype));
  else if (elem > comm->slot_bytes)
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                     "%s: op %d's elements (%zu bytes) exceed a pipeline chunk (%zu bytes; "
                     "ZCOLL_CHUNK_BYTES)",
                     fn, (int)op, elem, comm->slot_bytes);
  else if (count * dsize % elem)
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                     "%s: %zu x %s is not a whole number of op %d's %zu-byte elements", fn, count,
                     zcoll_dtype_name(dtype), (int)op, elem);
  if (st != ZCOLL_OK) {
    zcoll__op_put(d);
    pl->op = NULL;
    return st;
  }
  *n = count * dsize / elem;
  return ZCOLL_OK;
}

zcoll_status_t zcoll__allreduce_plan(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                     size_t count, zcoll_dtype_t dtype, zcoll_op_t op,
                                     struct zcoll__plan *pl) {
  int in_place = sendbuf == ZCOLL_IN_PLACE;
  zcoll_status_t st;
  if (plan_from_memo(comm, count, dtype, op, in_place, pl)) {
    /* dtype, op and count passed check_args when the memo was made */
    if (count && (st = check_bufs(sendbuf, recvbuf, count * zcoll__dsize(dtype))) != ZCOLL_OK) {
      zcoll__plan_release(pl);
      return st;
    }
  } else {
    memset(pl, 0, sizeof(*pl));
    if ((st = check_args(sendbuf, recvbuf, count, dtype, op)) != ZCOLL_OK) return st;
    size_t n = count; /* in the schedule's elements: a created op's may be wider */
    if ((unsigned)op >= ZCOLL_OP_COUNT &&
        (st = zcoll__plan_op(comm, "allreduce", count, dtype, op, pl, &n)))
      return st;
    char why[256];
    why[0] = '\0'; /* not `= ""`: that clears all 256 bytes on every call */
    int algo = zcoll__pick_allreduce(comm, count, dtype,
                                     zcoll__log_level >= ZCOLL_LOG_INFO ? why : NULL, sizeof(why));
    if (pl->op && !pl->op->commutative && algo != comm->plan.chain_algo) {
      algo = comm->plan.chain_algo;
      snprintf(why, sizeof(why), "a non-commutative op combines in rank order");
    }
    int built = 0;
    if ((st = zcoll__sched_get(comm, ZCOLL_COLL_ALLREDUCE, algo, n, in_place, -1, pl, &built)) !=
        ZCOLL_OK) {
      zcoll__plan_release(pl);
      return st;
    }
    /* Each decision once: a schedule is built the first time a size is seen. */
    if (built)
      zcoll_log_info("allreduce of %zu x %s on %d ranks: %s (%s)", count, zcoll_dtype_name(dtype),
                     comm->size, zcoll__algos[algo]->name, why);
    pl->desc = (struct zcoll__coll_desc){
        .kind = ZCOLL_COLL_ALLREDUCE,
        .dtype = (uint8_t)dtype,
        .op = (uint8_t)op,
        .algo = (uint8_t)algo,
        /* only where it shapes the schedule: a per-rank setting */
        .arity = algo == comm->plan.tree_algo ? (uint16_t)comm->plan.algo_params.tree_arity : 0,
        .wire = zcoll__wire_of(comm, dtype, op, pl->op),
        .root = -1,
        .op_tag = pl->op ? zcoll__op_tag(pl->op) : 0,
        .count = count};
    /* A schedule of its own (every entry pinned) is not worth a memo; a created op's
     * value may name another op after a free. */
    if (pl->entry && !pl->op)
      comm->plan.memo = (struct zcoll__plan_memo){pl->entry, pl->entry->gen, count,   (int)dtype,
                                                  (int)op,   in_place,       pl->desc};
  }
  pl->src = in_place ? recvbuf : sendbuf;
  pl->dst = recvbuf;
  return ZCOLL_OK;
}

/* A created op's function may fail (zcoll_op_fail) on one rank after the others have all
 * they need from it: they would return OK from a collective that failed. So a collective
 * with a function ends with one more, of one byte, in which every rank needs every
 * other's contribution: a rank whose function failed has broken the communicator and
 * told the peers, who hear it here (ZCOLL_ERR_PEER_FAILED). It takes the next number on
 * every rank, and a kind of its own, so that no user call pairs with it. */
zcoll_status_t zcoll__agree_plan(zcoll_comm_t *comm, uint8_t *word, struct zcoll__plan *pl) {
  *word = 0;
  zcoll_status_t st = zcoll__allreduce_plan(comm, ZCOLL_IN_PLACE, word, 1, ZCOLL_UINT8, ZCOLL_MAX,
                                            pl);
  if (st == ZCOLL_OK) pl->desc.kind = ZCOLL_COLL_AGREE;
  return st;
}

int zcoll__plan_agrees(const zcoll_comm_t *comm, const struct zcoll__plan *pl) {
  /* Built-in ops and premul sums cannot fail in the middle: no agreement for them. */
  return pl->op && pl->op->kind == ZCOLL_OPK_USER && comm->size > 1;
}

zcoll_status_t zcoll__agree(zcoll_comm_t *comm) {
  uint8_t word;
  struct zcoll__plan pl;
  zcoll_status_t st = zcoll__agree_plan(comm, &word, &pl);
  if (st != ZCOLL_OK) return zcoll__plan_failed(comm, st);
  st = zcoll__execute(comm, pl.s, &pl.desc, pl.src, pl.dst);
  zcoll__plan_release(&pl);
  return st;
}

/* Every rank on one host, a small vector: through the mailboxes (core/onehost.h), no
 * schedule. Only for blocking calls, which a rank makes one at a time, as the mailboxes'
 * reuse needs. */
static zcoll_status_t onehost_run(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                  size_t count, zcoll_dtype_t dtype, zcoll_op_t op) {
  const struct zcoll__coll_desc d = {.kind = ZCOLL_COLL_ALLREDUCE,
                                     .dtype = (uint8_t)dtype,
                                     .op = (uint8_t)op,
                                     .algo = ZCOLL_ALGO_ONEHOST,
                                     .root = -1,
                                     .count = count};
  return zcoll__execute(comm, &comm->oh->sched, &d, sendbuf == ZCOLL_IN_PLACE ? recvbuf : sendbuf,
                        recvbuf);
}

static zcoll_status_t onehost(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                              zcoll_dtype_t dtype, zcoll_op_t op) {
  zcoll_status_t st = check_args(sendbuf, recvbuf, count, dtype, op);
  if (st != ZCOLL_OK) return zcoll__plan_failed(comm, st);
  return onehost_run(comm, sendbuf, recvbuf, count, dtype, op);
}

/* A large vector on one host: through the mailboxes if every rank's vectors lie in memory
 * the others can map (core/onehost_big.c), which a handshake there finds out; if not, every
 * rank learns it alike and runs the schedule, under the same collective number. */
static zcoll_status_t onehost_big(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                  size_t count, zcoll_dtype_t dtype, zcoll_op_t op, int *done) {
  *done = 1;
  zcoll_status_t st = check_args(sendbuf, recvbuf, count, dtype, op);
  if (st != ZCOLL_OK) return zcoll__plan_failed(comm, st);
  uint64_t ordinal = comm->ordinal;
  st = onehost_run(comm, sendbuf, recvbuf, count, dtype, op);
  if (st == ZCOLL_OK && comm->oh->fell_back) {
    comm->ordinal = ordinal; /* the schedule's run is this collective: it takes its number */
    *done = 0;
  }
  return st;
}

static zcoll_status_t allreduce(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                size_t count, zcoll_dtype_t dtype, zcoll_op_t op) {
  zcoll_status_t st = zcoll__check_usable(comm);
  if (st != ZCOLL_OK) return st;
  if (zcoll__onehost_fits(comm, count, dtype, op))
    return onehost(comm, sendbuf, recvbuf, count, dtype, op);
  if (zcoll__onehost_big_fits(comm, count, dtype, op)) {
    int done;
    st = onehost_big(comm, sendbuf, recvbuf, count, dtype, op, &done);
    if (done) return st;
  }
  struct zcoll__plan pl;
  if ((st = zcoll__allreduce_plan(comm, sendbuf, recvbuf, count, dtype, op, &pl)) != ZCOLL_OK)
    return zcoll__plan_failed(comm, st);
  st = zcoll__execute(comm, pl.s, &pl.desc, pl.src, pl.dst);
  int fn = zcoll__plan_agrees(comm, &pl);
  zcoll__plan_release(&pl);
  if (fn && st == ZCOLL_OK) st = zcoll__agree(comm);
  return st;
}

zcoll_status_t zcoll_allreduce(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                               zcoll_dtype_t dtype, zcoll_op_t op) {
  if (!comm) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "allreduce: comm is NULL");
  if (zcoll__group_open(comm))
    return zcoll__group_call(comm, "zcoll_allreduce", ZCOLL_COLL_ALLREDUCE, sendbuf, recvbuf, count,
                             dtype, op, -1, 0, NULL);
  zcoll_status_t st = zcoll__enter(comm, "zcoll_allreduce");
  if (st != ZCOLL_OK) return st; /* the thread inside owns comm->last_error */
  st = report(comm, allreduce(comm, sendbuf, recvbuf, count, dtype, op));
  zcoll__leave(comm);
  return st;
}

zcoll_status_t zcoll_allreduce_algorithm(zcoll_comm_t *comm, size_t count, zcoll_dtype_t dtype,
                                         zcoll_op_t op, const char **name) {
  if (!comm || !name)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_allreduce_algorithm: NULL argument");
  if ((unsigned)dtype >= ZCOLL_DTYPE_COUNT ||
      ((unsigned)op >= ZCOLL_OP_COUNT && !zcoll_op_name(op)))
    return report(
        comm, zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_allreduce_algorithm: unknown dtype or op"));
  if (zcoll__onehost_fits(comm, count, dtype, op)) {
    *name = "onehost"; /* a blocking call's; a request's is the schedule's, below */
    return ZCOLL_OK;
  }
  int algo = zcoll__pick_allreduce(comm, count, dtype, NULL, 0);
  const struct zcoll__op_def *d = (unsigned)op >= ZCOLL_OP_COUNT
                                      ? zcoll__op_get(op, "zcoll_allreduce_algorithm")
                                      : NULL;
  if (d && !d->commutative) algo = comm->plan.chain_algo;
  zcoll__op_put(d);
  *name = zcoll__algos[algo]->name;
  return ZCOLL_OK;
}

int zcoll_algorithm_names(const char **names, int max) {
  for (int i = 0; i < zcoll__nalgos && i < max && names; i++) names[i] = zcoll__algos[i]->name;
  return zcoll__nalgos;
}
