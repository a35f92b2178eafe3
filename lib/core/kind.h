/*
 * kind.h -- the table of collective kinds: one row per kind says everything the library
 * knows of it (its id on the wire, what its description holds, its algorithms and their
 * schedule builder, its names for the flight recorder and for mismatch messages).
 *
 * Adding a collective:
 *   1. include/zcoll.h: the public call, documented.
 *   2. lib/coll/<name>.c: argument checks, the algorithm choice, the plan
 *      (zcoll__sched_get with the new kind) and the run; its non-blocking and
 *      persistent forms are entry points in lib/coll/request.c naming its planner.
 *   3. Here: a ZCOLL_COLL_* id (the next number: ids are on the wire and in the
 *      fingerprint, never renumber one) and a row in kind.c's table.
 *   4. algorithms/: its schedule builders and their list (algorithms.h), the row's algos.
 *   5. python/: the binding and its wrapper; tests/ and python/tests/: its tests.
 * The plan cache, the flight recorder, describe and the executor read this table: none
 * of them names a kind.
 */
#ifndef ZCOLL_KIND_H
#define ZCOLL_KIND_H

#include <stddef.h>
#include <stdint.h>

#include "algorithms/algorithms.h"

/* A collective's kind: the description's `kind` byte (channel.h), on the wire and in the
 * fingerprint. ZCOLL_COLL_VEC: a vector key's round (tasks.c), an allreduce whose root
 * field holds a hash of the key. ZCOLL_COLL_AGREE: the one-byte allreduce that follows a
 * collective with a created op's function (allreduce.c), which no user call may pair with.
 * ZCOLL_COLL_BARRIER: zcoll_barrier, a one-byte exchange of its own kind (barrier.c).
 * ZCOLL_COLL_PARTIAL: a round of a partial allreduce among its members, its ordinal the
 * round's number (lib/coll/partial.c). */
enum {
  ZCOLL_COLL_ALLREDUCE = 1,
  ZCOLL_COLL_BROADCAST = 2,
  ZCOLL_COLL_VEC = 3,
  ZCOLL_COLL_AGREE = 4,
  ZCOLL_COLL_BARRIER = 5,
  ZCOLL_COLL_ALLGATHER = 6,
  ZCOLL_COLL_REDUCE_SCATTER = 7,
  ZCOLL_COLL_REDUCE = 8,
  ZCOLL_COLL_PARTIAL = 9, /* a partial allreduce's round (partial.c): root holds the quorum */
  /* The rest of MPI's set (lib/coll/xchg.c): count is the per-rank block of the uniform
   * ones; the v-forms' is ZCOLL_COUNT_PER_PAIR, their counts being the pairs' (pair_counts). */
  ZCOLL_COLL_ALLTOALL = 10,
  ZCOLL_COLL_ALLTOALLV = 11,
  ZCOLL_COLL_ALLGATHERV = 12,
  ZCOLL_COLL_GATHER = 13,
  ZCOLL_COLL_GATHERV = 14,
  ZCOLL_COLL_SCATTER = 15,
  ZCOLL_COLL_SCATTERV = 16
};

/* A v-form's description's count: no pair's count (those are below PTRDIFF_MAX), so that a
 * pair's header (count: the pair's) never reads as the run's description, nor SAME as it. */
#define ZCOLL_COUNT_PER_PAIR UINT64_MAX

/* An allreduce's algo byte in its description when it goes through the one-host mailboxes
 * (onehost.h) rather than a schedule: on the wire and in the fingerprint, so it stays 255.
 * Only the plan writes it; the executor knows such a run by its ops (exec.h), not by it. */
#define ZCOLL_ALGO_ONEHOST 255

/* What the description's root field holds for a kind. */
enum zcoll__kind_root {
  ZCOLL_KIND_NO_ROOT,  /* -1 */
  ZCOLL_KIND_ROOT,     /* the root rank */
  ZCOLL_KIND_KEY_HASH, /* a hash of the vector key */
  ZCOLL_KIND_QUORUM    /* the partial round's quorum */
};

struct zcoll__kind {
  int id;           /* ZCOLL_COLL_* */
  const char *name; /* the flight recorder's ("allreduce") */
  /* The description as mismatch messages say it: fixed text, or head, then the count,
   * dtype, op (has_op), root and algorithm. */
  const char *fixed;
  const char *head;
  enum zcoll__kind_root root;
  int has_op;
  /* Its result spans the schedule's whole count (every rank's block: the allgather's), not
   * the description's count. */
  int result_spans;
  /* Its counts differ per pair of ranks (the v-forms): each pair's header states the count
   * it carries, and its fingerprint the count the sender expects back, so that the receiver
   * checks both directions (exec_pair.c). */
  int pair_counts;
  /* Its count is a hash of the call's counts array, the same on every rank (allgatherv's
   * recvcounts): ranks that disagree on any count differ in the description. */
  int counts_hashed;
  /* Its algorithms: the list whose index is the description's algo byte, and one more
   * outside the list (extra_id; NULL: none). */
  const struct zcoll__algo *const *algos;
  const int *nalgos;
  int extra_id;
  const struct zcoll__algo *extra;
  /* Builds the schedule of algorithm `al`; NULL: al->build. */
  void (*build)(struct zcoll__sched *s, const struct zcoll__algo *al,
                const struct zcoll__algo_params *p);
};

/* The row of kind `id`, NULL if no kind has it. */
const struct zcoll__kind *zcoll__kind_of(int id);
/* Algorithm `algo` of kind `k`, NULL if it has none of that id. */
const struct zcoll__algo *zcoll__kind_algo(const struct zcoll__kind *k, int algo);
/* Its name: "?" for none (a kind unknown names the allreduce's algorithms). */
const char *zcoll__kind_algo_name(int kind, int algo);
/* Appends rank s->rank's program of kind `kind`, algorithm `algo` (both known). */
void zcoll__kind_build(int kind, int algo, struct zcoll__sched *s,
                       const struct zcoll__algo_params *p);

#endif
