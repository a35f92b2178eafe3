/*
 * perf_check.h -- the check pattern of the benchmarks and its independent reference,
 * and the AVG division for peers without one. An allreduce's pattern makes every
 * reference value exact, for every dtype and op, for any number of ranks; a broadcast's
 * is the root's vector, a function of the root, the index and the row, which every rank
 * must hold afterwards. perf_check.c says how.
 */
#ifndef ZCOLL_PERF_CHECK_H
#define ZCOLL_PERF_CHECK_H

#include "perf_table.h"

#define PT_GUARD 256   /* bytes after the vector that must stay untouched: leave room */
#define PT_POISON 0xA5 /* what the receive buffer and the guard hold before a check */

/* One period of this rank's input and of the reference, for one dtype and op. */
struct pt_pattern {
  enum pt_dtype dtype;
  enum pt_op op;
  size_t esize, period;
  unsigned char *input, *ref;
  enum pt_coll coll; /* whose buffers arm and check lay out (an allreduce's by default) */
  int rank, nranks;
  int root; /* a reduce's */
};

/* An allreduce's, for one dtype and op; 0, or -1 out of memory. */
int pt_pattern_init(struct pt_pattern *pat, enum pt_dtype t, enum pt_op op, int rank, int nranks,
                    bool with_ref);

/* An allgather's: rank q's input is its own function of q, the reference every rank's in
 * rank order (built at the check). A reduce-scatter's: pt_pattern_init's, the result
 * block `rank` of the allreduce's reference. */
/* A reduce's: pt_pattern_init's; the root checks the allreduce's result, the others that
 * their input is as it was (and, out of place, that nothing was written to recvbuf). */
int pt_pattern_init_reduce(struct pt_pattern *pat, enum pt_dtype t, enum pt_op op, int rank,
                           int nranks, int root, bool with_ref);
int pt_pattern_init_gather(struct pt_pattern *pat, enum pt_dtype t, int rank, int nranks);
int pt_pattern_init_scatter(struct pt_pattern *pat, enum pt_dtype t, enum pt_op op, int rank,
                            int nranks, bool with_ref);

/* The input of a run of count elements (per rank for an allgather and a reduce-scatter):
 * where it goes (sendbuf, or in place its place in recvbuf) and what it is. */
void pt_fill_input(const struct pt_pattern *pat, unsigned char *sendbuf, unsigned char *recvbuf,
                   size_t count);

/* dtype t's broadcast pattern, reference included (call pt_pattern_bcast before use). */
int pt_pattern_init_bcast(struct pt_pattern *pat, enum pt_dtype t);

/* The pattern of one row: the root's input and every rank's reference are the root's
 * vector; the other ranks' input is the sentinel. */
void pt_pattern_bcast(struct pt_pattern *pat, int root, int rank, uint64_t salt);

void pt_pattern_free(struct pt_pattern *pat);

/* *dst = v in dtype t: v an integer of magnitude <= 256, exact in every type. */
void pt_store_int(enum pt_dtype t, void *dst, int64_t v);

/* How many elements of buf[0..count) differ (bitwise) from the periodic block. */
uint64_t pt_count_wrong(const void *buf, const unsigned char *blk, size_t esize, size_t period,
                        size_t count);

/* Element-sized slots of the PT_GUARD bytes after buf[0..count) that lost the poison. */
uint64_t pt_guard_wrong(const void *buf, size_t esize, size_t count);

/* buf[0..count) = the periodic block. */
void pt_fill(void *buf, const unsigned char *blk, size_t esize, size_t period, size_t count);

/* Before a checked run: fresh input, the guard after it poisoned, and (out of place) a
 * poisoned receive buffer and guard. sendbuf NULL: in place, the input is in recvbuf. */
void pt_check_arm(const struct pt_pattern *pat, unsigned char *sendbuf, unsigned char *recvbuf,
                  size_t count);

/* After it: the wrong result elements and guard slots, and out of place whatever the
 * run changed in the input and its guard. */
uint64_t pt_check_count(const struct pt_pattern *pat, const unsigned char *sendbuf,
                        const unsigned char *recvbuf, size_t count);

/* AVG for peers that have none: the sum, then this division of buf[0..count) by p, with
 * the reference's arithmetic (C's truncating integer division, float / (float)p,
 * double / p, float16 through float). */
void pt_divide(void *buf, size_t count, enum pt_dtype t, int p);

#endif /* ZCOLL_PERF_CHECK_H */
