/*
 * onehost.h -- the one-host small allreduce: every rank of a communicator on one host
 * (the shm transport, which lets us map the peers' receive regions) publishes its vector
 * in a mailbox at the start of its own receive region and reads everybody else's from
 * theirs, reducing all of them in rank order.
 *
 * An 8-byte allreduce through the executor costs a put and a notification each way,
 * credits, a header check and ~2,500 instructions; here it is one cache line written and
 * one read per peer, which is where Open MPI's shared-memory collectives sit (coll/sm,
 * xhc). Every rank computes x_0 op x_1 op ... op x_{p-1} in that order, so the result is
 * the same bits on every rank.
 *
 * A mailbox has two boxes, used alternately by a rank's one-host calls (they are blocking
 * calls only: one at a time per rank). A rank that publishes its n-th such call in box
 * n % 2 has finished its (n-1)-th, for which it read every peer's box (n-1) % 2 -- so
 * when this rank has seen every peer's n-th call, it may overwrite its box n % 2 at the
 * (n+2)-th: nobody reads it any more. No acknowledgements, no credits.
 *
 * A box says which collective it holds (seq = the collective's number + 1, written last
 * with release), its fingerprint and its description, so a rank that reads it checks it
 * exactly as a channel header is checked. A peer that is in another collective at the
 * same number -- one that goes through the executor -- is caught from both ends: a piece
 * of it arriving where this rank expected a mailbox (onehost_step), and a mailbox holding
 * this rank's collective number while this rank waits in the executor
 * (zcoll__onehost_crosscheck, on the 10 ms checks of a wait).
 *
 * Large vectors (ZCOLL_ONEHOST_BIG_MIN and up) use the same boxes for a handshake that says
 * where every rank's vectors lie; if all lie in memory the others can map, each rank
 * reduces its block straight from every rank's input and writes it into every rank's
 * result (onehost_big.c), else they all run the schedule.
 *
 * A peer asleep in its wait is knocked awake by the transport after each publication,
 * and a rank about to sleep looks at its mailboxes after arming (zcoll__onehost_ready):
 * each side fences between its store and its load, so one of them sees the other.
 */
#ifndef ZCOLL_ONEHOST_H
#define ZCOLL_ONEHOST_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "comm.h"

struct zcoll__run;

/* The mailbox: the first bytes of every rank's receive region (comm_setup.c keeps them
 * free of slots), two boxes. */
#define ZCOLL_ONEHOST_MAILBOX_BYTES 2048

/* The largest vector it takes, in bytes: beyond it the executor's pipeline wins
 * (perf/ab.sh; docs/performance.md). */
#define ZCOLL_ONEHOST_MAX_BYTES 512
/* Ranks it serves: every rank reads every other's box. */
#define ZCOLL_ONEHOST_MAX_RANKS 64

/* Vectors from this size up go through the mailboxes when every rank's lies in memory the
 * others can map (zcoll_mem_alloc): each rank reduces its block straight from the peers'
 * vectors and writes it into every rank's result (onehost_big.c). Below
 * it, the handshake that finds out whether they all do would show. */
#define ZCOLL_ONEHOST_BIG_MIN ((size_t)1 << 20)
/* A large call out of place streams its result past the cache (non-temporal stores) once
 * all the ranks' vectors together (2 p n bytes) reach this: a last-level cache's size on
 * the machines measured (sysconf's figure is not the per-core share in VMs: 256 MiB on
 * one with 32). Below, plain stores measured faster (perf/coll_compare.sh, issue 25). */
#define ZCOLL_ONEHOST_STREAM_MIN ((size_t)32 << 20)
/* A large call reduces by chunks of this many bytes, which stay in cache across the inputs. */
#define ZCOLL_ONEHOST_CHUNK ((size_t)64 << 10)

/* Where a rank's vector lies for the others to map (mem.c): region 0 means nowhere. */
struct zcoll__oh_place {
  uint64_t serial; /* the zcoll_mem_alloc region's number, for the readers' cache */
  uint64_t off;    /* the vector's offset in it */
  uint32_t keylen, pad;
  unsigned char key[48]; /* the transport's key to the region (rkey_unpack) */
};

/* How far a rank is in a large call (its box's stage). Every rank writes its block of the
 * result into every rank's vector; a rank leaving on an error says OUT, and waits for
 * those that are WRITING (onehost_big.c). */
enum {
  ZCOLL_OH_PUBLISHED = 1, /* the box is this call's */
  ZCOLL_OH_WRITING,       /* may read and write the peers' vectors (said before it looks
                             whether anyone is OUT) */
  ZCOLL_OH_DONE,          /* its block written everywhere: touches nobody's memory again */
  ZCOLL_OH_OUT            /* left on an error: nobody starts writing into its memory */
};

/* A large call's part of a box: where the vectors lie, and how far the owner is. */
struct zcoll__oh_big {
  _Atomic uint32_t stage; /* ZCOLL_OH_* */
  uint32_t pad;
  struct zcoll__oh_place src, dst;
};

/* A box's seq once its call failed after publishing it (the call's number + 1 with this
 * bit): a peer that reads it fails too, rather than reduce a vector whose owner got an
 * error (onehost.c). */
#define ZCOLL_OH_WITHDRAWN ((uint64_t)1 << 63)

/* A box: what a rank publishes for one call. The header and the first 16 bytes of a small
 * vector share a cache line, so that an 8-byte allreduce moves one line per peer. */
#define ZCOLL_OH_BOX_BYTES (ZCOLL_ONEHOST_MAILBOX_BYTES / 2)
struct zcoll__oh_box {
  _Atomic uint64_t seq; /* the collective's number + 1, stored last (release) */
  uint64_t fp;          /* its fingerprint */
  struct zcoll__coll_desc desc;
  uint64_t pad;
  union {
    unsigned char data[ZCOLL_OH_BOX_BYTES - 48]; /* a small call's vector */
    struct zcoll__oh_big big;
  };
};
_Static_assert(sizeof(struct zcoll__oh_box) == ZCOLL_OH_BOX_BYTES, "a box is half a mailbox");
_Static_assert(ZCOLL_ONEHOST_MAX_BYTES <= ZCOLL_OH_BOX_BYTES - 48, "a small vector fits a box");

/* A peer's zcoll_mem_alloc region, mapped here (onehost_big.c). */
struct zcoll__oh_mapped {
  uint64_t serial; /* 0: empty */
  uint64_t used;   /* for eviction */
  struct zcoll_tl_rkey *rkey;
};
#define ZCOLL_OH_MAPS 4 /* per peer */

struct zcoll__onehost {
  char **box;                /* per rank: its mailbox (two boxes), ours included */
  int publishes;             /* our one-host calls so far: the next one's box is publishes % 2 */
  struct zcoll__sched sched; /* an empty schedule: the runs' s */
  /* Large calls: whether the last fell back to the executor (not every vector mappable),
   * and the box number of its handshake, which the peers' boxes still show while the
   * executor runs that collective (so zcoll__onehost_crosscheck lets it be). */
  int fell_back;
  uint64_t handshake_seq;
  char **src, **dst;             /* per rank, during a large call: its vectors, mapped here */
  struct zcoll__oh_mapped *maps; /* per rank, ZCOLL_OH_MAPS each */
  char *tmp;                     /* a chunk of scratch for the reduction (onehost_big.c) */
  uint64_t map_clock;
  /* The large call whose box is out (its number + 1, and which box), from publication
   * until no peer may write into this rank's memory for it; 0: none. */
  uint64_t open_seq;
  int open_which;
  char *open_dst; /* its result, and how long: what a late writer would write into */
  size_t open_bytes;
};

static inline struct zcoll__oh_box *zcoll__oh_box_of(const struct zcoll__onehost *oh, int rank,
                                                     int which) {
  return (struct zcoll__oh_box *)(void *)(oh->box[rank] + (size_t)which * ZCOLL_OH_BOX_BYTES);
}

/* After the channels are wired: comm->oh if every peer's receive region is mapped here
 * (shm), else nothing. An error only for memory. */
zcoll_status_t zcoll__onehost_setup(zcoll_comm_t *comm);
/* local: a forked child, where the peers' mappings are the parent's to release. */
void zcoll__onehost_free(zcoll_comm_t *comm, int local);

/* Does a blocking allreduce of this shape go through the mailboxes? The same answer on
 * every rank for the same call: the communicator's setup, the shape and the settings. */
static inline int zcoll__onehost_fits(const zcoll_comm_t *comm, size_t count, zcoll_dtype_t dtype,
                                      zcoll_op_t op) {
  return comm->oh && count && (unsigned)op < ZCOLL_OP_COUNT &&
         (unsigned)dtype < ZCOLL_DTYPE_COUNT &&
         count <= ZCOLL_ONEHOST_MAX_BYTES / zcoll__dsize(dtype) && comm->plan.forced_algo < 0 &&
         !(dtype == ZCOLL_FLOAT32 && comm->cfg->wire_dtype && (op == ZCOLL_SUM || op == ZCOLL_AVG));
}

/* A blocking allreduce of this shape first asks, through the mailboxes, whether every
 * rank's vectors can be mapped (and runs the large one-host path if so); the same answer
 * on every rank. */
static inline int zcoll__onehost_big_fits(const zcoll_comm_t *comm, size_t count,
                                          zcoll_dtype_t dtype, zcoll_op_t op) {
  return comm->oh && (unsigned)op < ZCOLL_OP_COUNT && (unsigned)dtype < ZCOLL_DTYPE_COUNT &&
         count >= ZCOLL_ONEHOST_BIG_MIN / zcoll__dsize(dtype) && comm->plan.forced_algo < 0 &&
         !(dtype == ZCOLL_FLOAT32 && comm->cfg->wire_dtype && (op == ZCOLL_SUM || op == ZCOLL_AVG));
}

/* The kind of run (exec.h) of an allreduce through the mailboxes, the runs of the empty
 * schedule above: its init is the rest of run_init (exec_run.c); its step publishes (the
 * first time), reads what the peers published, and ends the run when all have; it waits
 * on the rank whose box it reads next. The description's algo byte says
 * ZCOLL_ALGO_ONEHOST (kind.h) to the peers; the executor asks the run's ops instead. */
struct zcoll__run_ops;
extern const struct zcoll__run_ops zcoll__onehost_run;
/* Wakes the peers that sleep: something of ours changed in the mailbox. */
void zcoll__onehost_knock(zcoll_comm_t *comm);

/* ---- large vectors (onehost_big.c) ---- */
/* Fills a large call's part of this rank's box (stage 1). */
void zcoll__onehost_big_publish(struct zcoll__run *r, struct zcoll__oh_box *b);
/* Every box read and checked: map, reduce and write everywhere, wait -- or fall back. */
zcoll_status_t zcoll__onehost_big_step(struct zcoll__run *r, int *progress);
/* Is the peer a large run in its later phases waits on there? */
int zcoll__onehost_big_ready(const struct zcoll__run *r);
/* A call that fails (exec_wait.c, before the error reaches the application): takes back
 * its published box (onehost.c), and for a large call says OUT and makes sure that no peer
 * writes into this rank's vectors any more (onehost_big.c). */
void zcoll__onehost_quiesce(zcoll_comm_t *comm);
void zcoll__onehost_big_quiesce(zcoll_comm_t *comm);
/* The peers' mapped regions, released (local: a forked child keeps the parent's). */
void zcoll__onehost_big_free(zcoll_comm_t *comm, int local);
/* After arming, before sleeping: has a peer a one-host run in flight waits on published? */
int zcoll__onehost_ready(const zcoll_comm_t *comm);
/* A wait's periodic check: a peer that is through its mailbox at a collective this rank
 * runs otherwise, or out of step with it (MISMATCH). */
zcoll_status_t zcoll__onehost_crosscheck(zcoll_comm_t *comm);

#endif
