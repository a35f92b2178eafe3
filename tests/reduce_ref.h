/*
 * reduce_ref.h -- the independent scalar reference and test data for the reduction
 * kernels, shared by test_reduce.c (the full matrix) and test_reduce_cases.c (closed-form
 * cases).
 *
 * The reference shares no code with lib/kernels/reduce.c: integers are combined in 128-bit
 * arithmetic and truncated by taking the low bytes, float16 goes through GCC's
 * _Float16, bfloat16 through a conversion written here that picks the nearer of the two
 * neighbouring bfloat16 values.
 */
#ifndef ZCOLL_REDUCE_REF_H
#define ZCOLL_REDUCE_REF_H

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/reduce.h"
#include "kernels/reduce_isa.h"
#include "zcoll.h"

#define NDTYPES ZCOLL_DTYPE_COUNT
#define GUARD 64
#define PAD 0xa5

static const char *const isas[] = {"generic", "avx2", "avx512"};
#define NISAS 3

static const char *const dtype_names[NDTYPES] = {"int8",    "uint8",  "int32",   "uint32",
                                                 "int64",   "uint64", "float16", "bfloat16",
                                                 "float32", "float64"};
static const char *const op_names[ZCOLL_OP_COUNT] = {"sum", "prod", "min", "max", "avg"};
/* Reference-only op for zcoll__reduce_scale. */
#define OP_SCALE (-1)

static inline size_t dsize(int dt) {
  static const size_t sz[NDTYPES] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
  return sz[dt];
}

static inline void use_isa(const char *isa) {
  if (zcoll__reduce_set_isa(isa) != 0) cr_skip_test("this cpu cannot run the %s kernels", isa);
  cr_assert_str_eq(zcoll__reduce_isa(), isa);
}

/* ---- the reference ------------------------------------------------------------------ */

typedef __int128 i128;
typedef unsigned __int128 u128;

static inline i128 ld_int(int dt, const unsigned char *p) {
  uint64_t u = 0;
  memcpy(&u, p, dsize(dt)); /* little-endian: the low bytes */
  switch (dt) {
  case ZCOLL_INT8: return (int8_t)u;
  case ZCOLL_INT32: return (int32_t)u;
  case ZCOLL_INT64: return (int64_t)u;
  default: return u;
  }
}

/* Modulo 2^bits: the low bytes (x86-64 is little-endian). */
static inline void st_int(int dt, unsigned char *p, u128 v) { memcpy(p, &v, dsize(dt)); }

static inline void ref_int(int dt, int op, int div, const unsigned char *x, const unsigned char *y,
                           unsigned char *out) {
  i128 a = ld_int(dt, x), b = y ? ld_int(dt, y) : 0;
  unsigned char wrapped[8];
  switch (op) {
  case ZCOLL_SUM: st_int(dt, out, (u128)a + (u128)b); break;
  case ZCOLL_PROD: st_int(dt, out, (u128)a * (u128)b); break;
  case ZCOLL_MIN: st_int(dt, out, (u128)(a < b ? a : b)); break;
  case ZCOLL_MAX: st_int(dt, out, (u128)(a > b ? a : b)); break;
  case ZCOLL_AVG:
    st_int(dt, wrapped, (u128)a + (u128)b);
    st_int(dt, out, (u128)(ld_int(dt, wrapped) / div)); /* C: truncates toward zero */
    break;
  case OP_SCALE: st_int(dt, out, (u128)(a / div)); break;
  }
}

static inline float bf16_widen(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* Round to nearest, ties to even, by looking at both neighbours; beyond the largest
 * finite value the upper neighbour is 2^128, as if the exponent were unbounded. */
static inline uint16_t bf16_narrow(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if (isnan(f)) return (uint16_t)((u >> 16) | 0x40);
  if (isinf(f)) return (uint16_t)(u >> 16);
  uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1); /* toward larger magnitude */
  double dlo = fabs((double)bf16_widen(lo));
  double dhi = (hi & 0x7fff) == 0x7f80 ? ldexp(1.0, 128) : fabs((double)bf16_widen(hi));
  double v = fabs((double)f);
  if (v - dlo < dhi - v) return lo;
  if (v - dlo > dhi - v) return hi;
  return (lo & 1) ? hi : lo;
}

static inline float ref_widen(int dt, const unsigned char *p) {
  uint16_t h;
  memcpy(&h, p, 2);
  if (dt == ZCOLL_BFLOAT16) return bf16_widen(h);
  _Float16 x;
  memcpy(&x, p, 2);
  return (float)x;
}

static inline void ref_narrow(int dt, float f, unsigned char *out) {
  uint16_t h;
  if (dt == ZCOLL_BFLOAT16) {
    h = bf16_narrow(f);
  } else {
    _Float16 x = (_Float16)f;
    memcpy(&h, &x, 2);
  }
  memcpy(out, &h, 2);
}

#define REF_FLOAT_FN(NAME, T)                  \
  static T NAME(int op, int div, T a, T b) {   \
    switch (op) {                              \
    case ZCOLL_SUM: return a + b;              \
    case ZCOLL_PROD: return a * b;             \
    case ZCOLL_MIN: return a < b ? a : b;      \
    case ZCOLL_MAX: return a > b ? a : b;      \
    case ZCOLL_AVG: return (a + b) / (T)div;   \
    default: return a / (T)div; /* OP_SCALE */ \
    }                                          \
  }
REF_FLOAT_FN(ref_f32, float)
REF_FLOAT_FN(ref_f64, double)

/* One element of dst = a op b (y NULL for OP_SCALE). AVG with divisor 0 is SUM. */
static inline void ref_elem(int dt, int op, int div, const unsigned char *x, const unsigned char *y,
                            unsigned char *out) {
  if (op == ZCOLL_AVG && div == 0) op = ZCOLL_SUM;
  switch (dt) {
  case ZCOLL_FLOAT32: {
    float a, b = 0, r;
    memcpy(&a, x, 4);
    if (y) memcpy(&b, y, 4);
    r = ref_f32(op, div, a, b);
    memcpy(out, &r, 4);
    break;
  }
  case ZCOLL_FLOAT64: {
    double a, b = 0, r;
    memcpy(&a, x, 8);
    if (y) memcpy(&b, y, 8);
    r = ref_f64(op, div, a, b);
    memcpy(out, &r, 8);
    break;
  }
  case ZCOLL_FLOAT16:
  case ZCOLL_BFLOAT16:
    ref_narrow(dt, ref_f32(op, div, ref_widen(dt, x), y ? ref_widen(dt, y) : 0.0f), out);
    break;
  default: ref_int(dt, op, div, x, y, out); break;
  }
}

static inline int elem_isnan(int dt, const unsigned char *p) {
  uint64_t u = 0;
  memcpy(&u, p, dsize(dt));
  switch (dt) {
  case ZCOLL_FLOAT16: return (u & 0x7c00) == 0x7c00 && (u & 0x03ff) != 0;
  case ZCOLL_BFLOAT16: return (u & 0x7f80) == 0x7f80 && (u & 0x007f) != 0;
  case ZCOLL_FLOAT32: return (u & 0x7fffffff) > 0x7f800000;
  case ZCOLL_FLOAT64: return (u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
  default: return 0;
  }
}

/* Bit-exact, except that any NaN matches any NaN (payloads are unspecified). */
static inline int elem_same(int dt, const unsigned char *got, const unsigned char *want) {
  if (memcmp(got, want, dsize(dt)) == 0) return 1;
  return elem_isnan(dt, got) && elem_isnan(dt, want);
}

static inline void elem_hex(int dt, const unsigned char *p, char *s) {
  size_t sz = dsize(dt);
  for (size_t i = 0; i < sz; i++) sprintf(s + 2 * i, "%02x", p[sz - 1 - i]);
}

/* ---- test data ---------------------------------------------------------------------- */

static inline uint64_t rng_next(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545f4914f6cdd1dull;
}

/* Mostly random bits (every class: subnormals, infinities, NaNs, extremes), plus small
 * exactly-representable values whose sums and quotients hit rounding ties, plus
 * integer edge values. */
static inline void gen_elem(int dt, uint64_t *s, unsigned char *out) {
  uint64_t r = rng_next(s);
  uint64_t kind = (r >> 56) & 7;
  size_t sz = dsize(dt);
  if (kind < 5) {
    memcpy(out, &r, sz);
    return;
  }
  if (kind == 5 && dt >= ZCOLL_FLOAT16) {
    float f = (float)((int)(r % 4001) - 2000) / 64.0f;
    if (dt == ZCOLL_FLOAT32)
      memcpy(out, &f, 4);
    else if (dt == ZCOLL_FLOAT64) {
      double g = f;
      memcpy(out, &g, 8);
    } else
      ref_narrow(dt, f, out);
    return;
  }
  static const uint64_t edges[] = {
      0,          1,          ~0ull, 0x7fffffffffffffffull, 0x8000000000000000ull, 0x7f, 0x80,
      0x7fffffff, 0x80000000, 2};
  uint64_t e = edges[(r >> 8) % 10];
  if (sz < 8 && (e == 0x7fffffffffffffffull || e == 0x8000000000000000ull))
    e >>= 64 - 8 * sz; /* the top bit pattern of this width */
  memcpy(out, &e, sz);
}

/* A buffer with GUARD bytes of PAD on each side of its (offset) data. */
typedef struct {
  unsigned char *mem, *data;
  size_t len;
} tbuf_t;

static inline tbuf_t tbuf_make(size_t bytes, int offset, const unsigned char *init) {
  tbuf_t b;
  b.len = 2 * GUARD + 8 + bytes;
  b.mem = malloc(b.len);
  cr_assert_not_null(b.mem);
  memset(b.mem, PAD, b.len);
  b.data = b.mem + GUARD + offset;
  if (init && bytes) memcpy(b.data, init, bytes);
  return b;
}

/* Every byte outside [data, data + bytes) still PAD, and, for an input, data as given. */
static inline int tbuf_intact(const tbuf_t *b, size_t bytes, const unsigned char *expect) {
  size_t start = (size_t)(b->data - b->mem);
  for (size_t i = 0; i < b->len; i++) {
    if (i >= start && i < start + bytes) {
      if (expect && b->mem[i] != expect[i - start]) return 0;
    } else if (b->mem[i] != PAD) {
      return 0;
    }
  }
  return 1;
}

enum { ALIAS_NONE, ALIAS_DST_A, ALIAS_DST_B, NALIAS };
static const char *const alias_names[NALIAS] = {"distinct", "dst==a", "dst==b"};

typedef struct {
  const char *isa;
  int dt, op, div;
  size_t n;
  int alias, off_d, off_a, off_b;
} kcase_t;

#define CASE_FMT "isa=%s dtype=%s op=%s divisor=%d n=%zu %s offsets(dst,a,b)=(%d,%d,%d)"
#define CASE_ARGS(c)                                                                           \
  (c)->isa, dtype_names[(c)->dt], (c)->op == OP_SCALE ? "scale" : op_names[(c)->op], (c)->div, \
      (c)->n, alias_names[(c)->alias], (c)->off_d, (c)->off_a, (c)->off_b

/* Runs one call on fresh guarded copies of av/bv and compares with want. For OP_SCALE,
 * dst==a means dst==src and b is unused. */
static inline void run_case(const kcase_t *c, const unsigned char *av, const unsigned char *bv,
                            const unsigned char *want) {
  size_t sz = dsize(c->dt), bytes = c->n * sz;
  int scale = c->op == OP_SCALE;
  tbuf_t a = tbuf_make(bytes, c->off_a, av);
  tbuf_t b = tbuf_make(bytes, c->off_b, bv);
  tbuf_t d = tbuf_make(bytes, c->off_d, NULL);
  memset(d.data, 0x5a, bytes);
  tbuf_t *dst = c->alias == ALIAS_DST_A ? &a : c->alias == ALIAS_DST_B ? &b : &d;

  if (scale)
    zcoll__reduce_scale((zcoll_dtype_t)c->dt, dst->data, a.data, c->n, c->div);
  else
    zcoll__reduce((zcoll_dtype_t)c->dt, (zcoll_op_t)c->op, dst->data, a.data, b.data, c->n, c->div);

  for (size_t i = 0; i < c->n; i++) {
    const unsigned char *g = dst->data + i * sz, *w = want + i * sz;
    if (!elem_same(c->dt, g, w)) {
      char gs[17], ws[17], as[17], bs[17];
      elem_hex(c->dt, g, gs);
      elem_hex(c->dt, w, ws);
      elem_hex(c->dt, av + i * sz, as);
      elem_hex(c->dt, bv + i * sz, bs);
      cr_assert_fail(CASE_FMT " index=%zu: a=0x%s b=0x%s got 0x%s want 0x%s", CASE_ARGS(c), i, as,
                     bs, gs, ws);
    }
  }
  cr_assert(tbuf_intact(dst, bytes, NULL), CASE_FMT ": bytes outside dst[0, n) were written",
            CASE_ARGS(c));
  if (dst != &a) cr_assert(tbuf_intact(&a, bytes, av), CASE_FMT ": input a modified", CASE_ARGS(c));
  if (dst != &b) cr_assert(tbuf_intact(&b, bytes, bv), CASE_FMT ": input b modified", CASE_ARGS(c));
  free(a.mem);
  free(b.mem);
  free(d.mem);
}

#endif
