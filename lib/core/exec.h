/*
 * exec.h -- the executor's state, shared by its files: executor.c (moving pieces),
 * exec_queue.c (the collectives in flight), exec_wait.c (waiting, and giving up), and
 * request.c (which keeps a run in each request).
 */
#ifndef ZCOLL_EXEC_H
#define ZCOLL_EXEC_H

#include <stdatomic.h>
#include <poll.h>
#include <stdint.h>

#include "comm.h"
#include "kernels/op.h"
#include "mem.h"

struct zcoll__exec_state {
  int cap_ops, cap_peers;
  size_t *pos;    /* per op: progressed up to this element (send: source released) */
  size_t *issued; /* per op, sends: next element to put */
  uint8_t *finished;
  struct zcoll_tl_mr **src_mr;     /* per send op: the user registration it is put from */
  int *send_cur, *recv_cur, *chan; /* per schedule peer */
  int *peer_of_chan;               /* channel -> schedule peer, -1 if not in this schedule */
  uint8_t *hdr_sent, *hdr_seen;    /* per schedule peer: this collective's header */
  int64_t *awaited_ns;             /* per schedule peer: waiting on it since (0: not) */
  int cap_chans;
  /* Grants (grant.c). Per op: the range of a receive granted to the peer, or of a send
   * that may go straight into the peer's result (gfrom SIZE_MAX: none). */
  size_t *gfrom, *gto;         /* granted range [gfrom, gto), grown by later grants */
  int *grant_cur;              /* per schedule peer: the next receive to consider granting */
  struct zcoll_tl_rkey **gkey; /* per schedule peer: its result's key, for this run; NULL */
  uint64_t *gbase;             /* per schedule peer: where its result starts in gkey */
  char *tmp;                   /* the runs' ZCOLL_BUF_TMP, grown on demand */
  size_t tmp_cap;
  struct zcoll__pair_hdr *pair; /* per schedule peer: a v-form's headers (exec_run.c) */
  int pair_cap;
};

/* A v-form's headers with one peer (kind.h: pair_counts): the run's description with the
 * pair's count, each way, and fingerprints that fold in the count of the other way
 * (zcoll__pair_fingerprint), so that the header from i to j says what i sends j *and* what
 * i expects from j, and j's check of it covers both directions of the pair. */
struct zcoll__pair_hdr {
  struct zcoll__coll_desc out, in; /* what this rank's header states; what it expects */
  uint64_t fp_out, fp_in;
};

/* A region registered for peers to write results into (a persistent request's result,
 * or a zcoll_mem_register region): its registration and key, handed out in grants. */
struct zcoll__grant_src {
  struct zcoll_tl_mr *mr; /* NULL once revoked */
  uint32_t keylen;
  uint8_t key[ZCOLL_GRANT_KEY_MAX];
};

/* A kind of run: what sets it up, steps it and tells what it waits on, chosen at run init
 * (zcoll__run_ops_of) so that no one branches on the description's algo byte. A
 * schedule's run (zcoll__sched_run) has none of the functions: the executor does its
 * work inline (executor.c: the 8-byte path notices a call). The one-host mailboxes' run
 * (zcoll__onehost_run, onehost.h) has all of them. */
struct zcoll__run_ops {
  void (*init)(struct zcoll__run *r); /* after run_init's common part: the rest */
  zcoll_status_t (*step)(struct zcoll__run *r, int *progress);
  int (*waiting_on)(const struct zcoll__run *r); /* for a timeout's message; -1: none */
  /* Its news is in the peers' mailboxes, not in events: its start reads none (the boxes
   * carry it), and a blocking wait looks before it polls, and after a look that moved
   * nothing as well. */
  int mailboxes;
};
extern const struct zcoll__run_ops zcoll__sched_run;

/* One collective in progress: on the caller's stack for a blocking call, in the request
 * otherwise. Active runs are listed in comm->active in the order they were issued (the
 * order of their ordinals), and move pieces in that order on every channel. */
struct zcoll__run {
  struct zcoll__run *next; /* in comm->active */
  uint64_t rc_since;       /* registration-cache clock at its start: what it uses stays */
  zcoll_status_t status;   /* ZCOLL_IN_PROGRESS while listed; then how it ended */
  atomic_int ended;        /* 1 (release) once status is final: read without comm->progress.mu */
  int64_t started_ns;      /* for the trace; 0 if off */
  zcoll_comm_t *comm;
  const struct zcoll__run_ops *ops; /* its kind of run */
  const struct zcoll__sched *s;
  struct zcoll__exec_state *e;
  char *buf[ZCOLL_NBUFS]; /* where each starts: coordinate s->base[k] (zcoll__at) */
  size_t dsize, chunk;
  size_t wsize; /* an element's bytes on the wire: dsize, or 2 with wire */
  uint8_t wire; /* compressed averaging: float32 travels as this 16-bit dtype; 0 */
  zcoll_dtype_t dtype;
  zcoll_op_t op;
  const struct zcoll__op_def *uop;    /* a created op (op.h), else NULL */
  uint64_t ordinal;                   /* this collective's number on the communicator */
  struct zcoll__flight_ent *fl;       /* its flight recorder entry; NULL: off */
  struct zcoll__coll_desc desc;       /* what it is, as the wire header states it */
  uint64_t fp;                        /* desc's fingerprint */
  const struct zcoll__pair_hdr *pair; /* per schedule peer (a v-form's); NULL: desc and fp */
  int remaining;
  int local_cur;
  struct zcoll__grant_src *grant; /* this rank's result may be written directly; NULL */
  uint64_t grant_base;            /* where the result starts in grant's region, in bytes */
  int ngkeys;                     /* peers' keys held in e->gkey */
  /* 1: not stepped while a run issued before it is listed -- a created op's agreement
   * (request.c), whose word must not leave before this rank's functions have all run. */
  int fence;
  /* A one-host run (zcoll__onehost_run, onehost.h): the next rank whose box it
   * reads (-1: not published yet), and which of the two boxes. */
  int oh_next, oh_which;
  /* A large one-host call (onehost_big.c): its phase (0: the handshake) and progress in it. */
  int oh_big, oh_phase, oh_i;
  struct zcoll__mem_hold hold; /* of zcoll_mem_alloc memory, from its start to its end */
};

struct zcoll__idle {
  int64_t since_ns; /* 0: not idle */
  int64_t last_check_ns;
  unsigned calls;  /* reading the clock costs more than a poll in a VM: not every time */
  int64_t spin_ns; /* this wait's spin phase (exec_wait.c) */
  int64_t seen_ns; /* the last clock read of the calls' waits, 0: none (flight.h) */
};

/* The kind of run that runs schedule s: the one-host mailboxes' for their (empty) schedule,
 * else the schedule's. */
const struct zcoll__run_ops *zcoll__run_ops_of(const zcoll_comm_t *comm,
                                               const struct zcoll__sched *s);
/* Sets r up for collective `ordinal` (not yet in flight). On success it holds the
 * zcoll_mem_alloc memory its buffers touch (r->hold): every way a run ends (reaped, failed,
 * a blocking call's own end) lets go of it. */
zcoll_status_t zcoll__run_init(zcoll_comm_t *comm, struct zcoll__run *r,
                               const struct zcoll__sched *s, struct zcoll__exec_state *e,
                               const struct zcoll__coll_desc *desc, uint64_t ordinal,
                               const void *src, void *dst);
/* Ends every run in flight with st (no news to the peers: see zcoll__comm_break). */
void zcoll__runs_end(zcoll_comm_t *comm, zcoll_status_t st);

/* Per channel, in zcoll__progress's scratch: earlier runs still send / receive on it. */
#define ZCOLL_BLOCK_SEND 1
#define ZCOLL_BLOCK_RECV 2
/* Takes finished runs off comm->active (any position: a later run may finish first). */
void zcoll__reap(zcoll_comm_t *comm);

/* The header r puts to (out) or expects from schedule peer j, and its fingerprint. */
static inline const struct zcoll__coll_desc *zcoll__hdr_out(const struct zcoll__run *r, int j,
                                                            uint64_t *fp) {
  *fp = r->pair ? r->pair[j].fp_out : r->fp;
  return r->pair ? &r->pair[j].out : &r->desc;
}
static inline const struct zcoll__coll_desc *zcoll__hdr_in(const struct zcoll__run *r, int j,
                                                           uint64_t *fp) {
  *fp = r->pair ? r->pair[j].fp_in : r->fp;
  return r->pair ? &r->pair[j].in : &r->desc;
}

/* Buffer k's element at coordinate a (schedule.h). */
static inline char *zcoll__at(const struct zcoll__run *r, int k, size_t a) {
  return r->buf[k] + (a - r->s->base[k]) * r->dsize;
}

static inline size_t zcoll__op_end(const struct zcoll__sop *o) { return o->off + o->count; }

/* A put on c: under the family's lock while its instance is shared (family.h). */
static inline zcoll_status_t zcoll__chan_put(zcoll_comm_t *comm, struct zcoll__chan *c,
                                             const void *src, struct zcoll_tl_mr *lmr,
                                             struct zcoll_tl_rkey *rkey, uint64_t roff, size_t len,
                                             uint32_t imm, uint64_t cookie) {
  int locked = zcoll__tl_lock(comm->fam);
  zcoll_status_t st = c->ops->put(c->ep, src, lmr, rkey, roff, len, imm, cookie);
  zcoll__tl_unlock(comm->fam, locked);
  return st;
}

static inline size_t zcoll__piece_end(const struct zcoll__run *r, const struct zcoll__sop *o,
                                      size_t at) {
  size_t end = zcoll__op_end(o);
  return end - at > r->chunk ? at + r->chunk : end;
}

/* Have the ops that o depends on progressed over [a, b)? */
static inline int zcoll__deps_ready(const struct zcoll__run *r, const struct zcoll__sop *o,
                                    size_t a, size_t b) {
  for (uint32_t i = 0; i < o->ndeps; i++) {
    int d = (int)r->s->deps[o->dep_first + i];
    const struct zcoll__sop *y = &r->s->ops[d];
    size_t yend = zcoll__op_end(y);
    if (a >= yend || y->off >= b || a == b) continue;
    if (r->e->pos[d] < (b < yend ? b : yend)) return 0;
  }
  return 1;
}

/* The channel's oldest piece has been used: its slot is free again (credits go back in
 * batches; channel.c). */
zcoll_status_t zcoll__chan_consume(zcoll_comm_t *comm, struct zcoll__chan *c,
                                   struct zcoll__slot *sl);

/* ---- grants (grant.c) ---- */
/* Receiver: grants the peer j what r may now receive straight into its result. */
zcoll_status_t zcoll__grants_give(struct zcoll__run *r, int j, int *progress);
/* Sender or receiver: the channel's oldest piece from peer j is a grant (sl). Takes it
 * for r (or drops a stale one): *wait = 1 if it belongs to a later collective. */
zcoll_status_t zcoll__grants_take(struct zcoll__run *r, int j, struct zcoll__chan *c,
                                  struct zcoll__slot *sl, int *wait);
/* r has ended: the peers' keys it holds go. */
void zcoll__run_drop_grants(struct zcoll__run *r);
/* Registers [addr, addr+len) for peers to write results into, where the transport lets
 * them (1), else leaves g empty (0: results are copied, nothing is wrong). */
int zcoll__grant_open(zcoll_comm_t *comm, void *addr, size_t len, struct zcoll__grant_src *g);
/* Stops peers writing into r's result (after a failure). */
void zcoll__grant_revoke(zcoll_comm_t *comm, struct zcoll__grant_src *g);

/* ZCOLL_OK, or PEER_FAILED naming a rank that left the communicator (zcoll_comm_destroy)
 * before a collective in flight that it would have had to make. No system call. */
zcoll_status_t zcoll__departures(zcoll_comm_t *comm);
/* A collective of the executor's that starts 10 ms or more after the last one that looked
 * (the coarse clock: ~15 ns a call) reads the job's news first: a rank that comes late to
 * a collective that failed elsewhere meanwhile must not complete it from what the failed
 * rank sent before it failed (its result was never whole there). Back-to-back calls skip
 * it; their waits look every 10 ms. A communicator's first collective skips it too. */
zcoll_status_t zcoll__news_at_start(zcoll_comm_t *comm);
/* Nothing moved: spin, yield or sleep, hear failure news and revokes, time out. */
zcoll_status_t zcoll__idle_wait(zcoll_comm_t *comm, struct zcoll__run *r, struct zcoll__idle *id);
/* Something moved: the wait in id (if any) is over, and tells whether spinning paid. */
void zcoll__idle_done(zcoll_comm_t *comm, struct zcoll__idle *id);

/* ---- the executor's calls for the layers above (coll, comm) ---- */

/* Runs one schedule to completion over the communicator's channels: collective number
 * comm->ordinal (which it advances), described by desc, after (and while progressing)
 * the collectives already in flight. */
zcoll_status_t zcoll__execute(zcoll_comm_t *comm, const struct zcoll__sched *s,
                              const struct zcoll__coll_desc *desc, const void *src, void *dst);
/* Room in *e for a schedule of nops ops and npeers peers over nchans channels. */
zcoll_status_t zcoll__exec_reserve(struct zcoll__exec_state **e, int nops, int npeers, int nchans);
void zcoll__exec_free(struct zcoll__exec_state *e);
/* Starts collective `ordinal` (r's memory must last until it ends): after every run in
 * flight. An error means it did not start (the caller breaks the communicator). */
zcoll_status_t zcoll__run_start(zcoll_comm_t *comm, struct zcoll__run *r,
                                const struct zcoll__sched *s, struct zcoll__exec_state *e,
                                const struct zcoll__coll_desc *desc, uint64_t ordinal,
                                const void *src, void *dst);
/* One pass over everything in flight, without waiting; runs that finish get ZCOLL_OK. */
zcoll_status_t zcoll__progress(zcoll_comm_t *comm, int *progress);
/* Progresses (and waits) until r has ended; its status. */
zcoll_status_t zcoll__run_wait(zcoll_comm_t *comm, struct zcoll__run *r);
/* Breaks the communicator with st (zcoll__exec_broken) and ends every run in flight with
 * the status it reports: the one way an error breaks a communicator (an argument error
 * goes through zcoll__poison, report.h, which tells the peers why first, then here). */
zcoll_status_t zcoll__comm_break(zcoll_comm_t *comm, zcoll_status_t st);
/* Makes st the communicator's sticky failure: tells the peers, stops the transport
 * touching user memory; returns the status to report (the cause if news brings it). */
zcoll_status_t zcoll__exec_broken(zcoll_comm_t *comm, zcoll_status_t st);
/* Arms every transport instance for sleeping and puts their descriptors in fds (*n of
 * them): ZCOLL_OK, or ZCOLL_IN_PROGRESS with events pending (poll again), or an error.
 * Only where comm->can_block. */
zcoll_status_t zcoll__tl_arm(zcoll_comm_t *comm, struct pollfd *fds, int *n);
/* Waits for every put to complete (before tearing the transport down). */
zcoll_status_t zcoll__drain(zcoll_comm_t *comm);
/* The transport's placement hook (arg: the communicator). */
void *zcoll__place(void *arg, int peer, uint32_t imm, size_t len, int *final);

#endif
