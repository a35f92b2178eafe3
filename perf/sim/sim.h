/*
 * sim.h -- a discrete-event scale model of zcoll's allreduce.
 *
 * The schedules are the library's own (zcoll__algos[]->build, lib/schedule.c): only the
 * executor and the machine are modelled. The executor part mirrors lib/executor.c:
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
 * n * beta. Optionally a host has fewer cores than ranks (this 2-core development
 * machine under zcoll_run -np 8): then a CPU task waits for a free core, and a rank
 * that had gone idle pays a wake-up delay -- a term for the local calibration only.
 */
#ifndef ZCOLL_SIM_H
#define ZCOLL_SIM_H

#include <stddef.h>

/* Times in seconds, costs in seconds per byte. */
struct zsim_link {
  double alpha; /* from the end of the sender's work to the piece's arrival */
  double beta;  /* per byte: shm, the writer's memcpy; net, each NIC's serialization */
  double o;     /* sender CPU per piece (shm: besides the copy; net: posting the put) */
};

struct zsim_model {
  struct zsim_link shm, net;
  double gamma;  /* receiver CPU per byte reduced */
  double copy;   /* receiver CPU per byte copied out of a slot (and staged sends) */
  double o_recv; /* receiver CPU per piece consumed */
  int cores;     /* cores per host; 0: one per rank (no sharing) */
  double wake;   /* oversubscribed host: delay before an idle rank runs again */
  double share;  /* oversubscribed host: CPU costs times this (caches, memory bus, other
                  * tenants); 0 or 1: none */
};

struct zsim_job {
  int algo;          /* index into zcoll__algos[] */
  int p, k;          /* ranks, ranks per host */
  size_t count;      /* elements */
  int dsize;         /* bytes per element */
  size_t slot_bytes; /* the pipeline chunk */
  int depth;         /* slots per channel */
  int arity;         /* TREE_ARITY */
  int iters;         /* back-to-back blocking calls, timed as zcoll_perf -z 1 does (the
                      * loop's time per call); 0 or 1: one call's latency */
  int reverse;       /* what-if, not the executor: each step visits the peers in the
                      * reverse of the schedule's order (lib/executor.c: that order).
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

/* Parses "key=value" (the model file's keys, see sim.c); 0 on success. */
int zsim_model_set(struct zsim_model *m, const char *kv);
/* Reads a model file: "key value" lines, '#' comments. 0 on success. */
int zsim_model_load(struct zsim_model *m, const char *path);
void zsim_model_default(struct zsim_model *m);
void zsim_model_print(const struct zsim_model *m, const char *prefix);

#endif
