/* sim_int.h -- the scale model's engine state, shared by its files (sim.c runs it,
 * build.c turns schedules into it). Not an interface: sim.h is. */
#ifndef ZCOLL_SIM_INT_H
#define ZCOLL_SIM_INT_H

#include <stdint.h>

#include "algorithms/algorithms.h"
#include "sim.h"

/* ---- one rank's program, compacted: a 4096-rank ring holds 33 M ops ------------------ */

struct op {
  uint8_t kind, acc_dst;
  int peer; /* index into the rank's peers, -1 local */
  uint32_t off, count, dep_first, ndeps;
};

struct rank {
  int nops, npeers, remaining, host;
  int n0, iter;  /* ops per call; the call under way (back-to-back calls: job->iters) */
  int paid;      /* calls whose own CPU cost (model call) is owed or spent */
  int published; /* one-host: calls whose vector this rank has published */
  double owed;   /* CPU work before the next piece: a call's own, a put's after-work */
  double own;    /* the T_OWN task under way: its cost */
  struct op *ops;
  uint32_t *deps;
  uint32_t *pos, *issued; /* as the executor's: progress of each op, in elements */
  int *peer_rank;         /* peer j's rank */
  int *rev;               /* our index in peer j's list */
  int *list;              /* per peer: its sends, then its receives (op indices) */
  int *send_cur, *send_end, *recv_cur, *recv_end;
  int *credits, *unreturned;
  int *done_cur;                 /* per peer: the oldest send whose puts are not all complete */
  long long *arrived, *consumed; /* pieces on the incoming channel of peer j */
  long long *seen;               /* arrivals the current step knows of (its poll's) */
  int *credits_in;               /* credits returned since the current step's poll */
  int *order;                    /* the order a step visits the peers in */
  int local_cur;
  int *local;
  int nlocal;
  /* The CPU: one task at a time (the executor is one thread). */
  int busy;
  /* Oversubscribed: on a core now (its turn), asleep (off the run queue), since when it
   * holds the core and since when it has moved nothing. */
  int oncore, asleep;
  double turn_start, idle_since;
  /* Where run_step is: peer step_j (npeers: the local copies), its receives (phase 0)
   * or sends (1); step_moved: this step did something; step_j > npeers: over. */
  int step_j, phase, step_moved;
  int task_kind, task_j, task_op;
  uint32_t task_a, task_b;
  double sent, sent_net; /* bytes put to peers; of them, to other hosts */
};

enum { EV_CPU, EV_ARRIVE, EV_RX, EV_CREDIT, EV_PUT_DONE, EV_TURN };
enum { T_RECV, T_SEND, T_LOCAL, T_OWN };

struct ev {
  double t;
  long long seq;
  int kind, rank, j, staged;
  uint32_t a, b;
};

struct sim {
  const struct zsim_model *m;
  const struct zsim_job *job;
  struct rank *r;
  int nhosts;
  double *tx_free, *rx_free; /* per host NIC */
  int *cores_free;           /* per host */
  int **runq;                /* per host: runnable ranks not on a core (FIFO ring of p) */
  int *runq_head, *runq_n;
  double *memf; /* per host: the per-byte CPU costs' factor (llc, mem) */
  struct ev *heap;
  long long nheap, capheap, seq, events, pieces;
  double now;
  uint32_t chunk;
  int oversub;  /* some host has more ranks than cores */
  int onehost;  /* the job is the mailbox exchange (ZSIM_ONEHOST) */
  uint64_t rng; /* oversubscribed: which runnable rank a free core takes */
};

/* Rank `rank`'s program (job->iters calls of its schedule, or of the one-host exchange),
 * into S->r[rank]. 0, or -1 with a message on stderr. */
int zsim__build_rank(struct sim *S, int rank, const struct zcoll__algo_params *ap);

#endif
