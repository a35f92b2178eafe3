/*
 * exec_run.c -- a collective's run set up for the executor (executor.c): its buffers and
 * scratch, a created op's definition and staging, the grant of a registered result, and
 * the executor's per-op and per-peer state rewound.
 */
#include <stdlib.h>

#include "base/clock.h"
#include "exec.h"
#include "base/log.h"
#include "kernels/op.h"
#include "kernels/reduce.h"
#include "mr.h"
#include "onehost.h"

/* Staging on the channels of transports that put from anywhere, for pieces that go out
 * changed (a premul sum's scaled input, compressed averaging's 16-bit data): they are
 * made there. Staged channels have theirs. */
static zcoll_status_t send_staging(zcoll_comm_t *comm, const struct zcoll__sched *s,
                                   const char *what) {
  for (int j = 0; j < s->npeers; j++) {
    int ci = s->peers[j] < comm->size ? comm->chan_of[s->peers[j]] : -1;
    if (ci < 0 || comm->chans[ci].stage) continue;
    if (!(comm->chans[ci].stage = malloc((size_t)comm->depth * comm->slot_bytes)))
      return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for %s's staging", what);
  }
  return ZCOLL_OK;
}

/* A created op (op.c): its definition, held by the plan; the element it must see whole;
 * for a premul sum, staging, and the scaling of an in-place input that nothing else
 * reads (p = 1). */
static zcoll_status_t created_op(zcoll_comm_t *comm, struct zcoll__run *r,
                                 const struct zcoll__sched *s) {
  r->uop = zcoll__op_def_of((zcoll_op_t)r->desc.op);
  if (r->uop->elem_bytes) r->dsize = r->uop->elem_bytes;
  if (r->uop->kind != ZCOLL_OPK_PREMUL) return ZCOLL_OK;
  if (s->in_place && !s->nops && s->count)
    zcoll__scale_copy(r->dtype, r->buf[ZCOLL_BUF_DST], r->buf[ZCOLL_BUF_DST], s->count,
                      r->uop->scalar);
  return send_staging(comm, s, "a premul sum");
}

/* A v-form's headers (kind.h: pair_counts), per peer: the counts each way are the sums of
 * the schedule's sends to and receives from it. */
static zcoll_status_t pair_headers(struct zcoll__run *r, const struct zcoll__sched *s,
                                   struct zcoll__exec_state *e) {
  if (s->npeers > e->pair_cap) {
    struct zcoll__pair_hdr *ph = realloc(e->pair, sizeof(*ph) * (size_t)s->npeers);
    if (!ph) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for a v-form's headers");
    e->pair = ph;
    e->pair_cap = s->npeers;
  }
  for (int j = 0; j < s->npeers; j++) {
    uint64_t out = 0, in = 0;
    for (int k = s->peer_sends[j]; k < s->peer_recvs[j]; k++) out += s->ops[s->peer_ops[k]].count;
    for (int k = s->peer_recvs[j]; k < s->peer_sends[j + 1]; k++)
      in += s->ops[s->peer_ops[k]].count;
    struct zcoll__pair_hdr *h = &e->pair[j];
    h->out = h->in = r->desc;
    h->out.count = out;
    h->in.count = in;
    h->fp_out = zcoll__pair_fingerprint(&h->out, in);
    h->fp_in = zcoll__pair_fingerprint(&h->in, out);
  }
  r->pair = e->pair;
  return ZCOLL_OK;
}

const struct zcoll__run_ops zcoll__sched_run = {NULL, NULL, NULL, 0};

const struct zcoll__run_ops *zcoll__run_ops_of(const zcoll_comm_t *comm,
                                               const struct zcoll__sched *s) {
  return comm->oh && s == &comm->oh->sched ? &zcoll__onehost_run : &zcoll__sched_run;
}

zcoll_status_t zcoll__run_init(zcoll_comm_t *comm, struct zcoll__run *r,
                               const struct zcoll__sched *s, struct zcoll__exec_state *e,
                               const struct zcoll__coll_desc *desc, uint64_t ordinal,
                               const void *src, void *dst) {
  zcoll_dtype_t dtype = (zcoll_dtype_t)desc->dtype;
  /* Field by field: a compound literal clears the whole struct with `rep stos`, whose
   * start-up alone is a tenth of an 8-byte allreduce. */
  r->next = NULL;
  r->status = ZCOLL_IN_PROGRESS;
  atomic_store_explicit(&r->ended, 0, memory_order_relaxed);
  r->comm = comm;
  r->ops = zcoll__run_ops_of(comm, s);
  r->s = s;
  r->e = e;
  r->dtype = dtype;
  r->op = (zcoll_op_t)desc->op;
  r->ordinal = ordinal;
  r->desc = *desc;
  r->fp = zcoll__coll_fingerprint_cached(&comm->fp_cache, desc);
  r->local_cur = 0;
  r->pair = NULL;
  r->buf[ZCOLL_BUF_SRC] = (char *)src;
  r->buf[ZCOLL_BUF_DST] = dst;
  r->uop = NULL;
  r->dsize = zcoll__dsize(dtype);
  const struct zcoll__mem_user who = {desc->kind, ordinal, comm->rank, comm->size};
  if (r->ops->init) {
    r->ops->init(r); /* no schedule: the rest is its own */
    size_t bytes = (size_t)desc->count * r->dsize;
    zcoll__mem_hold(&r->hold, &who, src, bytes, dst, bytes);
    return ZCOLL_OK;
  }
  if (desc->op >= ZCOLL_OP_COUNT) {
    zcoll_status_t st = created_op(comm, r, s);
    if (st != ZCOLL_OK) return st;
  }
  /* A schedule of nothing (count 0) may still name TMP, at offset 0: never NULL. */
  static char no_tmp;
  r->buf[ZCOLL_BUF_TMP] = &no_tmp;
  if (s->tmp_count) { /* the scratch lives with the executor state: one run uses it */
    size_t bytes = s->tmp_count * r->dsize;
    if (bytes > e->tmp_cap) {
      char *t = malloc(bytes);
      if (!t)
        return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for %zu bytes of scratch", bytes);
      free(e->tmp);
      e->tmp = t;
      e->tmp_cap = bytes;
    }
    r->buf[ZCOLL_BUF_TMP] = e->tmp;
  }
  /* Compressed averaging: pieces are cut by the 16-bit size they travel at. */
  r->wire = desc->wire;
  r->wsize = r->wire ? 2 : r->dsize;
  if (r->wire) {
    zcoll_status_t st = send_staging(comm, s, "compressed averaging");
    if (st != ZCOLL_OK) return st;
  }
  r->chunk = comm->slot_bytes >> __builtin_ctz((unsigned)r->wsize); /* sizes are powers of 2 */
  r->rc_since = comm->rcache ? zcoll__rcache_clock(comm->rcache) + 1 : 0;
  r->remaining = s->nops;
  r->started_ns = comm->trace.f ? zcoll__now_ns() : 0;
  r->grant = NULL;
  r->ngkeys = 0;
  r->fence = 0;
  r->oh_next = r->oh_which = r->oh_big = 0;
  /* A result inside a zcoll_mem_register region may be written by the peers directly,
   * for any call (a persistent request sets its own after this); not what must be
   * widened on its way in. */
  if (comm->mrs && !r->wire) {
    /* an allgather's result is every rank's block: the whole of its coordinates */
    const struct zcoll__kind *k = zcoll__kind_of(desc->kind);
    size_t n = k && k->result_spans ? s->count : (size_t)desc->count;
    size_t bytes = n * zcoll__dsize(dtype);
    if (bytes > comm->slot_bytes && comm->slot_bytes >= ZCOLL_GRANT_MAX_BYTES && dst)
      r->grant = zcoll__mr_grant(comm, dst, bytes, &r->grant_base);
  }
  for (int i = 0; i < s->nops; i++) {
    e->pos[i] = e->issued[i] = s->ops[i].off;
    e->finished[i] = 0;
    e->gfrom[i] = SIZE_MAX;
    e->gto[i] = 0;
  }
  for (int c = 0; c < comm->nchans; c++) e->peer_of_chan[c] = -1;
  for (int j = 0; j < s->npeers; j++) {
    e->send_cur[j] = s->peer_sends[j];
    e->recv_cur[j] = e->grant_cur[j] = s->peer_recvs[j];
    e->hdr_sent[j] = e->hdr_seen[j] = 0;
    e->awaited_ns[j] = 0;
    int ci = s->peers[j] < comm->size ? comm->chan_of[s->peers[j]] : -1;
    if (ci < 0)
      return zcoll__fail(ZCOLL_ERR_TRANSPORT, "the schedule needs rank %d, which is not a peer",
                         s->peers[j]);
    e->chan[j] = ci;
    e->peer_of_chan[ci] = j;
  }
  if (desc->count == ZCOLL_COUNT_PER_PAIR) { /* a v-form: no other kind has this count */
    zcoll_status_t st = pair_headers(r, s, e);
    if (st != ZCOLL_OK) return st;
  }
  r->fl = NULL; /* the caller opens its flight recorder entry */
  zcoll__mem_hold(&r->hold, &who, src, s->reach[ZCOLL_BUF_SRC] * r->dsize, dst,
                  s->reach[ZCOLL_BUF_DST] * r->dsize);
  return ZCOLL_OK;
}
