/*
 * perf_xchg.h -- the exchanges' part of the check pattern (-t alltoall, alltoallv,
 * allgatherv, gather, scatter, sendrecv): what rank src sends rank dst is a function of src, dst
 * and the index, so that a block in the wrong place, from the wrong rank or cut short is
 * counted; and the uneven counts of alltoallv and allgatherv, which a backend uses to
 * build its count and displacement arrays (the same on every rank).
 */
#ifndef ZCOLL_PERF_XCHG_H
#define ZCOLL_PERF_XCHG_H

#include "perf_check.h"

/* Whether coll is one of the exchanges this file checks. */
bool pt_is_xchg(enum pt_coll coll);

/* The elements a v-form moves, count being the row's block per rank (nccl-tests' count
 * / p); h = ceil(count / 2). alltoallv: what src sends dst is count, except that src
 * sends itself count - h and src + 1 (mod p) count + h: uneven (nothing to itself at
 * count 1), and each rank still sends and receives count * p in all, as in alltoall.
 * allgatherv: rank src's block (dst is not used), count except rank 0's count - h and
 * rank 1's count + h. The other exchanges: count. With one rank: count. */
size_t pt_xchg_count(enum pt_coll coll, int src, int dst, int nranks, size_t count);

/* Whether the in-place form is timed: not alltoallv's (MPI's sends what it receives, and
 * the uneven pattern is not symmetric), nor sendrecv's (a message received into the buffer
 * being sent: MPI_Sendrecv has none, and nccl-tests' would race). */
bool pt_xchg_has_in_place(enum pt_coll coll);

/* An exchange's pattern (input and ref are not used: the values are computed). */
int pt_pattern_init_xchg(struct pt_pattern *pat, enum pt_dtype t, enum pt_coll coll, int rank,
                         int nranks, int root);

/* As pt_fill_input, pt_check_arm and pt_check_count, for an exchange. In place (sendbuf
 * NULL): the input lies in recvbuf where MPI's in-place form has it (alltoall: all of
 * recvbuf; allgatherv and gather: the rank's block; a gather's non-root and a scatter's
 * root: recvbuf holds what sendbuf would, and must keep it). A sendrecv's input is the
 * message to rank + 1, its result the one from rank - 1 (mod p; with one rank, itself). */
void pt_xchg_fill(const struct pt_pattern *pat, unsigned char *sendbuf, unsigned char *recvbuf,
                  size_t count);
void pt_xchg_arm(const struct pt_pattern *pat, unsigned char *sendbuf, unsigned char *recvbuf,
                 size_t count);
uint64_t pt_xchg_check(const struct pt_pattern *pat, const unsigned char *sendbuf,
                       const unsigned char *recvbuf, size_t count);

#endif /* ZCOLL_PERF_XCHG_H */
