/*
 * sg_check.h -- allgather, reduce-scatter and reduce, one case at a time, every element
 * checked against check_common.h's reference (computed without zcoll), shared by the
 * thread tests (test_scatter_gather.c) and the process program (progs/sg_check.c).
 *
 * Beyond the result: an out-of-place input is left as it was, nothing is written past a
 * result (a guard of PAD bytes follows it), and a reduce leaves the non-roots' recvbuf
 * alone (or takes NULL there).
 */
#ifndef ZCOLL_SG_CHECK_H
#define ZCOLL_SG_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_common.h"
#include "zcoll.h"

enum { SG_ALLGATHER, SG_REDUCE_SCATTER, SG_REDUCE, SG_NKINDS };
static const char *const sg_kind_names[SG_NKINDS] = {"allgather", "reduce_scatter", "reduce"};

#define SG_GUARD 64
#define SG_PAD 0x5a

struct sg_case {
  int kind;
  zcoll_dtype_t dt;
  zcoll_op_t op; /* allgather: ignored */
  int in_place;
  size_t count; /* per rank: sendcount, recvcount, count */
  int root;     /* reduce */
  int nonblocking;
  unsigned salt;
  int reg; /* the result buffer zcoll_mem_register'ed: peers may write it (verbs grants) */
};

static inline int sg_guard_ok(const unsigned char *p) {
  for (int k = 0; k < SG_GUARD; k++)
    if (p[k] != SG_PAD) return 0;
  return 1;
}

/* Element i of buf against rank r's value (allgather) or the reduction (others) at global
 * index gi; returns 1 if wrong, describing the first wrong one. */
static inline int sg_elem_bad(const struct sg_case *c, int size, const void *buf, size_t i, int r,
                              size_t gi, size_t *wrong, char *msg, size_t len) {
  size_t ds = zcoll_dtype_size(c->dt);
  unsigned char want[8];
  if (c->kind == SG_ALLGATHER)
    chk_store(c->dt, want, 0, (double)chk_value(ZCOLL_SUM, c->dt, r, gi, c->salt));
  else
    chk_expected(c->op, c->dt, size, gi, c->salt, want);
  const unsigned char *got = (const unsigned char *)buf + i * ds;
  if (!memcmp(got, want, ds)) return 0;
  if (!(*wrong)++) {
    uint64_t g = 0, w = 0;
    memcpy(&g, got, ds);
    memcpy(&w, want, ds);
    snprintf(msg, len, "element %zu is 0x%llx, expected 0x%llx", i, (unsigned long long)g,
             (unsigned long long)w);
  }
  return 1;
}

/* Runs case c on comm: 0 when right, else 1 with msg saying what. */
static inline int sg_run(zcoll_comm_t *comm, const struct sg_case *c, char *msg, size_t len) {
  int rank = zcoll_comm_rank(comm), p = zcoll_comm_size(comm);
  size_t ds = zcoll_dtype_size(c->dt), n = c->count, P = (size_t)p;
  zcoll_op_t vop = c->kind == SG_ALLGATHER ? ZCOLL_SUM : c->op; /* the values' pattern */
  /* Input and result lengths, in elements; in place both are the result buffer. */
  size_t in_n = c->kind == SG_REDUCE_SCATTER ? P * n : n;
  size_t out_n = c->kind == SG_ALLGATHER                       ? P * n
                 : c->kind == SG_REDUCE_SCATTER && c->in_place ? P * n
                                                               : n;
  unsigned char *in = malloc(in_n * ds + 1), *keep = malloc(in_n * ds + 1);
  unsigned char *out = malloc(out_n * ds + SG_GUARD);
  memset(out, SG_PAD, out_n * ds + SG_GUARD);
  /* Rank r's input element i is chk_value(r, global index): the allgather's and reduce's
   * global index is i, the reduce-scatter's input is already global. */
  for (size_t i = 0; i < in_n; i++)
    chk_store(c->dt, in, i, (double)chk_value(vop, c->dt, rank, i, c->salt));
  memcpy(keep, in, in_n * ds);
  const void *send = in;
  int is_root = c->kind == SG_REDUCE && rank == c->root;
  if (c->in_place) {
    send = ZCOLL_IN_PLACE;
    if (c->kind == SG_ALLGATHER)
      memcpy(out + (size_t)rank * n * ds, in, n * ds);
    else
      memcpy(out, in, in_n * ds);
  }
  void *recv = out;
  if (c->kind == SG_REDUCE && !is_root && c->salt % 2) recv = NULL; /* MPI: not used there */
  zcoll_request_t *q = NULL;
  zcoll_mr_t *mr = NULL;
  zcoll_status_t st = ZCOLL_OK;
  if (c->reg && out_n && (st = zcoll_mem_register(comm, out, out_n * ds, &mr)) != ZCOLL_OK) {
    snprintf(msg, len, "zcoll_mem_register: %s", zcoll_comm_last_error(comm));
    free(in), free(keep), free(out);
    return 1;
  }
  switch (c->kind) {
  case SG_ALLGATHER:
    st = c->nonblocking ? zcoll_iallgather(comm, send, recv, n, c->dt, &q)
                        : zcoll_allgather(comm, send, recv, n, c->dt);
    break;
  case SG_REDUCE_SCATTER:
    st = c->nonblocking ? zcoll_ireduce_scatter(comm, send, recv, n, c->dt, c->op, &q)
                        : zcoll_reduce_scatter(comm, send, recv, n, c->dt, c->op);
    break;
  default:
    st = c->nonblocking ? zcoll_ireduce(comm, send, recv, n, c->dt, c->op, c->root, &q)
                        : zcoll_reduce(comm, send, recv, n, c->dt, c->op, c->root);
    break;
  }
  if (st == ZCOLL_OK && q) st = zcoll_wait(q);
  if (q) zcoll_request_free(q);
  if (mr) zcoll_mem_deregister(mr);
  char what[160];
  snprintf(what, sizeof(what), "%s%s%s %s %s count %zu root %d p %d", c->nonblocking ? "i" : "",
           sg_kind_names[c->kind], c->in_place ? " in place" : "", zcoll_dtype_name(c->dt),
           c->kind == SG_ALLGATHER ? "-" : zcoll_op_name(c->op), n, c->root, p);
  int bad = 0;
  size_t wrong = 0;
  char first[160] = "";
  if (st != ZCOLL_OK) {
    snprintf(msg, len, "%s: %s: %s", what, zcoll_strerror(st), zcoll_comm_last_error(comm));
    bad = 1;
  } else if (!c->in_place && memcmp(in, keep, in_n * ds)) {
    snprintf(msg, len, "%s: the input changed", what);
    bad = 1;
  } else if (!sg_guard_ok(out + out_n * ds)) {
    snprintf(msg, len, "%s: written past the result", what);
    bad = 1;
  } else {
    if (c->kind == SG_ALLGATHER)
      for (size_t i = 0; i < P * n; i++)
        sg_elem_bad(c, p, out, i, (int)(i / n), i % n, &wrong, first, sizeof(first));
    else if (c->kind == SG_REDUCE_SCATTER)
      for (size_t i = 0; i < n; i++)
        sg_elem_bad(c, p, out, i, 0, (size_t)rank * n + i, &wrong, first, sizeof(first));
    else if (is_root)
      for (size_t i = 0; i < n; i++) sg_elem_bad(c, p, out, i, 0, i, &wrong, first, sizeof(first));
    else
      for (size_t i = 0; i < out_n * ds; i++) wrong += out[i] != SG_PAD;
    if (wrong) {
      snprintf(msg, len, "%s: %zu wrong elements%s%s", what, wrong,
               *first ? "; " : " (a non-root's recvbuf was written)", first);
      bad = 1;
    }
  }
  free(in), free(keep), free(out);
  return bad;
}

#endif
