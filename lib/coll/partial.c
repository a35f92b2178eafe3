/*
 * partial.c -- the partial (quorum) allreduce: rounds formed by arrival, decided on a
 * ticket counter that ranks take with remote atomics, each round moved among its members
 * only (docs/partial.md has the contract and the argument).
 *
 * The request runs on a communicator of its own, a split of the user's with a channel to
 * every rank (over the same connections on one host: comm_share.c), so its rounds are
 * matched among themselves and never in the user's collective order. Rank 0 of it is the
 * home of 64-bit words that every rank reaches with the transport's fetch_add:
 *
 *   TICKETS  offers taken, over the request's life. An offer adds 1; the count before is
 *            its ticket t. Rounds are runs of q tickets from the segment's start s (below):
 *            t is in round r + (t - s) / q, at position (t - s) % q.
 *   FLUSHING flushes, over the request's life (epoch * p + the ranks flushing this one).
 *   SEG, SEG_ROUNDS  the segment: its first ticket, and the rounds of this epoch before
 *            it. A round decided short (flush, below) ends a segment: the next starts
 *            after it.
 *   ENTRY r  rank r's last offer: its ticket + 1 (0: none yet), then the first ticket of
 *            its round, written (as adds of the difference: only r writes them) right after
 *            the ticket is taken. A member learns its round's members by finding the
 *            entries whose tickets fall in the round. An entry changes only at its rank's
 *            next offer, which comes after its round completed, which needed every member's
 *            data, which each sent only after it had read the entries: every member reads
 *            them before any changes. Tickets never repeat, so an entry of an earlier
 *            epoch (a ticket below the epoch's first) is never in a round of this one.
 *   FIN, FIN_ROUNDS  epochs ended, and the rounds of the last, from the rank whose flush
 *            completes the count (the rounds first: who sees FIN move reads them after).
 *
 * Every word counts in 64 bits and none wraps (2^64 offers, at 100000 a second, take
 * 5 million years): with offers and flushes in the halves of one word, the 2^32-th offer
 * carried into the flushes, and a segment longer than 2^32 tickets was cut into rounds
 * wrongly. Words read one after the other are consistent where the argument needs it:
 * SEG and SEG_ROUNDS change only when no rank is between reading them and taking its
 * ticket (below), and a round's count of TICKETS read before FLUSHING cannot have grown
 * between the two reads if it and the flushes make p (those are p distinct ranks, none of
 * which can offer into the round meanwhile).
 *
 * Nobody's CPU decides a round: the ticket order does, and a rank that is computing holds
 * up only the round its own offer is in. A member waits for the others' entries by polling
 * (the last to take a ticket finds them at once; the first ones are woken by the round's
 * first pieces, or look again every 10 ms).
 *
 * Flush. A flushing rank adds 1 to FLUSHING and offers no more. The forming round -- tickets
 * taken, fewer than q -- is decided short once flushing ranks and the ranks waiting in it
 * are all p: nobody else can offer, so nothing changes until its members have all seen
 * that (each must have started its part of the round before any can complete it and offer
 * again), and they all decide alike. Its lowest member starts the next segment after it
 * before it sends anything, so the members' next offers, which may come only after, start
 * a new round. Once all p flush, the last of them (its add saw p - 1) resets SEG to start
 * the next epoch at the final count and publishes the epoch's rounds in FIN; everyone
 * then finds the last round (the highest ticket's entry gives its start) and gets its
 * result from its lowest member, which kept a copy when its round ended, so that the user
 * may use the buffer meanwhile. That delivery is an allreduce -- every rank has read the
 * entries before any leaves the flush and may offer again.
 */
#include "partial_impl.h"

#include <stdlib.h>
#include <string.h>

#include "algorithms/algorithms.h"
#include "base/clock.h"
#include "base/log.h"
#include "core/exec.h"
#include "core/guard.h"
#include "core/report.h"
#include "plan.h"
#include "progress_thread.h"

/* ---- rounds ---- */

static uint32_t entry_of(int rank) { return W_ENTRY + 16u * (uint32_t)rank; }

/* Rank r's ENTRY: its last ticket + 1, 0 if none. */
static zcoll_status_t read_entry(struct zcoll__partial *P, int r, uint64_t *v) {
  *v = P->my_entry;
  return r == P->rank ? ZCOLL_OK : zcoll__phome_add(&P->home, entry_of(r), 0, v);
}

/* The ranks whose last offer has a ticket in [lo, lo + n), into P->members in rank order;
 * how many. */
static zcoll_status_t find_members(struct zcoll__partial *P, uint64_t lo, uint64_t n, int *found) {
  int k = 0;
  for (int r = 0; r < P->p; r++) {
    uint64_t v;
    zcoll_status_t st = read_entry(P, r, &v);
    if (st != ZCOLL_OK) return st;
    if (v && v - 1 - lo < n) P->members[k++] = r;
  }
  *found = k;
  return ZCOLL_OK;
}

/* Is this rank's round decided (*n members in P->members; *full: by its quorum)? */
static zcoll_status_t decided(struct zcoll__partial *P, int *n, int *full) {
  uint32_t q = (uint32_t)P->quorum;
  int found = 0;
  zcoll_status_t st = find_members(P, P->lo, q, &found);
  *n = 0;
  *full = found == (int)q;
  if (st != ZCOLL_OK || *full) {
    *n = st == ZCOLL_OK ? found : 0;
    return st;
  }
  uint64_t t, f; /* TICKETS before FLUSHING (the head comment says why) */
  if ((st = zcoll__phome_add(&P->home, W_TICKETS, 0, &t)) != ZCOLL_OK ||
      (st = zcoll__phome_add(&P->home, W_FLUSHING, 0, &f)) != ZCOLL_OK)
    return st;
  uint64_t held = t - P->lo, flushing = f - P->epoch * (uint64_t)P->p;
  /* Everyone else flushes or waits in this round: it cannot fill, and is decided with what
   * it holds once their entries are all in. */
  if (held < q && flushing + held == (uint64_t)P->p && (uint64_t)found == held) *n = found;
  return ZCOLL_OK;
}

static zcoll_status_t round_start(struct zcoll__partial *P, int n, int full) {
  zcoll_comm_t *pc = P->pc;
  int me = 0;
  while (P->members[me] != P->rank) me++;
  if (!full && me == 0) { /* the next segment starts after this round, before we send */
    uint64_t rel = P->round - P->base_round + 1, old;
    zcoll_status_t st = zcoll__phome_add(&P->home, W_SEG_ROUNDS, rel - P->seg_rounds, &old);
    if (st == ZCOLL_OK) st = zcoll__phome_add(&P->home, W_SEG, P->lo + (uint64_t)n - P->seg, &old);
    if (st != ZCOLL_OK) return st;
  }
  const struct zcoll__choice c = {
      &pc->plan.selector, n, pc->plan.forced_algo, 0, 1, pc->plan.ring_algo, pc->plan.rhd_algo,
      pc->plan.hier_algo};
  int algo = zcoll__choose(&c, P->bytes, NULL, 0);
  if (algo == pc->plan.hier_algo)
    algo = pc->plan.ring_algo; /* hosts are the user's communicator's */
  struct zcoll__sched *s = &P->sched;
  zcoll__sched_init(s, me, n, P->count, P->in_place);
  s->root = -1;
  zcoll__algos[algo]->build(s, &pc->plan.algo_params);
  zcoll_status_t st = zcoll__sched_finish(s);
  if (st != ZCOLL_OK) {
    zcoll__sched_free(s);
    return st;
  }
  P->have_sched = 1;
  /* Built for ranks 0..n-1 of the round: the members' ranks here. */
  for (int i = 0; i < s->nops; i++)
    if (s->ops[i].peer >= 0) s->ops[i].peer = P->members[s->ops[i].peer];
  for (int j = 0; j < s->npeers; j++) s->peers[j] = P->members[s->peers[j]];
  for (int j = 0; j < s->nfirst; j++) s->first[j] = P->members[s->first[j]];
  if ((st = zcoll__exec_reserve(&P->e, s->nops, s->npeers, pc->nchans)) != ZCOLL_OK) return st;
  struct zcoll__coll_desc d = {
      .kind = ZCOLL_COLL_PARTIAL,
      .dtype = (uint8_t)P->dtype,
      .op = (uint8_t)P->op,
      .algo = (uint8_t)algo,
      .arity = algo == pc->plan.tree_algo ? (uint16_t)pc->plan.algo_params.tree_arity : 0,
      .wire = n > 1 ? zcoll__wire_of(pc, P->dtype, P->op, NULL) : 0, /* one moves nothing */
      .root = P->quorum,
      .count = P->count};
  P->ncontrib = n;
  P->mine = 1;
  return zcoll__run_start(pc, &P->run, s, P->e, &d, P->round, P->src, P->dst);
}

static void round_end(struct zcoll__partial *P) {
  zcoll_status_t st = P->run.status;
  if (P->have_sched) zcoll__sched_free(&P->sched);
  P->have_sched = 0;
  if (st == ZCOLL_OK && P->members[0] == P->rank && P->bytes) memcpy(P->keep, P->dst, P->bytes);
  P->status = st;
  P->state = st == ZCOLL_OK ? P_DONE : P_FAILED;
  zcoll__mem_unhold(&P->hold);
}

static void failed(struct zcoll__partial *P, zcoll_status_t st) {
  st = zcoll__comm_break(P->pc, st);
  if (P->state == P_RUN && atomic_load_explicit(&P->run.ended, memory_order_acquire)) round_end(P);
  if (P->state == P_GATHER || P->state == P_RUN) {
    if (P->have_sched) zcoll__sched_free(&P->sched);
    P->have_sched = 0;
    P->state = P_FAILED;
    P->status = st;
    zcoll__mem_unhold(&P->hold);
  }
}

/* One pass: decide, start, move, end. */
static zcoll_status_t step(struct zcoll__partial *P, int *progress) {
  zcoll_comm_t *pc = P->pc;
  zcoll_status_t st = zcoll__check_usable(pc);
  if (st == ZCOLL_OK && P->state == P_GATHER) {
    int n = 0, full = 0;
    if ((st = decided(P, &n, &full)) == ZCOLL_OK && n) {
      if ((st = round_start(P, n, full)) != ZCOLL_OK) return st;
      P->state = P_RUN;
      *progress = 1;
    } else if (st == ZCOLL_OK) {
      st = zcoll__progress(pc, progress); /* hear the transports meanwhile */
    }
  }
  if (st == ZCOLL_OK && P->state == P_RUN) {
    if (!atomic_load_explicit(&P->run.ended, memory_order_acquire))
      st = zcoll__progress(pc, progress);
    if (st == ZCOLL_OK && atomic_load_explicit(&P->run.ended, memory_order_acquire)) {
      round_end(P);
      *progress = 1;
    }
  }
  return st;
}

zcoll_status_t zcoll__partial_pump(void *arg, int *progress) {
  zcoll_comm_t *comm = arg;
  struct zcoll__partial *P = comm->coll.partial;
  if (!P || (P->state != P_GATHER && P->state != P_RUN)) return ZCOLL_OK;
  zcoll_status_t st = step(P, progress);
  if (st != ZCOLL_OK) failed(P, st);
  return st;
}

int zcoll__partial_busy(const void *arg) {
  const zcoll_comm_t *comm = arg;
  const struct zcoll__partial *P = comm->coll.partial;
  return P && (P->state == P_GATHER || P->state == P_RUN);
}

static int in_flight(const struct zcoll__partial *P) {
  return P->state == P_GATHER || P->state == P_RUN;
}

/* Until the offer's round has ended (timeout_ms < 0: for good), or ZCOLL_IN_PROGRESS. */
static zcoll_status_t drive(struct zcoll__partial *P, int timeout_ms) {
  int64_t until = timeout_ms >= 0 ? zcoll__now_ms() + timeout_ms : 0;
  while (in_flight(P)) {
    int progress = 0;
    zcoll_status_t st = step(P, &progress);
    if (st == ZCOLL_OK && !progress)
      st = zcoll__idle_wait(P->pc, P->state == P_RUN ? &P->run : NULL, &P->idle);
    if (st != ZCOLL_OK) {
      failed(P, st);
      break;
    }
    if (progress)
      zcoll__idle_done(P->pc, &P->idle);
    else if (timeout_ms >= 0 && zcoll__now_ms() >= until)
      return ZCOLL_IN_PROGRESS;
  }
  return P->state == P_FAILED ? P->status : ZCOLL_OK;
}

/* ---- the calls ---- */

static zcoll_status_t offer(struct zcoll__partial *P) {
  if (in_flight(P))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "zcoll_start: the partial request is still in flight (zcoll_wait or "
                       "zcoll_test it to completion before starting it again)");
  zcoll_status_t st = zcoll__check_usable(P->pc);
  /* Rounds may go on without a rank that died (they need only their members), and a
   * transport may not tell of it (UCX on one host): the job's news, every 10 ms at most,
   * so that a dead rank fails the request everywhere. */
  int64_t now = zcoll__now_ns();
  if (st == ZCOLL_OK && now - P->news_ns >= 10000000) {
    P->news_ns = now;
    st = zcoll__bootstrap_check(P->pc->bs);
  }
  uint64_t old = 0;
  /* SEG first: it cannot change before this rank's ticket (a short round needs every rank
   * flushing or waiting in it), and may change right after. */
  if (st == ZCOLL_OK) st = zcoll__phome_add(&P->home, W_SEG, 0, &P->seg);
  if (st == ZCOLL_OK) st = zcoll__phome_add(&P->home, W_SEG_ROUNDS, 0, &P->seg_rounds);
  if (st == ZCOLL_OK) st = zcoll__phome_add(&P->home, W_TICKETS, 1, &P->ticket);
  if (st == ZCOLL_OK) {
    uint64_t q = (uint64_t)P->quorum, k = (P->ticket - P->seg) / q;
    P->lo = P->seg + k * q;
    P->round = P->base_round + P->seg_rounds + k;
    uint32_t at = entry_of(P->rank);
    st = zcoll__phome_add(&P->home, at, P->ticket + 1 - P->my_entry, &old);
    P->my_entry = P->ticket + 1;
    if (st == ZCOLL_OK) st = zcoll__phome_add(&P->home, at + 8u, P->lo - P->my_lo, &old);
    P->my_lo = P->lo;
  }
  if (st != ZCOLL_OK) return zcoll__comm_break(P->pc, st);
  P->need_flush = 1;
  P->idle = (struct zcoll__idle){0};
  const struct zcoll__mem_user who = {ZCOLL_COLL_PARTIAL, P->round, P->rank, P->p};
  zcoll__mem_hold(&P->hold, &who, P->src, P->bytes, P->dst, P->bytes);
  P->state = P_GATHER;
  int progress = 0;
  if ((st = step(P, &progress)) != ZCOLL_OK) {
    failed(P, st);
    return P->status;
  }
  zcoll__progress_thread_wake(P->pc);
  return ZCOLL_OK;
}

/* Ends the epoch (every rank calls it): the last round's result into out. */
static zcoll_status_t flush(struct zcoll__partial *P, void *out) {
  zcoll_comm_t *pc = P->pc;
  uint64_t p = (uint64_t)P->p, q = (uint64_t)P->quorum;
  uint64_t w, fin, seg;
  zcoll_status_t st = zcoll__check_usable(pc);
  if (st == ZCOLL_OK) st = zcoll__phome_add(&P->home, W_FLUSHING, 1, &w);
  if (st != ZCOLL_OK) return zcoll__comm_break(pc, st);
  uint64_t rounds = 0;
  if (w - P->epoch * p == p - 1) {
    /* The last to flush: every round has ended, the count is final. The next epoch's
     * segment starts at it; then the others learn the epoch's rounds. */
    uint64_t tf, seg_rounds = 0, old;
    if ((st = zcoll__phome_add(&P->home, W_TICKETS, 0, &tf)) == ZCOLL_OK &&
        (st = zcoll__phome_add(&P->home, W_SEG, 0, &seg)) == ZCOLL_OK &&
        (st = zcoll__phome_add(&P->home, W_SEG_ROUNDS, 0, &seg_rounds)) == ZCOLL_OK) {
      rounds = seg_rounds + (tf - seg + q - 1) / q;
      st = zcoll__phome_add(&P->home, W_SEG, tf - seg, &seg);
    }
    if (st == ZCOLL_OK) st = zcoll__phome_add(&P->home, W_SEG_ROUNDS, 0 - seg_rounds, &old);
    if (st == ZCOLL_OK) st = zcoll__phome_add(&P->home, W_FIN_ROUNDS, rounds - P->fin_rounds, &old);
    if (st == ZCOLL_OK) st = zcoll__phome_add(&P->home, W_FIN, 1, &old);
  } else {
    P->idle = (struct zcoll__idle){0};
    for (;;) {
      if ((st = zcoll__phome_add(&P->home, W_FIN, 0, &fin)) != ZCOLL_OK) break;
      if (fin == P->epoch + 1) break;
      int progress = 0, who;
      uint64_t nc;
      if (zcoll__bootstrap_departed(pc->bs, &who, &nc)) {
        st = zcoll__fail(ZCOLL_ERR_PEER_FAILED,
                         "rank %d freed its partial request while rank %d flushes it (every "
                         "rank flushes alike)",
                         who, pc->rank);
        break;
      }
      if ((st = zcoll__progress(pc, &progress)) != ZCOLL_OK) break;
      if (!progress && (st = zcoll__idle_wait(pc, NULL, &P->idle)) != ZCOLL_OK) break;
    }
    if (st == ZCOLL_OK) st = zcoll__phome_add(&P->home, W_FIN_ROUNDS, 0, &rounds);
  }
  /* the next epoch's first ticket: SEG, reset by the last flusher before FIN */
  if (st == ZCOLL_OK) st = zcoll__phome_add(&P->home, W_SEG, 0, &seg);
  if (st != ZCOLL_OK) return zcoll__comm_break(pc, st);
  P->ncontrib = P->mine = 0;
  P->round = UINT64_MAX;
  int n = 0;
  if (rounds) {
    /* The last round: where the highest ticket of the epoch says it starts (entries of
     * earlier epochs have tickets below base_t). */
    uint64_t top = 0, lo = P->my_lo;
    int who = -1;
    for (int r = 0; r < P->p && st == ZCOLL_OK; r++) {
      uint64_t v;
      if ((st = read_entry(P, r, &v)) == ZCOLL_OK && v > P->base_t && v > top) top = v, who = r;
    }
    if (st == ZCOLL_OK && who >= 0 && who != P->rank)
      st = zcoll__phome_add(&P->home, entry_of(who) + 8u, 0, &lo);
    if (st == ZCOLL_OK && who >= 0) st = find_members(P, lo, top - lo, &n);
    if (st != ZCOLL_OK) return zcoll__comm_break(pc, st);
    if (!n)
      return zcoll__comm_break(pc, zcoll__fail(ZCOLL_ERR_TRANSPORT,
                                               "partial allreduce: %llu rounds but no offer found",
                                               (unsigned long long)rounds));
    for (int i = 0; i < n; i++) P->mine |= P->members[i] == P->rank;
    P->ncontrib = n;
    P->round = P->base_round + rounds - 1;
  }
  /* The root's kept result to everyone, as a sum of bytes with zeros (exact whatever the
   * dtype): an allreduce, so that no rank leaves before all have read the entries. */
  uint8_t token = 0;
  int data = n && P->bytes && out; /* out is scratch where there are bytes */
  void *buf = data ? out : &token;
  size_t len = data ? P->bytes : 1;
  if (data) {
    if (P->members[0] == P->rank)
      memcpy(out, P->keep, P->bytes);
    else
      memset(out, 0, P->bytes);
  }
  struct zcoll__plan pl;
  if ((st = zcoll__allreduce_plan(pc, ZCOLL_IN_PLACE, buf, len, ZCOLL_UINT8, ZCOLL_SUM, &pl)) !=
      ZCOLL_OK)
    return zcoll__plan_failed(pc, st);
  st = zcoll__execute(pc, pl.s, &pl.desc, pl.src, pl.dst);
  zcoll__plan_release(&pl);
  if (st != ZCOLL_OK) return st;
  P->epoch++;
  P->base_t = seg;
  P->base_round += rounds;
  P->fin_rounds = rounds;
  P->need_flush = 0;
  P->state = P_DONE;
  P->status = ZCOLL_OK;
  return ZCOLL_OK;
}

void zcoll__partial_release(struct zcoll__partial *P) {
  zcoll__mem_unhold(&P->hold); /* freed in flight, on a broken communicator */
  zcoll__phome_close(&P->home);
  if (P->have_sched) zcoll__sched_free(&P->sched);
  zcoll__exec_free(P->e);
  free(P->members);
  free(P->keep);
  zcoll__pump_remove(P->pc, zcoll__partial_pump, P->pc);
  P->pc->coll.partial = NULL;
}

/* The calls enter the request's communicator as the other request calls do theirs. */
#define ENTERED(P, fn, body)                        \
  do {                                              \
    zcoll_status_t st_ = zcoll__enter((P)->pc, fn); \
    if (st_ != ZCOLL_OK) return st_;                \
    st_ = zcoll__report((P)->pc, (body));           \
    zcoll__leave((P)->pc);                          \
    return st_;                                     \
  } while (0)

zcoll_status_t zcoll__partial_start(struct zcoll__partial *P) {
  ENTERED(P, "zcoll_start", offer(P));
}

static zcoll_status_t test_body(struct zcoll__partial *P) {
  if (in_flight(P)) {
    int progress = 0;
    zcoll_status_t st = step(P, &progress);
    if (st != ZCOLL_OK) failed(P, st);
  }
  return in_flight(P) ? ZCOLL_IN_PROGRESS : P->state == P_FAILED ? P->status : ZCOLL_OK;
}

zcoll_status_t zcoll__partial_test(struct zcoll__partial *P) {
  ENTERED(P, "zcoll_test", test_body(P));
}

zcoll_status_t zcoll__partial_wait(struct zcoll__partial *P, int timeout_ms) {
  ENTERED(P, timeout_ms < 0 ? "zcoll_wait" : "zcoll_wait_timeout", drive(P, timeout_ms));
}

static zcoll_status_t flush_body(struct zcoll__partial *P) {
  if (in_flight(P))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "zcoll_partial_flush: the request is in flight (zcoll_wait for it first: "
                       "its round is decided once the others flush)");
  return flush(P, P->dst);
}

zcoll_status_t zcoll_partial_flush(zcoll_request_t *req) {
  struct zcoll__partial *P = zcoll__partial_of(req);
  if (!P)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "zcoll_partial_flush: not a partial request (zcoll_allreduce_partial_init)");
  ENTERED(P, "zcoll_partial_flush", flush_body(P));
}

static zcoll_status_t info_body(struct zcoll__partial *P, uint64_t *round, int *ncontrib,
                                int *mine) {
  if (in_flight(P) || P->state == P_IDLE || P->state == P_FAILED)
    return zcoll__fail(
        ZCOLL_ERR_INVALID_ARG, "zcoll_request_partial_info: no round has completed (%s)",
        in_flight(P) ? "the request is in flight" : "none since it was made or failed");
  if (round) *round = P->round;
  if (ncontrib) *ncontrib = P->ncontrib;
  if (mine) *mine = P->mine;
  return ZCOLL_OK;
}

zcoll_status_t zcoll_request_partial_info(const zcoll_request_t *req, uint64_t *round,
                                          int *ncontrib, int *mine) {
  struct zcoll__partial *P = zcoll__partial_of(req);
  if (!P)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_request_partial_info: not a partial request "
                                              "(zcoll_allreduce_partial_init)");
  ENTERED(P, "zcoll_request_partial_info", info_body(P, round, ncontrib, mine));
}

zcoll_status_t zcoll__partial_free(struct zcoll__partial *P) {
  zcoll_comm_t *pc = P->pc;
  zcoll_status_t st = zcoll__enter(pc, "zcoll_request_free");
  if (st != ZCOLL_OK) return st;
  if (in_flight(P) && pc->broken == ZCOLL_OK) {
    st = zcoll__report(pc, zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                                       "zcoll_request_free: the partial request is still in "
                                       "flight (zcoll_wait for it first)"));
    zcoll__leave(pc);
    return st;
  }
  /* The others' flush counts every rank: one not flushed since its last offer (or ever)
   * flushes now, into scratch -- the user's buffer may be gone. */
  if (P->need_flush && pc->broken == ZCOLL_OK) {
    void *scratch = P->bytes ? malloc(P->bytes) : NULL;
    st = P->bytes && !scratch ? zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for a flush")
                              : flush(P, scratch);
    free(scratch);
    st = zcoll__report(pc, st);
  }
  /* The others may still read the home (a flush's last steps): rank 0 keeps it until all
   * are through. */
  if (st == ZCOLL_OK && pc->broken == ZCOLL_OK) {
    uint8_t token = 0;
    struct zcoll__plan pl;
    if ((st = zcoll__barrier_plan(pc, &token, &pl)) == ZCOLL_OK) {
      st = zcoll__execute(pc, pl.s, &pl.desc, pl.src, pl.dst);
      zcoll__plan_release(&pl);
    }
    st = zcoll__report(pc, st);
  }
  zcoll__partial_release(P);
  zcoll__leave(pc);
  zcoll_status_t st2 = P->destroy(pc);
  zcoll__partial_orphan(P);
  zcoll__request_forget(P->q);
  free(P);
  return st != ZCOLL_OK ? st : st2;
}

/* The kind's calls (request.h): on a handle, the request's. */
struct zcoll__partial *zcoll__partial_of(const zcoll_request_t *q) {
  return zcoll__request_impl(q, &zcoll__partial_request_ops);
}
static zcoll_status_t kind_start(zcoll_request_t *q) {
  return zcoll__partial_start(zcoll__partial_of(q));
}
static zcoll_status_t kind_test(zcoll_request_t *q) {
  return zcoll__partial_test(zcoll__partial_of(q));
}
static zcoll_status_t kind_wait(zcoll_request_t *q, int timeout_ms) {
  return zcoll__partial_wait(zcoll__partial_of(q), timeout_ms);
}
static zcoll_status_t kind_free(zcoll_request_t *q) {
  return zcoll__partial_free(zcoll__partial_of(q));
}
const struct zcoll__request_ops zcoll__partial_request_ops = {kind_start, kind_test, kind_wait,
                                                              kind_free};
