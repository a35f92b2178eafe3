/*
 * reduce_half.h -- float16 and bfloat16 <-> float32, bit-exact, round-to-nearest-even.
 *
 * Written so that the loops calling them vectorize even for the baseline ISA: no
 * branches, and every floating-point operation is computed unconditionally with its
 * result picked by a bit mask. (With ?: GCC sinks the floating-point operation into a
 * branch arm and then, under the default -ftrapping-math, refuses to if-convert it.)
 * The only floating-point operations are exact, except for the add that rounds a
 * float16 subnormal, which rounds in the current (default: nearest-even) mode like the
 * reduction arithmetic itself. NaNs stay NaN and become quiet, keeping the payload
 * bits that fit, as the F16C instructions do, so that every variant stores the same
 * bits.
 */
#ifndef ZCOLL_REDUCE_HALF_H
#define ZCOLL_REDUCE_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t zcoll__f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float zcoll__f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* All ones if c, else zero; and a select by such a mask. */
static inline uint32_t zcoll__mask32(int c) { return 0u - (uint32_t)c; }
static inline uint32_t zcoll__select32(uint32_t mask, uint32_t yes, uint32_t no) {
  return (yes & mask) | (no & ~mask);
}

static inline float zcoll__half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t em = h & 0x7fffu;
  /* Rebiasing the exponent (15 -> 127) is an integer add for normal numbers. */
  uint32_t normal = (em << 13) + ((uint32_t)(127 - 15) << 23);
  uint32_t special = (em << 13) | 0x7f800000u;
  /* A subnormal half is m * 2^-24 with m < 1024; both conversions are exact and the
   * product is a normal float, so no denormal is ever fed to the FPU. */
  uint32_t sub = zcoll__f32_bits((float)(int32_t)em * 0x1p-24f);
  uint32_t r = zcoll__select32(zcoll__mask32(em >= 0x7c00u), special,
                               zcoll__select32(zcoll__mask32(em < 0x0400u), sub, normal));
  return zcoll__f32_from_bits(r | sign);
}

static inline uint16_t zcoll__float_to_half(float f) {
  uint32_t x = zcoll__f32_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  /* Normal result: rebias, then round the 13 dropped bits to nearest-even. A carry out
   * of the mantissa correctly bumps the exponent, up to 0x7c00 (infinity). */
  uint32_t normal = (x + ((uint32_t)(15 - 127) << 23) + 0x0fffu + ((x >> 13) & 1u)) >> 13;
  /* Subnormal result (|f| < 2^-14): in 0.5 + |f| the float's last bit is worth 2^-24,
   * a float16 subnormal's unit, so the add does the rounding and the low bits of the
   * sum are the float16 encoding (0x400 when it rounds up to the smallest normal). A
   * float denormal input, even flushed by DAZ, correctly gives 0. */
  uint32_t sub = zcoll__f32_bits(zcoll__f32_from_bits(x) + 0.5f) - 0x3f000000u;
  uint32_t nan = 0x7e00u | ((x >> 13) & 0x03ffu);
  /* x < 2^31, so signed compares are exact (SSE2/AVX2 have no unsigned ones).
   * 0x477ff000 is 65520, the first value that rounds to infinity. */
  int32_t xs = (int32_t)x;
  uint32_t r = zcoll__select32(
      zcoll__mask32(xs > 0x7f800000), nan,
      zcoll__select32(zcoll__mask32(xs >= 0x477ff000), 0x7c00u,
                      zcoll__select32(zcoll__mask32(xs < 0x38800000), sub, normal)));
  return (uint16_t)(r | sign);
}

static inline float zcoll__bf16_to_float(uint16_t h) {
  return zcoll__f32_from_bits((uint32_t)h << 16);
}

/* The bfloat16 nearest to f, in the upper 16 bits of the result (the lower 16 bits are
 * garbage): a kernel that keeps pairs of bfloat16 in 32-bit lanes then needs no shift for
 * the upper element of a pair. */
static inline uint32_t zcoll__float_to_bf16_hi(float f) {
  uint32_t x = zcoll__f32_bits(f);
  /* Adding 0x7fff plus the lowest kept bit rounds to nearest-even; overflow past the
   * largest finite value lands on infinity, as it should. A NaN must not take that path
   * (it could carry into infinity), so it is truncated and made quiet instead. Both
   * sides of the NaN test are below 2^31, so a signed compare (one instruction on
   * AVX2, which has no unsigned one) gives the same answer. */
  uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);
  uint32_t nan = x | 0x00400000u;
  return (int32_t)(x & 0x7fffffffu) > 0x7f800000 ? nan : rounded;
}

static inline uint16_t zcoll__float_to_bf16(float f) {
  return (uint16_t)(zcoll__float_to_bf16_hi(f) >> 16);
}

#endif
