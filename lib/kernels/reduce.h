/*
 * reduce.h -- element-wise reduction kernels for every dtype x op.
 *
 * The executor calls these on pipeline chunks; they are the only place where data is
 * combined, so they are written for the compiler's vectorizer and dispatched once per
 * chunk, not per element.
 */
#ifndef ZCOLL_REDUCE_H
#define ZCOLL_REDUCE_H

#include <stddef.h>
#include "zcoll.h"

/*
 * dst[i] = a[i] op b[i] for i in [0, n).
 *
 * dst may be the same pointer as a or as b (in-place accumulation); otherwise the three
 * ranges must not overlap. Pointers need no particular alignment.
 *
 * divisor: 0 for an intermediate step. For ZCOLL_AVG, a non-zero divisor marks the
 * final step of the reduction: the sum is divided by `divisor` (the rank count) before
 * it is stored, in the same pass. For the other ops the divisor is ignored.
 *
 * float16 and bfloat16 are widened to float32, combined (and divided) in float32, and
 * rounded to nearest-even once when stored.
 */
void zcoll__reduce(zcoll_dtype_t dtype, zcoll_op_t op, void *dst, const void *a, const void *b,
                   size_t n, int divisor);

/* dst[i] = src[i] / divisor, for ZCOLL_AVG results that were never combined (p == 1
 * has divisor 1 and needs no call). dst may equal src. */
void zcoll__reduce_scale(zcoll_dtype_t dtype, void *dst, const void *src, size_t n, int divisor);

/* The premul sum (zcoll_op_create_premul_sum), floating-point dtypes only: dst[i] =
 * a[i] * scalar + b[i], where a is this rank's input and b a peer's partial sum; and
 * dst[i] = src[i] * scalar where the input is only copied (sent, or p == 1). The scalar
 * is rounded to the dtype's compute precision (float32 for 16-bit floats). dst may
 * equal a, b or src. */
void zcoll__reduce_premul(zcoll_dtype_t dtype, void *dst, const void *a, const void *b, size_t n,
                          double scalar);
void zcoll__scale_copy(zcoll_dtype_t dtype, void *dst, const void *src, size_t n, double scalar);

/*
 * Compressed averaging (ZCOLL_WIRE_DTYPE): float32 data travelling as wire, ZCOLL_BFLOAT16
 * or ZCOLL_FLOAT16, each conversion rounding to nearest-even. scalar multiplies this
 * rank's input (a premul sum's), else is 1.
 *   pack:   dst (wire) = round(src * scalar)
 *   unpack: dst (float32) = src (wire), exactly
 *   round:  dst (float32) = round(src * scalar), a local copy as it would travel
 *   reduce: dst (float32) = round(acc * scalar) + data, divided by divisor if non-zero
 *           (AVG's last step), rounded again if final (the step that completes the
 *           reduction: every rank then holds what the others receive).
 * dst may equal acc or src (float32 in place); the wire ranges must not overlap others.
 */
void zcoll__wire_pack(zcoll_dtype_t wire, void *dst, const void *src, size_t n, double scalar);
void zcoll__wire_unpack(zcoll_dtype_t wire, void *dst, const void *src, size_t n);
void zcoll__wire_round(zcoll_dtype_t wire, void *dst, const void *src, size_t n, double scalar);
void zcoll__wire_reduce(zcoll_dtype_t wire, void *dst, const void *acc, const void *data, size_t n,
                        double scalar, int divisor, int final);

/* Name of the instruction-set variant the kernels dispatch to on this CPU
 * ("avx512", "avx2", "generic"), for zcoll_info and logs. */
const char *zcoll__reduce_isa(void);

#endif
