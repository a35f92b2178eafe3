/*
 * group_bodies.h -- zcoll_group_start / zcoll_group_end cases shared by
 * tests/coll/test_group.c (ranks as threads over loopback) and tests/progs/group_check.c
 * (processes over shm and UCX); public API only. Each returns 0, or 1 with the reason in
 * msg. Every element is checked against a reference computed here, without zcoll.
 */
#ifndef ZCOLL_TEST_GROUP_BODIES_H
#define ZCOLL_TEST_GROUP_BODIES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zcoll.h"

#define GR_CALLS 50
#define GR_N 4

static inline int32_t gr_val(int rank, int call, int i) {
  return (int32_t)(rank * 1000 + call * 10 + i) * (call % 3 == 1 ? -1 : 1);
}

static inline int gr_fail(char *msg, size_t len, const char *what, zcoll_status_t st,
                          zcoll_comm_t *comm) {
  snprintf(msg, len, "%s: %s (%s)", what, zcoll_strerror(st), zcoll_comm_last_error(comm));
  return 1;
}

/* 50 allreduces of 4 elements in one group: mode 0 out of place, 1 in place, 2 alternating
 * and every third one an i-form (its request waited for after the end). SUM of int32 and,
 * in a second run of the same calls, MAX: the sums over the ranks, computed here. */
static inline int gr_fused_one(zcoll_comm_t *comm, int mode, zcoll_op_t op, char *msg, size_t len) {
  int rank = zcoll_comm_rank(comm), p = zcoll_comm_size(comm);
  int32_t in[GR_CALLS][GR_N], out[GR_CALLS][GR_N];
  zcoll_request_t *req[GR_CALLS] = {0};
  zcoll_status_t st = zcoll_group_start(comm);
  if (st != ZCOLL_OK) return gr_fail(msg, len, "group_start", st, comm);
  for (int c = 0; c < GR_CALLS; c++) {
    int in_place = mode == 1 || (mode == 2 && c % 2);
    for (int i = 0; i < GR_N; i++) {
      in[c][i] = gr_val(rank, c, i);
      out[c][i] = in_place ? in[c][i] : -7;
    }
    const void *src = in_place ? ZCOLL_IN_PLACE : (const void *)in[c];
    if (mode == 2 && c % 3 == 0)
      st = zcoll_iallreduce(comm, src, out[c], GR_N, ZCOLL_INT32, op, &req[c]);
    else
      st = zcoll_allreduce(comm, src, out[c], GR_N, ZCOLL_INT32, op);
    if (st != ZCOLL_OK) return gr_fail(msg, len, "allreduce in a group", st, comm);
    if (out[c][0] != (in_place ? in[c][0] : -7)) {
      snprintf(msg, len, "call %d wrote its result before the group's end", c);
      return 1;
    }
  }
  if ((st = zcoll_group_end(comm)) != ZCOLL_OK) return gr_fail(msg, len, "group_end", st, comm);
  for (int c = 0; c < GR_CALLS; c++) {
    if (req[c]) {
      if ((st = zcoll_wait(req[c])) != ZCOLL_OK) return gr_fail(msg, len, "wait", st, comm);
      if ((st = zcoll_request_free(req[c])) != ZCOLL_OK)
        return gr_fail(msg, len, "request_free", st, comm);
    }
    for (int i = 0; i < GR_N; i++) {
      int32_t want = gr_val(0, c, i);
      for (int r = 1; r < p; r++) {
        int32_t v = gr_val(r, c, i);
        want = op == ZCOLL_SUM ? want + v : (v > want ? v : want);
      }
      if (out[c][i] != want) {
        snprintf(msg, len, "mode %d op %d: call %d element %d is %d, not %d", mode, (int)op, c, i,
                 (int)out[c][i], (int)want);
        return 1;
      }
    }
  }
  return 0;
}

static inline int gr_fused(zcoll_comm_t *comm, char *msg, size_t len) {
  for (int mode = 0; mode < 3; mode++)
    for (int k = 0; k < 2; k++)
      if (gr_fused_one(comm, mode, k ? ZCOLL_MAX : ZCOLL_SUM, msg, len)) return 1;
  return 0;
}

/* Several packs in one group: runs of int8 (3 elements: packs of odd length), float64 and
 * int32 MAX, each run fused apart from the next, repeated with the runs growing so that
 * the end's kept memory is both reused and outgrown. Sums of small integers: exact. */
#define GR_RUNS 3
static inline int gr_packs(zcoll_comm_t *comm, char *msg, size_t len) {
  int rank = zcoll_comm_rank(comm), p = zcoll_comm_size(comm);
  for (int round = 0; round < 3; round++) {
    const int calls = 2 + 7 * round; /* per run: 2, 9, 16 */
    int8_t b[16][3];
    double d[16][2];
    int32_t m[16][5];
    zcoll_status_t st = zcoll_group_start(comm);
    for (int run = 0; run < GR_RUNS && st == ZCOLL_OK; run++)
      for (int c = 0; c < calls && st == ZCOLL_OK; c++) {
        if (run == 0) {
          for (int i = 0; i < 3; i++) b[c][i] = (int8_t)(rank + c - i);
          st = zcoll_allreduce(comm, ZCOLL_IN_PLACE, b[c], 3, ZCOLL_INT8, ZCOLL_SUM);
        } else if (run == 1) {
          for (int i = 0; i < 2; i++) d[c][i] = rank * 0.5 + c + i;
          st = zcoll_allreduce(comm, ZCOLL_IN_PLACE, d[c], 2, ZCOLL_FLOAT64, ZCOLL_SUM);
        } else {
          for (int i = 0; i < 5; i++) m[c][i] = (rank * 37 + c * 11 + i * 5) % 23;
          st = zcoll_allreduce(comm, ZCOLL_IN_PLACE, m[c], 5, ZCOLL_INT32, ZCOLL_MAX);
        }
      }
    if (st == ZCOLL_OK) st = zcoll_group_end(comm);
    if (st != ZCOLL_OK) return gr_fail(msg, len, "packs", st, comm);
    for (int c = 0; c < calls; c++) {
      for (int i = 0; i < 3; i++) {
        int want = 0;
        for (int q = 0; q < p; q++) want += q + c - i;
        if (b[c][i] != (int8_t)want)
          return snprintf(msg, len, "packs round %d: int8 call %d element %d wrong", round, c, i),
                 1;
      }
      for (int i = 0; i < 2; i++) {
        double want = 0;
        for (int q = 0; q < p; q++) want += q * 0.5 + c + i;
        if (d[c][i] != want)
          return snprintf(msg, len, "packs round %d: float64 call %d element %d wrong", round, c,
                          i),
                 1;
      }
      for (int i = 0; i < 5; i++) {
        int32_t want = 0;
        for (int q = 0; q < p; q++) {
          int32_t v = (q * 37 + c * 11 + i * 5) % 23;
          want = v > want ? v : want;
        }
        if (m[c][i] != want)
          return snprintf(msg, len, "packs round %d: int32 max call %d element %d wrong", round, c,
                          i),
                 1;
      }
    }
  }
  return 0;
}

/* Every rank sends to its right first, then receives from its left, blocking calls all:
 * outside a group a large send would wait for a receive that is never posted; inside one
 * both are posted before anything waits. Small (eager) and large (rendezvous) messages. */
static inline int gr_ring(zcoll_comm_t *comm, char *msg, size_t len) {
  int rank = zcoll_comm_rank(comm), p = zcoll_comm_size(comm);
  int right = (rank + 1) % p, left = (rank + p - 1) % p;
  static const size_t counts[] = {3, 300000};
  for (int k = 0; k < 2; k++) {
    size_t n = counts[k];
    int32_t *out = malloc(n * sizeof(*out)), *in = malloc(n * sizeof(*in));
    if (!out || !in) {
      free(out), free(in);
      snprintf(msg, len, "out of memory");
      return 1;
    }
    for (size_t i = 0; i < n; i++) out[i] = (int32_t)((size_t)rank * 7919 + i), in[i] = -1;
    zcoll_status_t st = zcoll_group_start(comm);
    if (st == ZCOLL_OK) st = zcoll_send(comm, out, n, ZCOLL_INT32, right, 5);
    if (st == ZCOLL_OK) st = zcoll_recv(comm, in, n, ZCOLL_INT32, left, 5);
    if (st == ZCOLL_OK) st = zcoll_group_end(comm);
    int bad = -1;
    for (size_t i = 0; st == ZCOLL_OK && bad < 0 && i < n; i++)
      if (in[i] != (int32_t)((size_t)left * 7919 + i)) bad = (int)i;
    free(out), free(in);
    if (st != ZCOLL_OK) return gr_fail(msg, len, "ring", st, comm);
    if (bad >= 0) {
      snprintf(msg, len, "ring of %zu: element %d from rank %d wrong", n, bad, left);
      return 1;
    }
  }
  return 0;
}

/* One group: an allreduce, a broadcast from the last rank, an alltoall, a send to the right
 * and a receive from the left (i-forms), another allreduce of another dtype. */
static inline int gr_mix(zcoll_comm_t *comm, char *msg, size_t len) {
  int rank = zcoll_comm_rank(comm), p = zcoll_comm_size(comm);
  int right = (rank + 1) % p, left = (rank + p - 1) % p;
  int32_t ar[GR_N], bc[5], a2a_in[16], a2a_out[16], s[3], r[3];
  double d[2];
  for (int i = 0; i < GR_N; i++) ar[i] = gr_val(rank, 1, i);
  for (int i = 0; i < 5; i++) bc[i] = rank == p - 1 ? 40 + i : -1;
  for (int q = 0; q < p; q++) a2a_in[2 * q] = rank * 100 + q, a2a_in[2 * q + 1] = -rank;
  for (int i = 0; i < 3; i++) s[i] = rank * 10 + i, r[i] = -1;
  d[0] = rank, d[1] = 0.5;
  zcoll_request_t *sq = NULL, *rq = NULL;
  zcoll_status_t st = zcoll_group_start(comm);
  if (st == ZCOLL_OK) st = zcoll_allreduce(comm, ZCOLL_IN_PLACE, ar, GR_N, ZCOLL_INT32, ZCOLL_SUM);
  if (st == ZCOLL_OK) st = zcoll_broadcast(comm, bc, 5, ZCOLL_INT32, p - 1);
  if (st == ZCOLL_OK) st = zcoll_alltoall(comm, a2a_in, a2a_out, 2, ZCOLL_INT32);
  if (st == ZCOLL_OK) st = zcoll_isend(comm, s, 3, ZCOLL_INT32, right, 9, &sq);
  if (st == ZCOLL_OK) st = zcoll_irecv(comm, r, 3, ZCOLL_INT32, left, 9, &rq);
  if (st == ZCOLL_OK) st = zcoll_allreduce(comm, ZCOLL_IN_PLACE, d, 2, ZCOLL_FLOAT64, ZCOLL_SUM);
  if (st == ZCOLL_OK) st = zcoll_group_end(comm);
  if (st == ZCOLL_OK) st = zcoll_wait(sq);
  if (st == ZCOLL_OK) st = zcoll_wait(rq);
  if (sq) zcoll_request_free(sq);
  if (rq) zcoll_request_free(rq);
  if (st != ZCOLL_OK) return gr_fail(msg, len, "mix", st, comm);
  for (int i = 0; i < GR_N; i++) {
    int32_t want = 0;
    for (int q = 0; q < p; q++) want += gr_val(q, 1, i);
    if (ar[i] != want) return snprintf(msg, len, "mix: allreduce element %d wrong", i), 1;
  }
  for (int i = 0; i < 5; i++)
    if (bc[i] != 40 + i) return snprintf(msg, len, "mix: broadcast element %d wrong", i), 1;
  for (int q = 0; q < p; q++)
    if (a2a_out[2 * q] != q * 100 + rank || a2a_out[2 * q + 1] != -q)
      return snprintf(msg, len, "mix: alltoall block from %d wrong", q), 1;
  for (int i = 0; i < 3; i++)
    if (r[i] != left * 10 + i) return snprintf(msg, len, "mix: message element %d wrong", i), 1;
  if (d[0] != (double)p * (p - 1) / 2 || d[1] != 0.5 * p)
    return snprintf(msg, len, "mix: float64 allreduce wrong"), 1;
  return 0;
}

/* Nesting, an empty group, an end with none open, a request waited for too early, a
 * message's bad tag refused at the call (the group goes on). */
static inline int gr_nesting(zcoll_comm_t *comm, char *msg, size_t len) {
  int p = zcoll_comm_size(comm);
  zcoll_status_t st = zcoll_group_start(comm);
  if (st == ZCOLL_OK) st = zcoll_group_end(comm);
  if (st != ZCOLL_OK) return gr_fail(msg, len, "an empty group", st, comm);
  st = zcoll_group_end(comm);
  if (st != ZCOLL_ERR_INVALID_ARG || !strstr(zcoll_comm_last_error(comm), "no group is open"))
    return gr_fail(msg, len, "end with no group open", st, comm);
  int32_t v[GR_N] = {1, 2, 3, 4}, t = 0;
  zcoll_request_t *q = NULL;
  st = zcoll_group_start(comm);
  if (st == ZCOLL_OK) st = zcoll_group_start(comm);
  if (st == ZCOLL_OK)
    st = zcoll_iallreduce(comm, ZCOLL_IN_PLACE, v, GR_N, ZCOLL_INT32, ZCOLL_SUM, &q);
  if (st != ZCOLL_OK) return gr_fail(msg, len, "nested group", st, comm);
  st = zcoll_wait(q);
  if (st != ZCOLL_ERR_INVALID_ARG || !strstr(zcoll_comm_last_error(comm), "still open"))
    return gr_fail(msg, len, "wait before the end", st, comm);
  if ((st = zcoll_test(q)) != ZCOLL_ERR_INVALID_ARG)
    return gr_fail(msg, len, "test before the end", st, comm);
  st = zcoll_send(comm, &t, 1, ZCOLL_INT32, 0, -3);
  if (st != ZCOLL_ERR_INVALID_ARG || !strstr(zcoll_comm_last_error(comm), "tag -3"))
    return gr_fail(msg, len, "a bad tag in a group", st, comm);
  if ((st = zcoll_group_end(comm)) != ZCOLL_OK) return gr_fail(msg, len, "inner end", st, comm);
  if (v[0] != 1) return snprintf(msg, len, "the inner end issued the calls"), 1;
  if ((st = zcoll_group_end(comm)) != ZCOLL_OK) return gr_fail(msg, len, "outer end", st, comm);
  if ((st = zcoll_wait(q)) != ZCOLL_OK) return gr_fail(msg, len, "wait after the end", st, comm);
  zcoll_request_free(q);
  for (int i = 0; i < GR_N; i++)
    if (v[i] != (i + 1) * p) return snprintf(msg, len, "nested: element %d wrong", i), 1;
  return 0;
}

/* The outcome of a group that must fail: a call's error at recording (a peer may have
 * broken the communicator already: this rank's calls then fail at once) or end's. */
static inline zcoll_status_t gr_first(zcoll_status_t recorded, zcoll_status_t end) {
  return recorded != ZCOLL_OK ? recorded : end;
}

/* A collective's bad argument in a group: refused at the call, and (as outside a group) the
 * communicator is poisoned, so every rank's group fails. The last case on its communicator. */
static inline int gr_bad_arg(zcoll_comm_t *comm, char *msg, size_t len) {
  int32_t v[GR_N] = {0};
  zcoll_status_t st = zcoll_group_start(comm);
  if (st != ZCOLL_OK) return gr_fail(msg, len, "group_start", st, comm);
  zcoll_status_t rec = zcoll_allreduce(comm, ZCOLL_IN_PLACE, v, GR_N, ZCOLL_INT32, ZCOLL_SUM);
  if (zcoll_comm_rank(comm) == 0) {
    st = zcoll_allreduce(comm, ZCOLL_IN_PLACE, NULL, GR_N, ZCOLL_INT32, ZCOLL_SUM);
    if (st != ZCOLL_ERR_INVALID_ARG || !strstr(zcoll_comm_last_error(comm), "NULL"))
      return gr_fail(msg, len, "a NULL buffer in a group", st, comm);
  }
  st = zcoll_barrier(comm);
  if (rec == ZCOLL_OK) rec = st;
  st = gr_first(rec, zcoll_group_end(comm));
  if (st == ZCOLL_OK) return snprintf(msg, len, "the group after a bad argument ended OK"), 1;
  return 0;
}

/* Ranks disagree inside a group (rank 0's allreduce has 5 elements, the others' 4): every
 * rank's group fails, with MISMATCH or (told by a peer) PEER_FAILED. The last case on its
 * communicator. */
static inline int gr_mismatch(zcoll_comm_t *comm, char *msg, size_t len) {
  int rank = zcoll_comm_rank(comm);
  int32_t v[8] = {0}, b[2] = {0};
  zcoll_status_t st = zcoll_group_start(comm);
  if (st != ZCOLL_OK) return gr_fail(msg, len, "group_start", st, comm);
  zcoll_status_t rec = zcoll_allreduce(comm, ZCOLL_IN_PLACE, v, rank == 0 ? 5 : 4, ZCOLL_INT32,
                                       ZCOLL_SUM);
  if (rec == ZCOLL_OK) rec = zcoll_allreduce(comm, ZCOLL_IN_PLACE, b, 2, ZCOLL_INT32, ZCOLL_MIN);
  if (rec == ZCOLL_OK) rec = zcoll_barrier(comm);
  st = gr_first(rec, zcoll_group_end(comm));
  if (st == ZCOLL_OK) return snprintf(msg, len, "a mismatched group ended OK"), 1;
  if (st != ZCOLL_ERR_MISMATCH && st != ZCOLL_ERR_PEER_FAILED)
    return gr_fail(msg, len, "a mismatched group", st, comm);
  if (zcoll_allreduce(comm, ZCOLL_IN_PLACE, b, 2, ZCOLL_INT32, ZCOLL_MIN) == ZCOLL_OK)
    return snprintf(msg, len, "the communicator works after a failed group"), 1;
  return 0;
}

/* Calls queued, one an i-form, then the communicator destroyed inside the group: nothing is
 * issued, nothing leaks (ASan). The caller's communicator is gone after this. */
static inline int gr_destroy_open(zcoll_comm_t *comm, char *msg, size_t len) {
  static int32_t v[GR_N], w[GR_N];
  size_t counts[64], displs[64];
  int p = zcoll_comm_size(comm);
  for (int q = 0; q < p && q < 64; q++) counts[q] = 1, displs[q] = (size_t)q;
  zcoll_request_t *q = NULL;
  zcoll_status_t st = zcoll_group_start(comm);
  if (st == ZCOLL_OK) st = zcoll_group_start(comm);
  if (st == ZCOLL_OK) st = zcoll_allreduce(comm, ZCOLL_IN_PLACE, v, GR_N, ZCOLL_INT32, ZCOLL_SUM);
  if (st == ZCOLL_OK)
    st = zcoll_iallreduce(comm, ZCOLL_IN_PLACE, w, GR_N, ZCOLL_INT32, ZCOLL_SUM, &q);
  if (st == ZCOLL_OK) st = zcoll_allgatherv(comm, v, 1, w, counts, displs, ZCOLL_INT32);
  if (st != ZCOLL_OK) return gr_fail(msg, len, "recording", st, comm);
  if ((st = zcoll_comm_destroy(comm)) != ZCOLL_OK) {
    snprintf(msg, len, "destroy in an open group: %s", zcoll_strerror(st));
    return 1;
  }
  return 0;
}

#endif
