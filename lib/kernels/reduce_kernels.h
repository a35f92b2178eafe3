/*
 * reduce_kernels.h -- the reduction kernels, written once and compiled once per
 * instruction-set variant. Not a normal header: lib/kernels/reduce.c includes it several times,
 * each time after defining
 *
 *   ZR_ISA     suffix of the generated function names (generic, avx2, avx512)
 *   ZR_ATTR    the function attributes of the variant (its target("...") list)
 *   ZR_F16VEC  0: float16 through the portable conversions of reduce_half.h;
 *              256 / 512: float16 through the F16C / AVX-512 conversion instructions
 *
 * and it defines zr_reduce_<ZR_ISA>(), which zcoll__reduce and zcoll__reduce_scale call.
 *
 * Loads and stores go through memcpy on byte pointers: pointers may have any alignment,
 * and GCC turns each memcpy into one unaligned (vector) load or store. The loops have no
 * restrict: dst may equal a or b, and GCC's runtime overlap check lets an exact alias
 * through to the vector loop (the read of element i precedes its write).
 */

#define ZR_CAT2_(x, y) x##_##y
#define ZR_CAT_(x, y) ZR_CAT2_(x, y)
#define ZR_FN(name) ZR_CAT_(name, ZR_ISA)

/* dst[i] = EXPR(x, y) where x = a[i] and y = b[i] are loaded as LT, the result stored as
 * ST. Unused operands (y in scale) are dead loads that the compiler drops. */
#define ZR_LOOP(LT, ST, EXPR)                     \
  for (size_t i_ = 0; i_ < n; i_++) {             \
    LT x, y;                                      \
    ST r_;                                        \
    memcpy(&x, a + i_ * sizeof(LT), sizeof(LT));  \
    memcpy(&y, b + i_ * sizeof(LT), sizeof(LT));  \
    (void)x;                                      \
    (void)y;                                      \
    r_ = (ST)(EXPR);                              \
    memcpy(d + i_ * sizeof(ST), &r_, sizeof(ST)); \
  }

/* Integer AVG: a quotient of values below 2^32 in magnitude is computed exactly by
 * double division followed by truncation (the rounding error of the division is below
 * 1/divisor, the distance from a non-integer quotient to the next integer), and unlike
 * integer division it vectorizes. The same holds in float for 8-bit values, at twice
 * the lanes (a divisor above 2^24 is then inexact, but any such quotient is 0 anyway).
 * 64-bit values do not fit a double: divide them. */
#define ZR_DIV_BYTE(T, v) ((T)((float)(v) / (float)div))
#define ZR_DIV_SMALL(T, v) ((T)((double)(v) / (double)div))
#define ZR_DIV_WIDE(T, v) ((T)((v) / (T)div))

/* Sum and product wrap: they are done in the unsigned type (no signed overflow) and
 * stored as such; MIN/MAX compare in the type's own signedness. For AVG the wrapped sum
 * is reinterpreted in the signed type before dividing (GCC converts modulo 2^N). */
#define ZR_INT_KERNEL(SUF, T, U, DIVIDE)                                                      \
  static ZR_ATTR void ZR_FN(zr_##SUF)(int op, unsigned char *d, const unsigned char *a,       \
                                      const unsigned char *b, size_t n, int div, double sc) { \
    (void)sc;                                                                                 \
    switch (op) {                                                                             \
    case ZCOLL_SUM: ZR_LOOP(U, U, x + y) break;                                               \
    case ZCOLL_PROD: ZR_LOOP(U, U, (x * y)) break;                                            \
    case ZCOLL_MIN: ZR_LOOP(T, T, x < y ? x : y) break;                                       \
    case ZCOLL_MAX: ZR_LOOP(T, T, x > y ? x : y) break;                                       \
    case ZCOLL_AVG: ZR_LOOP(U, T, DIVIDE(T, (T)(U)(x + y))) break;                            \
    case ZR_OP_SCALE: ZR_LOOP(T, T, DIVIDE(T, x)) break;                                      \
    default: break;                                                                           \
    }                                                                                         \
  }

ZR_INT_KERNEL(i8, int8_t, uint8_t, ZR_DIV_BYTE)
ZR_INT_KERNEL(u8, uint8_t, uint8_t, ZR_DIV_BYTE)
ZR_INT_KERNEL(i32, int32_t, uint32_t, ZR_DIV_SMALL)
ZR_INT_KERNEL(u32, uint32_t, uint32_t, ZR_DIV_SMALL)
ZR_INT_KERNEL(i64, int64_t, uint64_t, ZR_DIV_WIDE)
ZR_INT_KERNEL(u64, uint64_t, uint64_t, ZR_DIV_WIDE)

/* Division, not multiplication by 1/divisor: AVG must equal (a+b)/p computed in T. */
#define ZR_FLOAT_KERNEL(SUF, T)                                                               \
  static ZR_ATTR void ZR_FN(zr_##SUF)(int op, unsigned char *d, const unsigned char *a,       \
                                      const unsigned char *b, size_t n, int div, double sc) { \
    const T dv = (T)div, sv = (T)sc;                                                          \
    switch (op) {                                                                             \
    case ZCOLL_SUM: ZR_LOOP(T, T, x + y) break;                                               \
    case ZCOLL_PROD: ZR_LOOP(T, T, (x * y)) break;                                            \
    case ZCOLL_MIN: ZR_LOOP(T, T, x < y ? x : y) break;                                       \
    case ZCOLL_MAX: ZR_LOOP(T, T, x > y ? x : y) break;                                       \
    case ZCOLL_AVG: ZR_LOOP(T, T, (x + y) / dv) break;                                        \
    case ZR_OP_SCALE: ZR_LOOP(T, T, x / dv) break;                                            \
    case ZR_OP_PREMUL: ZR_LOOP(T, T, (x * sv) + y) break;                                     \
    case ZR_OP_MUL: ZR_LOOP(T, T, (x * sv)) break;                                            \
    default: break;                                                                           \
    }                                                                                         \
  }

ZR_FLOAT_KERNEL(f32, float)
ZR_FLOAT_KERNEL(f64, double)

/* 16-bit floats through float32 with the portable conversions: WIDEN/NARROW name a
 * pair from reduce_half.h. */
#define ZR_HALF_KERNEL(SUF, WIDEN, NARROW)                                                    \
  static ZR_ATTR void ZR_FN(zr_##SUF)(int op, unsigned char *d, const unsigned char *a,       \
                                      const unsigned char *b, size_t n, int div, double sc) { \
    const float dv = (float)div, sv = (float)sc;                                              \
    switch (op) {                                                                             \
    case ZCOLL_SUM: ZR_LOOP(uint16_t, uint16_t, NARROW(WIDEN(x) + WIDEN(y))) break;           \
    case ZCOLL_PROD: ZR_LOOP(uint16_t, uint16_t, NARROW(WIDEN(x) * WIDEN(y))) break;          \
    case ZCOLL_MIN: ZR_LOOP(uint16_t, uint16_t, NARROW(zr_minf(WIDEN(x), WIDEN(y)))) break;   \
    case ZCOLL_MAX: ZR_LOOP(uint16_t, uint16_t, NARROW(zr_maxf(WIDEN(x), WIDEN(y)))) break;   \
    case ZCOLL_AVG: ZR_LOOP(uint16_t, uint16_t, NARROW((WIDEN(x) + WIDEN(y)) / dv)) break;    \
    case ZR_OP_SCALE: ZR_LOOP(uint16_t, uint16_t, NARROW(WIDEN(x) / dv)) break;               \
    case ZR_OP_PREMUL: ZR_LOOP(uint16_t, uint16_t, NARROW(WIDEN(x) * sv + WIDEN(y))) break;   \
    case ZR_OP_MUL: ZR_LOOP(uint16_t, uint16_t, NARROW(WIDEN(x) * sv)) break;                 \
    default: break;                                                                           \
    }                                                                                         \
  }

/* bfloat16 two at a time in 32-bit lanes: the upper element of a pair is already a
 * float32 once its lower 16 bits are cleared and the lower one is a shift away, so the
 * vector loop needs no zero-extension or cross-lane packing. An odd last element goes
 * through the same expression alone. */
#define ZR_BF16_LOOP(EXPR)                                                              \
  do {                                                                                  \
    for (size_t i_ = 0; i_ < n / 2; i_++) {                                             \
      uint32_t pa_, pb_, lo_, hi_, r_;                                                  \
      memcpy(&pa_, a + 4 * i_, 4);                                                      \
      memcpy(&pb_, b + 4 * i_, 4);                                                      \
      {                                                                                 \
        float x = zcoll__f32_from_bits(pa_ << 16), y = zcoll__f32_from_bits(pb_ << 16); \
        (void)y;                                                                        \
        lo_ = zcoll__float_to_bf16_hi(EXPR);                                            \
      }                                                                                 \
      {                                                                                 \
        float x = zcoll__f32_from_bits(pa_ & 0xffff0000u);                              \
        float y = zcoll__f32_from_bits(pb_ & 0xffff0000u);                              \
        (void)y;                                                                        \
        hi_ = zcoll__float_to_bf16_hi(EXPR);                                            \
      }                                                                                 \
      r_ = (lo_ >> 16) | (hi_ & 0xffff0000u);                                           \
      memcpy(d + 4 * i_, &r_, 4);                                                       \
    }                                                                                   \
    if (n & 1) {                                                                        \
      uint16_t ha_, hb_, hr_;                                                           \
      memcpy(&ha_, a + 2 * (n - 1), 2);                                                 \
      memcpy(&hb_, b + 2 * (n - 1), 2);                                                 \
      float x = zcoll__bf16_to_float(ha_), y = zcoll__bf16_to_float(hb_);               \
      (void)y;                                                                          \
      hr_ = zcoll__float_to_bf16(EXPR);                                                 \
      memcpy(d + 2 * (n - 1), &hr_, 2);                                                 \
    }                                                                                   \
  } while (0)

static ZR_ATTR void ZR_FN(zr_bf16)(int op, unsigned char *d, const unsigned char *a,
                                   const unsigned char *b, size_t n, int div, double sc) {
  const float dv = (float)div, sv = (float)sc;
  switch (op) {
  case ZCOLL_SUM: ZR_BF16_LOOP(x + y); break;
  case ZCOLL_PROD: ZR_BF16_LOOP(x * y); break;
  case ZCOLL_MIN: ZR_BF16_LOOP(zr_minf(x, y)); break;
  case ZCOLL_MAX: ZR_BF16_LOOP(zr_maxf(x, y)); break;
  case ZCOLL_AVG: ZR_BF16_LOOP((x + y) / dv); break;
  case ZR_OP_SCALE: ZR_BF16_LOOP(x / dv); break;
  case ZR_OP_PREMUL: ZR_BF16_LOOP(x * sv + y); break;
  case ZR_OP_MUL: ZR_BF16_LOOP(x * sv); break;
  default: break;
  }
}

#if ZR_F16VEC == 0
ZR_HALF_KERNEL(f16, zcoll__half_to_float, zcoll__float_to_half)
#else

#if ZR_F16VEC == 512
#define ZR_W 16
#define ZR_VPS __m512
#define ZR_LDPH(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(p)))
#define ZR_STPH(p, v) \
  _mm256_storeu_si256((__m256i *)(void *)(p), _mm512_cvtps_ph((v), _MM_FROUND_TO_NEAREST_INT))
#define ZR_V(opname) _mm512_##opname##_ps
#else
#define ZR_W 8
#define ZR_VPS __m256
#define ZR_LDPH(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p)))
#define ZR_STPH(p, v) \
  _mm_storeu_si128((__m128i *)(void *)(p), _mm256_cvtps_ph((v), _MM_FROUND_TO_NEAREST_INT))
#define ZR_V(opname) _mm256_##opname##_ps
#endif

/* The hardware converts with an explicit round-to-nearest-even, independent of MXCSR.
 * The last partial vector goes through zero-padded stack copies, so that no byte past n
 * is read or written. vminps/vmaxps are exactly `x < y ? x : y` / `x > y ? x : y`. */
#define ZR_F16_LOOP(EXPR)                                      \
  do {                                                         \
    size_t i_ = 0;                                             \
    for (; i_ + ZR_W <= n; i_ += ZR_W) {                       \
      ZR_VPS x = ZR_LDPH(a + 2 * i_), y = ZR_LDPH(b + 2 * i_); \
      (void)y;                                                 \
      ZR_STPH(d + 2 * i_, (EXPR));                             \
    }                                                          \
    if (i_ < n) {                                              \
      uint16_t ta_[ZR_W] = {0}, tb_[ZR_W] = {0}, td_[ZR_W];    \
      size_t k_ = (n - i_) * 2;                                \
      memcpy(ta_, a + 2 * i_, k_);                             \
      memcpy(tb_, b + 2 * i_, k_);                             \
      ZR_VPS x = ZR_LDPH(ta_), y = ZR_LDPH(tb_);               \
      (void)y;                                                 \
      ZR_STPH(td_, (EXPR));                                    \
      memcpy(d + 2 * i_, td_, k_);                             \
    }                                                          \
  } while (0)

static ZR_ATTR void ZR_FN(zr_f16)(int op, unsigned char *d, const unsigned char *a,
                                  const unsigned char *b, size_t n, int div, double sc) {
  const ZR_VPS dv = ZR_V(set1)((float)div), sv = ZR_V(set1)((float)sc);
  switch (op) {
  case ZCOLL_SUM: ZR_F16_LOOP(ZR_V(add)(x, y)); break;
  case ZCOLL_PROD: ZR_F16_LOOP(ZR_V(mul)(x, y)); break;
  case ZCOLL_MIN: ZR_F16_LOOP(ZR_V(min)(x, y)); break;
  case ZCOLL_MAX: ZR_F16_LOOP(ZR_V(max)(x, y)); break;
  case ZCOLL_AVG: ZR_F16_LOOP(ZR_V(div)(ZR_V(add)(x, y), dv)); break;
  case ZR_OP_SCALE: ZR_F16_LOOP(ZR_V(div)(x, dv)); break;
  case ZR_OP_PREMUL: ZR_F16_LOOP(ZR_V(add)(ZR_V(mul)(x, sv), y)); break;
  case ZR_OP_MUL: ZR_F16_LOOP(ZR_V(mul)(x, sv)); break;
  default: break;
  }
}

#undef ZR_W
#undef ZR_VPS
#undef ZR_LDPH
#undef ZR_STPH
#undef ZR_V
#undef ZR_F16_LOOP
#endif /* ZR_F16VEC */

/* op is a zcoll_op_t, ZR_OP_SCALE or ZR_OP_MUL (then b == a and b is not read), or
 * ZR_OP_PREMUL (sc is their scalar; div that of AVG and SCALE). */
static ZR_ATTR void ZR_FN(zr_reduce)(zcoll_dtype_t dtype, int op, unsigned char *d,
                                     const unsigned char *a, const unsigned char *b, size_t n,
                                     int div, double sc) {
  switch (dtype) {
  case ZCOLL_INT8: ZR_FN(zr_i8)(op, d, a, b, n, div, sc); break;
  case ZCOLL_UINT8: ZR_FN(zr_u8)(op, d, a, b, n, div, sc); break;
  case ZCOLL_INT32: ZR_FN(zr_i32)(op, d, a, b, n, div, sc); break;
  case ZCOLL_UINT32: ZR_FN(zr_u32)(op, d, a, b, n, div, sc); break;
  case ZCOLL_INT64: ZR_FN(zr_i64)(op, d, a, b, n, div, sc); break;
  case ZCOLL_UINT64: ZR_FN(zr_u64)(op, d, a, b, n, div, sc); break;
  case ZCOLL_FLOAT16: ZR_FN(zr_f16)(op, d, a, b, n, div, sc); break;
  case ZCOLL_BFLOAT16: ZR_FN(zr_bf16)(op, d, a, b, n, div, sc); break;
  case ZCOLL_FLOAT32: ZR_FN(zr_f32)(op, d, a, b, n, div, sc); break;
  case ZCOLL_FLOAT64: ZR_FN(zr_f64)(op, d, a, b, n, div, sc); break;
  default: break;
  }
}

#undef ZR_CAT2_
#undef ZR_CAT_
#undef ZR_FN
#undef ZR_LOOP
#undef ZR_DIV_SMALL
#undef ZR_DIV_BYTE
#undef ZR_DIV_WIDE
#undef ZR_INT_KERNEL
#undef ZR_FLOAT_KERNEL
#undef ZR_HALF_KERNEL
#undef ZR_BF16_LOOP
