/*
 * test_reduce.c -- the reduction kernels against an independent scalar reference.
 *
 * The reference below shares no code with lib/kernels/reduce.c: integers are combined in
 * 128-bit arithmetic and truncated by taking the low bytes, float16 goes through GCC's
 * _Float16, bfloat16 through a conversion written here that picks the nearer of the two
 * neighbouring bfloat16 values. Every instruction-set variant the CPU can run is
 * checked, each element compared exactly (NaN only for being NaN), and every byte
 * around the output and of the inputs is checked to be untouched.
 */
#include "reduce_ref.h"
#include "sample.h"

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

/* ZCOLL_TEST_SAMPLE=1 (CI's sanitizer pass, -O0 and every byte checked: 3 times slower): the
 * 65537-element case on one variant per dtype (dt % NISAS), every other size on all; 1000
 * elements already run every kernel's main loop many times over. The plain pass runs all. */
static int size_in_pass(size_t k, const struct kparam *p) {
  return !zt_sampled() || sizes[k] <= 1000 || p->dt % NISAS == p->isa;
}

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
    if (!size_in_pass(k, p)) continue;
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
    if (!size_in_pass(k, p)) continue;
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
