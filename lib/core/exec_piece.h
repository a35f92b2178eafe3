/*
 * exec_piece.h -- what a piece's data goes through on its way out, in, or across this
 * rank (executor.c): as it is; a premul sum scaling this rank's input; compressed
 * averaging's 16-bit wire type (ZCOLL_WIRE_DTYPE); a created op's function. One place for
 * every such rule, inline because the executor calls them per piece.
 */
#ifndef ZCOLL_EXEC_PIECE_H
#define ZCOLL_EXEC_PIECE_H

#include <string.h>

#include "exec.h"
#include "kernels/copy.h"
#include "kernels/op.h"
#include "kernels/reduce.h"

/* Does op o's input get scaled (a premul sum's, where it reads this rank's input)? */
static inline int zcoll__piece_scaled(const struct zcoll__run *r, const struct zcoll__sop *o) {
  return o->input && r->uop && r->uop->kind == ZCOLL_OPK_PREMUL;
}

/* Does o's data leave changed, so that it must go through staging? */
static inline int zcoll__piece_changed(const struct zcoll__run *r, const struct zcoll__sop *o) {
  return r->wire || zcoll__piece_scaled(r, o);
}

/* n elements of o from src into dst as they travel (dst: wire bytes). */
static inline void zcoll__piece_out(const struct zcoll__run *r, const struct zcoll__sop *o,
                                    char *dst, const char *src, size_t n) {
  int scaled = zcoll__piece_scaled(r, o);
  if (r->wire)
    zcoll__wire_pack(r->wire, dst, src, n, scaled ? r->uop->scalar : 1.0);
  else if (scaled)
    zcoll__scale_copy(r->dtype, dst, src, n, r->uop->scalar);
  else if (n)
    zcoll__copy(dst, src, n * r->dsize);
}

/* n elements that arrived (data, as they travel) copied into dst. */
static inline void zcoll__piece_in(const struct zcoll__run *r, char *dst, const char *data,
                                   size_t n) {
  if (r->wire)
    zcoll__wire_unpack(r->wire, dst, data, n);
  else if (n)
    zcoll__copy(dst, data, n * r->dsize);
}

/* n elements of local op o copied from src to dst. Compressed averaging rounds them as
 * they would travel: what may be a result is then what the other ranks hold (later steps
 * round it anyway). */
static inline void zcoll__piece_local(const struct zcoll__run *r, const struct zcoll__sop *o,
                                      char *dst, const char *src, size_t n) {
  int scaled = zcoll__piece_scaled(r, o);
  if (r->wire)
    zcoll__wire_round(r->wire, dst, src, n, scaled ? r->uop->scalar : 1.0);
  else if (scaled) /* p == 1: the input, scaled */
    zcoll__scale_copy(r->dtype, dst, src, n, r->uop->scalar);
  else
    zcoll__copy(dst, src, n * r->dsize);
}

/* dst = acc (op) data over n elements, data as it arrived; divisor: AVG's, on the step
 * that completes the range. An error if a created op's function failed (zcoll_op_fail):
 * then dst is garbage and must not be used. */
static inline zcoll_status_t zcoll__piece_reduce(const struct zcoll__run *r,
                                                 const struct zcoll__sop *o, char *dst,
                                                 const char *acc, const char *data, size_t n,
                                                 int divisor) {
  const struct zcoll__op_def *d = r->uop;
  if (r->wire) {
    zcoll__wire_reduce(r->wire, dst, acc, data, n, zcoll__piece_scaled(r, o) ? d->scalar : 1.0,
                       divisor, o->final);
    return ZCOLL_OK;
  }
  if (!d) {
    zcoll__reduce(r->dtype, r->op, dst, acc, data, n, divisor);
    return ZCOLL_OK;
  }
  if (d->kind == ZCOLL_OPK_PREMUL) {
    if (o->input)
      zcoll__reduce_premul(r->dtype, dst, acc, data, n, d->scalar);
    else
      zcoll__reduce(r->dtype, ZCOLL_SUM, dst, acc, data, n, 0);
    return ZCOLL_OK;
  }
  size_t bytes = n * r->dsize;
  /* MPI's form, inout = in (op) inout: in is the peer's (in rank order: the ranks before
   * this one, on the chain), inout this rank's operand. */
  if (dst != acc && bytes) memcpy(dst, acc, bytes);
  return zcoll__op_call(d, data, dst, bytes / zcoll__dsize(r->dtype), r->dtype, r->comm->rank);
}

#endif
