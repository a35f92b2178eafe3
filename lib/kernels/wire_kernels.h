/*
 * wire_kernels.h -- compressed averaging's kernels (ZCOLL_WIRE_DTYPE): float32 data
 * that travels as a 16-bit float. Not a normal header: reduce.c includes it once per
 * instruction-set variant, after reduce_kernels.h, with the same ZR_ISA and ZR_ATTR, and
 * it defines zw_run_<ZR_ISA>().
 *
 * Every step rounds both operands to the wire type before it adds them in float32: the
 * peer's operand arrived rounded, and rounding this rank's own the same way makes the
 * two ends of a pairwise exchange (the butterfly) compute the same bits, x + y == y + x.
 * The step that completes a range's reduction rounds its result too, so that the owner
 * of a block (the ring) keeps exactly what it sends. The conversions are reduce_half.h's
 * branch-free ones, which the loops vectorize with; float16 on the x86 variants uses the
 * conversion instructions (ZR_F16VEC, as reduce_kernels.h does).
 */

#define ZW_CAT2_(x, y) x##_##y
#define ZW_CAT_(x, y) ZW_CAT2_(x, y)
#define ZW_FN(name) ZW_CAT_(name, ZR_ISA)

/* d (float32) = round(a * sv) widened + b (16-bit) widened, then divided by dv when
 * divide, then rounded when final; also the pack (d 16-bit = round(a * sv)), the unpack
 * (d = b widened) and the local round (d = round(a * sv) widened). x * 1.0f and r / 1.0f
 * are exact, so the unscaled forms share the loops. */
#define ZW_KERNELS(SUF, WIDEN, NARROW)                                                      \
  static inline __attribute__((always_inline)) ZR_ATTR void ZW_FN(zw_reduce_##SUF)(         \
      unsigned char *d, const unsigned char *a, const unsigned char *b, size_t n, float sv, \
      float dv, const int divide, const int final) {                                        \
    for (size_t i_ = 0; i_ < n; i_++) {                                                     \
      float x, r;                                                                           \
      uint16_t h;                                                                           \
      memcpy(&x, a + 4 * i_, 4);                                                            \
      memcpy(&h, b + 2 * i_, 2);                                                            \
      r = WIDEN(NARROW(x * sv)) + WIDEN(h);                                                 \
      if (divide) r = r / dv;                                                               \
      if (final) r = WIDEN(NARROW(r));                                                      \
      memcpy(d + 4 * i_, &r, 4);                                                            \
    }                                                                                       \
  }                                                                                         \
  static ZR_ATTR void ZW_FN(zw_##SUF)(int what, unsigned char *d, const unsigned char *a,   \
                                      const unsigned char *b, size_t n, float sv, float dv, \
                                      int final) {                                          \
    switch (what) {                                                                         \
    case ZW_PACK:                                                                           \
      for (size_t i_ = 0; i_ < n; i_++) {                                                   \
        float x;                                                                            \
        memcpy(&x, a + 4 * i_, 4);                                                          \
        uint16_t h = NARROW(x * sv);                                                        \
        memcpy(d + 2 * i_, &h, 2);                                                          \
      }                                                                                     \
      break;                                                                                \
    case ZW_UNPACK:                                                                         \
      for (size_t i_ = 0; i_ < n; i_++) {                                                   \
        uint16_t h;                                                                         \
        memcpy(&h, b + 2 * i_, 2);                                                          \
        float r = WIDEN(h);                                                                 \
        memcpy(d + 4 * i_, &r, 4);                                                          \
      }                                                                                     \
      break;                                                                                \
    case ZW_ROUND:                                                                          \
      for (size_t i_ = 0; i_ < n; i_++) {                                                   \
        float x;                                                                            \
        memcpy(&x, a + 4 * i_, 4);                                                          \
        float r = WIDEN(NARROW(x * sv));                                                    \
        memcpy(d + 4 * i_, &r, 4);                                                          \
      }                                                                                     \
      break;                                                                                \
    default: /* ZW_REDUCE: the four forms, each a loop of its own */                        \
      if (dv != 1.0f)                                                                       \
        final ? ZW_FN(zw_reduce_##SUF)(d, a, b, n, sv, dv, 1, 1)                            \
              : ZW_FN(zw_reduce_##SUF)(d, a, b, n, sv, dv, 1, 0);                           \
      else                                                                                  \
        final ? ZW_FN(zw_reduce_##SUF)(d, a, b, n, sv, dv, 0, 1)                            \
              : ZW_FN(zw_reduce_##SUF)(d, a, b, n, sv, dv, 0, 0);                           \
      break;                                                                                \
    }                                                                                       \
  }

ZW_KERNELS(bf16, zcoll__bf16_to_float, zcoll__float_to_bf16)
#if ZR_F16VEC == 0
ZW_KERNELS(f16, zcoll__half_to_float, zcoll__float_to_half)
#else
/* float16 through the F16C / AVX-512 conversion instructions (round to nearest-even
 * whatever MXCSR says, the same bits as the portable conversions, which take the tail). */
ZW_KERNELS(f16s, zcoll__half_to_float, zcoll__float_to_half)

#if ZR_F16VEC == 512
#define ZW_W 16
#define ZW_VPS __m512
#define ZW_LD(p) _mm512_loadu_ps((const void *)(p))
#define ZW_ST(p, v) _mm512_storeu_ps((void *)(p), (v))
#define ZW_NARROW(v) _mm512_cvtps_ph((v), _MM_FROUND_TO_NEAREST_INT)
#define ZW_WIDEN(h) _mm512_cvtph_ps(h)
#define ZW_LDH(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define ZW_STH(p, h) _mm256_storeu_si256((__m256i *)(void *)(p), (h))
#define ZW_V(opname) _mm512_##opname##_ps
#else
#define ZW_W 8
#define ZW_VPS __m256
#define ZW_LD(p) _mm256_loadu_ps((const void *)(p))
#define ZW_ST(p, v) _mm256_storeu_ps((void *)(p), (v))
#define ZW_NARROW(v) _mm256_cvtps_ph((v), _MM_FROUND_TO_NEAREST_INT)
#define ZW_WIDEN(h) _mm256_cvtph_ps(h)
#define ZW_LDH(p) _mm_loadu_si128((const __m128i *)(const void *)(p))
#define ZW_STH(p, h) _mm_storeu_si128((__m128i *)(void *)(p), (h))
#define ZW_V(opname) _mm256_##opname##_ps
#endif

static ZR_ATTR void ZW_FN(zw_f16)(int what, unsigned char *d, const unsigned char *a,
                                  const unsigned char *b, size_t n, float sv, float dv, int final) {
  const ZW_VPS vs = ZW_V(set1)(sv), vd = ZW_V(set1)(dv);
  size_t i = 0;
  for (; i + ZW_W <= n; i += ZW_W) {
    if (what == ZW_PACK) {
      ZW_STH(d + 2 * i, ZW_NARROW(ZW_V(mul)(ZW_LD(a + 4 * i), vs)));
    } else if (what == ZW_UNPACK) {
      ZW_ST(d + 4 * i, ZW_WIDEN(ZW_LDH(b + 2 * i)));
    } else if (what == ZW_ROUND) {
      ZW_ST(d + 4 * i, ZW_WIDEN(ZW_NARROW(ZW_V(mul)(ZW_LD(a + 4 * i), vs))));
    } else {
      ZW_VPS r = ZW_V(add)(ZW_WIDEN(ZW_NARROW(ZW_V(mul)(ZW_LD(a + 4 * i), vs))),
                           ZW_WIDEN(ZW_LDH(b + 2 * i)));
      if (dv != 1.0f) r = ZW_V(div)(r, vd);
      if (final) r = ZW_WIDEN(ZW_NARROW(r));
      ZW_ST(d + 4 * i, r);
    }
  }
  if (i < n) /* an unpack's a is its 16-bit source: no offset past it */
    ZW_FN(zw_f16s)
  (what, d + (what == ZW_PACK ? 2 : 4) * i, what == ZW_UNPACK ? a : a + 4 * i, b + 2 * i, n - i, sv,
   dv, final);
}

#undef ZW_W
#undef ZW_VPS
#undef ZW_LD
#undef ZW_ST
#undef ZW_NARROW
#undef ZW_WIDEN
#undef ZW_LDH
#undef ZW_STH
#undef ZW_V
#endif /* ZR_F16VEC */

static ZR_ATTR void ZW_FN(zw_run)(zcoll_dtype_t wire, int what, unsigned char *d,
                                  const unsigned char *a, const unsigned char *b, size_t n,
                                  float sv, float dv, int final) {
  if (wire == ZCOLL_BFLOAT16)
    ZW_FN(zw_bf16)(what, d, a, b, n, sv, dv, final);
  else
    ZW_FN(zw_f16)(what, d, a, b, n, sv, dv, final);
}

#undef ZW_CAT2_
#undef ZW_CAT_
#undef ZW_FN
#undef ZW_KERNELS
