/*
 * perf_check.c -- the check pattern of the benchmarks and its independent reference,
 * with their own 16-bit float conversions, and the AVG division for peers without one.
 *
 * The check pattern makes every reference value exact, for every dtype and op, for any
 * number of ranks: at most 64 ranks contribute a non-zero value to any element of a
 * sum-like op (|sum| <= 256, exact in float16 and bfloat16 and in every partial sum,
 * whatever the reduction order), a product is +-1, +-2 or +-0.5 for floating types and
 * wraps modulo 2^bits for integers, and 8-bit AVG uses small enough values that the sum
 * never wraps. The reference is computed here, element by element, without the
 * library under test.
 */
#include "perf_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PT_MAX_CONTRIB 64 /* at most this many ranks give a non-zero sum-like value */

static bool pt_is_float(enum pt_dtype t) { return t >= PT_FLOAT16; }

static bool pt_is_unsigned(enum pt_dtype t) {
  return t == PT_UINT8 || t == PT_UINT32 || t == PT_UINT64;
}

/* ---- 16-bit floating point, round to nearest even ---------------------------------- */

static uint32_t pt_f32_bits(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  return x;
}

static uint16_t pt_f32_to_f16(float f) {
  uint32_t x = pt_f32_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u, absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return (uint16_t)(sign | 0x7e00u); /* NaN */
  int e = (int)(absx >> 23);                                 /* biased float32 exponent */
  if (e > 142) return (uint16_t)(sign | 0x7c00u);            /* >= 2^16 (or inf): inf */
  uint32_t mant = (absx & 0x7fffffu) | (e ? 0x800000u : 0);
  uint32_t q, rem, half;
  if (e >= 113) { /* a normal half: exponent e - 112, keep 10 of the 23 fraction bits */
    q = ((uint32_t)(e - 112) << 10) | ((absx & 0x7fffffu) >> 13);
    rem = absx & 0x1fffu;
    half = 0x1000u;
  } else { /* subnormal half: m * 2^-24 with m = mant * 2^(e - 126) */
    int shift = 126 - (e ? e : 1);
    if (shift > 31) return (uint16_t)sign;
    q = mant >> shift;
    rem = mant & ((1u << shift) - 1u);
    half = 1u << (shift - 1);
  }
  if (rem > half || (rem == half && (q & 1u))) q++; /* a carry moves into the exponent */
  return (uint16_t)(sign | q);
}

static uint16_t pt_f32_to_bf16(float f) {
  uint32_t x = pt_f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* ---- the check pattern and its reference ----------------------------------------- */

static void pt_store_f32(enum pt_dtype t, void *dst, float f) {
  uint16_t h;
  switch (t) {
  case PT_FLOAT16:
    h = pt_f32_to_f16(f);
    memcpy(dst, &h, 2);
    break;
  case PT_BFLOAT16:
    h = pt_f32_to_bf16(f);
    memcpy(dst, &h, 2);
    break;
  case PT_FLOAT32: memcpy(dst, &f, 4); break;
  default: {
    double d = f;
    memcpy(dst, &d, 8);
  } break;
  }
}

/* A value that is exact in every type: an integer of magnitude <= 256, or +-2^k. */
static void pt_store(enum pt_dtype t, void *dst, int64_t iv, double fv) {
  if (t == PT_FLOAT64) {
    memcpy(dst, &fv, 8);
  } else if (pt_is_float(t)) {
    pt_store_f32(t, dst, (float)fv);
  } else {
    uint64_t u = (uint64_t)iv; /* two's complement, truncated to the element width */
    uint8_t b = (uint8_t)u;
    uint32_t w = (uint32_t)u;
    switch (pt_dtype_size(t)) {
    case 1: memcpy(dst, &b, 1); break;
    case 4: memcpy(dst, &w, 4); break;
    default: memcpy(dst, &u, 8); break;
    }
  }
}

/* Sum-like ops give rank r a value from -a..a (0..2a for unsigned types), and only
 * ranks whose distance to i % p is a multiple of `stride` contribute: at most 64. */
static int pt_stride(int p) { return (p + PT_MAX_CONTRIB - 1) / PT_MAX_CONTRIB; }

static int pt_amplitude(enum pt_dtype t, enum pt_op op, int p) {
  int n = (p + pt_stride(p) - 1) / pt_stride(p), a = 4;
  if (op == PT_AVG && t == PT_INT8 && a * n > 127) a = 127 / n; /* the sum must not wrap */
  if (op == PT_AVG && t == PT_UINT8 && 2 * a * n > 255) a = 255 / (2 * n);
  return a < 1 ? 1 : a;
}

static int64_t pt_sum_value(enum pt_dtype t, enum pt_op op, int r, int p, size_t i) {
  size_t ip = i % (size_t)p;
  if (((size_t)r + (size_t)p - ip) % (size_t)p % (size_t)pt_stride(p) != 0) return 0;
  int a = pt_amplitude(t, op, p);
  size_t mod = 2 * (size_t)a + 1;
  int64_t m = (int64_t)(((size_t)r * 7 + (i % mod) * 13 + 3) % mod);
  return pt_is_unsigned(t) ? m : m - a;
}

/* PROD, floating types: +-1, times 2 on rank i % p, times 0.5 on one rank for i % 3 == 0. */
static double pt_prod_fvalue(int r, int p, size_t i) {
  double v = 1.0;
  if ((size_t)r == i % (size_t)p) v *= 2.0;
  if (i % 3 == 0 && (size_t)r == (i / 3 + 1) % (size_t)p) v *= 0.5;
  if (((size_t)r * 3 + i % 5) % 5 == 0) v = -v;
  return v;
}

/* PROD, integer types: odd factors keep most products non-zero; they wrap. */
static int64_t pt_prod_ivalue(int r, size_t i) {
  static const int8_t f[8] = {1, -1, 3, 1, -3, 1, 2, -1};
  return f[((size_t)r * 5 + (i % 8) * 3) % 8];
}

/* Both the input of every rank and the reference repeat with this period in i. */
static size_t pt_period(enum pt_dtype t, enum pt_op op, int p) {
  if (op == PT_PROD) return pt_is_float(t) ? 15 * (size_t)p : 8;
  return (2 * (size_t)pt_amplitude(t, op, p) + 1) * (size_t)p;
}

/* Rank r's input element i. */
static void pt_input(enum pt_dtype t, enum pt_op op, int r, int p, size_t i, void *dst) {
  if (op == PT_PROD && pt_is_float(t)) {
    pt_store(t, dst, 0, pt_prod_fvalue(r, p, i));
  } else if (op == PT_PROD) {
    pt_store(t, dst, pt_prod_ivalue(r, i), 0.0);
  } else {
    int64_t v = pt_sum_value(t, op, r, p, i);
    pt_store(t, dst, v, (double)v);
  }
}

/* The exact result for element i over p ranks. */
static void pt_reference(enum pt_dtype t, enum pt_op op, int p, size_t i, void *dst) {
  if (op == PT_PROD) {
    double fp = 1.0;
    uint64_t ip = 1;
    for (int r = 0; r < p; r++) {
      if (pt_is_float(t))
        fp *= pt_prod_fvalue(r, p, i);
      else
        ip *= (uint64_t)pt_prod_ivalue(r, i); /* wraps modulo 2^64, then truncated */
    }
    pt_store(t, dst, (int64_t)ip, fp);
    return;
  }
  int64_t acc = pt_sum_value(t, op, 0, p, i);
  for (int r = 1; r < p; r++) {
    int64_t v = pt_sum_value(t, op, r, p, i);
    if (op == PT_MIN)
      acc = v < acc ? v : acc;
    else if (op == PT_MAX)
      acc = v > acc ? v : acc;
    else
      acc += v;
  }
  if (op != PT_AVG) {
    pt_store(t, dst, acc, (double)acc);
  } else if (t == PT_FLOAT64) {
    double d = (double)acc / (double)p;
    memcpy(dst, &d, 8);
  } else if (pt_is_float(t)) {
    pt_store_f32(t, dst, (float)acc / (float)p); /* rounded to 16 bits once, from float */
  } else {
    pt_store(t, dst, acc / p, 0.0); /* C division truncates toward zero */
  }
}

static int pt_pattern_alloc(struct pt_pattern *pat, enum pt_dtype t, enum pt_op op, size_t period,
                            bool with_ref) {
  pat->dtype = t;
  pat->op = op;
  pat->coll = PT_COLL_ALLREDUCE;
  pat->rank = 0;
  pat->nranks = 1;
  pat->esize = pt_dtype_size(t);
  pat->period = period;
  pat->input = malloc(pat->period * pat->esize);
  pat->ref = with_ref ? malloc(pat->period * pat->esize) : NULL;
  if (pat->input == NULL || (with_ref && pat->ref == NULL)) {
    free(pat->input);
    free(pat->ref);
    return -1;
  }
  return 0;
}

void pt_store_int(enum pt_dtype t, void *dst, int64_t v) { pt_store(t, dst, v, (double)v); }

int pt_pattern_init(struct pt_pattern *pat, enum pt_dtype t, enum pt_op op, int rank, int nranks,
                    bool with_ref) {
  if (pt_pattern_alloc(pat, t, op, pt_period(t, op, nranks), with_ref)) return -1;
  for (size_t i = 0; i < pat->period; i++) {
    pt_input(t, op, rank, nranks, i, pat->input + i * pat->esize);
    if (with_ref) pt_reference(t, op, nranks, i, pat->ref + i * pat->esize);
  }
  return 0;
}

/* ---- a broadcast's pattern ---------------------------------------------------------- */

#define PT_BCAST_PERIOD 61 /* elements; a prime, so that no power-of-two piece lines up */

/* The root's element i for the salt-th row: 0..60 (unsigned types) or -30..30, exact in
 * every type and never the sentinel (PT_POISON bytes) the other ranks start from. */
static int64_t pt_bcast_value(enum pt_dtype t, int root, size_t i, uint64_t salt) {
  uint64_t v = ((uint64_t)i * 7 + (uint64_t)root * 13 + salt * 5) % PT_BCAST_PERIOD;
  return pt_is_unsigned(t) ? (int64_t)v : (int64_t)v - 30;
}

int pt_pattern_init_bcast(struct pt_pattern *pat, enum pt_dtype t) {
  return pt_pattern_alloc(pat, t, PT_SUM, PT_BCAST_PERIOD, true);
}

void pt_pattern_bcast(struct pt_pattern *pat, int root, int rank, uint64_t salt) {
  for (size_t i = 0; i < pat->period; i++) {
    int64_t v = pt_bcast_value(pat->dtype, root, i, salt);
    pt_store(pat->dtype, pat->ref + i * pat->esize, v, (double)v);
  }
  if (rank == root)
    memcpy(pat->input, pat->ref, pat->period * pat->esize);
  else
    memset(pat->input, PT_POISON, pat->period * pat->esize);
}

/* ---- an allgather's and a reduce-scatter's ------------------------------------------ */

int pt_pattern_init_scatter(struct pt_pattern *pat, enum pt_dtype t, enum pt_op op, int rank,
                            int nranks, bool with_ref) {
  if (pt_pattern_init(pat, t, op, rank, nranks, with_ref)) return -1;
  pat->coll = PT_COLL_REDUCE_SCATTER;
  pat->rank = rank;
  pat->nranks = nranks;
  return 0;
}

int pt_pattern_init_reduce(struct pt_pattern *pat, enum pt_dtype t, enum pt_op op, int rank,
                           int nranks, int root, bool with_ref) {
  if (pt_pattern_init(pat, t, op, rank, nranks, with_ref)) return -1;
  pat->coll = PT_COLL_REDUCE;
  pat->rank = rank;
  pat->nranks = nranks;
  pat->root = root;
  return 0;
}

/* Rank q's allgather input: the broadcast's values with q as the root (never the poison). */
static void pt_gather_block(enum pt_dtype t, int q, unsigned char *blk) {
  for (size_t i = 0; i < PT_BCAST_PERIOD; i++) {
    int64_t v = pt_bcast_value(t, q, i, 0);
    pt_store(t, blk + i * pt_dtype_size(t), v, (double)v);
  }
}

int pt_pattern_init_gather(struct pt_pattern *pat, enum pt_dtype t, int rank, int nranks) {
  if (pt_pattern_alloc(pat, t, PT_SUM, PT_BCAST_PERIOD, true)) return -1;
  pt_gather_block(t, rank, pat->input);
  pat->coll = PT_COLL_ALLGATHER;
  pat->rank = rank;
  pat->nranks = nranks;
  return 0;
}

void pt_pattern_free(struct pt_pattern *pat) {
  free(pat->input);
  free(pat->ref);
  pat->input = pat->ref = NULL;
}

void pt_fill(void *buf, const unsigned char *blk, size_t esize, size_t period, size_t count) {
  unsigned char *p = buf;
  for (size_t i = 0; i < count; i += period) {
    size_t n = count - i < period ? count - i : period;
    memcpy(p + i * esize, blk, n * esize);
  }
}

uint64_t pt_count_wrong(const void *buf, const unsigned char *blk, size_t esize, size_t period,
                        size_t count) {
  const unsigned char *p = buf;
  uint64_t wrong = 0;
  for (size_t i = 0; i < count; i += period) {
    size_t n = count - i < period ? count - i : period;
    if (memcmp(p + i * esize, blk, n * esize) == 0) continue;
    for (size_t j = 0; j < n; j++)
      wrong += memcmp(p + (i + j) * esize, blk + j * esize, esize) != 0;
  }
  return wrong;
}

uint64_t pt_guard_wrong(const void *buf, size_t esize, size_t count) {
  const unsigned char *g = (const unsigned char *)buf + count * esize;
  uint64_t wrong = 0;
  for (size_t s = 0; s < PT_GUARD; s += esize) {
    for (size_t k = 0; k < esize; k++) {
      if (g[s + k] != PT_POISON) {
        wrong++;
        break;
      }
    }
  }
  return wrong;
}

/* Where a run's input lies and how long it is, by the collective's layout. */
static unsigned char *pt_input_at(const struct pt_pattern *pat, unsigned char *sendbuf,
                                  unsigned char *recvbuf, size_t count, size_t *n) {
  size_t p = (size_t)pat->nranks;
  *n = pat->coll == PT_COLL_REDUCE_SCATTER ? count * p : count;
  if (sendbuf) return sendbuf;
  return pat->coll == PT_COLL_ALLGATHER ? recvbuf + (size_t)pat->rank * count * pat->esize
                                        : recvbuf;
}

void pt_fill_input(const struct pt_pattern *pat, unsigned char *sendbuf, unsigned char *recvbuf,
                   size_t count) {
  size_t n;
  unsigned char *in = pt_input_at(pat, sendbuf, recvbuf, count, &n);
  pt_fill(in, pat->input, pat->esize, pat->period, n);
}

/* The result's length: an allgather's is every block; in place a reduce-scatter's buffer
 * is its input's. */
static size_t pt_result_len(const struct pt_pattern *pat, bool in_place, size_t count) {
  if (pat->coll == PT_COLL_ALLGATHER || (pat->coll == PT_COLL_REDUCE_SCATTER && in_place))
    return count * (size_t)pat->nranks;
  return count;
}

void pt_check_arm(const struct pt_pattern *pat, unsigned char *sendbuf, unsigned char *recvbuf,
                  size_t count) {
  const size_t es = pat->esize, out = pt_result_len(pat, !sendbuf, count);
  if (pat->coll == PT_COLL_ALLGATHER && !sendbuf) /* the other blocks are the result's */
    memset(recvbuf, PT_POISON, out * es + PT_GUARD);
  size_t n;
  unsigned char *in = pt_input_at(pat, sendbuf, recvbuf, count, &n);
  pt_fill(in, pat->input, es, pat->period, n);
  if (sendbuf) {
    memset(in + n * es, PT_POISON, PT_GUARD);
    memset(recvbuf, PT_POISON, out * es + PT_GUARD);
  } else {
    memset(recvbuf + out * es, PT_POISON, PT_GUARD);
  }
}

/* Elements of buf[0..count) that differ from the periodic block read from `offset` on. */
static uint64_t pt_count_wrong_at(const unsigned char *buf, const unsigned char *blk, size_t esize,
                                  size_t period, size_t offset, size_t count) {
  uint64_t wrong = 0;
  for (size_t j = 0; j < count; j++)
    wrong += memcmp(buf + j * esize, blk + (offset + j) % period * esize, esize) != 0;
  return wrong;
}

uint64_t pt_check_count(const struct pt_pattern *pat, const unsigned char *sendbuf,
                        const unsigned char *recvbuf, size_t count) {
  const size_t es = pat->esize, per = pat->period, out = pt_result_len(pat, !sendbuf, count);
  uint64_t wrong = pt_guard_wrong(recvbuf, es, out);
  if (pat->coll == PT_COLL_ALLGATHER) {
    unsigned char blk[PT_BCAST_PERIOD * 8];
    for (int q = 0; q < pat->nranks; q++) {
      pt_gather_block(pat->dtype, q, blk);
      wrong += pt_count_wrong(recvbuf + (size_t)q * count * es, blk, es, per, count);
    }
  } else if (pat->coll == PT_COLL_REDUCE_SCATTER) {
    wrong += pt_count_wrong_at(recvbuf, pat->ref, es, per, (size_t)pat->rank * count % per, count);
  } else if (pat->coll == PT_COLL_REDUCE && pat->rank != pat->root) {
    /* in place: the input, unchanged; out of place: the poison, untouched */
    static const unsigned char poison[8] = {PT_POISON, PT_POISON, PT_POISON, PT_POISON,
                                            PT_POISON, PT_POISON, PT_POISON, PT_POISON};
    wrong += sendbuf ? pt_count_wrong(recvbuf, poison, es, 1, count)
                     : pt_count_wrong(recvbuf, pat->input, es, per, count);
  } else {
    wrong += pt_count_wrong(recvbuf, pat->ref, es, per, count);
  }
  if (sendbuf) {
    size_t n = pat->coll == PT_COLL_REDUCE_SCATTER ? count * (size_t)pat->nranks : count;
    wrong += pt_count_wrong(sendbuf, pat->input, es, per, n) + pt_guard_wrong(sendbuf, es, n);
  }
  return wrong;
}

/* ---- AVG for peers that have none: the sum, then this division ---------------- */

static float pt_f16_to_f32(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  float v;
  if (e == 0)
    v = ldexpf((float)m, -24);
  else if (e == 31)
    v = m ? NAN : INFINITY;
  else
    v = ldexpf((float)(m | 0x400), e - 25);
  return (h & 0x8000) ? -v : v;
}

#define DIVIDE(type, buf, count, p)                                        \
  do {                                                                     \
    type *x_ = (type *)(buf);                                              \
    for (size_t i_ = 0; i_ < (count); i_++) x_[i_] = (type)(x_[i_] / (p)); \
  } while (0)

void pt_divide(void *buf, size_t count, enum pt_dtype t, int p) {
  switch (t) {
  case PT_INT8: DIVIDE(int8_t, buf, count, p); break;
  case PT_UINT8: DIVIDE(uint8_t, buf, count, p); break;
  case PT_INT32: DIVIDE(int32_t, buf, count, p); break;
  case PT_UINT32: DIVIDE(uint32_t, buf, count, (uint32_t)p); break;
  case PT_INT64: DIVIDE(int64_t, buf, count, (int64_t)p); break;
  case PT_UINT64: DIVIDE(uint64_t, buf, count, (uint64_t)p); break;
  case PT_FLOAT32: DIVIDE(float, buf, count, (float)p); break;
  case PT_FLOAT64: DIVIDE(double, buf, count, (double)p); break;
  case PT_FLOAT16: {
    uint16_t *x = buf;
    for (size_t i = 0; i < count; i++) x[i] = pt_f32_to_f16(pt_f16_to_f32(x[i]) / (float)p);
  } break;
  default: break;
  }
}
