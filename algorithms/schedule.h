/*
 * schedule.h -- what an algorithm produces and the executor runs.
 *
 * A schedule is one rank's program of an allreduce, in element ranges, independent of
 * dtype, transport and chunking: send a range to a peer, receive a range from a peer
 * and reduce it into (or copy it to) the result, or copy locally. Ops are appended in
 * program order and the builder derives the data dependencies between them from the
 * ranges they read and write, so an algorithm says only *what* moves, never *when*:
 * the executor streams every op in chunks as soon as the chunks it depends on are
 * ready, which is what overlaps transfer and reduction.
 */
#ifndef ZCOLL_SCHEDULE_H
#define ZCOLL_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>
#include "zcoll.h"

/* The buffers a schedule names. Ranges are in one coordinate space (the schedule's count
 * elements): buffer k holds coordinates [base[k], ...) from its first element. An
 * allreduce's buffers all start at 0; an allgather's input is block `rank` of its result,
 * a reduce-scatter's result block `rank` of its input. TMP is scratch the executor owns
 * (a reduce-scatter's partial sums). DST and TMP share the dependency tracking, as if one
 * buffer: an op on a coordinate of either waits for every earlier op on that coordinate of
 * both, which only adds waits (recursive halving keeps block r's partial sum in TMP and
 * writes its result in DST) and never misses one. */
enum { ZCOLL_BUF_SRC, ZCOLL_BUF_DST, ZCOLL_BUF_TMP, ZCOLL_NBUFS };

enum {
  ZCOLL_SOP_SEND,        /* buf[off, off+count) -> peer */
  ZCOLL_SOP_RECV_REDUCE, /* dst[...] = acc[...] op (what peer sends) */
  ZCOLL_SOP_RECV_COPY,   /* dst[...] = what peer sends */
  ZCOLL_SOP_COPY         /* dst[...] = src[...], local */
};

struct zcoll__sop {
  uint8_t kind;
  uint8_t final : 1; /* RECV_REDUCE: completes its range's reduction (AVG divides here) */
  uint8_t input : 1; /* reads this rank's input (SEND from SRC, acc SRC, COPY), as built:
                      * in place, buf and acc say DST, and a premul sum scales here */
  uint8_t buf;       /* SEND: read from; others: written (DST, or TMP) */
  uint8_t acc;       /* RECV_REDUCE, COPY: buffer of the other operand, at the same offset */
  int peer;          /* rank, -1 for local ops */
  size_t off, count;
  uint32_t dep_first, ndeps; /* into zcoll__sched.deps: ops that must progress first */
};

struct zcoll__sched {
  int rank, size;
  int root; /* a broadcast's; -1 for an allreduce */
  int in_place;
  size_t count;
  size_t base[ZCOLL_NBUFS]; /* where each buffer starts, in coordinates (0 unless set) */
  size_t tmp_count;         /* TMP's extent from base[TMP], in elements (0: no TMP) */
  /* A reduce-scatter in place: at the end, DST's coordinates [post_off, post_off + post_count)
   * move to its first element (MPI puts the block at the start of the buffer). */
  size_t post_off, post_count;
  /* Filled by zcoll__sched_finish: how far the ops reach into each buffer, in elements
   * from its first (what a collective holds of the user's memory: mem.h). */
  size_t reach[ZCOLL_NBUFS];
  int remap_dst; /* while building: ops the builder says write (or read) DST use this one */
  /* While building a v-form (algorithms.h): what moves to and from each peer; NULL else. */
  const struct zcoll__layout *lay;
  struct zcoll__sop *ops;
  int nops, ops_cap;
  uint32_t *deps;
  size_t ndeps, deps_cap;
  zcoll_status_t error; /* sticky: the first failure while building */
  int first[2], nfirst; /* peers the executor should visit before the others */
  /* Filled by zcoll__sched_finish: per distinct peer, its ops in program order. */
  int npeers;
  int *peers;      /* ranks */
  int *peer_ops;   /* for each peer: its sends then its receives, as op indices */
  int *peer_sends; /* offsets into peer_ops, npeers + 1 entries */
  int *peer_recvs; /* offsets into peer_ops, npeers + 1 entries */
  int nlocal;
  int *local_ops;
};

void zcoll__sched_init(struct zcoll__sched *s, int rank, int size, size_t count, int in_place);
void zcoll__sched_free(struct zcoll__sched *s);

/* The builder: ranges are in elements. */
void zcoll__sched_send(struct zcoll__sched *s, int peer, int buf, size_t off, size_t count);
void zcoll__sched_recv_reduce(struct zcoll__sched *s, int peer, int acc, size_t off, size_t count,
                              int final);
void zcoll__sched_recv_copy(struct zcoll__sched *s, int peer, size_t off, size_t count);
/* The same, written into buffer `to` (DST or TMP). */
void zcoll__sched_recv_reduce_to(struct zcoll__sched *s, int peer, int to, int acc, size_t off,
                                 size_t count, int final);
/* dst = src over a range; nothing when in place. */
void zcoll__sched_copy(struct zcoll__sched *s, size_t off, size_t count);
/* to = from over a range (TMP to DST), in place or not. */
void zcoll__sched_move(struct zcoll__sched *s, int from, int to, size_t off, size_t count);

/* The executor visits a schedule's peers in order, each step: a peer named here (at most
 * two) comes first -- the one on the critical path, whose forwards others wait for. */
void zcoll__sched_prefer(struct zcoll__sched *s, int peer);
/* Indexes the ops per peer; returns the sticky build status. */
zcoll_status_t zcoll__sched_finish(struct zcoll__sched *s);

/* Block b of `count` elements cut into `parts` near-equal blocks (the first count %
 * parts blocks one element longer). */
static inline void zcoll__block(size_t count, int parts, int b, size_t *off, size_t *len) {
  size_t q = count / (size_t)parts, r = count % (size_t)parts;
  *off = (size_t)b * q + ((size_t)b < r ? (size_t)b : r);
  *len = q + ((size_t)b < r ? 1 : 0);
}

#endif
