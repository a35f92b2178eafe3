/*
 * op.h -- ops created at run time (zcoll_op_create, zcoll_op_create_premul_sum): the
 * process's registry and how the executor applies them.
 */
#ifndef ZCOLL_OP_H
#define ZCOLL_OP_H

#include <stddef.h>
#include <stdint.h>

#include "zcoll.h"

/* Created ops are ZCOLL_OP_USER_BASE + slot: past the built-in ones, and within the 8
 * bits that a collective's description carries. */
#define ZCOLL_OP_USER_BASE 64
_Static_assert(ZCOLL_OP_USER_BASE + ZCOLL_OP_MAX_USER <= 256, "op values must fit 8 bits");
_Static_assert(ZCOLL_OP_COUNT <= ZCOLL_OP_USER_BASE, "built-in ops overlap created ones");

enum { ZCOLL_OPK_FREE, ZCOLL_OPK_USER, ZCOLL_OPK_PREMUL };

struct zcoll__op_def {
  uint8_t kind; /* ZCOLL_OPK_* */
  uint8_t commutative;
  uint32_t elem_bytes; /* user ops: the function never sees part of one (0: the dtype's) */
  zcoll_user_fn_t fn;
  void *user;
  double scalar; /* premul */
  int refs;      /* plans made with the op (calls in progress, requests) */
};

/* A created op's definition with a reference taken, or NULL (with the reason recorded
 * for `who`) if op is not one alive now. */
const struct zcoll__op_def *zcoll__op_get(zcoll_op_t op, const char *who);
void zcoll__op_put(const struct zcoll__op_def *d);
/* The definition of a created op that a plan holds a reference to (no lock needed). */
const struct zcoll__op_def *zcoll__op_def_of(zcoll_op_t op);
/* What ranks must agree on besides the op's value: its kind, commutativity and element
 * size, for the collective's description. */
uint32_t zcoll__op_tag(const struct zcoll__op_def *d);
/* For messages: "user op 64 (non-commutative)", "premul_sum op 65", "sum", ... */
void zcoll__op_describe(char *buf, size_t len, int op, uint32_t tag);

/* A user op's function over count elements of dtype (inout = in op inout); its failure,
 * if it called zcoll_op_fail. */
zcoll_status_t zcoll__op_call(const struct zcoll__op_def *d, const void *in, void *inout,
                              size_t count, zcoll_dtype_t dtype, int rank);

#endif
