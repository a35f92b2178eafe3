/*
 * comm.h -- the communicator: bootstrap, transport instances, and one channel per peer.
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
#include "base/config.h"
#include "boot/launch.h"
#include "rcache.h"
#include "algorithms/schedule.h"
#include "flight.h"
#include "base/trace.h"
#include "tl/transport.h"

struct zcoll__sched_cache_entry {
  int used;
  int algo; /* an allreduce algorithm, or ZCOLL_SCHED_BCAST + a broadcast one */
  int root; /* broadcast; -1 */
  size_t count;
  int in_place;
  uint64_t stamp;
  int pins; /* collectives in flight (or persistent requests) that use it */
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

/* A collective ready to start: its schedule (cached and pinned, or its own), what it is,
 * and its buffers. */
struct zcoll__plan {
  const struct zcoll__sched *s;
  struct zcoll__sched_cache_entry *entry; /* pinned cache entry, or NULL */
  struct zcoll__sched *owned;             /* a schedule of its own, or NULL */
  struct zcoll__coll_desc desc;
  const void *src;
  void *dst;
  const struct zcoll__op_def *op; /* a created op, referenced while the plan lives; NULL */
};
#define ZCOLL_SCHED_CACHE 8
#define ZCOLL_SCHED_BCAST 64

/* A transport instance of the communicator: the peers it reaches have their channels
 * over it (chan->t). */
struct zcoll__tli {
  const struct zcoll_tl_ops *ops;
  struct zcoll_tl *tl;
  int idx;    /* in zcoll__transports */
  int nchans; /* channels over it */
  struct zcoll_tl_mr *recv_mr; /* the receive slots, for its peers to write into */
  struct zcoll_tl_mr *send_mr; /* the send staging (without CAP_PUT_ANY), or NULL */
};

struct zcoll_comm {
  zcoll_config_t *cfg;
  int rank, size;
  struct zcoll__bootstrap *bs;
  struct zcoll__launch launch; /* who told us our rank */
  struct zcoll__tli tlis[ZCOLL_TL_MAX];
  int ntlis;
  /* The instance that reads only registered memory (no CAP_PUT_ANY), or NULL: the one
   * user registrations, the registration cache and grants are for. The table has at most
   * one such transport in a job (comm_setup.c checks). */
  struct zcoll__tli *reg;
  char tl_names[64]; /* "shm", "shm+verbs": what zcoll_comm_transport says */
  char tl_devices[192]; /* "-+rxe0:1": what zcoll_comm_device says, in the same order */
  int can_block;     /* every instance has an event descriptor: a waiting rank may sleep */
  /* How much shorter than ZCOLL_SPIN_US the spin phase is now, in ns (0: all of it): it
   * adapts to whether spinning pays (exec_wait.c) unless the user set ZCOLL_SPIN_US.
   * Atomic: a caller in zcoll_wait and the executor under zcoll_progress may both wait
   * (the progress thread keeps its own fixed spin). */
  int spin_adapts;
  _Atomic int64_t spin_cut_ns;
  atomic_uint spin_waits; /* waits begun, for the probes */
  int *host_of;      /* rank -> its host, numbered in order of first rank */
  char tl_why[512];  /* the probes' refusals ("verbs: no RDMA device ..."), for the init line */
  int net_probed;    /* this rank probed the network transports (not on one host) */
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
  int forced_algo; /* -1: auto */
  int tree_algo;   /* the tree's index: its arity is part of what ranks must agree on */
  int forced_bcast_algo; /* ZCOLL_BCAST_ALGO, -1 for auto */
  int chain_algo;  /* the one that combines in rank order: non-commutative ops run on it */
  int ring_algo, rhd_algo, hier_algo;
  int hier_auto;   /* auto picks hier for bandwidth: several hosts, more ranks than hosts */
  struct zcoll__selector selector;
  zcoll_status_t broken; /* sticky: the first fatal error */
  char last_error[512];
  int last_error_async; /* last_error is from the progress thread: the next report uses it */
  uint64_t ncolls;  /* schedule cache clock */
  /* Result pieces received: delivered in place (placement hook, grants) or copied out
   * of a slot (zcoll_comm_stats). */
  uint64_t pieces_placed, pieces_copied;
  /* The next collective's number: every rank counts its collective calls alike (an
   * argument error counts too, see allreduce.c), and the wire header carries it. */
  uint64_t ordinal;
  struct zcoll__fp_cache fp_cache;
  /* Entry guard (guard.c): one thread inside at a time; revoke and abort may come
   * from any thread, revoke from a signal handler too. */
  atomic_int inside;
  atomic_int vec_waiters; /* threads in zcoll_vec_get, inside or between turns (tasks.c) */
  atomic_int revoked;
  int wake_fd;       /* eventfd that revoke writes: a sleeping call wakes at once */
  unsigned fork_gen; /* zcoll__fork_gen when created: a different one means a forked child */
  int revoke_unguarded; /* not in guard.c's table of revocable communicators (it was full) */
  struct zcoll__sched_cache_entry cache[ZCOLL_SCHED_CACHE];
  struct zcoll__sched_cache_entry *cache_mru; /* the last hit or build, or NULL */
  uint64_t sched_gen;                         /* the last entry build's gen */
  struct zcoll__plan_memo memo;
  struct zcoll__rcache *rcache; /* verbs: user buffers kept registered; NULL: none */
  struct zcoll__exec_state *exec; /* reusable executor scratch */
  struct zcoll__trace trace;      /* ZCOLL_TRACE; trace.f is NULL when off */
  struct zcoll__flight flight;    /* ZCOLL_FLIGHT_RECORDER: the last collectives (flight.h) */
  /* The collectives in flight, oldest first (exec_queue.c); the placement hook finds
   * among them the one a piece is for. */
  struct run *active, *active_tail;
  uint8_t *chan_block; /* scratch of zcoll__progress: per channel, ZCOLL_BLOCK_* */
  int chan_block_cap;
  struct zcoll_request *requests; /* every request not yet freed (request.c) */
  struct zcoll__vecs *vecs;       /* the vector interface's keys and sequencer, or NULL */
  struct zcoll_request *request_pool; /* freed ones kept for reuse, with their arrays */
  int request_pool_len;
  /* ZCOLL_PROGRESS=thread (progress_thread.c): mu guards the executor between the
   * application's calls and the thread; progress_on is set only while the thread runs. */
  int progress_on;
  atomic_int progress_stop;
  pthread_t progress_tid;
  pthread_mutex_t mu;
  int nactive_requests;
  struct zcoll_mr *mrs;           /* explicit registrations (mr.c) */
  /* size + 1 + ZCOLL_TL_MAX: the transports', the wake fd, every bootstrap socket */
  struct pollfd *pollfds;
};

struct run;
/* Records a failure for zcoll_comm_last_error and returns it. */
zcoll_status_t zcoll__report(zcoll_comm_t *comm, zcoll_status_t st);
/* The size of a dtype already checked to be in range (status.c). */
extern const uint8_t zcoll__dtype_sizes[ZCOLL_DTYPE_COUNT];
static inline size_t zcoll__dsize(zcoll_dtype_t dtype) { return zcoll__dtype_sizes[dtype]; }

/* ZCOLL_OK, or why no collective may start on comm (broken, revoked). Inline: every
 * call asks, and the answer is almost always yes. */
zcoll_status_t zcoll__check_usable_slow(zcoll_comm_t *comm);
static inline zcoll_status_t zcoll__check_usable(zcoll_comm_t *comm) {
  if (!comm->broken && !atomic_load_explicit(&comm->revoked, memory_order_relaxed))
    return ZCOLL_OK;
  return zcoll__check_usable_slow(comm);
}
/* Argument checks, algorithm and schedule of an allreduce (local: nothing is counted). */
zcoll_status_t zcoll__allreduce_plan(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                    size_t count, zcoll_dtype_t dtype, zcoll_op_t op,
                                    struct zcoll__plan *pl);
/* The same for a broadcast (broadcast.c). */
zcoll_status_t zcoll__broadcast_plan(zcoll_comm_t *comm, void *buf, size_t count,
                                     zcoll_dtype_t dtype, int root, struct zcoll__plan *pl);
/* The schedule of (algorithm, count, in place, root), from the cache or built (*built
 * = 1), pinned in pl. */
zcoll_status_t zcoll__sched_get(zcoll_comm_t *comm, int algo, size_t count, int in_place,
                                int root, struct zcoll__plan *pl, int *built);
/* A collective call whose plan failed with st: it counts as this rank's call, and breaks
 * the communicator telling the peers why (an argument error: zcoll__poison). */
zcoll_status_t zcoll__plan_failed(zcoll_comm_t *comm, zcoll_status_t st);
zcoll_status_t zcoll__poison(zcoll_comm_t *comm, zcoll_status_t st);
void zcoll__plan_release(struct zcoll__plan *pl);
/* The request calls' bodies for layers inside the library (tasks.c), on a communicator
 * already entered: a persistent allreduce (described as a vector key's round, the key
 * named by key_tag), started, tested, waited for, freed. */
zcoll_status_t zcoll__request_prepare(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                      size_t count, zcoll_dtype_t dtype, zcoll_op_t op,
                                      int32_t key_tag, zcoll_request_t **req);
zcoll_status_t zcoll__request_start(zcoll_request_t *q);
zcoll_status_t zcoll__request_test(zcoll_request_t *q);
zcoll_status_t zcoll__request_wait(zcoll_request_t *q);
zcoll_status_t zcoll__request_free(zcoll_request_t *q);
/* The vector interface (tasks.c): one pass of its sequencer and requests (entered, or
 * under the progress thread's lock); and its release at destroy or abort. */
struct zcoll__vecs;
zcoll_status_t zcoll__vecs_pump(zcoll_comm_t *comm, int *progress);
void zcoll__vecs_release(zcoll_comm_t *comm);
/* Frees every request of comm (request.c), at destroy or abort. */
void zcoll__requests_release(zcoll_comm_t *comm); /* and the pool */
/* Deregisters the result buffers that requests exposed to peers (before the transport
 * closes); local: in a forked child, forget them instead. */
void zcoll__requests_revoke_grants(zcoll_comm_t *comm, int local);
/* How many requests of comm are in flight. */
int zcoll__requests_active(const zcoll_comm_t *comm);
/* ZCOLL_PROGRESS=thread: starts the communicator's progress thread (progress_thread.c). */
zcoll_status_t zcoll__progress_thread_start(zcoll_comm_t *comm);
/* A collective was started: the thread should look (no-op without a thread). */
void zcoll__progress_thread_wake(zcoll_comm_t *comm);
/* Stops and joins it; how: the caller holds comm->mu (inside a call), or not, or this is
 * a child forked after init (no thread to join). */
enum { ZCOLL_PT_HELD, ZCOLL_PT_NOT_HELD, ZCOLL_PT_FORKED };
void zcoll__progress_thread_stop(zcoll_comm_t *comm, int how);
/* The transport's placement hook (arg: the communicator). */
void *zcoll__place(void *arg, int peer, uint32_t imm, size_t len, int *final);

/* Runs one schedule to completion over the communicator's channels: collective number
 * comm->ordinal (which it advances), described by desc, after (and while progressing)
 * the collectives already in flight. */
zcoll_status_t zcoll__execute(zcoll_comm_t *comm, const struct zcoll__sched *s,
                              const struct zcoll__coll_desc *desc, const void *src, void *dst);
/* Room in *e for a schedule of nops ops and npeers peers over nchans channels. */
zcoll_status_t zcoll__exec_reserve(struct zcoll__exec_state **e, int nops, int npeers,
                                   int nchans);
void zcoll__exec_free(struct zcoll__exec_state *e);
/* Starts collective `ordinal` (r's memory must last until it ends): after every run in
 * flight. An error means it did not start (the caller breaks the communicator). */
zcoll_status_t zcoll__run_start(zcoll_comm_t *comm, struct run *r, const struct zcoll__sched *s,
                                struct zcoll__exec_state *e, const struct zcoll__coll_desc *desc,
                                uint64_t ordinal, const void *src, void *dst);
/* One pass over everything in flight, without waiting; runs that finish get ZCOLL_OK. */
zcoll_status_t zcoll__progress(zcoll_comm_t *comm, int *progress);
/* Progresses (and waits) until r has ended; its status. */
zcoll_status_t zcoll__run_wait(zcoll_comm_t *comm, struct run *r);
/* Breaks the communicator with st (zcoll__exec_broken) and ends every run in flight with
 * the status it reports. */
zcoll_status_t zcoll__fail_runs(zcoll_comm_t *comm, zcoll_status_t st);
/* The transport registration covering [addr, addr+len), or NULL (mr.c). */
struct zcoll_tl_mr *zcoll__mr_find(zcoll_comm_t *comm, const void *addr, size_t len);
/* The region of an explicit registration that peers may write results into and that
 * holds [addr, addr+len) -- *base: where addr lies in it -- or NULL (mr.c). */
struct zcoll__grant_src;
struct zcoll__grant_src *zcoll__mr_grant(zcoll_comm_t *comm, const void *addr, size_t len,
                                         uint64_t *base);
/* local: in a forked child, leave the transport's registrations to the parent. */
void zcoll__mr_release_all(zcoll_comm_t *comm, int local);

/* Makes st the communicator's sticky failure: tells the peers, stops the transport
 * touching user memory; returns the status to report (the cause if news brings it). */
zcoll_status_t zcoll__exec_broken(zcoll_comm_t *comm, zcoll_status_t st);
/* Wires a new communicator (comm_setup.c): finds each rank's host, picks and opens the
 * transport for each peer, and sets up the channels. */
zcoll_status_t zcoll__comm_wire(zcoll_comm_t *comm);
/* The first rounds of the wiring (comm_hosts.c): comm->host_of and nhosts, what every
 * rank can run (masks, of zcoll__transports indices) on its own host, and rank 0's
 * geometry; *net_round: whether some pair needs a network transport, then
 * zcoll__wire_nets (collective: every rank calls it, probing only where `need`) adds what
 * each can run across hosts and gives the geometry anew. */
zcoll_status_t zcoll__wire_hosts(zcoll_comm_t *comm, unsigned *masks, uint64_t *chunk,
                                 uint32_t *depth, int *net_round);
zcoll_status_t zcoll__wire_nets(zcoll_comm_t *comm, unsigned *masks, int need, uint64_t *chunk,
                                uint32_t *depth);
/* The line a ready communicator logs at info (comm_summary.c): each peer's transport and
 * device, chunk and depth, and why the transports probed and refused cannot run. */
void zcoll__comm_log_summary(const zcoll_comm_t *comm);
/* Arms every transport instance for sleeping and puts their descriptors in fds (*n of
 * them): ZCOLL_OK, or ZCOLL_IN_PROGRESS with events pending (poll again), or an error.
 * Only where comm->can_block. */
zcoll_status_t zcoll__tl_arm(zcoll_comm_t *comm, struct pollfd *fds, int *n);
/* Waits for every put to complete (before tearing the transport down). */
zcoll_status_t zcoll__drain(zcoll_comm_t *comm);

#endif
