/*
 * comm_parts.h -- the parts of struct zcoll_comm (comm.h) that a layer above the core
 * owns. The core may not include lib/coll or lib/comm (ci/layers.py), so their types
 * are here; each says which files own it and who else reads it. What the core itself
 * works on (channels, regions, runs, inbox, family, the executor's scratch) stays in
 * struct zcoll_comm.
 */
#ifndef ZCOLL_COMM_PARTS_H
#define ZCOLL_COMM_PARTS_H

#include <stdatomic.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>

#include "algorithms/algorithms.h"
#include "algorithms/select.h"
#include "algorithms/schedule.h"
#include "boot/launch.h"
#include "channel.h"

struct zcoll_request;
struct zcoll__vecs;
struct zcoll__partial;

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

/* comm->plan: how a collective's schedule is chosen and where it is kept. Owned by
 * lib/coll (plan.c, allreduce.c, broadcast.c, barrier.c, allgather_reduce.c,
 * partial.c); lib/comm/comm.c sets the choices up and frees the cache, comm_hosts.c
 * and comm_setup.c fill and read algo_params; lib/core/onehost.h reads forced_algo
 * (a forced algorithm turns the one-host path off). */
struct zcoll__comm_plan {
  struct zcoll__algo_params algo_params;
  int forced_algo;       /* -1: auto */
  int tree_algo;         /* the tree's index: its arity is part of what ranks must agree on */
  int forced_bcast_algo; /* ZCOLL_BCAST_ALGO, -1 for auto */
  int butterfly_algo;    /* a barrier's schedule (barrier.c) */
  int chain_algo;        /* the one that combines in rank order: non-commutative ops run on it */
  int ring_algo, rhd_algo, hier_algo;
  int hier_auto; /* auto picks hier for bandwidth: several hosts, more ranks than hosts */
  struct zcoll__selector selector;
  uint64_t ncolls; /* schedule cache clock */
  struct zcoll__sched_cache_entry cache[ZCOLL_SCHED_CACHE];
  struct zcoll__sched_cache_entry *cache_mru; /* the last hit or build, or NULL */
  uint64_t sched_gen;                         /* the last entry build's gen */
  struct zcoll__plan_memo memo;
};

/* comm->coll: the requests, vectors and partial allreduces of lib/coll (request.c,
 * tasks.c, partial.c, partial_make.c); nothing below lib/coll reads them. */
struct zcoll__comm_coll {
  struct zcoll_request *requests;     /* every request not yet freed (request.c) */
  struct zcoll_request *request_pool; /* freed ones kept for reuse, with their arrays */
  int request_pool_len;
  struct zcoll__vecs *vecs;        /* the vector interface's keys and sequencer, or NULL */
  struct zcoll__partial *partial;  /* the partial request this communicator is for, or NULL */
  struct zcoll__partial *partials; /* those made from this one and not freed (partial_make.c) */
  int group_depth;                 /* zcoll_group_start's not yet ended (group.c) */
  struct zcoll__group *group;      /* the calls queued in the open group, its requests */
  const struct zcoll__group_hooks *group_hooks; /* how the calls reach it (group.h) */
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

/* comm->progress: ZCOLL_PROGRESS=thread. Owned by lib/coll/progress_thread.c (and
 * tasks.c, partial_make.c); the core's entry guard (guard.c) and executor.c read on and
 * take mu. mu guards the executor between the application's calls and the thread; on
 * is set only while the thread runs. */
struct zcoll__comm_progress {
  int on;
  atomic_int stop;
  pthread_t tid;
  pthread_mutex_t mu;
  struct zcoll__pump pumps[ZCOLL_PUMPS_MAX]; /* registered (progress_thread.c) */
  int npumps;
};

/* comm->wiring: what lib/comm learns while it wires the communicator up (comm.c,
 * comm_hosts.c, comm_setup.c, comm_share.c, comm_summary.c, split.c) and reports; no
 * other layer reads it. */
struct zcoll__comm_wiring {
  struct zcoll__launch launch; /* who told us our rank */
  int *host_of;                /* rank -> its host, numbered in order of first rank */
  char tl_names[64];           /* "shm", "shm+verbs": what zcoll_comm_transport says */
  char tl_devices[192];        /* "-+rxe0:1": what zcoll_comm_device says, in the same order */
  char tl_why[512]; /* the probes' refusals ("verbs: no RDMA device ..."), for the init line */
  int net_probed;   /* this rank probed the network transports (not on one host) */
  int drained;      /* destroy met every peer after its last put: its channel set is reusable */
};

#endif
