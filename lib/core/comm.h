/*
 * comm.h -- the communicator's state: bootstrap, transport instances, one channel per
 * peer, the executor's lists, and (comm_parts.h) the parts the layers above own: the
 * schedule cache, requests, the progress thread, the wiring's findings. Each module
 * that works on it has its own header (exec.h, report.h, mr.h; coll/plan.h, request.h, ...).
 */
#ifndef ZCOLL_COMM_H
#define ZCOLL_COMM_H

#include <stdatomic.h>
#include <stddef.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>

#include "algorithms/algorithms.h"
#include "algorithms/select.h"
#include "boot/bootstrap.h"
#include "channel.h"
#include "comm_parts.h"
#include "family.h"
#include "base/config.h"
#include "base/dtype.h"
#include "boot/launch.h"
#include "rcache.h"
#include "algorithms/schedule.h"
#include "flight.h"
#include "base/trace.h"
#include "tl/transport.h"

struct zcoll__p2p;

/* A transport instance of the communicator: the peers it reaches have their channels
 * over it (chan->t). */
struct zcoll__tli {
  const struct zcoll_tl_ops *ops;
  struct zcoll_tl *tl;
  int idx;                     /* in zcoll__transports */
  int nchans;                  /* channels over it */
  struct zcoll_tl_mr *recv_mr; /* the receive slots, for its peers to write into */
  struct zcoll_tl_mr *send_mr; /* the send staging (without CAP_PUT_ANY), or NULL */
  struct zcoll__ftl *ftl;      /* the family's instance this is (family.h) */
};

struct zcoll_comm {
  zcoll_config_t *cfg;
  int rank, size;
  struct zcoll__bootstrap *bs;
  /* The communicators whose transport instances this one shares (family.h), its channel
   * set there, and its ranks in the instances' numbering (NULL where they are the same:
   * the family's first). */
  struct zcoll__family *fam;
  int set, set_gen;
  int *erank_of; /* rank -> engine rank */
  int *crank_of; /* engine rank -> rank, -1: not a member */
  struct zcoll__finbox inbox;
  struct zcoll__tli tlis[ZCOLL_TL_MAX];
  int ntlis;
  /* The instance that reads only registered memory (no CAP_PUT_ANY), or NULL: the one
   * user registrations, the registration cache and grants are for. The table has at most
   * one such transport in a job (comm_setup.c checks). */
  struct zcoll__tli *reg;
  int can_block; /* every instance has an event descriptor: a waiting rank may sleep */
  /* How much shorter than ZCOLL_SPIN_US the spin phase is now, in ns (0: all of it): it
   * adapts to whether spinning pays (exec_wait.c) unless the user set ZCOLL_SPIN_US.
   * Atomic: a caller in zcoll_wait and the executor under zcoll_progress may both wait
   * (the progress thread keeps its own fixed spin). */
  int spin_adapts;
  _Atomic int64_t spin_cut_ns;
  atomic_uint spin_waits; /* waits begun, for the probes */
  int64_t news_us;        /* the coarse clock when a collective's start last read the news */
  int nhosts;
  size_t slot_bytes;
  int depth;
  int nchans;
  struct zcoll__chan *chans;
  int *chan_of; /* rank -> channel index, -1 if none */
  /* Point-to-point (lib/p2p/p2p.h): per channel a second one to the same peer, on the
   * set ZCOLL_CHAN_P2P_SET(set), with p2p_depth slots of slot_bytes each way. The core
   * only books their arrivals, credits and PUT_DONEs (executor.c, place.c); the p2p
   * layer moves and reads their pieces. NULL: none (p2p_depth 0). */
  struct zcoll__chan *p2p_chans;
  int p2p_depth;
  struct zcoll__p2p *p2p; /* lib/p2p's state, made on first use; NULL */
  /* Set by lib/p2p with its state: moves the messages, after every poll of the instances
   * (executor.c's pump), so that they go on while this rank is in a collective too (a
   * peer's send may wait for our answer). p2p_news: a piece arrived since. */
  zcoll_status_t (*p2p_pump)(struct zcoll_comm *comm, int *progress);
  int p2p_news;
  char *recv_region, *send_region;
  size_t region_bytes;
  struct zcoll_tl_mr *recv_mr, *send_mr;
  zcoll_status_t broken; /* sticky: the first fatal error */
  char last_error[512];
  int last_error_async; /* last_error is from the progress thread: the next report uses it */
  /* Result pieces received: delivered in place (placement hook, grants) or copied out
   * of a slot (zcoll_comm_stats). */
  uint64_t pieces_placed, pieces_copied;
  uint64_t mapped_collectives; /* one-host allreduces from the vectors where they lie */
  /* Point-to-point payload received: written by the sender straight into the receive
   * buffer (lib/p2p/p2p.h: zero-copy rendezvous), or copied into it. */
  uint64_t msg_bytes_placed, msg_bytes_copied;
  /* The next collective's number: every rank counts its collective calls alike (an
   * argument error counts too, see allreduce.c), and the wire header carries it. */
  uint64_t ordinal;
  struct zcoll__fp_cache fp_cache;
  /* Entry guard (guard.c): one thread inside at a time; revoke and abort may come
   * from any thread, revoke from a signal handler too. */
  atomic_int inside;
  atomic_int vec_waiters; /* threads in zcoll_vec_get, inside or between turns (tasks.c) */
  atomic_int revoked;
  int wake_fd;          /* eventfd that revoke writes: a sleeping call wakes at once */
  unsigned fork_gen;    /* zcoll__fork_gen when created: a different one means a forked child */
  int revoke_unguarded; /* not in guard.c's table of revocable communicators (it was full) */
  struct zcoll__rcache *rcache;   /* verbs: user buffers kept registered; NULL: none */
  struct zcoll__exec_state *exec; /* reusable executor scratch */
  struct zcoll__trace trace;      /* ZCOLL_TRACE; trace.f is NULL when off */
  struct zcoll__flight flight;    /* ZCOLL_FLIGHT_RECORDER: the last collectives (flight.h) */
  /* The collectives in flight, oldest first (exec_queue.c); the placement hook finds
   * among them the one a piece is for. */
  struct zcoll__run *active, *active_tail;
  uint8_t *chan_block; /* scratch of zcoll__progress: per channel, ZCOLL_BLOCK_* */
  int chan_block_cap;
  /* The one-host small allreduce (onehost.h): wanted (every rank on one host over a
   * transport that maps the peers' regions: channels to every peer), and set up, or NULL. */
  int onehost_want;
  struct zcoll__onehost *oh;
  struct zcoll_mr *mrs;    /* explicit registrations (mr.c) */
  uint64_t mr_ids;         /* the last one's number (mr.c: holds name them by it) */
  struct zcoll__mem *mems; /* zcoll_mem_alloc's regions not yet freed (mem.c) */
  /* size + 1 + ZCOLL_TL_MAX: the transports', the wake fd, every bootstrap socket */
  struct pollfd *pollfds;
  /* The parts the layers above own (comm_parts.h). */
  struct zcoll__comm_plan plan;         /* lib/coll: the algorithm choices, the plan cache */
  struct zcoll__comm_coll coll;         /* lib/coll: requests, vectors, partial allreduces */
  struct zcoll__comm_progress progress; /* lib/coll/progress_thread.c; guard.c takes its mu */
  struct zcoll__comm_wiring wiring;     /* lib/comm: hosts, the transports' names, launch */
};

/* Up to this many ranks (and on one host at any size) a communicator has a channel to every
 * peer, which alltoall(v), gather(v), scatter(v) and messages to any rank need; above it,
 * only to its algorithms' peers (O(log p)): every peer's slots at 1000 ranks would be a
 * gigabyte of registered memory per rank. Channels made on first use are not there yet. */
#define ZCOLL_ALL_PEERS_MAX 32
static inline int zcoll__wires_all_peers(const zcoll_comm_t *comm) {
  return comm->cfg->all_peers || comm->onehost_want || comm->size <= ZCOLL_ALL_PEERS_MAX;
}

#endif
