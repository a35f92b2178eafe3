/* sim.c -- the discrete-event engine of the scale model (sim.h says what it models). */
#include "sim.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

static void push_staged(struct sim *S, double t, int kind, int rank, int j, uint32_t a, uint32_t b,
                        int staged_piece) {
  if (S->nheap == S->capheap) {
    S->capheap = S->capheap ? 2 * S->capheap : 1024;
    S->heap = realloc(S->heap, sizeof(*S->heap) * (size_t)S->capheap);
    if (!S->heap) abort();
  }
  struct ev e = {t, S->seq++, kind, rank, j, staged_piece, a, b};
  long long i = S->nheap++;
  while (i > 0) {
    long long up = (i - 1) / 2;
    struct ev *u = &S->heap[up];
    if (u->t < e.t || (u->t == e.t && u->seq < e.seq)) break;
    S->heap[i] = *u;
    i = up;
  }
  S->heap[i] = e;
}

static void push(struct sim *S, double t, int kind, int rank, int j, uint32_t a, uint32_t b) {
  push_staged(S, t, kind, rank, j, a, b, 0);
}

static struct ev pop(struct sim *S) {
  struct ev top = S->heap[0], last = S->heap[--S->nheap];
  long long i = 0, n = S->nheap;
  for (;;) {
    long long c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && (S->heap[c + 1].t < S->heap[c].t ||
                      (S->heap[c + 1].t == S->heap[c].t && S->heap[c + 1].seq < S->heap[c].seq)))
      c++;
    if (last.t < S->heap[c].t || (last.t == S->heap[c].t && last.seq < S->heap[c].seq)) break;
    S->heap[i] = S->heap[c];
    i = c;
  }
  if (n) S->heap[i] = last;
  return top;
}

/* ---- the executor's rules ------------------------------------------------------------- */

static int deps_ready(const struct rank *R, const struct op *o, uint32_t a, uint32_t b) {
  if (a == b) return 1;
  for (uint32_t i = 0; i < o->ndeps; i++) {
    uint32_t d = R->deps[o->dep_first + i];
    const struct op *y = &R->ops[d];
    uint32_t yend = y->off + y->count;
    if (a >= yend || y->off >= b) continue;
    if (R->pos[d] < (b < yend ? b : yend)) return 0;
  }
  return 1;
}

static uint32_t piece_end(const struct sim *S, const struct op *o, uint32_t at) {
  uint32_t end = o->off + o->count;
  return end - at > S->chunk ? at + S->chunk : end;
}

static int same_host(const struct sim *S, int a, int b) { return S->r[a].host == S->r[b].host; }

/* Verbs stages ops below the registration cache's 16 KiB threshold (executor.c). */
static int staged(const struct sim *S, const struct op *o) {
  return (double)o->count * S->job->dsize < 16384;
}

static double bytes(const struct sim *S, uint32_t a, uint32_t b) {
  return (double)(b - a) * S->job->dsize;
}

/* The CPU time of the task just chosen. */
static double task_cost(const struct sim *S, const struct rank *R, int rank) {
  const struct zsim_model *m = S->m;
  const struct op *o = &R->ops[R->task_op];
  double n = bytes(S, R->task_a, R->task_b) * S->memf[R->host];
  switch (R->task_kind) {
  case T_RECV:
    if (S->onehost) /* the box's lines, one by one from the writer's core, then reduced */
      return m->oh_recv + bytes(S, R->task_a, R->task_b) * m->oh_beta + n * m->gamma;
    return m->o_recv + n * (o->kind == ZCOLL_SOP_RECV_REDUCE ? m->gamma : m->copy);
  case T_SEND:
    if (S->onehost) return m->oh_o + n * m->copy; /* into its box, once for every peer */
    if (same_host(S, rank, R->peer_rank[R->task_j])) return m->shm.o + n * m->shm.beta;
    return m->net.o + (staged(S, o) ? n * m->copy : 0); /* NIC bytes: not CPU's */
  case T_OWN: return R->own;
  default: return n * m->copy;
  }
}

static void start_task(struct sim *S, int rank);
static int choose(struct sim *S, int rank);

/* The next piece of op i (from at[i]: pos for receives, issued for sends), as the rank's
 * next task if its dependencies have progressed past it. */
static int try_piece(struct sim *S, struct rank *R, int kind, int j, int i, const uint32_t *at) {
  const struct op *o = &R->ops[i];
  uint32_t a = at[i], b = piece_end(S, o, a);
  if (i / R->n0 > R->iter) return 0; /* the next call starts when this one returns */
  if (!deps_ready(R, o, a, b)) return 0;
  R->task_kind = kind, R->task_j = j, R->task_op = i, R->task_a = a, R->task_b = b;
  R->step_moved = 1;
  return 1;
}

/* A poll, then a new step: it sees what arrived and the credits that came back. */
static void new_step(struct rank *R) {
  for (int j = 0; j < R->npeers; j++) {
    R->seen[j] = R->arrived[j];
    R->credits[j] += R->credits_in[j];
    R->credits_in[j] = 0;
  }
  R->step_j = R->phase = R->step_moved = 0;
}

/* Picks the next piece this rank can move in the order of the executor's run_step: peer
 * by peer, each one's receives drained (those its poll saw), then its sends as far as
 * credits and dependencies allow, then the local copies; then a poll and the next step.
 * So a peer that keeps sending cannot starve the others: a rank forwarding a chunk to
 * its next peer does so within a step of it being reduced, however busy its previous
 * peer keeps it. 0 if a whole step found nothing: the rank waits for an event. */
static int choose(struct sim *S, int rank) {
  struct rank *R = &S->r[rank];
  int np = R->npeers;
  if (R->step_j > np) new_step(R);
  /* (A one-host call's own cost is in its publication, oh_o: that path's entry is its own.) */
  if (S->m->call > 0 && !S->onehost && R->paid <= R->iter && R->remaining > 0) {
    R->paid++;
    R->owed += S->m->call;
  }
  if (R->owed > 0) { /* work that is no piece's, first */
    R->task_kind = T_OWN, R->task_j = -1, R->task_op = 0, R->task_a = R->task_b = 0;
    R->own = R->owed, R->owed = 0;
    R->step_moved = 1;
    return 1;
  }
  /* One-host: a call publishes first, whatever has come in already (onehost.c). */
  if (S->onehost && np && R->published <= R->iter && R->remaining > 0 &&
      try_piece(S, R, T_SEND, 0, R->list[R->send_cur[0]], R->issued))
    return 1;
  for (;;) {
    for (; R->step_j < np; R->step_j++, R->phase = 0) {
      int j = R->order[R->step_j];
      if (R->phase == 0) {
        if (R->recv_cur[j] < R->recv_end[j] && R->consumed[j] < R->seen[j] &&
            try_piece(S, R, T_RECV, j, R->list[R->recv_cur[j]], R->pos))
          return 1;
        R->phase = 1;
      }
      if (!S->onehost && R->send_cur[j] < R->send_end[j] && R->credits[j] > 0 &&
          try_piece(S, R, T_SEND, j, R->list[R->send_cur[j]], R->issued))
        return 1;
    }
    if (R->local_cur < R->nlocal && try_piece(S, R, T_LOCAL, -1, R->local[R->local_cur], R->pos))
      return 1;
    R->step_j = np + 1;
    if (!R->step_moved) return 0;
    new_step(R);
  }
}

/* A call returns when all its ops are done; the next starts with a fresh step. */
static void finish_op(struct rank *R) {
  if (--R->remaining % R->n0 == 0) R->iter++, R->step_j = R->npeers + 1;
}

static void enqueue(struct sim *S, int rank) {
  int h = S->r[rank].host;
  S->runq[h][(S->runq_head[h] + S->runq_n[h]++) % S->job->p] = rank;
}

/* A free core takes one of the runnable ranks, a switch later it has its turn. Which one:
 * uniformly at random (a fixed seed). The kernel's choice is fair but its order is not
 * the ranks' -- two run queues, migrations, deadlines that yields push back -- and a
 * FIFO here locks into orders that happen to suit one schedule (a ring whose next rank
 * is always next in the queue), which is an artefact, not the machine. */
static void dispatch(struct sim *S, int h) {
  while (S->cores_free[h] > 0 && S->runq_n[h] > 0) {
    int p = S->job->p, n = S->runq_n[h];
    S->rng = S->rng * 6364136223846793005ULL + 1442695040888963407ULL;
    int pick = (int)((S->rng >> 33) % (uint64_t)n);
    int *q = S->runq[h], at = (S->runq_head[h] + pick) % p, head = S->runq_head[h];
    int next = q[at];
    q[at] = q[head]; /* the head fills the hole; the queue is a bag */
    S->runq_head[h] = (head + 1) % p;
    S->runq_n[h]--;
    S->cores_free[h]--;
    S->r[next].oncore = 1;
    push(S, S->now + S->m->sw, EV_TURN, next, 0, 0, 0);
  }
}

/* The rank gives its core up: to the back of the run queue (it yields, or its slice is
 * over), or off it (asleep, or finished: the loop zcoll_perf times is over for it). */
static void release_core(struct sim *S, int rank, int requeue) {
  struct rank *R = &S->r[rank];
  R->oncore = 0;
  S->cores_free[R->host]++;
  if (requeue) enqueue(S, rank);
  dispatch(S, R->host);
}

/* Oversubscribed: the rank holds a core and is not busy -- its next task, or the core
 * goes to the next rank in the queue. */
static void on_core(struct sim *S, int rank) {
  struct rank *R = &S->r[rank];
  int h = R->host;
  if (R->remaining == 0) {
    release_core(S, rank, 0);
    return;
  }
  if (S->now - R->turn_start >= S->m->slice && S->runq_n[h] > 0) {
    release_core(S, rank, 1);
    return;
  }
  if (choose(S, rank)) {
    R->busy = 1;
    start_task(S, rank);
    return;
  }
  if (S->m->sleep > 0 && S->now - R->idle_since >= S->m->sleep) {
    R->asleep = 1;
    release_core(S, rank, 0);
  } else {
    release_core(S, rank, 1); /* poll found nothing: sched_yield */
  }
}

/* Called whenever something may have become possible for an idle rank. */
static void kick(struct sim *S, int rank) {
  struct rank *R = &S->r[rank];
  if (R->busy) return;
  if (S->oversub) {
    if (R->oncore) {
      on_core(S, rank);
    } else if (R->asleep && R->remaining > 0) { /* woken: back on the run queue */
      R->asleep = 0;
      R->idle_since = S->now;
      enqueue(S, rank);
      dispatch(S, R->host);
    }
    return;
  }
  if (R->remaining == 0) return;
  if (!choose(S, rank)) return;
  R->busy = 1;
  start_task(S, rank);
}

static void start_task(struct sim *S, int rank) {
  struct rank *R = &S->r[rank];
  double cost = task_cost(S, R, rank);
  if (S->oversub && S->m->share > 0) cost *= S->m->share;
  /* The channel cursors move now, as the executor's do; the effects land at the end. */
  if (R->task_kind == T_SEND) R->credits[R->task_j]--;
  push(S, S->now + cost, EV_CPU, rank, 0, 0, 0);
}

static void send_credits(struct sim *S, int rank, int j) {
  struct rank *R = &S->r[rank];
  int q = R->peer_rank[j];
  double lat = same_host(S, rank, q) ? S->m->shm.alpha : S->m->net.alpha;
  push(S, S->now + lat, EV_CREDIT, q, R->rev[j], (uint32_t)R->unreturned[j], 0);
  R->unreturned[j] = 0;
}

static void cpu_done(struct sim *S, int rank) {
  struct rank *R = &S->r[rank];
  int j = R->task_j, i = R->task_op;
  const struct op *o = &R->ops[i];
  uint32_t a = R->task_a, b = R->task_b, end = o->off + o->count;
  R->busy = 0;
  R->idle_since = S->now;
  if (R->task_kind == T_OWN) return;
  S->pieces++;
  if (R->task_kind == T_RECV) {
    R->pos[i] = b;
    R->consumed[j]++;
    if (++R->unreturned[j] >= (S->job->depth + 1) / 2) send_credits(S, rank, j);
    if (b == end) R->recv_cur[j]++, finish_op(R);
  } else if (R->task_kind == T_LOCAL) {
    R->pos[i] = b;
    if (b == end) R->local_cur++, finish_op(R);
  } else if (S->onehost) { /* the box is out: every peer sees it */
    R->published++;
    for (int x = 0; x < R->npeers; x++) {
      int s = R->list[R->send_cur[x]++];
      R->issued[s] = R->pos[s] = R->ops[s].off + R->ops[s].count;
      R->sent += bytes(S, R->ops[s].off, R->pos[s]);
      finish_op(R);
      push(S, S->now + S->m->oh_alpha, EV_ARRIVE, R->peer_rank[x], R->rev[x], 0, 0);
    }
  } else {
    int q = R->peer_rank[j];
    R->issued[i] = b;
    R->sent += bytes(S, a, b);
    if (!same_host(S, rank, q)) R->sent_net += bytes(S, a, b);
    if (b == end) R->send_cur[j]++;
    if (same_host(S, rank, q)) { /* the copy is done: the source is free */
      R->pos[i] = b;
      if (b == end) finish_op(R);
      push(S, S->now + S->m->shm.alpha, EV_ARRIVE, q, R->rev[j], 0, 0);
      R->owed += S->m->shm.o_post;
    } else { /* the sender's NIC, then the wire, then the receiver's NIC */
      int h = R->host;
      double n = bytes(S, a, b), t0 = S->now > S->tx_free[h] ? S->now : S->tx_free[h];
      S->tx_free[h] = t0 + n * S->m->net.beta;
      /* Cut-through: the first byte reaches the far NIC an alpha after it leaves. */
      push_staged(S, t0 + S->m->net.alpha, EV_RX, q, R->rev[j], a, b, staged(S, o));
      /* A staged piece (an op below 16 KiB) frees its source when copied. */
      if (staged(S, o)) {
        R->pos[i] = b;
        if (b == end) finish_op(R);
      }
    }
  }
}

/* A piece reached the receiving host's NIC: it is written once that NIC is free. */
static void nic_rx(struct sim *S, const struct ev *e) {
  struct rank *Q = &S->r[e->rank];
  int h = Q->host;
  double n = bytes(S, e->a, e->b), t0 = S->now > S->rx_free[h] ? S->now : S->rx_free[h];
  S->rx_free[h] = t0 + n * S->m->net.beta;
  push(S, S->rx_free[h], EV_ARRIVE, e->rank, e->j, 0, 0);
  /* The put's completion reaches the sender an alpha later: the source is free (a staged
   * piece's was already). */
  int sender = Q->peer_rank[e->j];
  if (!e->staged)
    push(S, S->rx_free[h] + S->m->net.alpha, EV_PUT_DONE, sender, Q->rev[e->j], e->a, e->b);
}

/* The sender's completion of a put: completions come back in the order the pieces went
 * out (one FIFO per channel), so they advance the channel's oldest unfinished send. */
static void put_done(struct sim *S, const struct ev *e) {
  struct rank *R = &S->r[e->rank];
  /* Staged ops completed at their copy and have no completions to wait for. */
  while (staged(S, &R->ops[R->list[R->done_cur[e->j]]])) R->done_cur[e->j]++;
  int i = R->list[R->done_cur[e->j]];
  const struct op *o = &R->ops[i];
  R->pos[i] = e->b;
  if (e->b == o->off + o->count) R->done_cur[e->j]++, finish_op(R);
}

/* ---- the run --------------------------------------------------------------------------- */

static void free_sim(struct sim *S) {
  for (int i = 0; S->r && i < S->job->p; i++) {
    struct rank *R = &S->r[i];
    free(R->ops), free(R->deps), free(R->pos), free(R->issued), free(R->list);
    free(R->local), free(R->peer_rank), free(R->arrived);
  }
  for (int h = 0; S->runq && h < S->nhosts; h++) free(S->runq[h]);
  free(S->runq), free(S->runq_head), free(S->runq_n), free(S->cores_free), free(S->memf);
  free(S->r), free(S->tx_free), free(S->rx_free), free(S->heap);
}

int zsim_run(const struct zsim_model *m, const struct zsim_job *job, struct zsim_result *out) {
  struct sim S;
  memset(&S, 0, sizeof(S));
  S.m = m, S.job = job;
  S.rng = 0x2545F4914F6CDD1DULL;
  int p = job->p, k = job->k > 0 ? job->k : 1;
  S.onehost = job->algo == ZSIM_ONEHOST;
  int known = S.onehost || job->algo >= ZSIM_XCHG || (job->algo >= 0 && job->algo < zcoll__nalgos);
  if (p < 1 || !known || job->depth < 1) return -1;
  S.nhosts = (p + k - 1) / k;
  if (S.onehost && S.nhosts > 1) {
    fprintf(stderr, "zcoll_sim: the one-host exchange needs every rank on one host\n");
    return -1;
  }
  /* A box holds the whole vector: one piece. */
  S.chunk = S.onehost ? (uint32_t)(job->count ? job->count : 1)
                      : (uint32_t)(job->slot_bytes / (size_t)job->dsize);
  if (S.chunk == 0) S.chunk = 1;
  S.oversub = m->cores > 0 && (k < p ? k : p) > m->cores;
  int *host_of = malloc(sizeof(int) * (size_t)p);
  S.r = calloc((size_t)p, sizeof(*S.r));
  S.tx_free = calloc((size_t)S.nhosts, sizeof(double));
  S.rx_free = calloc((size_t)S.nhosts, sizeof(double));
  S.cores_free = calloc((size_t)S.nhosts, sizeof(int));
  S.runq = calloc((size_t)S.nhosts, sizeof(int *));
  S.runq_head = calloc((size_t)S.nhosts, sizeof(int));
  S.runq_n = calloc((size_t)S.nhosts, sizeof(int));
  S.memf = calloc((size_t)S.nhosts, sizeof(double));
  if (!host_of || !S.r || !S.tx_free || !S.rx_free || !S.cores_free || !S.runq || !S.runq_head ||
      !S.runq_n || !S.memf)
    abort();
  for (int r = 0; r < p; r++) host_of[r] = r / k;
  if (S.oversub)
    for (int h = 0; h < S.nhosts; h++) {
      if (!(S.runq[h] = malloc(sizeof(int) * (size_t)p))) abort();
      S.cores_free[h] = m->cores;
    }
  /* The hierarchical algorithm reads where the ranks run; the others ignore it. */
  struct zcoll__algo_params ap = {job->arity, host_of, S.nhosts};
  int rc = 0;
  for (int r = 0; r < p && rc == 0; r++) rc = zsim__build_rank(&S, r, &ap);
  free(host_of);
  /* Peer j of rank r, seen from that peer: which of its peers is r. */
  for (int r = 0; r < p && rc == 0; r++) {
    struct rank *R = &S.r[r];
    for (int j = 0; j < R->npeers; j++) {
      const struct rank *Q = &S.r[R->peer_rank[j]];
      int x = 0;
      while (x < Q->npeers && Q->peer_rank[x] != r) x++;
      if (x == Q->npeers) {
        fprintf(stderr, "zcoll_sim: rank %d talks to %d, which never talks back\n", r,
                R->peer_rank[j]);
        rc = -1;
        break;
      }
      R->rev[j] = x;
    }
  }
  /* The working set per host: each rank's input and result, and the slots of the
   * channels it receives on from its own host (depth pieces each, at most the vector). */
  for (int r = 0; r < p && rc == 0; r++) {
    const struct rank *R = &S.r[r];
    double n = (double)job->count * job->dsize, slots = (double)job->depth * job->slot_bytes;
    S.memf[R->host] += 2 * n;
    for (int j = 0; j < R->npeers; j++)
      if (same_host(&S, r, R->peer_rank[j])) S.memf[R->host] += slots < n ? slots : n;
  }
  for (int h = 0; h < S.nhosts; h++) {
    double W = S.memf[h], miss = m->llc > 0 && W > m->llc ? 1 - m->llc / W : 0;
    int on = k < p ? k : p, nc = m->cores > 0 && m->cores < on ? m->cores : on;
    double near = m->l2 > 0 ? m->l2 / (W / nc) : 0;
    S.memf[h] = (1 + (m->mem - 1) * miss) * (1 + (m->c2c - 1) * (near < 1 ? near : 1));
  }
  double sum = 0, last = 0, max_sent = 0, net = 0, all = 0;
  int done = 0;
  if (S.oversub) /* every rank runnable, in rank order */
    for (int r = 0; r < p && rc == 0; r++) {
      enqueue(&S, r);
      dispatch(&S, S.r[r].host);
    }
  else
    for (int r = 0; r < p && rc == 0; r++) kick(&S, r);
  for (int r = 0; r < p && rc == 0; r++)
    if (S.r[r].remaining == 0) done++;
  while (rc == 0 && S.nheap) {
    struct ev e = pop(&S);
    S.now = e.t;
    S.events++;
    struct rank *R = &S.r[e.rank];
    int before = R->remaining;
    switch (e.kind) {
    case EV_CPU: cpu_done(&S, e.rank); break;
    case EV_ARRIVE: R->arrived[e.j]++; break;
    case EV_RX: nic_rx(&S, &e); break;
    case EV_CREDIT: R->credits_in[e.j] += (int)e.a; break;
    case EV_PUT_DONE: put_done(&S, &e); break;
    case EV_TURN: R->turn_start = S.now; break;
    }
    if (before > 0 && R->remaining == 0) {
      done++;
      sum += S.now;
      if (S.now > last) last = S.now;
    }
    kick(&S, e.rank);
  }
  if (rc == 0 && done < p) {
    fprintf(stderr, "zcoll_sim: deadlock: %d of %d ranks finished\n", done, p);
    rc = -1;
  }
  if (rc == 0 && out) {
    int N = job->iters > 1 ? job->iters : 1; /* per call, as zcoll_perf's loop divides */
    out->time = last / N;
    out->mean_time = sum / p / N;
    out->events = S.events;
    out->pieces = S.pieces;
    for (int r = 0; r < p; r++) {
      if (S.r[r].sent > max_sent) max_sent = S.r[r].sent;
      net += S.r[r].sent_net, all += S.r[r].sent;
    }
    out->max_sent = max_sent / N;
    out->net_bytes = net / N;
    out->shm_bytes = (all - net) / N;
  }
  free_sim(&S);
  return rc;
}
