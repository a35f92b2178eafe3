/*
 * partial_bodies.h -- the partial allreduce's contract checked from one rank's side, for
 * rank threads over loopback (test_partial.c) and processes over shm or UCX
 * (progs/partial_check.c). Each rank records every round it was in; the records are
 * gathered over the user's communicator and every rank checks them all against offers it
 * computes itself:
 *   agreement     every member of a round reports the same result and count;
 *   membership    a round's count is the number of ranks that report it, and it is short
 *                 of the quorum only once every other rank flushes (no later round of the
 *                 epoch holds a rank outside it);
 *   conservation  a round's result is, element by element and exactly (integers), the sum
 *                 of the offers of the ranks that report it, and every offer is in exactly
 *                 one round (each start reports once);
 *   flush         every rank gets the epoch's last round's result and count, and `mine`
 *                 says whether it was in it.
 */
#ifndef ZCOLL_TEST_PARTIAL_BODIES_H
#define ZCOLL_TEST_PARTIAL_BODIES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zcoll.h"

#define PB_K 19 /* elements per offer: not a multiple of anything */

struct pb_rec {
  int64_t round, n, rank, k, epoch, flush, mine; /* flush: a flush's report (k = -1) */
  int64_t res[PB_K];
};

/* Element i of rank r's k-th offer: every offer different, sums far from overflowing. */
static inline int64_t pb_val(int64_t r, int64_t k, int i) { return r * 1000003 + k * 101 + i; }

struct pb_args {
  int quorum, steps, epochs;
  int interleave;    /* an iallreduce on the user's communicator every 5 steps */
  unsigned delay_us; /* random sleep before each start, up to this */
  zcoll_op_t op;     /* ZCOLL_SUM (int64) or ZCOLL_AVG (float64) */
};

static inline int pb_fail(char *msg, size_t len, const char *fmt, int64_t a, int64_t b, int64_t c) {
  snprintf(msg, len, fmt, (long long)a, (long long)b, (long long)c);
  return 1;
}

/* The records of all ranks (p * per each), checked. */
static inline int pb_check(const struct pb_rec *all, int p, int per, const struct pb_args *a,
                           int me, char *msg, size_t len) {
  int total = p * per;
  for (int x = 0; x < total; x++) {
    const struct pb_rec *r = &all[x];
    if (r->flush) continue;
    /* members: every report of this round */
    int64_t members = 0, sum[PB_K] = {0};
    for (int y = 0; y < total; y++) {
      const struct pb_rec *o = &all[y];
      if (o->flush || o->round != r->round) continue;
      members++;
      if (o->n != r->n)
        return pb_fail(msg, len, "round %lld: counts %lld and %lld", r->round, r->n, o->n);
      if (memcmp(o->res, r->res, sizeof(r->res)))
        return pb_fail(msg, len, "round %lld: ranks %lld and %lld got different results", r->round,
                       r->rank, o->rank);
      for (int i = 0; i < PB_K; i++) sum[i] += pb_val(o->rank, o->k, i);
    }
    if (members != r->n)
      return pb_fail(msg, len, "round %lld says %lld offers, %lld ranks report it", r->round, r->n,
                     members);
    for (int i = 0; i < PB_K; i++) {
      int64_t want = sum[i];
      if (a->op == ZCOLL_AVG) {
        double got, w = (double)want / (double)r->n;
        memcpy(&got, &r->res[i], sizeof(got));
        if (got < w - 1e-9 * (w < 0 ? -w : w) || got > w + 1e-9 * (w < 0 ? -w : w))
          return pb_fail(msg, len, "round %lld element %lld: average off (count %lld)", r->round, i,
                         r->n);
      } else if (r->res[i] != want) {
        return pb_fail(msg, len, "round %lld element %lld: %lld is not the sum of its offers",
                       r->round, i, r->res[i]);
      }
    }
    /* Short only once every other rank flushes: a later round of its epoch holds only
     * its members. */
    if (r->n != a->quorum) {
      for (int y = 0; y < total; y++) {
        const struct pb_rec *o = &all[y];
        if (o->flush || o->epoch != r->epoch || o->round <= r->round) continue;
        int member = 0;
        for (int z = 0; z < total; z++)
          member |= !all[z].flush && all[z].round == r->round && all[z].rank == o->rank;
        if (!member)
          return pb_fail(msg, len,
                         "rank %lld offers in round %lld after round %lld was decided short",
                         o->rank, o->round, r->round);
      }
    }
  }
  /* the flush: the epoch's last round, to every rank */
  for (int x = 0; x < total; x++) {
    const struct pb_rec *f = &all[x];
    if (!f->flush) continue;
    const struct pb_rec *last = NULL;
    for (int y = 0; y < total; y++)
      if (!all[y].flush && all[y].epoch == f->epoch && (!last || all[y].round > last->round))
        last = &all[y];
    if (!last) {
      if (f->n != 0)
        return pb_fail(msg, len, "epoch %lld: a flush of nothing says %lld offers", f->epoch, f->n,
                       0);
      continue;
    }
    if (f->round != last->round || f->n != last->n || memcmp(f->res, last->res, sizeof(f->res)))
      return pb_fail(msg, len, "rank %lld's flush of epoch %lld is not round %lld's result",
                     f->rank, f->epoch, last->round);
    int was = 0;
    for (int y = 0; y < total; y++)
      was |= !all[y].flush && all[y].round == last->round && all[y].rank == f->rank;
    if (f->mine != was)
      return pb_fail(msg, len, "rank %lld's flush says mine=%lld, round %lld says otherwise",
                     f->rank, f->mine, last->round);
  }
  (void)me;
  return 0;
}

/* One rank's part: epochs x (steps starts, then a flush), then the check. 0: all held. */
static inline int pb_run(zcoll_comm_t *comm, const struct pb_args *a, char *msg, size_t len) {
  int p = zcoll_comm_size(comm), me = zcoll_comm_rank(comm);
  int per = a->epochs * (a->steps + 1);
  struct pb_rec *mine = calloc((size_t)per, sizeof(*mine));
  struct pb_rec *all = calloc((size_t)per * (size_t)p, sizeof(*all));
  int64_t in[PB_K], out[PB_K];
  double din[PB_K], dout[PB_K];
  int avg = a->op == ZCOLL_AVG, bad = 0, nrec = 0;
  void *send = avg ? (void *)din : (void *)in, *recv = avg ? (void *)dout : (void *)out;
  zcoll_request_t *req = NULL;
  zcoll_status_t st = zcoll_allreduce_partial_init(
      comm, send, recv, PB_K, avg ? ZCOLL_FLOAT64 : ZCOLL_INT64, a->op, a->quorum, &req);
  if (st != ZCOLL_OK) {
    snprintf(msg, len, "init: %s", zcoll_last_error());
    free(mine), free(all);
    return 1;
  }
  unsigned seed = 12345u + (unsigned)me * 7919u;
  int64_t k = 0, side = 0;
  zcoll_request_t *other[64];
  int nother = 0;
  for (int e = 0; e < a->epochs && !bad; e++) {
    for (int s = 0; s < a->steps && !bad; s++, k++) {
      if (a->delay_us) usleep((useconds_t)(rand_r(&seed) % a->delay_us));
      for (int i = 0; i < PB_K; i++) in[i] = pb_val(me, k, i), din[i] = (double)in[i];
      if (a->interleave && s % 5 == 0 && nother < 64 &&
          zcoll_iallreduce(comm, ZCOLL_IN_PLACE, &side, 1, ZCOLL_INT64, ZCOLL_SUM,
                           &other[nother++]) != ZCOLL_OK) {
        snprintf(msg, len, "iallreduce: %s", zcoll_last_error());
        bad = 1;
        break;
      }
      uint64_t round;
      int n, m;
      if ((st = zcoll_start(req)) != ZCOLL_OK || (st = zcoll_wait(req)) != ZCOLL_OK ||
          (st = zcoll_request_partial_info(req, &round, &n, &m)) != ZCOLL_OK) {
        snprintf(msg, len, "step %lld: %s", (long long)k, zcoll_last_error());
        bad = 1;
        break;
      }
      struct pb_rec *r = &mine[nrec++];
      *r = (struct pb_rec){(int64_t)round, n, me, k, e, 0, m, {0}};
      memcpy(r->res, recv, sizeof(r->res));
      if (!m) bad = pb_fail(msg, len, "step %lld: a start's round says not mine", k, 0, 0);
    }
    uint64_t round = 0;
    int n = 0, m = 0;
    if (!bad && ((st = zcoll_partial_flush(req)) != ZCOLL_OK ||
                 (st = zcoll_request_partial_info(req, &round, &n, &m)) != ZCOLL_OK)) {
      snprintf(msg, len, "flush: %s", zcoll_last_error());
      bad = 1;
    }
    if (!bad) {
      struct pb_rec *r = &mine[nrec++];
      *r = (struct pb_rec){(int64_t)round, n, me, -1, e, 1, m, {0}};
      memcpy(r->res, recv, sizeof(r->res));
    }
  }
  if (zcoll_request_free(req) != ZCOLL_OK && !bad) {
    snprintf(msg, len, "free: %s", zcoll_last_error());
    bad = 1;
  }
  for (int i = 0; i < nother; i++)
    if (zcoll_wait(other[i]) != ZCOLL_OK || zcoll_request_free(other[i]) != ZCOLL_OK) bad = 1;
  int32_t any = bad;
  if (zcoll_allreduce(comm, ZCOLL_IN_PLACE, &any, 1, ZCOLL_INT32, ZCOLL_MAX) != ZCOLL_OK) {
    snprintf(msg, len, "allreduce of the verdicts: %s", zcoll_last_error());
    bad = 1;
  } else if (any && !bad) {
    snprintf(msg, len, "another rank failed");
    bad = 1;
  }
  if (!bad &&
      zcoll_allgather(comm, mine, all, (size_t)per * sizeof(*mine), ZCOLL_UINT8) != ZCOLL_OK) {
    snprintf(msg, len, "allgather: %s", zcoll_last_error());
    bad = 1;
  }
  if (!bad) bad = pb_check(all, p, per, a, me, msg, len);
  free(mine), free(all);
  return bad;
}

/* Liveness: rank p-1 offers only after the others have each completed `laps` rounds more
 * (done[] counts each rank's completed rounds; the others go on until the straggler has
 * made `straggles` offers). A partial allreduce that waited for every rank would never let
 * them get there: counted, not timed (the straggler gives up after 60 s). */
static inline int pb_live(zcoll_comm_t *comm, int quorum, int laps, int straggles,
                          volatile int *done, volatile int *straggler_done, char *msg, size_t len) {
  int p = zcoll_comm_size(comm), me = zcoll_comm_rank(comm);
  float x = 1.0f, y = 0.0f;
  zcoll_request_t *req = NULL;
  if (zcoll_allreduce_partial_init(comm, &x, &y, 1, ZCOLL_FLOAT32, ZCOLL_SUM, quorum, &req) !=
      ZCOLL_OK) {
    snprintf(msg, len, "init: %s", zcoll_last_error());
    return 1;
  }
  int bad = 0;
  if (me == p - 1) {
    for (int s = 0; s < straggles && !bad; s++) {
      for (int w = 0; w < 60000; w++) { /* in ms */
        int least = laps * (s + 1);
        for (int r = 0; r < p - 1; r++)
          if (__atomic_load_n(&done[r], __ATOMIC_ACQUIRE) < least) least = -1;
        if (least >= 0) break;
        usleep(1000);
      }
      for (int r = 0; r < p - 1; r++)
        if (__atomic_load_n(&done[r], __ATOMIC_ACQUIRE) < laps * (s + 1)) {
          snprintf(msg, len, "rank %d completed %d rounds, not %d, while rank %d stayed away", r,
                   __atomic_load_n(&done[r], __ATOMIC_ACQUIRE), laps * (s + 1), me);
          bad = 1;
        }
      if (!bad && (zcoll_start(req) != ZCOLL_OK || zcoll_wait(req) != ZCOLL_OK)) {
        snprintf(msg, len, "straggler: %s", zcoll_last_error());
        bad = 1;
      }
    }
    __atomic_store_n(straggler_done, 1, __ATOMIC_RELEASE);
  } else {
    while (!__atomic_load_n(straggler_done, __ATOMIC_ACQUIRE) && !bad) {
      if (zcoll_start(req) != ZCOLL_OK || zcoll_wait(req) != ZCOLL_OK) {
        snprintf(msg, len, "rank %d: %s", me, zcoll_last_error());
        bad = 1;
      }
      __atomic_fetch_add(&done[me], 1, __ATOMIC_RELEASE);
    }
  }
  if (!bad && zcoll_partial_flush(req) != ZCOLL_OK) {
    snprintf(msg, len, "flush: %s", zcoll_last_error());
    bad = 1;
  }
  if (zcoll_request_free(req) != ZCOLL_OK && !bad) {
    snprintf(msg, len, "free: %s", zcoll_last_error());
    bad = 1;
  }
  return bad;
}

#endif
