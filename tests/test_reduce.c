/*
 * test_reduce.c -- the reduction kernels against an independent scalar reference.
 *
 * The reference below shares no code with lib/reduce.c: integers are combined in
 * 128-bit arithmetic and truncated by taking the low bytes, float16 goes through GCC's
 * _Float16, bfloat16 through a conversion written here that picks the nearer of the two
 * neighbouring bfloat16 values. Every instruction-set variant the CPU can run is
 * checked, each element compared exactly (NaN only for being NaN), and every byte
 * around the output and of the inputs is checked to be untouched.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reduce.h"
#include "reduce_isa.h"
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

static size_t dsize(int dt) {
  static const size_t sz[NDTYPES] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
  return sz[dt];
}

static void use_isa(const char *isa) {
  if (zcoll__reduce_set_isa(isa) != 0) cr_skip_test("this cpu cannot run the %s kernels", isa);
  cr_assert_str_eq(zcoll__reduce_isa(), isa);
}

/* ---- the reference ------------------------------------------------------------------ */

typedef __int128 i128;
typedef unsigned __int128 u128;

static i128 ld_int(int dt, const unsigned char *p) {
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
static void st_int(int dt, unsigned char *p, u128 v) { memcpy(p, &v, dsize(dt)); }

static void ref_int(int dt, int op, int div, const unsigned char *x, const unsigned char *y,
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

static float bf16_widen(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* Round to nearest, ties to even, by looking at both neighbours; beyond the largest
 * finite value the upper neighbour is 2^128, as if the exponent were unbounded. */
static uint16_t bf16_narrow(float f) {
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

static float ref_widen(int dt, const unsigned char *p) {
  uint16_t h;
  memcpy(&h, p, 2);
  if (dt == ZCOLL_BFLOAT16) return bf16_widen(h);
  _Float16 x;
  memcpy(&x, p, 2);
  return (float)x;
}

static void ref_narrow(int dt, float f, unsigned char *out) {
  uint16_t h;
  if (dt == ZCOLL_BFLOAT16) {
    h = bf16_narrow(f);
  } else {
    _Float16 x = (_Float16)f;
    memcpy(&h, &x, 2);
  }
  memcpy(out, &h, 2);
}

#define REF_FLOAT_FN(NAME, T)                    \
  static T NAME(int op, int div, T a, T b) {     \
    switch (op) {                                \
      case ZCOLL_SUM: return a + b;              \
      case ZCOLL_PROD: return a * b;             \
      case ZCOLL_MIN: return a < b ? a : b;      \
      case ZCOLL_MAX: return a > b ? a : b;      \
      case ZCOLL_AVG: return (a + b) / (T)div;   \
      default: return a / (T)div; /* OP_SCALE */ \
    }                                            \
  }
REF_FLOAT_FN(ref_f32, float)
REF_FLOAT_FN(ref_f64, double)

/* One element of dst = a op b (y NULL for OP_SCALE). AVG with divisor 0 is SUM. */
static void ref_elem(int dt, int op, int div, const unsigned char *x, const unsigned char *y,
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

static int elem_isnan(int dt, const unsigned char *p) {
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
static int elem_same(int dt, const unsigned char *got, const unsigned char *want) {
  if (memcmp(got, want, dsize(dt)) == 0) return 1;
  return elem_isnan(dt, got) && elem_isnan(dt, want);
}

static void elem_hex(int dt, const unsigned char *p, char *s) {
  size_t sz = dsize(dt);
  for (size_t i = 0; i < sz; i++) sprintf(s + 2 * i, "%02x", p[sz - 1 - i]);
}

/* ---- test data ---------------------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545f4914f6cdd1dull;
}

/* Mostly random bits (every class: subnormals, infinities, NaNs, extremes), plus small
 * exactly-representable values whose sums and quotients hit rounding ties, plus
 * integer edge values. */
static void gen_elem(int dt, uint64_t *s, unsigned char *out) {
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

static tbuf_t tbuf_make(size_t bytes, int offset, const unsigned char *init) {
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
static int tbuf_intact(const tbuf_t *b, size_t bytes, const unsigned char *expect) {
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
static void run_case(const kcase_t *c, const unsigned char *av, const unsigned char *bv,
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

/* ---- every dtype x op x size x aliasing x alignment, on every variant ----------------- */

struct kparam {
  int isa, dt;
};

static struct criterion_test_params every_variant_and_dtype(void) {
  static struct kparam params[NISAS * NDTYPES];
  for (int i = 0; i < NISAS; i++)
    for (int d = 0; d < NDTYPES; d++) params[i * NDTYPES + d] = (struct kparam){i, d};
  return cr_make_param_array(struct kparam, params, NISAS * NDTYPES);
}

ParameterizedTestParameters(reduce, matches_reference) { return every_variant_and_dtype(); }

static const size_t sizes[] = {0, 1, 2, 7, 31, 33, 255, 1000, 65537};
#define NSIZES (sizeof sizes / sizeof sizes[0])

/* op and divisor pairs: AVG with divisor 0 is an intermediate (summing) step. */
static const int opdivs[][2] = {{ZCOLL_SUM, 0}, {ZCOLL_PROD, 0},     {ZCOLL_MIN, 0}, {ZCOLL_MAX, 0},
                                {ZCOLL_AVG, 0}, {ZCOLL_AVG, 1},      {ZCOLL_AVG, 3}, {ZCOLL_AVG, 7},
                                {ZCOLL_SUM, 5}, {ZCOLL_AVG, 1000003}};
#define NOPDIVS (sizeof opdivs / sizeof opdivs[0])

ParameterizedTest(struct kparam *p, reduce, matches_reference) {
  const char *isa = isas[p->isa];
  int dt = p->dt;
  size_t sz = dsize(dt);
  use_isa(isa);
  uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)(dt * 7919 + 1);
  for (size_t k = 0; k < NSIZES; k++) {
    size_t n = sizes[k];
    unsigned char *av = malloc(n * sz + 1), *bv = malloc(n * sz + 1), *want = malloc(n * sz + 1);
    cr_assert(av && bv && want);
    for (size_t i = 0; i < n; i++) {
      gen_elem(dt, &seed, av + i * sz);
      gen_elem(dt, &seed, bv + i * sz);
    }
    for (size_t o = 0; o < NOPDIVS; o++) {
      int op = opdivs[o][0], div = opdivs[o][1];
      for (size_t i = 0; i < n; i++) ref_elem(dt, op, div, av + i * sz, bv + i * sz, want + i * sz);
      for (int alias = 0; alias < NALIAS; alias++) {
        /* Aligned, then misaligned by 1..7 bytes in a pattern that varies per case. */
        for (int mis = 0; mis < 2; mis++) {
          int s = (int)(k + o + (size_t)alias);
          kcase_t c = {isa, dt, op, div, n, alias, 0, 0, 0};
          if (mis) {
            c.off_a = 1 + s % 7;
            c.off_b = 1 + (s * 3 + 2) % 7;
            c.off_d = 1 + (s * 5 + 4) % 7;
            if (alias == ALIAS_DST_A) c.off_d = c.off_a;
            if (alias == ALIAS_DST_B) c.off_d = c.off_b;
          }
          run_case(&c, av, bv, want);
        }
      }
    }
    free(av);
    free(bv);
    free(want);
  }
}

ParameterizedTestParameters(reduce, scale_matches_reference) { return every_variant_and_dtype(); }

ParameterizedTest(struct kparam *p, reduce, scale_matches_reference) {
  static const int divs[] = {1, 2, 3, 7, 1000003};
  const char *isa = isas[p->isa];
  int dt = p->dt;
  size_t sz = dsize(dt);
  use_isa(isa);
  uint64_t seed = 0x1234567ull + (uint64_t)dt;
  for (size_t k = 0; k < NSIZES; k++) {
    size_t n = sizes[k];
    unsigned char *av = malloc(n * sz + 1), *want = malloc(n * sz + 1);
    cr_assert(av && want);
    for (size_t i = 0; i < n; i++) gen_elem(dt, &seed, av + i * sz);
    for (size_t v = 0; v < sizeof divs / sizeof divs[0]; v++) {
      for (size_t i = 0; i < n; i++)
        ref_elem(dt, OP_SCALE, divs[v], av + i * sz, NULL, want + i * sz);
      for (int alias = 0; alias < 2; alias++) {
        int off = (int)((k + v) % 8);
        kcase_t c = {isa, dt, OP_SCALE, divs[v], n, alias, off, off ^ 5, 0};
        if (alias == ALIAS_DST_A) c.off_d = c.off_a;
        run_case(&c, av, av, want);
      }
    }
    free(av);
    free(want);
  }
}

/* ---- closed-form cases ---------------------------------------------------------------- */

typedef struct {
  int dt, op, div;
  uint64_t a, b, want; /* bit patterns, low bytes used */
} fixed_t;

/* Each case fills 37 elements (a vector body plus a tail on every variant). want
 * UINT64_MAX with a float dtype means "some quiet NaN". */
static void run_fixed(const fixed_t *f, size_t count) {
  for (int i = 0; i < NISAS; i++) {
    if (zcoll__reduce_set_isa(isas[i]) != 0) continue;
    for (size_t k = 0; k < count; k++) {
      const size_t n = 37;
      size_t sz = dsize(f[k].dt);
      unsigned char av[37 * 8], bv[37 * 8], want[37 * 8];
      for (size_t j = 0; j < n; j++) {
        memcpy(av + j * sz, &f[k].a, sz);
        memcpy(bv + j * sz, &f[k].b, sz);
        memcpy(want + j * sz, &f[k].want, sz);
      }
      unsigned char wref[8];
      ref_elem(f[k].dt, f[k].op, f[k].div, av, bv, wref);
      int qnan = f[k].want == UINT64_MAX && f[k].dt >= ZCOLL_FLOAT16;
      /* The expectation is closed-form; the reference must agree with it too. */
      if (qnan) {
        cr_assert(elem_isnan(f[k].dt, wref), "case %zu: reference is not a NaN", k);
        for (size_t j = 0; j < n; j++) memcpy(want + j * sz, wref, sz);
      } else {
        cr_assert(memcmp(wref, want, sz) == 0, "case %zu (%s %s): reference disagrees", k,
                  dtype_names[f[k].dt], op_names[f[k].op]);
      }
      kcase_t c = {isas[i], f[k].dt, f[k].op, f[k].div, n, ALIAS_NONE, 3, 1, 2};
      run_case(&c, av, bv, want);
      c.alias = ALIAS_DST_B;
      run_case(&c, av, bv, want);
      if (qnan) {
        unsigned char out[37 * 8];
        uint16_t h;
        zcoll__reduce((zcoll_dtype_t)c.dt, (zcoll_op_t)c.op, out, av, bv, n, c.div);
        memcpy(&h, out + (n - 1) * sz, 2);
        cr_assert(elem_isnan(c.dt, out), "case %zu: not a NaN", k);
        if (c.dt == ZCOLL_BFLOAT16)
          cr_assert(h & 0x40, "isa=%s case %zu: bfloat16 NaN 0x%04x not quiet", isas[i], k, h);
        if (c.dt == ZCOLL_FLOAT16)
          cr_assert(h & 0x200, "isa=%s case %zu: float16 NaN 0x%04x not quiet", isas[i], k, h);
      }
    }
  }
}

Test(reduce, integer_wraparound_and_truncation) {
  static const fixed_t f[] = {
      {ZCOLL_INT8, ZCOLL_SUM, 0, 127, 1, 0x80},
      {ZCOLL_INT8, ZCOLL_SUM, 0, 0x80, 0xff, 127},
      {ZCOLL_UINT8, ZCOLL_SUM, 0, 255, 1, 0},
      {ZCOLL_INT8, ZCOLL_PROD, 0, 0x80, 0xff, 0x80},
      {ZCOLL_UINT8, ZCOLL_PROD, 0, 16, 17, 16},
      {ZCOLL_INT8, ZCOLL_MIN, 0, 0x80, 127, 0x80},
      {ZCOLL_UINT8, ZCOLL_MIN, 0, 0x80, 127, 127},
      {ZCOLL_INT32, ZCOLL_SUM, 0, 0x7fffffff, 1, 0x80000000},
      {ZCOLL_INT32, ZCOLL_PROD, 0, 65536, 65536, 0},
      {ZCOLL_UINT32, ZCOLL_SUM, 0, 0xffffffff, 2, 1},
      {ZCOLL_INT32, ZCOLL_MAX, 0, 0x80000000, 0x7fffffff, 0x7fffffff},
      {ZCOLL_UINT32, ZCOLL_MAX, 0, 0x80000000, 0x7fffffff, 0x80000000},
      {ZCOLL_INT64, ZCOLL_SUM, 0, INT64_MAX, 1, (uint64_t)INT64_MIN},
      {ZCOLL_INT64, ZCOLL_PROD, 0, (uint64_t)INT64_MIN, UINT64_MAX, (uint64_t)INT64_MIN},
      {ZCOLL_UINT64, ZCOLL_SUM, 0, UINT64_MAX, UINT64_MAX, UINT64_MAX - 1},
      {ZCOLL_UINT64, ZCOLL_PROD, 0, UINT64_MAX, 2, UINT64_MAX - 1},
      {ZCOLL_INT64, ZCOLL_MIN, 0, (uint64_t)INT64_MIN, 1, (uint64_t)INT64_MIN},
      /* AVG: the wrapped sum, then division truncating toward zero */
      {ZCOLL_INT8, ZCOLL_AVG, 3, 127, 1, (uint8_t)-42},
      {ZCOLL_INT8, ZCOLL_AVG, 2, 0xf9, 0, (uint8_t)-3},
      {ZCOLL_UINT8, ZCOLL_AVG, 7, 250, 10, 0},
      {ZCOLL_UINT8, ZCOLL_AVG, 7, 250, 5, 36},
      {ZCOLL_INT32, ZCOLL_AVG, 2, (uint32_t)-7, 0, (uint32_t)-3},
      {ZCOLL_INT32, ZCOLL_AVG, 1, 0x80000000, 0, 0x80000000},
      {ZCOLL_INT32, ZCOLL_AVG, 3, (uint32_t)-2147483647, (uint32_t)-1, (uint32_t)-715827882},
      {ZCOLL_INT32, ZCOLL_AVG, 3, 0x7fffffff, 0x7fffffff, 0}, /* wraps to -2, then -0 */
      {ZCOLL_UINT32, ZCOLL_AVG, 7, 0xffffffff, 0, 613566756},
      {ZCOLL_UINT32, ZCOLL_AVG, 3, 0xffffffff, 0xffffffff, 1431655764},
      {ZCOLL_INT64, ZCOLL_AVG, 7, (uint64_t)INT64_MIN, 0, (uint64_t)(INT64_MIN / 7)},
      {ZCOLL_INT64, ZCOLL_AVG, 2, (uint64_t)-5, 0, (uint64_t)-2},
      {ZCOLL_UINT64, ZCOLL_AVG, 3, UINT64_MAX, 0, 6148914691236517205ull},
      {ZCOLL_UINT64, ZCOLL_AVG, 1, UINT64_MAX, 1, 0},
  };
  run_fixed(f, sizeof f / sizeof f[0]);
}

Test(reduce, float16_rounding) {
  static const fixed_t f[] = {
      {ZCOLL_FLOAT16, ZCOLL_SUM, 0, 0x3c00, 0x1000, 0x3c00}, /* 1 + 2^-11: tie, to even */
      {ZCOLL_FLOAT16, ZCOLL_SUM, 0, 0x3c01, 0x1000, 0x3c02}, /* tie, to even (up) */
      {ZCOLL_FLOAT16, ZCOLL_SUM, 0, 0x3c00, 0x1001, 0x3c01}, /* just above the tie */
      {ZCOLL_FLOAT16, ZCOLL_SUM, 0, 0xbc01, 0x9000, 0xbc02}, /* negative tie */
      {ZCOLL_FLOAT16, ZCOLL_SUM, 0, 0x7bff, 0x4c00, 0x7c00}, /* 65504 + 16: tie to inf */
      {ZCOLL_FLOAT16, ZCOLL_SUM, 0, 0x7bff, 0x4b80, 0x7bff}, /* 65504 + 15 */
      {ZCOLL_FLOAT16, ZCOLL_SUM, 0, 0xfbff, 0xcc00, 0xfc00},
      {ZCOLL_FLOAT16, ZCOLL_PROD, 0, 0x7bff, 0x4000, 0x7c00},
      {ZCOLL_FLOAT16, ZCOLL_SUM, 0, 0x0001, 0x0001, 0x0002},  /* subnormals */
      {ZCOLL_FLOAT16, ZCOLL_SUM, 0, 0x03ff, 0x0001, 0x0400},  /* to the smallest normal */
      {ZCOLL_FLOAT16, ZCOLL_PROD, 0, 0x0001, 0x3800, 0x0000}, /* 2^-25: tie to zero */
      {ZCOLL_FLOAT16, ZCOLL_PROD, 0, 0x0003, 0x3800, 0x0002}, /* 1.5 * 2^-24: tie, even */
      {ZCOLL_FLOAT16, ZCOLL_PROD, 0, 0x0001, 0x3a00, 0x0001}, /* 0.75 * 2^-24 */
      {ZCOLL_FLOAT16, ZCOLL_PROD, 0, 0x8001, 0x3800, 0x8000}, /* -0 */
      {ZCOLL_FLOAT16, ZCOLL_PROD, 0, 0x0400, 0x3800, 0x0200}, /* normal to subnormal */
      {ZCOLL_FLOAT16, ZCOLL_PROD, 0, 0x0401, 0x3800, 0x0200}, /* 0x200.8: tie, even */
      {ZCOLL_FLOAT16, ZCOLL_PROD, 0, 0x0403, 0x3800, 0x0202}, /* 0x201.8: tie, even */
      {ZCOLL_FLOAT16, ZCOLL_AVG, 3, 0x3c00, 0x0000, 0x3555},
      {ZCOLL_FLOAT16, ZCOLL_AVG, 2, 0x7bff, 0x7bff, 0x7bff}, /* the sum is held in float32 */
      {ZCOLL_FLOAT16, ZCOLL_MIN, 0, 0x3c00, 0xbc00, 0xbc00},
      {ZCOLL_FLOAT16, ZCOLL_MAX, 0, 0x3c00, 0xbc00, 0x3c00},
      {ZCOLL_FLOAT16, ZCOLL_SUM, 0, 0x7c00, 0xfc00, UINT64_MAX}, /* inf - inf */
      {ZCOLL_FLOAT16, ZCOLL_SUM, 0, 0x7e01, 0x3c00, UINT64_MAX},
      {ZCOLL_FLOAT16, ZCOLL_SUM, 0, 0x7c01, 0x3c00, UINT64_MAX}, /* signalling */
      {ZCOLL_FLOAT16, ZCOLL_MIN, 0, 0x3c00, 0x7c01, UINT64_MAX}, /* narrowing must quiet */
  };
  run_fixed(f, sizeof f / sizeof f[0]);
}

Test(reduce, bfloat16_rounding_and_nan) {
  static const fixed_t f[] = {
      {ZCOLL_BFLOAT16, ZCOLL_SUM, 0, 0x3f80, 0x3b80, 0x3f80}, /* 1 + 2^-8: tie, to even */
      {ZCOLL_BFLOAT16, ZCOLL_SUM, 0, 0x3f81, 0x3b80, 0x3f82}, /* tie, to even (up) */
      {ZCOLL_BFLOAT16, ZCOLL_SUM, 0, 0x3f80, 0x3b81, 0x3f81}, /* just above the tie */
      {ZCOLL_BFLOAT16, ZCOLL_SUM, 0, 0xbf81, 0xbb80, 0xbf82},
      {ZCOLL_BFLOAT16, ZCOLL_SUM, 0, 0x7f7f, 0x7b00, 0x7f80}, /* max + half ulp: inf */
      {ZCOLL_BFLOAT16, ZCOLL_SUM, 0, 0x7f7e, 0x7b00, 0x7f7e}, /* tie, to even (down) */
      {ZCOLL_BFLOAT16, ZCOLL_SUM, 0, 0xff7f, 0xfb00, 0xff80},
      {ZCOLL_BFLOAT16, ZCOLL_PROD, 0, 0x0001, 0x3f00, 0x0000}, /* subnormal tie to zero */
      {ZCOLL_BFLOAT16, ZCOLL_AVG, 3, 0x3f80, 0x0000, 0x3eab},
      {ZCOLL_BFLOAT16, ZCOLL_MIN, 0, 0x3f80, 0xbf80, 0xbf80},
      {ZCOLL_BFLOAT16, ZCOLL_SUM, 0, 0x7fc1, 0x3f80, UINT64_MAX},
      {ZCOLL_BFLOAT16, ZCOLL_SUM, 0, 0x7f81, 0x0000, UINT64_MAX}, /* signalling */
      {ZCOLL_BFLOAT16, ZCOLL_SUM, 0, 0xffff, 0x0000, UINT64_MAX},
      {ZCOLL_BFLOAT16, ZCOLL_PROD, 0, 0x7f80, 0x0000, UINT64_MAX}, /* inf * 0 */
      {ZCOLL_BFLOAT16, ZCOLL_AVG, 7, 0x7fc5, 0x0000, UINT64_MAX},
      /* MIN hands its second operand through untouched (`x < y ? x : y`), so this is
       * where narrowing itself must quiet a signalling NaN. */
      {ZCOLL_BFLOAT16, ZCOLL_MIN, 0, 0x3f80, 0x7f81, UINT64_MAX},
      {ZCOLL_BFLOAT16, ZCOLL_MAX, 0, 0x3f80, 0xff81, UINT64_MAX},
  };
  run_fixed(f, sizeof f / sizeof f[0]);
}

/* Every 16-bit pattern as a, against operands that exercise exact results, ties,
 * subnormals, overflow and signed zeros, for both 16-bit float types. */
Test(reduce, half_types_exhaustive) {
  static const uint16_t bs[] = {0x0000, 0x8000, 0x0001, 0x3c00, 0x1000, 0xfbff, 0x3b80, 0x7f7f};
  static const int opdiv[][2] = {{ZCOLL_SUM, 0}, {ZCOLL_PROD, 0}, {ZCOLL_AVG, 3}, {OP_SCALE, 7}};
  enum { N = 65536 };
  unsigned char *av = malloc(2 * N), *bv = malloc(2 * N), *want = malloc(2 * N);
  cr_assert(av && bv && want);
  for (int i = 0; i < NISAS; i++) {
    if (zcoll__reduce_set_isa(isas[i]) != 0) continue;
    for (int dt = ZCOLL_FLOAT16; dt <= ZCOLL_BFLOAT16; dt++) {
      for (size_t k = 0; k < sizeof bs / sizeof bs[0]; k++) {
        for (size_t o = 0; o < sizeof opdiv / sizeof opdiv[0]; o++) {
          int op = opdiv[o][0], div = opdiv[o][1];
          for (uint32_t j = 0; j < N; j++) {
            uint16_t h = (uint16_t)j;
            memcpy(av + 2 * j, &h, 2);
            memcpy(bv + 2 * j, &bs[k], 2);
            ref_elem(dt, op, div, av + 2 * j, op == OP_SCALE ? NULL : bv + 2 * j, want + 2 * j);
          }
          kcase_t c = {isas[i], dt, op, div, N, ALIAS_DST_A, 1, 1, 0};
          run_case(&c, av, bv, want);
        }
      }
    }
  }
  free(av);
  free(bv);
  free(want);
}

/* The same quotient as C integer division across the 32-bit range and many divisors,
 * exact multiples and their neighbours included (AVG divides 32-bit integers through
 * double). */
Test(reduce, int32_avg_division_exact) {
  static const int divs[] = {1,   2,   3,   5,    6,     7,       10,        31,
                             127, 255, 256, 1000, 65535, 1000003, 2147483647};
  const size_t n = 4096;
  uint64_t seed = 42;
  int32_t *a = malloc(n * 4), *b = malloc(n * 4), *d = malloc(n * 4);
  uint32_t *ua = malloc(n * 4), *ud = malloc(n * 4);
  cr_assert(a && b && d && ua && ud);
  for (int i = 0; i < NISAS; i++) {
    if (zcoll__reduce_set_isa(isas[i]) != 0) continue;
    for (size_t v = 0; v < sizeof divs / sizeof divs[0]; v++) {
      int div = divs[v];
      for (size_t j = 0; j < n; j++) {
        uint64_t r = rng_next(&seed);
        a[j] = (int32_t)(uint32_t)r;
        b[j] = j % 3 ? 0 : (int32_t)(uint32_t)(r >> 32);
        /* exact multiples and their neighbours */
        if (j % 4 == 1) a[j] = (int32_t)((int64_t)(a[j] / div) * div + (int64_t)(j % 3) - 1);
        if (j % 5 == 0) b[j] = 0;
        ua[j] = (uint32_t)r;
      }
      zcoll__reduce(ZCOLL_INT32, ZCOLL_AVG, d, a, b, n, div);
      zcoll__reduce_scale(ZCOLL_UINT32, ud, ua, n, div);
      for (size_t j = 0; j < n; j++) {
        int32_t s = (int32_t)((uint32_t)a[j] + (uint32_t)b[j]);
        if (d[j] != s / div)
          cr_assert_fail("isa=%s int32 (%d + %d) / %d: got %d want %d", isas[i], a[j], b[j], div,
                         d[j], s / div);
        if (ud[j] != ua[j] / (uint32_t)div)
          cr_assert_fail("isa=%s uint32 %u / %d: got %u", isas[i], ua[j], div, ud[j]);
      }
    }
  }
  free(a);
  free(b);
  free(d);
  free(ua);
  free(ud);
}

/* Every pair of 8-bit values, for many divisors (AVG divides 8-bit integers in float). */
Test(reduce, int8_avg_exhaustive) {
  static const int big[] = {100, 127,  128,      200,      255,       256,
                            257, 1000, 16777215, 16777217, 2147483647};
  enum { N = 256 * 256 };
  uint8_t *a = malloc(N), *b = malloc(N), *d = malloc(N);
  cr_assert(a && b && d);
  for (int j = 0; j < N; j++) {
    a[j] = (uint8_t)(j & 0xff);
    b[j] = (uint8_t)(j >> 8);
  }
  for (int i = 0; i < NISAS; i++) {
    if (zcoll__reduce_set_isa(isas[i]) != 0) continue;
    for (int v = 0; v < 64 + (int)(sizeof big / sizeof big[0]); v++) {
      int div = v < 64 ? v + 1 : big[v - 64];
      zcoll__reduce(ZCOLL_INT8, ZCOLL_AVG, d, a, b, N, div);
      for (int j = 0; j < N; j++) {
        int s = (int8_t)(uint8_t)(a[j] + b[j]);
        if ((int8_t)d[j] != s / div)
          cr_assert_fail("isa=%s int8 (%d + %d) / %d: got %d want %d", isas[i], (int8_t)a[j],
                         (int8_t)b[j], div, (int8_t)d[j], s / div);
      }
      zcoll__reduce(ZCOLL_UINT8, ZCOLL_AVG, d, a, b, N, div);
      for (int j = 0; j < N; j++) {
        int s = (uint8_t)(a[j] + b[j]);
        if (d[j] != s / div)
          cr_assert_fail("isa=%s uint8 (%d + %d) / %d: got %d want %d", isas[i], a[j], b[j], div,
                         d[j], s / div);
      }
    }
  }
  free(a);
  free(b);
  free(d);
}

Test(reduce, zero_count_touches_nothing) {
  for (int i = 0; i < NISAS; i++) {
    if (zcoll__reduce_set_isa(isas[i]) != 0) continue;
    for (int dt = 0; dt < NDTYPES; dt++) {
      for (int op = 0; op < ZCOLL_OP_COUNT; op++)
        zcoll__reduce((zcoll_dtype_t)dt, (zcoll_op_t)op, NULL, NULL, NULL, 0, 3);
      zcoll__reduce_scale((zcoll_dtype_t)dt, NULL, NULL, 0, 3);
    }
  }
}

Test(reduce, isa_detection) {
  cr_assert_eq(zcoll__reduce_set_isa(NULL), 0);
  const char *best = zcoll__reduce_isa();
  int best_ok = 0;
  for (int i = NISAS - 1; i >= 0; i--) {
    if (zcoll__reduce_set_isa(isas[i]) == 0) {
      cr_assert_str_eq(best, isas[i], "detection chose %s, but %s runs here", best, isas[i]);
      best_ok = 1;
      break;
    }
  }
  cr_assert(best_ok);
  cr_assert_eq(zcoll__reduce_set_isa("generic"), 0, "the generic kernels run everywhere");
  cr_assert_eq(zcoll__reduce_set_isa("sse9"), -1);
  cr_assert_str_eq(zcoll__reduce_isa(), "generic", "a failed override must not change it");
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    cr_assert_str_eq(best, "avx512");
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c"))
    cr_assert_str_eq(best, "avx2");
#endif
}
