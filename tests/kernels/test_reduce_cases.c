/*
 * test_reduce_cases.c -- closed-form cases of the reduction kernels: wraparound,
 * rounding ties, NaN, exhaustive 16-bit and 8-bit sweeps, ISA detection. Reference and
 * helpers in reduce_ref.h.
 */
#include "reduce_ref.h"

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
