/* op.c -- ops created at run time: a registry per process, and their reduction. */
#include "op.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "reduce.h"

/* Ops are process-wide, like MPI_Op_create's (an op is a function, not a property of a
 * communicator); creation is rare, so one lock is enough. A slot is only rewritten
 * while nothing references it, so a holder of a reference reads it without the lock. */
static pthread_mutex_t ops_mu = PTHREAD_MUTEX_INITIALIZER;
static struct zcoll__op_def ops[ZCOLL_OP_MAX_USER];

static zcoll_status_t add(const struct zcoll__op_def *d, zcoll_op_t *op, const char *who) {
  pthread_mutex_lock(&ops_mu);
  int i = 0;
  while (i < ZCOLL_OP_MAX_USER && ops[i].kind != ZCOLL_OPK_FREE) i++;
  if (i == ZCOLL_OP_MAX_USER) {
    pthread_mutex_unlock(&ops_mu);
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "%s: %d ops exist already (ZCOLL_OP_MAX_USER)", who,
                       ZCOLL_OP_MAX_USER);
  }
  ops[i] = *d;
  ops[i].refs = 0;
  pthread_mutex_unlock(&ops_mu);
  *op = (zcoll_op_t)(ZCOLL_OP_USER_BASE + i);
  return ZCOLL_OK;
}

zcoll_status_t zcoll_op_create(zcoll_user_fn_t fn, void *user, int commutative, size_t elem_bytes,
                               zcoll_op_t *op) {
  if (!fn || !op) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_op_create: fn or op is NULL");
  if (elem_bytes > 4096 || (elem_bytes & (elem_bytes - 1)))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "zcoll_op_create: elem_bytes %zu is not 0 or a power of two up to 4096",
                       elem_bytes);
  struct zcoll__op_def d = {
      ZCOLL_OPK_USER, (uint8_t) !!commutative, (uint32_t)elem_bytes, fn, user, 0, 0};
  return add(&d, op, "zcoll_op_create");
}

zcoll_status_t zcoll_op_create_premul_sum(double scalar, zcoll_op_t *op) {
  if (!op) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_op_create_premul_sum: op is NULL");
  if (!isfinite(scalar))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_op_create_premul_sum: scalar %g is not finite",
                       scalar);
  struct zcoll__op_def d = {ZCOLL_OPK_PREMUL, 1, 0, NULL, NULL, scalar, 0};
  return add(&d, op, "zcoll_op_create_premul_sum");
}

static struct zcoll__op_def *slot_of(zcoll_op_t op) {
  unsigned i = (unsigned)op - ZCOLL_OP_USER_BASE;
  return (unsigned)op >= ZCOLL_OP_USER_BASE && i < ZCOLL_OP_MAX_USER ? &ops[i] : NULL;
}

zcoll_status_t zcoll_op_free(zcoll_op_t op) {
  struct zcoll__op_def *d = slot_of(op);
  if (!d) {
    if ((unsigned)op < ZCOLL_OP_COUNT)
      return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_op_free: %s is a built-in op",
                         zcoll_op_name(op));
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_op_free: unknown op %d", (int)op);
  }
  pthread_mutex_lock(&ops_mu);
  zcoll_status_t st = ZCOLL_OK;
  if (d->kind == ZCOLL_OPK_FREE)
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_op_free: op %d was not created, or freed",
                     (int)op);
  else if (d->refs)
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                     "zcoll_op_free: op %d is in use by %d request(s) or call(s); free them first",
                     (int)op, d->refs);
  else
    memset(d, 0, sizeof(*d));
  pthread_mutex_unlock(&ops_mu);
  return st;
}

const struct zcoll__op_def *zcoll__op_get(zcoll_op_t op, const char *who) {
  struct zcoll__op_def *d = slot_of(op);
  if (d) {
    pthread_mutex_lock(&ops_mu);
    if (d->kind == ZCOLL_OPK_FREE)
      d = NULL;
    else
      d->refs++;
    pthread_mutex_unlock(&ops_mu);
  }
  if (!d) zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: unknown op %d", who, (int)op);
  return d;
}

const struct zcoll__op_def *zcoll__op_def_of(zcoll_op_t op) { return slot_of(op); }

void zcoll__op_put(const struct zcoll__op_def *d) {
  if (!d) return;
  pthread_mutex_lock(&ops_mu);
  ((struct zcoll__op_def *)d)->refs--;
  pthread_mutex_unlock(&ops_mu);
}

static const char *created_name(zcoll_op_t op) {
  const struct zcoll__op_def *d = slot_of(op);
  if (!d) return NULL;
  pthread_mutex_lock(&ops_mu);
  int kind = d->kind;
  pthread_mutex_unlock(&ops_mu);
  return kind == ZCOLL_OPK_USER ? "user" : kind == ZCOLL_OPK_PREMUL ? "premul_sum" : NULL;
}

const char *zcoll_op_name(zcoll_op_t op) {
  static const char *const names[ZCOLL_OP_COUNT] = {"sum", "prod", "min", "max", "avg"};
  return (unsigned)op < ZCOLL_OP_COUNT ? names[op] : created_name(op);
}

uint32_t zcoll__op_tag(const struct zcoll__op_def *d) {
  uint32_t log2e = d->elem_bytes ? (uint32_t)__builtin_ctz(d->elem_bytes) + 1 : 0;
  return d->kind | (uint32_t)d->commutative << 4 | log2e << 8;
}

void zcoll__op_describe(char *buf, size_t len, int op, uint32_t tag) {
  if (op < ZCOLL_OP_COUNT) {
    snprintf(buf, len, "%s", zcoll_op_name((zcoll_op_t)op));
    return;
  }
  unsigned kind = tag & 0xf, log2e = tag >> 8 & 0xff;
  if (kind == ZCOLL_OPK_PREMUL) {
    snprintf(buf, len, "premul_sum op %d", op);
    return;
  }
  char elem[32] = "";
  if (log2e) snprintf(elem, sizeof(elem), ", %u-byte elements", 1u << (log2e - 1));
  snprintf(buf, len, "%s op %d (%scommutative%s)", kind == ZCOLL_OPK_USER ? "user" : "?", op,
           tag >> 4 & 1 ? "" : "non-", elem);
}

/* Set by zcoll_op_fail on the thread that runs an op's function, read right after it. */
static _Thread_local int fn_failed;
static _Thread_local char fn_why[200];

void zcoll_op_fail(const char *why) {
  fn_failed = 1;
  snprintf(fn_why, sizeof(fn_why), "%s", why ? why : "(no reason given)");
}

zcoll_status_t zcoll__op_call(const struct zcoll__op_def *d, const void *in, void *inout,
                              size_t count, zcoll_dtype_t dtype, int rank) {
  fn_failed = 0;
  d->fn(in, inout, count, dtype, d->user);
  if (!fn_failed) return ZCOLL_OK;
  fn_failed = 0;
  /* The reason first: a binding's names the op by its function ("op maxloc raised ..."),
   * which says more than the number. */
  return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "rank %d: %s (the function of op %d failed)", rank,
                     fn_why, (int)(d - ops) + ZCOLL_OP_USER_BASE);
}
