/*
 * partial_make.c -- zcoll_allreduce_partial_init's collective part: every rank's arguments
 * checked alike (a rank that refuses its own tells the others, who fail too, naming it),
 * then the request and its home words made (partial.c runs it).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/log.h"
#include "partial_impl.h"
#include "progress_thread.h"

uint64_t zcoll__partial_first_ticket;

/* ---- the parent's list (partial.h) ---- */

/* A request may be freed on another thread than its parent's calls run on. */
static pthread_mutex_t family_lock = PTHREAD_MUTEX_INITIALIZER;

void zcoll__partial_adopt(zcoll_comm_t *comm, zcoll_request_t *req) {
  struct zcoll__partial *P = zcoll__partial_of(req);
  pthread_mutex_lock(&family_lock);
  P->parent = comm;
  P->sib = comm->coll.partials;
  comm->coll.partials = P;
  pthread_mutex_unlock(&family_lock);
}

void zcoll__partial_orphan(struct zcoll__partial *P) {
  pthread_mutex_lock(&family_lock);
  for (struct zcoll__partial **at = P->parent ? &P->parent->coll.partials : NULL; at && *at;
       at = &(*at)->sib)
    if (*at == P) {
      *at = P->sib;
      break;
    }
  P->parent = NULL;
  pthread_mutex_unlock(&family_lock);
}

int zcoll__partials_busy(zcoll_comm_t *comm) {
  int n = 0;
  pthread_mutex_lock(&family_lock);
  for (struct zcoll__partial *P = comm->coll.partials; P; P = P->sib)
    n += zcoll__partial_busy(P->pc) && P->pc->broken == ZCOLL_OK;
  pthread_mutex_unlock(&family_lock);
  return n;
}

void zcoll__partials_free_left(zcoll_comm_t *comm, int revoke) {
  for (;;) {
    pthread_mutex_lock(&family_lock);
    struct zcoll__partial *P = comm->coll.partials;
    if (P) {
      comm->coll.partials = P->sib;
      P->parent = NULL;
    }
    pthread_mutex_unlock(&family_lock);
    if (!P) return;
    zcoll_comm_t *pc = P->pc;
    int quiet = revoke || zcoll__partial_busy(pc);
    /* Revoked, its offer in flight ends with an error and the free skips the flush and the
     * barrier; what the revoke makes fail was the caller's choice, not news to log. */
    if (quiet) {
      zcoll__log_mute(1);
      zcoll_comm_revoke(pc);
      zcoll__partial_test(P);
    }
    zcoll_status_t st = zcoll__partial_free(P);
    if (quiet) zcoll__log_mute(0);
    if (st != ZCOLL_OK && !quiet)
      zcoll_log_info("a partial request left at destroy: its free failed: %s", zcoll__last_error());
  }
}

/* Rank 0 moves the counter and the segment to zcoll__partial_first_ticket before anyone
 * offers (the barrier); every rank's epoch starts there. */
static zcoll_status_t first_ticket(struct zcoll__partial *P) {
  uint64_t t = zcoll__partial_first_ticket, old;
  zcoll_status_t st = ZCOLL_OK;
  if (P->rank == 0 && (st = zcoll__phome_add(&P->home, W_TICKETS, t, &old)) == ZCOLL_OK)
    st = zcoll__phome_add(&P->home, W_SEG, t, &old);
  P->base_t = t;
  return st == ZCOLL_OK ? zcoll_barrier(P->pc) : st;
}

/* What each rank asks for, compared across ranks: the same quorum, count, dtype and op. */
struct ask {
  int32_t quorum, dtype, op, bad;
  uint64_t count;
};

static zcoll_status_t check_args(const void *sendbuf, void *recvbuf, size_t count,
                                 zcoll_dtype_t dtype, zcoll_op_t op, int quorum, int p) {
  const char *fn = "zcoll_allreduce_partial_init";
  if ((unsigned)dtype >= ZCOLL_DTYPE_COUNT)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: unknown dtype %d", fn, (int)dtype);
  if ((unsigned)op >= ZCOLL_OP_COUNT)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "%s: op %d is not a built-in op (created ops are not supported here)", fn,
                       (int)op);
  if (quorum < 1 || quorum > p)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: quorum %d is not within 1..%d (the ranks)", fn,
                       quorum, p);
  size_t dsize = zcoll__dsize(dtype);
  if (count > (size_t)PTRDIFF_MAX / dsize)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: count %zu overflows the address space", fn,
                       count);
  if (count && (!recvbuf || !sendbuf))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                       recvbuf ? "sendbuf" : "recvbuf");
  uintptr_t s = (uintptr_t)sendbuf, r = (uintptr_t)recvbuf, b = count * dsize;
  if (count && sendbuf != ZCOLL_IN_PLACE && s < r + b && r < s + b)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "%s: sendbuf and recvbuf overlap; pass ZCOLL_IN_PLACE to reduce in place",
                       fn);
  return ZCOLL_OK;
}

/* Every rank's ask against rank 0's: MISMATCH naming the first that differs. */
static zcoll_status_t compare(const struct ask *all, int p, zcoll_status_t mine) {
  for (int r = 0; r < p; r++)
    if (all[r].bad)
      return mine != ZCOLL_OK ? mine
                              : zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                                            "zcoll_allreduce_partial_init: rank %d refused its "
                                            "arguments",
                                            r);
  for (int r = 1; r < p; r++) {
    if (all[r].quorum != all[0].quorum)
      return zcoll__fail(ZCOLL_ERR_MISMATCH,
                         "zcoll_allreduce_partial_init: rank %d asks for a quorum of %d, rank 0 "
                         "of %d",
                         r, (int)all[r].quorum, (int)all[0].quorum);
    if (all[r].count != all[0].count || all[r].dtype != all[0].dtype || all[r].op != all[0].op)
      return zcoll__fail(ZCOLL_ERR_MISMATCH,
                         "zcoll_allreduce_partial_init: rank %d asks for %llu x %s (op %d), rank 0 "
                         "for %llu x %s (op %d)",
                         r, (unsigned long long)all[r].count,
                         zcoll_dtype_name((zcoll_dtype_t)all[r].dtype), (int)all[r].op,
                         (unsigned long long)all[0].count,
                         zcoll_dtype_name((zcoll_dtype_t)all[0].dtype), (int)all[0].op);
  }
  return ZCOLL_OK;
}

zcoll_status_t zcoll__partial_make(zcoll_comm_t *pc, const void *sendbuf, void *recvbuf,
                                   size_t count, zcoll_dtype_t dtype, zcoll_op_t op, int quorum,
                                   zcoll_status_t (*destroy)(zcoll_comm_t *pc),
                                   zcoll_request_t **req) {
  struct zcoll__partial *P = calloc(1, sizeof(*P));
  int p = pc->size;
  zcoll_status_t local = check_args(sendbuf, recvbuf, count, dtype, op, quorum, p);
  if (local == ZCOLL_OK && !P)
    local = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "zcoll_allreduce_partial_init: out of memory");
  /* The pump added at the end must not fail on one rank after all have agreed: a full
   * table is refused here, in the agreement, where every rank hears of it. */
  if (local == ZCOLL_OK && pc->progress.npumps == ZCOLL_PUMPS_MAX)
    local = zcoll__fail(ZCOLL_ERR_NO_MEMORY,
                        "zcoll_allreduce_partial_init: the progress thread's %d pumps are taken",
                        ZCOLL_PUMPS_MAX);
  struct ask mine = {quorum, (int32_t)dtype, (int32_t)op, local != ZCOLL_OK, count};
  struct ask *all = malloc(sizeof(*all) * (size_t)p);
  char why[512];
  snprintf(why, sizeof(why), "%s", zcoll__last_error());
  /* every rank takes part in what follows, whatever failed here: the others wait in it */
  zcoll_status_t st = zcoll_allgather(pc, all ? &mine : NULL, all, sizeof(mine) / 4, ZCOLL_INT32);
  if (st == ZCOLL_OK && all) {
    if (local != ZCOLL_OK) zcoll__record_error(local, "%s", why);
    st = compare(all, p, local);
  }
  free(all);
  if (st == ZCOLL_OK && !P) st = local; /* not so: a rank without P refused (local) */
  if (st == ZCOLL_OK && P) {
    P->pc = pc;
    P->destroy = destroy;
    P->p = p;
    P->rank = pc->rank;
    P->in_place = sendbuf == ZCOLL_IN_PLACE;
    P->src = P->in_place ? recvbuf : sendbuf;
    P->dst = recvbuf;
    P->count = count;
    P->dtype = dtype;
    P->op = op;
    P->quorum = quorum;
    P->bytes = count * zcoll__dsize(dtype);
    P->need_flush = 1;
    P->members = malloc(sizeof(int) * (size_t)p);
    P->keep = P->bytes ? malloc(P->bytes) : NULL;
    if (!P->members || (P->bytes && !P->keep))
      st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "zcoll_allreduce_partial_init: out of memory");
    st = zcoll__phome_setup(&P->home, pc, W_WORDS(p), st);
    if (st == ZCOLL_OK && zcoll__partial_first_ticket) st = first_ticket(P);
  }
  if (st == ZCOLL_OK && !(P->q = zcoll__request_wrap(pc, &zcoll__partial_request_ops, P)))
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "zcoll_allreduce_partial_init: out of memory");
  if (st != ZCOLL_OK) {
    if (P && P->pc) zcoll__partial_release(P);
    free(P);
    return st;
  }
  /* pc's progress thread (ZCOLL_PROGRESS=thread) reads pc->coll.partial under
   * pc->progress.mu: the request appears to it whole, never half made. */
  if (pc->progress.on) pthread_mutex_lock(&pc->progress.mu);
  st = zcoll__pump_add(pc, zcoll__partial_pump, zcoll__partial_busy, pc);
  if (st == ZCOLL_OK) pc->coll.partial = P;
  if (pc->progress.on) pthread_mutex_unlock(&pc->progress.mu);
  if (st != ZCOLL_OK) {
    zcoll__partial_release(P);
    zcoll__request_forget(P->q);
    free(P);
    return st;
  }
  *req = P->q;
  return ZCOLL_OK;
}
