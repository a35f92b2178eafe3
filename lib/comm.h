/*
 * comm.h -- the communicator: bootstrap, transport instance, and one channel per peer.
 */
#ifndef ZCOLL_COMM_H
#define ZCOLL_COMM_H

#include <stddef.h>
#include <poll.h>
#include <stdint.h>

#include "algorithms/algorithms.h"
#include "algorithms/select.h"
#include "bootstrap.h"
#include "config.h"
#include "schedule.h"
#include "trace.h"
#include "transport.h"

/*
 * A channel carries pieces (chunks) between this rank and one peer, both ways.
 *
 * Each rank owns, per peer, a ring of `depth` receive slots of `slot_bytes` in one
 * registered region; the peer writes piece number `seq` into slot seq % depth and
 * may do so only while it holds a credit for that slot. The receiver hands credits
 * back (a zero-length put whose immediate has ZCOLL_IMM_CREDIT set) after it has
 * consumed pieces. Sequence numbers run on across collectives, so a fast rank may
 * already write the next collective's pieces into free slots.
 */
struct zcoll__slot {
  uint8_t arrived;
  uint8_t placed; /* already in its final place: nothing to copy */
  uint32_t imm, len;
};

struct zcoll__inflight { /* a piece we put and whose PUT_DONE we await */
  uint8_t busy;
  uint8_t done;
  int op;         /* the SEND op it belongs to, -1 once the op no longer cares */
  size_t end;     /* the op's position once this piece's source is released */
  int64_t issued_ns; /* for the trace */
  uint32_t bytes;
};

struct zcoll__chan {
  int peer;
  struct zcoll_ep *ep;
  struct zcoll_tl_rkey *rkey; /* the peer's receive region */
  uint64_t roff;              /* our slot ring inside it */
  /* sending */
  /* Piece numbers are 64-bit so that seq % depth never jumps at a wrap (a 32-bit
   * counter would after 4 billion pieces: an hour of 1 us allreduces). */
  uint64_t send_seq;   /* next piece number */
  uint32_t credits;    /* free slots at the peer */
  uint64_t tail_seq;   /* oldest piece whose PUT_DONE we await */
  struct zcoll__inflight *inflight; /* depth entries, by seq % depth */
  char *stage;         /* our send staging ring (transports without PUT_ANY) */
  /* receiving */
  uint64_t recv_seq;   /* next piece number to consume */
  uint32_t unreturned; /* consumed pieces whose credit the peer has not got back */
  struct zcoll__slot *slots;
  char *recv;          /* our receive ring for this peer's pieces */
};

#define ZCOLL_IMM_CREDIT 0x80000000u
#define ZCOLL_IMM_SEQ_MASK 0xffffu
#define ZCOLL_IMM_SIG_SHIFT 16

struct zcoll__sched_cache_entry {
  int used;
  int algo;
  size_t count;
  int in_place;
  uint64_t stamp;
  struct zcoll__sched sched;
};
#define ZCOLL_SCHED_CACHE 8

struct zcoll_comm {
  zcoll_config_t *cfg;
  int rank, size;
  struct zcoll__bootstrap *bs;
  const struct zcoll_tl_ops *tl_ops;
  struct zcoll_tl *tl;
  size_t slot_bytes;
  int depth;
  int nchans;
  struct zcoll__chan *chans;
  int *chan_of; /* rank -> channel index, -1 if none */
  char *recv_region, *send_region;
  size_t region_bytes;
  struct zcoll_tl_mr *recv_mr, *send_mr;
  struct zcoll__algo_params algo_params;
  int forced_algo; /* -1: auto */
  struct zcoll__selector selector;
  zcoll_status_t broken; /* sticky: the first fatal error */
  char last_error[512];
  uint64_t ncolls;
  struct zcoll__sched_cache_entry cache[ZCOLL_SCHED_CACHE];
  struct zcoll__exec_state *exec; /* reusable executor scratch */
  struct zcoll__trace trace;      /* ZCOLL_TRACE; trace.f is NULL when off */
  struct run *running;            /* the collective in progress, for the placement hook */
  struct zcoll_mr *mrs;           /* explicit registrations (mr.c) */
  struct pollfd *pollfds;         /* size + 1: the transport's and every bootstrap socket */
};

struct run;
/* The transport's placement hook (arg: the communicator). */
void *zcoll__place(void *arg, int peer, uint32_t imm, size_t len, int *final);

/* Runs one schedule to completion over the communicator's channels. */
zcoll_status_t zcoll__execute(zcoll_comm_t *comm, const struct zcoll__sched *s, int algo,
                              const void *src, void *dst, size_t count, zcoll_dtype_t dtype,
                              zcoll_op_t op);
void zcoll__exec_free(struct zcoll__exec_state *e);
/* The transport registration covering [addr, addr+len), or NULL (mr.c). */
struct zcoll_tl_mr *zcoll__mr_find(zcoll_comm_t *comm, const void *addr, size_t len);
void zcoll__mr_release_all(zcoll_comm_t *comm);

/* Waits for every put to complete (before tearing the transport down). */
zcoll_status_t zcoll__drain(zcoll_comm_t *comm);

#endif
