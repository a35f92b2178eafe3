/* build.c -- each rank's program for the engine (sim.c): the library's schedule, or the
 * one-host exchange, laid out for job->iters back-to-back calls. */
#include <stdio.h>
#include <stdlib.h>

#include "core/kind.h"
#include "sim_int.h"

/* The mailbox exchange as ops: the vector to every peer (one publication: sim.c sends
 * them all at once), then every peer's vector reduced in, in rank order. */
static void onehost(struct zcoll__sched *s, int rank, int p, size_t count) {
  for (int i = 1; i < p; i++) zcoll__sched_send(s, (rank + i) % p, ZCOLL_BUF_SRC, 0, count);
  int first = 1;
  for (int q = 0; q < p; q++) {
    if (q == rank) continue;
    zcoll__sched_recv_reduce(s, q, first ? ZCOLL_BUF_SRC : ZCOLL_BUF_DST, 0, count,
                             q == p - 1 || (q == p - 2 && rank == p - 1));
    first = 0;
  }
}

int zsim_sched_build(const struct zsim_job *job, int rank, const struct zcoll__algo_params *ap,
                     struct zcoll__sched *s) {
  if (job->algo >= ZSIM_XCHG) { /* a block per rank, the root rank 0 */
    int kind = (job->algo - ZSIM_XCHG) / ZSIM_XCHG_KINDS;
    zcoll__sched_init(s, rank, job->p, job->count / (size_t)job->p, 0);
    s->root = 0;
    zcoll__kind_build(kind, (job->algo - ZSIM_XCHG) % ZSIM_XCHG_KINDS, s, ap);
  } else {
    zcoll__sched_init(s, rank, job->p, job->count, 0);
    zcoll__algos[job->algo]->build(s, ap);
  }
  return zcoll__sched_finish(s) == ZCOLL_OK ? 0 : -1;
}

int zsim__build_rank(struct sim *S, int rank, const struct zcoll__algo_params *ap) {
  const struct zsim_job *job = S->job;
  struct zcoll__sched s;
  int rc;
  if (job->algo == ZSIM_ONEHOST) {
    zcoll__sched_init(&s, rank, job->p, job->count, 0);
    onehost(&s, rank, job->p, job->count);
    rc = zcoll__sched_finish(&s) == ZCOLL_OK ? 0 : -1;
  } else {
    rc = zsim_sched_build(job, rank, ap, &s);
  }
  if (rc) {
    zcoll__sched_free(&s);
    fprintf(stderr, "zcoll_sim: rank %d's schedule did not build\n", rank);
    return -1;
  }
  struct rank *R = &S->r[rank];
  /* Back-to-back blocking calls are the schedule N times over: copy c's ops are
   * i + c n0, each channel's sends (and receives) in call order. */
  int N = job->iters > 1 ? job->iters : 1, n0 = s.nops, n = N * n0, np = s.npeers;
  R->nops = R->remaining = n;
  R->n0 = n0 ? n0 : 1;
  R->npeers = np;
  R->host = rank / job->k;
  R->ops = malloc(sizeof(*R->ops) * (size_t)(n + 1));
  R->deps = malloc(sizeof(*R->deps) * (N * s.ndeps + 1));
  R->pos = malloc(sizeof(uint32_t) * (size_t)(n + 1));
  R->issued = malloc(sizeof(uint32_t) * (size_t)(n + 1));
  R->list = malloc(sizeof(int) * (size_t)(n + 1));
  R->local = malloc(sizeof(int) * (size_t)(N * s.nlocal + 1));
  int *ints = calloc((size_t)(np + 1) * 11, sizeof(int));
  long long *lls = calloc((size_t)(np + 1) * 3, sizeof(long long));
  if (!R->ops || !R->deps || !R->pos || !R->issued || !R->list || !R->local || !ints || !lls)
    abort();
  R->peer_rank = ints, R->rev = ints + (np + 1), R->send_cur = ints + 2 * (np + 1);
  R->send_end = ints + 3 * (np + 1), R->recv_cur = ints + 4 * (np + 1);
  R->recv_end = ints + 5 * (np + 1), R->credits = ints + 6 * (np + 1);
  R->unreturned = ints + 7 * (np + 1), R->done_cur = ints + 8 * (np + 1);
  R->credits_in = ints + 9 * (np + 1), R->order = ints + 10 * (np + 1);
  R->arrived = lls, R->consumed = lls + (np + 1), R->seen = lls + 2 * (np + 1);
  R->step_j = np + 1; /* the first kick starts a step */
  for (size_t d = 0; d < N * s.ndeps; d++)
    R->deps[d] = s.deps[d % s.ndeps] + (uint32_t)(d / s.ndeps * n0);
  for (int i = 0; i < n; i++) {
    const struct zcoll__sop *o = &s.ops[i % n0];
    int j = -1;
    if (o->peer >= 0)
      for (j = 0; s.peers[j] != o->peer; j++) continue;
    if (o->off + o->count > UINT32_MAX) abort(); /* the model keeps elements in 32 bits */
    R->ops[i] = (struct op){
        o->kind,          o->acc == ZCOLL_BUF_DST, j,
        (uint32_t)o->off, (uint32_t)o->count,      o->dep_first + (uint32_t)(i / n0 * s.ndeps),
        o->ndeps};
    R->pos[i] = R->issued[i] = (uint32_t)o->off;
  }
  for (int j = 0; j < np; j++) {
    int first = N * s.peer_sends[j], nsend = s.peer_recvs[j] - s.peer_sends[j];
    int nrecv = s.peer_sends[j + 1] - s.peer_recvs[j];
    for (int c = 0; c < N; c++) {
      for (int x = 0; x < nsend; x++)
        R->list[first + c * nsend + x] = s.peer_ops[s.peer_sends[j] + x] + c * n0;
      for (int x = 0; x < nrecv; x++)
        R->list[first + N * nsend + c * nrecv + x] = s.peer_ops[s.peer_recvs[j] + x] + c * n0;
    }
    R->peer_rank[j] = s.peers[j];
    R->send_cur[j] = R->done_cur[j] = first, R->send_end[j] = first + N * nsend;
    R->recv_cur[j] = first + N * nsend, R->recv_end[j] = first + N * (nsend + nrecv);
    R->credits[j] = job->depth;
  }
  /* The executor's order is the schedule's; the what-if reverses it. */
  for (int j = 0; j < np; j++) R->order[j] = job->reverse ? np - 1 - j : j;
  for (int c = 0; c < N; c++)
    for (int x = 0; x < s.nlocal; x++) R->local[c * s.nlocal + x] = s.local_ops[x] + c * n0;
  R->nlocal = N * s.nlocal;
  zcoll__sched_free(&s);
  return 0;
}
