/*
 * flight.h -- the flight recorder (ZCOLL_FLIGHT_RECORDER=N): each communicator keeps its
 * last N collectives -- number, kind, count, dtype, op, algorithm, state, the peers it
 * waits on, start and end -- and dumps them (flight.c) on a timeout, a peer failure, a
 * mismatch or an abort, and when asked (zcoll_comm_dump), so that the dumps of a hung
 * job's ranks say which rank is behind and in which call.
 *
 * One writer, no lock: the thread that drives the executor (the caller inside a call, or
 * the progress thread under comm->progress.mu) writes an entry when a collective starts
 * and when it ends. Readers (zcoll_comm_dump, on any thread, while the owner may be blocked in a
 * call) check each entry's stamp around their copy, seqlock style, and skip an entry
 * being rewritten. Every field is an atomic, stored with release and loaded with acquire
 * in place of fences (which ThreadSanitizer cannot check): a reader that sees any value of
 * a new occupant then sees its odd stamp. On x86 these are plain stores.
 *
 * Times are CLOCK_MONOTONIC microseconds, read where the executor reads the clock anyway
 * when it can be: two clock reads cost 5% of an 8-byte allreduce. A blocking call's small
 * collective (zcoll__execute) starts unstamped; the first clock read of its wait for a
 * peer stamps its start (zcoll__flight_seen), the last its end; one that never waited is
 * stamped once, when it ends. Every other collective reads the coarse clock (a few ms of
 * resolution, cheaper) at its start and its end.
 */
#ifndef ZCOLL_FLIGHT_H
#define ZCOLL_FLIGHT_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "base/clock.h"
#include "channel.h"
#include "zcoll.h"

/* Ranks an entry names as awaited: schedules wait on a few peers at a time (2 for a
 * ring, one per round for the others). */
#define ZCOLL_FLIGHT_AWAIT 4

/* A blocking collective up to this many bytes is stamped lazily (see above); above it a
 * clock read is nothing beside moving the data. */
#define ZCOLL_FLIGHT_LAZY_BYTES 65536

enum { ZCOLL_FLIGHT_RUNNING = 1, ZCOLL_FLIGHT_DONE, ZCOLL_FLIGHT_FAILED };

/* One collective; a cache line. */
struct zcoll__flight_ent {
  /* 0: never written; odd: being written; else 2 * (seq + 1): holds collective seq. */
  atomic_uint_least64_t stamp;
  atomic_uint_least64_t seq, count;
  atomic_uint_least32_t what; /* kind | dtype << 8 | op << 16 | algo << 24 (the desc's) */
  atomic_int state;           /* ZCOLL_FLIGHT_*, and the status when failed (<< 8) */
  atomic_int_least64_t start_us, end_us; /* 0: not yet stamped; end 0 while running */
  atomic_int await[ZCOLL_FLIGHT_AWAIT];  /* ranks last seen awaited; -1 ends the list */
};

struct zcoll__flight {
  struct zcoll__flight_ent *ents; /* NULL: off (ZCOLL_FLIGHT_RECORDER=0) */
  unsigned n, next;               /* entries; the one the next collective takes */
  atomic_int dumped;              /* the failure that dumped (once a communicator), else ZCOLL_OK */
};

/* Collective seq, described by d, starts -- stamped now from the coarse clock, or later if
 * lazy (see above): its entry (NULL when off). */
static inline struct zcoll__flight_ent *zcoll__flight_start(struct zcoll__flight *f, uint64_t seq,
                                                            const struct zcoll__coll_desc *d,
                                                            int lazy) {
  if (!f->ents) return NULL;
  int64_t start_us = lazy ? 0 : zcoll__now_us_coarse();
  struct zcoll__flight_ent *e = &f->ents[f->next];
  f->next = f->next + 1 == f->n ? 0 : f->next + 1;
  const memory_order rel = memory_order_release; /* each after the odd stamp */
  atomic_store_explicit(&e->stamp, 2 * seq + 1, memory_order_relaxed);
  atomic_store_explicit(&e->seq, seq, rel);
  atomic_store_explicit(&e->count, d->count, rel);
  atomic_store_explicit(&e->what,
                        (uint32_t)d->kind | (uint32_t)d->dtype << 8 | (uint32_t)d->op << 16 |
                            (uint32_t)d->algo << 24,
                        rel);
  atomic_store_explicit(&e->state, ZCOLL_FLIGHT_RUNNING, rel);
  atomic_store_explicit(&e->start_us, start_us, rel);
  atomic_store_explicit(&e->end_us, 0, rel);
  atomic_store_explicit(&e->await[0], -1, rel);
  atomic_store_explicit(&e->stamp, 2 * seq + 2, rel);
  return e;
}

/* Collective seq, in entry e (not NULL), waits, and the executor read the clock (now_ns,
 * CLOCK_MONOTONIC): the start of an entry not yet stamped. */
static inline void zcoll__flight_seen(struct zcoll__flight_ent *e, uint64_t seq, int64_t now_ns) {
  if (atomic_load_explicit(&e->stamp, memory_order_relaxed) == 2 * seq + 2 &&
      !atomic_load_explicit(&e->start_us, memory_order_relaxed))
    atomic_store_explicit(&e->start_us, now_ns / 1000, memory_order_release);
}

/* Collective seq, in entry e (NULL: off), ended with st at end_us (0: the coarse clock's
 * time now); an entry never stamped starts then too. The entry may have gone to a later
 * collective meanwhile (more than N started since): then it is left alone. */
static inline void zcoll__flight_end(struct zcoll__flight_ent *e, uint64_t seq, zcoll_status_t st,
                                     int64_t end_us) {
  if (!e || atomic_load_explicit(&e->stamp, memory_order_relaxed) != 2 * seq + 2) return;
  int64_t start_us = atomic_load_explicit(&e->start_us, memory_order_relaxed);
  if (!end_us) end_us = zcoll__now_us_coarse();
  if (end_us < start_us) end_us = start_us; /* the coarse clock lags the fine one */
  if (!start_us) atomic_store_explicit(&e->start_us, end_us, memory_order_release);
  atomic_store_explicit(&e->end_us, end_us, memory_order_release);
  /* Release: a reader that sees the end state sees the end time. */
  atomic_store_explicit(&e->state,
                        st == ZCOLL_OK ? ZCOLL_FLIGHT_DONE : ZCOLL_FLIGHT_FAILED | (int)st << 8,
                        memory_order_release);
}

/* Run r (exec.h; its entry not NULL) waits on the peers its awaited_ns marks: their ranks
 * go into its entry (exec_wait.c's check, every 10 ms of idleness). */
struct zcoll__run;
void zcoll__flight_awaited(const struct zcoll__run *r);

/* A collective kind's name as the recorder writes it ("allreduce"; ZCOLL_COLL_*). */
const char *zcoll__flight_kind_name(int kind);

/* ZCOLL_FLIGHT_RECORDER entries for comm (0: off). */
zcoll_status_t zcoll__flight_open(struct zcoll__flight *f, unsigned n);
void zcoll__flight_close(struct zcoll__flight *f);

/* The dump after failure st, once per communicator (the first wins), at info level and to
 * the file; trigger: what happened ("abort"), NULL: st's name. */
void zcoll__flight_dump_failure(zcoll_comm_t *comm, zcoll_status_t st, const char *trigger);

#endif
