/*
 * comm.h -- the communicator's state: bootstrap, transport instances, one channel per
 * peer, the schedule cache, the executor's lists. Each module that works on it has its
 * own header (exec.h, report.h, mr.h; coll/plan.h, request.h, ...).
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
#include "family.h"
#include "base/config.h"
#include "base/dtype.h"
#include "boot/launch.h"
#include "rcache.h"
#include "algorithms/schedule.h"
#include "flight.h"
#include "base/trace.h"
#include "tl/transport.h"

struct zcoll__sched_cache_entry {
  int used;
  int kind; /* the key: the kind whose builder made it (ZCOLL_COLL_*, kind.h), */
  int algo; /* its algorithm (the kind's list), */
  int root; /* the root; -1 */
  size_t count;
  int in_place;
  uint64_t stamp;
  int pins;     /* collectives in flight (or persistent requests) that use it */
  uint64_t gen; /* changes whenever the entry is (re)built: see zcoll__plan_memo */
  struct zcoll__sched sched;
};

/* The last allreduce's plan: a loop of one shape skips the checks that cannot change,
 * the algorithm choice and the cache lookup (an 8-byte allreduce notices them). Valid
 * while its entry still holds the same build (entry->gen == gen). */
struct zcoll__plan_memo {
  struct zcoll__sched_cache_entry *entry; /* NULL: none */
  uint64_t gen;
  size_t count;
  int dtype, op, in_place;
  struct zcoll__coll_desc desc;
};

#define ZCOLL_SCHED_CACHE 8

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

/* Work the progress thread moves on each pass beside the executor's runs, registered by
 * the layer that owns it (lib/coll/progress_thread.h): the thread calls it through this,
 * by no name. pass: one pass, under the communicator's entry or the thread's lock; busy:
 * has it something in flight (keep spinning), or NULL. */
struct zcoll__pump {
  zcoll_status_t (*pass)(void *arg, int *progress);
  int (*busy)(const void *arg);
  void *arg;
};
#define ZCOLL_PUMPS_MAX 4

struct zcoll_comm {
  zcoll_config_t *cfg;
  int rank, size;
  struct zcoll__bootstrap *bs;
  struct zcoll__launch launch; /* who told us our rank */
  /* The communicators whose transport instances this one shares (family.h), its channel
   * set there, and its ranks in the instances' numbering (NULL where they are the same:
   * the family's first). */
  struct zcoll__family *fam;
  int set, set_gen;
  int *erank_of; /* rank -> engine rank */
  int *crank_of; /* engine rank -> rank, -1: not a member */
  struct zcoll__finbox inbox;
  int drained; /* destroy met every peer after its last put: its channel set is reusable */
  struct zcoll__tli tlis[ZCOLL_TL_MAX];
  int ntlis;
  /* The instance that reads only registered memory (no CAP_PUT_ANY), or NULL: the one
   * user registrations, the registration cache and grants are for. The table has at most
   * one such transport in a job (comm_setup.c checks). */
  struct zcoll__tli *reg;
  char tl_names[64];    /* "shm", "shm+verbs": what zcoll_comm_transport says */
  char tl_devices[192]; /* "-+rxe0:1": what zcoll_comm_device says, in the same order */
  int can_block;        /* every instance has an event descriptor: a waiting rank may sleep */
  /* How much shorter than ZCOLL_SPIN_US the spin phase is now, in ns (0: all of it): it
   * adapts to whether spinning pays (exec_wait.c) unless the user set ZCOLL_SPIN_US.
   * Atomic: a caller in zcoll_wait and the executor under zcoll_progress may both wait
   * (the progress thread keeps its own fixed spin). */
  int spin_adapts;
  _Atomic int64_t spin_cut_ns;
  atomic_uint spin_waits; /* waits begun, for the probes */
  int64_t news_us;        /* the coarse clock when a collective's start last read the news */
  int *host_of;           /* rank -> its host, numbered in order of first rank */
  char tl_why[512]; /* the probes' refusals ("verbs: no RDMA device ..."), for the init line */
  int net_probed;   /* this rank probed the network transports (not on one host) */
  int nhosts;
  size_t slot_bytes;
  int depth;
  int nchans;
  struct zcoll__chan *chans;
  int *chan_of; /* rank -> channel index, -1 if none */
  char *recv_region, *send_region;
  size_t region_bytes;
  struct zcoll_tl_mr *recv_mr, *send_mr;
  struct zcoll__algo_params algo_params;
  int forced_algo;       /* -1: auto */
  int tree_algo;         /* the tree's index: its arity is part of what ranks must agree on */
  int forced_bcast_algo; /* ZCOLL_BCAST_ALGO, -1 for auto */
  int butterfly_algo;    /* a barrier's schedule (barrier.c) */
  int chain_algo;        /* the one that combines in rank order: non-commutative ops run on it */
  int ring_algo, rhd_algo, hier_algo;
  int hier_auto; /* auto picks hier for bandwidth: several hosts, more ranks than hosts */
  struct zcoll__selector selector;
  zcoll_status_t broken; /* sticky: the first fatal error */
  char last_error[512];
  int last_error_async; /* last_error is from the progress thread: the next report uses it */
  uint64_t ncolls;      /* schedule cache clock */
  /* Result pieces received: delivered in place (placement hook, grants) or copied out
   * of a slot (zcoll_comm_stats). */
  uint64_t pieces_placed, pieces_copied;
  uint64_t mapped_collectives; /* one-host allreduces from the vectors where they lie */
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
  struct zcoll__sched_cache_entry cache[ZCOLL_SCHED_CACHE];
  struct zcoll__sched_cache_entry *cache_mru; /* the last hit or build, or NULL */
  uint64_t sched_gen;                         /* the last entry build's gen */
  struct zcoll__plan_memo memo;
  struct zcoll__rcache *rcache;   /* verbs: user buffers kept registered; NULL: none */
  struct zcoll__exec_state *exec; /* reusable executor scratch */
  struct zcoll__trace trace;      /* ZCOLL_TRACE; trace.f is NULL when off */
  struct zcoll__flight flight;    /* ZCOLL_FLIGHT_RECORDER: the last collectives (flight.h) */
  /* The collectives in flight, oldest first (exec_queue.c); the placement hook finds
   * among them the one a piece is for. */
  struct zcoll__run *active, *active_tail;
  uint8_t *chan_block; /* scratch of zcoll__progress: per channel, ZCOLL_BLOCK_* */
  int chan_block_cap;
  struct zcoll_request *requests;  /* every request not yet freed (request.c) */
  struct zcoll__vecs *vecs;        /* the vector interface's keys and sequencer, or NULL */
  struct zcoll__partial *partial;  /* the partial request this communicator is for, or NULL */
  struct zcoll__partial *partials; /* those made from this one and not freed (partial_make.c) */
  /* The one-host small allreduce (onehost.h): wanted (every rank on one host over a
   * transport that maps the peers' regions: channels to every peer), and set up, or NULL. */
  int onehost_want;
  struct zcoll__onehost *oh;
  struct zcoll_request *request_pool; /* freed ones kept for reuse, with their arrays */
  int request_pool_len;
  /* ZCOLL_PROGRESS=thread (progress_thread.c): mu guards the executor between the
   * application's calls and the thread; progress_on is set only while the thread runs. */
  int progress_on;
  atomic_int progress_stop;
  pthread_t progress_tid;
  pthread_mutex_t mu;
  struct zcoll__pump pumps[ZCOLL_PUMPS_MAX]; /* registered (progress_thread.c) */
  int npumps;
  int nactive_requests;
  struct zcoll_mr *mrs;    /* explicit registrations (mr.c) */
  struct zcoll__mem *mems; /* zcoll_mem_alloc's regions not yet freed (mem.c) */
  /* size + 1 + ZCOLL_TL_MAX: the transports', the wake fd, every bootstrap socket */
  struct pollfd *pollfds;
};

#endif
