/*
 * sim.h -- a discrete-event scale model of zcoll's allreduce.
 *
 * The schedules are the library's own (zcoll__algos[]->build, algorithms/schedule.c): only the
 * executor and the machine are modelled. The executor part mirrors lib/core/executor.c:
 * every op is cut into pieces of slot_bytes, a channel is a FIFO with `depth` slots
 * (credits, returned in batches of (depth+1)/2), and a piece moves once the pieces of
 * the ops it depends on have progressed past it -- so a chunk is reduced before it is
 * forwarded, and a tree or ring pipelines exactly as the schedule's dependencies allow.
 *
 * The machine: ranks sit k to a host (rank r on host r / k). Each rank is one thread
 * whose CPU does, one at a time, the writer's memcpy of an intra-host (shm) put, the
 * posting of an inter-host (NIC) put, the reduction or copy-out of a received piece.
 * A host's NIC is one FIFO server each way that its k ranks share: a put of n bytes
 * occupies the sender's NIC for n * beta, the wire for alpha, the receiver's NIC for
 * n * beta. Per-byte CPU costs grow when the host's working set outgrows its last-level
 * cache. Optionally a host has fewer cores than ranks (this 2-core development machine
 * under zcoll_run -np 8): then the cores go round the ranks as the kernel's run queue
 * does, waiting ranks included (they poll and yield) -- a term for the local
 * calibration only.
 */
#ifndef ZCOLL_SIM_H
#define ZCOLL_SIM_H

#include <stddef.h>

/* Times in seconds, costs in seconds per byte. */
struct zsim_link {
  double alpha;  /* from the end of the sender's work to the piece's arrival */
  double beta;   /* per byte: shm, the writer's memcpy; net, each NIC's serialization */
  double o;      /* sender CPU per piece (shm: besides the copy; net: posting the put) */
  double o_post; /* shm: sender CPU per piece after the receiver can see it (the put's
                  * completion, the channel's bookkeeping): it delays the sender's next
                  * piece, not this one's arrival */
};

struct zsim_model {
  struct zsim_link shm, net;
  double gamma;  /* receiver CPU per byte reduced */
  double copy;   /* receiver CPU per byte copied out of a slot (and staged sends) */
  double o_recv; /* receiver CPU per piece consumed */
  double call;   /* CPU per call besides its pieces: entering and leaving the library, the
                  * collective's descriptor and schedule lookup (a p = 1 call's time) */
  /* The one-host allreduce through mailboxes (lib/core/onehost.h; job algo ZSIM_ONEHOST):
   * a rank writes its vector once into its own box, every peer sees it an oh_alpha later
   * and pays oh_recv to take the box's lines (and the reduction, gamma) -- no pieces, no
   * credits, no put completions. */
  double oh_o;     /* the call's own cost and the publication, besides copying the vector
                    * into the box (the path skips the executor: `call` is not paid) */
  double oh_alpha; /* from publication to a peer's look finding it */
  double oh_recv;  /* a reader's per box: the call checked, its first line come over */
  double oh_beta;  /* a reader's per byte of a box: the lines come over one by one from the
                    * writer's cache (per line, not at a streaming rate) */
  /* The memory hierarchy: a host's ranks touch their inputs, results and the slots they
   * own, W bytes in all; the part of W beyond the last-level cache comes from memory, so
   * every per-byte CPU cost above (shm.beta, gamma, copy) is taken times
   * 1 + (mem - 1) * max(0, 1 - llc / W). llc 0: off. The costs as they stand are those
   * of a working set in the shared cache. */
  double llc; /* bytes of last-level cache the host's ranks get */
  double mem; /* per-byte cost from memory over the in-cache cost */
  /* The other end: when a core's share of W fits its own L2, the lines a rank reads were
   * mostly just written by another core and still sit in that core's L2, and come over
   * one by one (a cache-to-cache transfer), not from the shared cache: the per-byte CPU
   * costs are taken times 1 + (c2c - 1) * min(1, l2 / (W / cores)) besides. l2 0: off. */
  double l2;  /* bytes of L2 per core */
  double c2c; /* per-byte cost of lines another core's L2 holds over the shared cache's */
  /* An oversubscribed host (this 2-core machine under zcoll_run -np 4 or 8): the library
   * does not spin then (comm_setup.c), a waiting rank polls and sched_yield()s
   * (exec_wait.c), so every rank stays runnable and the cores go round them: a rank with
   * nothing to do costs its core one turn (switch), a rank with work keeps the core
   * while it has work, up to the scheduler's slice; a rank idle for sleep seconds
   * sleeps (ZCOLL_YIELD_US) until something arrives for it. */
  int cores;    /* cores per host; 0: one per rank (no sharing) */
  double sw;    /* oversubscribed: a turn -- context switch, a poll, sched_yield */
  double slice; /* oversubscribed: how long a rank with work keeps a core */
  double sleep; /* oversubscribed: idle this long, a rank sleeps until woken */
  double share; /* oversubscribed host: CPU costs times this (caches, memory bus, other
                  * tenants); 0 or 1: none */
};

/* The one-host mailbox exchange, in zsim_job.algo (not a schedule of the table's). */
#define ZSIM_ONEHOST (-2)
/* An exchange of the uniform kinds (alltoall, gather, scatter: lib/core/kind.h's table),
 * in zsim_job.algo: ZSIM_XCHG + ZSIM_XCHG_KINDS * kind + the kind's algorithm, named
 * "alltoall:bruck". Its count is one rank's total (nccl-tests' size), each block count / p,
 * the root rank 0. */
#define ZSIM_XCHG 4096
#define ZSIM_XCHG_KINDS 16

struct zsim_job {
  int algo;          /* index into zcoll__algos[], ZSIM_ONEHOST or an exchange (ZSIM_XCHG) */
  int p, k;          /* ranks, ranks per host */
  size_t count;      /* elements */
  int dsize;         /* bytes per element */
  size_t slot_bytes; /* the pipeline chunk */
  int depth;         /* slots per channel */
  int arity;         /* TREE_ARITY */
  int iters;         /* back-to-back blocking calls, timed as zcoll_perf -z 1 does (the
                      * loop's time per call); 0 or 1: one call's latency */
  int reverse;       /* what-if, not the executor: each step visits the peers in the
                      * reverse of the schedule's order (lib/core/executor.c: that order).
                      * For hier: the ring's previous and next host, then its own host */
};

struct zsim_result {
  double time;      /* the last rank's completion (a blocking call on the slowest rank) */
  double mean_time; /* mean over ranks */
  long long events;
  long long pieces;
  double max_sent;  /* the most bytes any rank put */
  double net_bytes; /* bytes put between hosts, all ranks (zcoll_comm_stats' count) */
  double shm_bytes; /* bytes put within hosts, all ranks */
};

/* Builds every rank's schedule and runs it. 0 on success, -1 (with a message on
 * stderr) if a schedule does not build or the run deadlocks. */
int zsim_run(const struct zsim_model *m, const struct zsim_job *job, struct zsim_result *out);

/* The bytes the job's schedules put between hosts and within them, all ranks: what the
 * library counts (zcoll_comm_stats), without simulating. 0 on success. */
int zsim_traffic(const struct zsim_job *job, double *net, double *shm);

/* An algorithm's index by name (the table's, "onehost", or "KIND:ALGO" of an exchange),
 * -1 if none; and its name. */
int zsim_algo_find(const char *name);
const char *zsim_algo_name(int algo);
/* Its bus-bandwidth factor, nccl-tests': 2(p-1)/p for an allreduce, (p-1)/p for an
 * exchange. */
double zsim_bus_factor(int algo, int p);

struct zcoll__sched;
struct zcoll__algo_params;
/* Rank `rank`'s schedule of the job (not the one-host exchange), ended by
 * zcoll__sched_finish's status: 0, or -1 if it did not build. */
int zsim_sched_build(const struct zsim_job *job, int rank, const struct zcoll__algo_params *ap,
                     struct zcoll__sched *s);

/* Parses "key=value" (the model file's keys, see sim.c); 0 on success. */
int zsim_model_set(struct zsim_model *m, const char *kv);
/* Reads a model file: "key value" lines, '#' comments. 0 on success. */
int zsim_model_load(struct zsim_model *m, const char *path);
void zsim_model_default(struct zsim_model *m);
void zsim_model_print(const struct zsim_model *m, const char *prefix);

#endif
