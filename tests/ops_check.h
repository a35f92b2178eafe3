/*
 * ops_check.h -- created ops checked element by element, shared by the thread tests
 * (test_ops.c) and the process program (progs/ops_check.c):
 * - maxloc: a {float value; int32 index} pair carried as ZCOLL_UINT8 with 8-byte
 *   elements, commutative (ties go to the lower index);
 * - affine: maps t -> a*t + b over uint64 (mod 2^64) composed in rank order, 16-byte
 *   elements, associative but not commutative: only a rank-ordered combination gives
 *   the reference;
 * - premul sum: every floating-point dtype, rank r's input scaled by scalar(r); inputs
 *   and scalars are small multiples of 1/4, so every partial sum is exact in every
 *   dtype and the result is compared bit for bit.
 * Each returns the number of wrong elements (0 if the call failed: *st says so).
 */
#ifndef ZCOLL_OPS_CHECK_H
#define ZCOLL_OPS_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_common.h"
#include "zcoll.h"

struct oc_maxloc {
  float v;
  int32_t i;
};
struct oc_affine {
  uint64_t a, b;
};

static void oc_maxloc_fn(const void *in, void *inout, size_t count, zcoll_dtype_t dt, void *u) {
  (void)u;
  if (dt != ZCOLL_UINT8 || count % sizeof(struct oc_maxloc)) abort(); /* never split */
  const struct oc_maxloc *x = in;
  struct oc_maxloc *y = inout;
  for (size_t k = 0; k < count / sizeof(*x); k++)
    if (x[k].v > y[k].v || (x[k].v == y[k].v && x[k].i < y[k].i)) y[k] = x[k];
}

/* inout = in then inout: (t -> y.a * (x.a * t + x.b) + y.b). */
static void oc_affine_fn(const void *in, void *inout, size_t count, zcoll_dtype_t dt, void *u) {
  (void)u;
  if (dt != ZCOLL_UINT64 || count % 2) abort();
  const struct oc_affine *x = in;
  struct oc_affine *y = inout;
  for (size_t k = 0; k < count / 2; k++) {
    uint64_t a = x[k].a * y[k].a, b = y[k].a * x[k].b + y[k].b;
    y[k].a = a;
    y[k].b = b;
  }
}

static inline struct oc_maxloc oc_maxloc_in(int r, size_t k) {
  return (struct oc_maxloc){(float)((k * 31 + (size_t)r * 17) % 23), r};
}
static inline struct oc_affine oc_affine_in(int r, size_t k) {
  return (struct oc_affine){2 * (k + (uint64_t)r) + 1, k * 7 + (uint64_t)r * 13};
}

/* The collective on rank `rank` of `size` (in place or not), checked. */
static inline size_t oc_maxloc_check(zcoll_comm_t *comm, zcoll_op_t op, size_t n, int in_place,
                                     zcoll_status_t *st) {
  int rank = zcoll_comm_rank(comm), size = zcoll_comm_size(comm);
  struct oc_maxloc *in = malloc(n * sizeof(*in) + 1), *out = malloc(n * sizeof(*out) + 1);
  for (size_t k = 0; k < n; k++) in[k] = out[k] = oc_maxloc_in(rank, k);
  *st = zcoll_allreduce(comm, in_place ? ZCOLL_IN_PLACE : in, out, n * sizeof(*in), ZCOLL_UINT8,
                        op);
  size_t bad = 0;
  for (size_t k = 0; *st == ZCOLL_OK && k < n; k++) {
    struct oc_maxloc want = oc_maxloc_in(0, k);
    for (int r = 1; r < size; r++) {
      struct oc_maxloc x = oc_maxloc_in(r, k);
      if (x.v > want.v) want = x;
    }
    bad += out[k].v != want.v || out[k].i != want.i;
  }
  free(in), free(out);
  return bad;
}

static inline size_t oc_affine_check(zcoll_comm_t *comm, zcoll_op_t op, size_t n, int in_place,
                                     zcoll_status_t *st) {
  int rank = zcoll_comm_rank(comm), size = zcoll_comm_size(comm);
  struct oc_affine *in = malloc(n * sizeof(*in) + 1), *out = malloc(n * sizeof(*out) + 1);
  for (size_t k = 0; k < n; k++) in[k] = out[k] = oc_affine_in(rank, k);
  *st = zcoll_allreduce(comm, in_place ? ZCOLL_IN_PLACE : in, out, 2 * n, ZCOLL_UINT64, op);
  size_t bad = 0;
  for (size_t k = 0; *st == ZCOLL_OK && k < n; k++) {
    struct oc_affine want = oc_affine_in(0, k);
    for (int r = 1; r < size; r++) {
      struct oc_affine y = oc_affine_in(r, k);
      want = (struct oc_affine){want.a * y.a, y.a * want.b + y.b};
    }
    bad += out[k].a != want.a || out[k].b != want.b;
  }
  free(in), free(out);
  return bad;
}

static inline double oc_premul_in(int r, size_t k) {
  return (double)((int)((k * 5 + (size_t)r * 3) % 9) - 4);
}

/* scalar[r] for every rank r: the one this rank's op was made with is scalar[rank]. */
static inline size_t oc_premul_check(zcoll_comm_t *comm, zcoll_op_t op, zcoll_dtype_t dt, size_t n,
                                     int in_place, const double *scalar, zcoll_status_t *st) {
  int rank = zcoll_comm_rank(comm), size = zcoll_comm_size(comm);
  size_t ds = zcoll_dtype_size(dt);
  char *in = malloc(n * ds + 1), *out = malloc(n * ds + 1), *want = malloc(ds);
  for (size_t k = 0; k < n; k++) {
    chk_store(dt, in, k, oc_premul_in(rank, k));
    chk_store(dt, out, k, oc_premul_in(rank, k));
  }
  *st = zcoll_allreduce(comm, in_place ? ZCOLL_IN_PLACE : in, out, n, dt, op);
  size_t bad = 0;
  for (size_t k = 0; *st == ZCOLL_OK && k < n; k++) {
    double w = 0;
    for (int r = 0; r < size; r++) w += scalar[r] * oc_premul_in(r, k);
    chk_store(dt, want, 0, w);
    bad += memcmp(out + k * ds, want, ds) != 0;
  }
  free(in), free(out), free(want);
  return bad;
}

#endif
