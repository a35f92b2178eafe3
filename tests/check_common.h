/*
 * check_common.h -- input patterns and an independent reference for allreduce tests.
 *
 * Every rank's input is a small integer per element, exact in every dtype (bfloat16
 * included), and chosen so that sums, products and averages over up to 64 ranks stay
 * exact: the expected value is computed here in double/int64 arithmetic, element by
 * element, without any zcoll code, and compared bit for bit.
 */
#ifndef ZCOLL_CHECK_COMMON_H
#define ZCOLL_CHECK_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "zcoll.h"

static inline int chk_is_unsigned(zcoll_dtype_t dt) {
  return dt == ZCOLL_UINT8 || dt == ZCOLL_UINT32 || dt == ZCOLL_UINT64;
}
static inline int chk_is_float(zcoll_dtype_t dt) {
  return dt == ZCOLL_FLOAT16 || dt == ZCOLL_BFLOAT16 || dt == ZCOLL_FLOAT32 || dt == ZCOLL_FLOAT64;
}

/* Rank r's input at element i (the same function every rank uses for every rank). */
static inline int64_t chk_value(zcoll_op_t op, zcoll_dtype_t dt, int r, size_t i, unsigned salt) {
  uint64_t h = (uint64_t)r * 7u + (uint64_t)i * 13u + salt;
  if (op == ZCOLL_PROD) { /* at most two factors of 2 per element across 9 ranks */
    if ((r + i + salt) % 5 == 0) return 2;
    return chk_is_unsigned(dt) ? 1 : ((h % 2) ? -1 : 1);
  }
  int64_t v = (int64_t)(h % 9);
  return chk_is_unsigned(dt) ? v : v - 4;
}

/* float -> IEEE binary16, round to nearest even (independent of lib/). */
static inline uint16_t chk_f32_to_f16(float f) {
  _Float16 h = (_Float16)f; /* gcc's conversion: correctly rounded */
  uint16_t u;
  memcpy(&u, &h, 2);
  return u;
}
static inline uint16_t chk_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t lsb = (u >> 16) & 1;
  return (uint16_t)((u + 0x7fffu + lsb) >> 16); /* inputs here are finite */
}

/* Writes value v (exact) as element i of a buffer of dtype dt. */
static inline void chk_store(zcoll_dtype_t dt, void *buf, size_t i, double v) {
  char *p = (char *)buf + i * zcoll_dtype_size(dt);
  switch (dt) {
  case ZCOLL_INT8: {
    int8_t x = (int8_t)(int64_t)v;
    memcpy(p, &x, 1);
    break;
  }
  case ZCOLL_UINT8: {
    uint8_t x = (uint8_t)(int64_t)v;
    memcpy(p, &x, 1);
    break;
  }
  case ZCOLL_INT32: {
    int32_t x = (int32_t)(int64_t)v;
    memcpy(p, &x, 4);
    break;
  }
  case ZCOLL_UINT32: {
    uint32_t x = (uint32_t)(int64_t)v;
    memcpy(p, &x, 4);
    break;
  }
  case ZCOLL_INT64: {
    int64_t x = (int64_t)v;
    memcpy(p, &x, 8);
    break;
  }
  case ZCOLL_UINT64: {
    uint64_t x = (uint64_t)(int64_t)v;
    memcpy(p, &x, 8);
    break;
  }
  case ZCOLL_FLOAT16: {
    uint16_t x = chk_f32_to_f16((float)v);
    memcpy(p, &x, 2);
    break;
  }
  case ZCOLL_BFLOAT16: {
    uint16_t x = chk_f32_to_bf16((float)v);
    memcpy(p, &x, 2);
    break;
  }
  case ZCOLL_FLOAT32: {
    float x = (float)v;
    memcpy(p, &x, 4);
    break;
  }
  case ZCOLL_FLOAT64: {
    memcpy(p, &v, 8);
    break;
  }
  default: break;
  }
}

/* The expected element i, written into `out` (one element of dt). */
static inline void chk_expected(zcoll_op_t op, zcoll_dtype_t dt, int size, size_t i, unsigned salt,
                                void *out) {
  int64_t acc = chk_value(op, dt, 0, i, salt);
  for (int r = 1; r < size; r++) {
    int64_t v = chk_value(op, dt, r, i, salt);
    switch (op) {
    case ZCOLL_SUM:
    case ZCOLL_AVG: acc += v; break;
    case ZCOLL_PROD: acc *= v; break;
    case ZCOLL_MIN: acc = v < acc ? v : acc; break;
    case ZCOLL_MAX: acc = v > acc ? v : acc; break;
    default: break;
    }
  }
  if (op != ZCOLL_AVG) {
    chk_store(dt, out, 0, (double)acc);
    return;
  }
  switch (dt) {
  case ZCOLL_FLOAT64: {
    double x = (double)acc / size;
    memcpy(out, &x, 8);
    return;
  }
  case ZCOLL_FLOAT32: {
    float x = (float)acc / (float)size;
    memcpy(out, &x, 4);
    return;
  }
  case ZCOLL_FLOAT16: {
    uint16_t x = chk_f32_to_f16((float)acc / (float)size);
    memcpy(out, &x, 2);
    return;
  }
  case ZCOLL_BFLOAT16: {
    uint16_t x = chk_f32_to_bf16((float)acc / (float)size);
    memcpy(out, &x, 2);
    return;
  }
  default: chk_store(dt, out, 0, (double)(acc / size)); return; /* C truncates toward zero */
  }
}

/* Inputs and results are periodic in the element index (the pattern uses i mod 9,
 * mod 2 and mod 5), so one period is computed per case and large vectors cost a
 * memcmp per element, not a reduction over every rank. */
#define CHK_PERIOD 90

static inline void chk_fill(zcoll_op_t op, zcoll_dtype_t dt, void *buf, size_t count, int rank,
                            unsigned salt) {
  size_t ds = zcoll_dtype_size(dt);
  unsigned char period[CHK_PERIOD * 8];
  for (size_t i = 0; i < CHK_PERIOD; i++)
    chk_store(dt, period, i, (double)chk_value(op, dt, rank, i, salt));
  for (size_t i = 0; i < count; i++)
    memcpy((char *)buf + i * ds, period + (i % CHK_PERIOD) * ds, ds);
}

/* Compares every element; returns the number of wrong ones and describes the first. */
static inline size_t chk_verify(zcoll_op_t op, zcoll_dtype_t dt, int size, const void *buf,
                                size_t count, unsigned salt, char *why, size_t why_len) {
  size_t ds = zcoll_dtype_size(dt), wrong = 0;
  unsigned char want[CHK_PERIOD * 8];
  for (size_t i = 0; i < CHK_PERIOD; i++) chk_expected(op, dt, size, i, salt, want + i * ds);
  for (size_t i = 0; i < count; i++) {
    const unsigned char *got = (const unsigned char *)buf + i * ds;
    const unsigned char *w = want + (i % CHK_PERIOD) * ds;
    if (memcmp(got, w, ds) != 0) {
      if (!wrong && why) {
        uint64_t g = 0, x = 0;
        memcpy(&g, got, ds);
        memcpy(&x, w, ds);
        snprintf(why, why_len, "%s %s count %zu: element %zu is 0x%llx, expected 0x%llx",
                 zcoll_dtype_name(dt), zcoll_op_name(op), count, i, (unsigned long long)g,
                 (unsigned long long)x);
      }
      wrong++;
    }
  }
  return wrong;
}

#endif
