/* onehost.c -- the one-host small allreduce through mailboxes (the design is in onehost.h). */
#include "onehost.h"

#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "exec.h"
#include "kernels/reduce.h"

zcoll_status_t zcoll__onehost_setup(zcoll_comm_t *comm) {
  if (!comm->onehost_want || comm->nchans != comm->size - 1 || !comm->recv_region ||
      comm->region_bytes < ZCOLL_ONEHOST_MAILBOX_BYTES)
    return ZCOLL_OK;
  struct zcoll__onehost *oh = calloc(1, sizeof(*oh));
  char **box = calloc((size_t)comm->size, sizeof(*box));
  char **src = calloc((size_t)comm->size, sizeof(*src));
  char **dst = calloc((size_t)comm->size, sizeof(*dst));
  struct zcoll__oh_mapped *maps = calloc((size_t)comm->size * ZCOLL_OH_MAPS, sizeof(*maps));
  char *tmp = malloc(ZCOLL_ONEHOST_CHUNK);
  if (!oh || !box || !src || !dst || !maps || !tmp) {
    free(oh), free(box), free(src), free(dst), free(maps), free(tmp);
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
  }
  oh->box = box;
  oh->src = src;
  oh->dst = dst;
  oh->maps = maps;
  oh->tmp = tmp;
  int ok = 1;
  for (int q = 0; q < comm->size && ok; q++) {
    if (q == comm->rank) {
      box[q] = comm->recv_region;
      continue;
    }
    int ci = comm->chan_of[q];
    const struct zcoll__chan *c = ci >= 0 ? &comm->chans[ci] : NULL;
    ok = c && c->ops->rkey_ptr && c->ops->knock && c->ops->peer_gone &&
         (box[q] = c->ops->rkey_ptr(c->rkey, 0, ZCOLL_ONEHOST_MAILBOX_BYTES)) != NULL;
  }
  if (!ok) {
    /* Every rank decided alike that it wanted this (comm_setup.c): a transport that cannot
     * map what it said it could is a bug, and ranks would now disagree on the path. */
    free(box), free(src), free(dst), free(maps), free(tmp), free(oh);
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "one-host allreduce: a peer's mailbox is not mapped");
  }
  zcoll__sched_init(&oh->sched, comm->rank, comm->size, 0, 0);
  zcoll_status_t st = zcoll__sched_finish(&oh->sched);
  if (st != ZCOLL_OK) {
    free(box), free(src), free(dst), free(maps), free(tmp), free(oh);
    return st;
  }
  comm->oh = oh;
  return ZCOLL_OK;
}

void zcoll__onehost_free(zcoll_comm_t *comm, int local) {
  if (!comm->oh) return;
  zcoll__onehost_big_free(comm, local);
  zcoll__sched_free(&comm->oh->sched);
  free(comm->oh->src);
  free(comm->oh->dst);
  free(comm->oh->maps);
  free(comm->oh->tmp);
  free(comm->oh->box);
  free(comm->oh);
  comm->oh = NULL;
}

static void run_init(struct zcoll__run *r) {
  zcoll_comm_t *comm = r->comm;
  r->buf[ZCOLL_BUF_TMP] = NULL;
  r->wire = 0;
  r->wsize = r->dsize;
  r->chunk = comm->slot_bytes;
  r->rc_since = 0;
  r->remaining = 1;
  r->started_ns = comm->trace.f ? zcoll__now_ns() : 0;
  r->grant = NULL;
  r->ngkeys = 0;
  r->fence = 0;
  r->fl = NULL;
  r->oh_next = -1; /* not yet published */
  r->oh_which = 0;
  r->oh_big = (size_t)r->desc.count * r->dsize > ZCOLL_ONEHOST_MAX_BYTES;
  r->oh_phase = r->oh_i = 0;
}

void zcoll__onehost_knock(zcoll_comm_t *comm) {
  for (int i = 0; i < comm->nchans; i++) comm->chans[i].ops->knock(comm->chans[i].ep);
}

static void publish(struct zcoll__run *r) {
  zcoll_comm_t *comm = r->comm;
  struct zcoll__onehost *oh = comm->oh;
  r->oh_which = oh->publishes++ & 1;
  struct zcoll__oh_box *b = zcoll__oh_box_of(oh, comm->rank, r->oh_which);
  if (r->oh_big)
    zcoll__onehost_big_publish(r, b);
  else
    memcpy(b->data, r->buf[ZCOLL_BUF_SRC], (size_t)r->desc.count * r->dsize);
  b->fp = r->fp;
  b->desc = r->desc;
  atomic_store_explicit(&b->seq, r->ordinal + 1, memory_order_release);
  zcoll__onehost_knock(comm);
  r->oh_next = 0;
}

/* What the peer's box holds is not this collective: say how, as a channel header would. */
static zcoll_status_t box_differs(const struct zcoll__run *r, int q, const struct zcoll__oh_box *b,
                                  uint64_t seq) {
  struct zcoll__chan_hdr h;
  zcoll__chan_hdr_write(&h, seq - 1, &b->desc, b->fp);
  return zcoll__chan_hdr_check(&h, sizeof(h), q, r->ordinal, &r->desc, r->fp);
}

/* Peer q has not published this collective, but a piece of its has come down the channel:
 * it is in a collective of the executor's where this rank is in a one-host one. (Whatever
 * q sent after publishing this collective would have come after the publication, which
 * this rank would then see: the arrival was read with acquire before the box was.) */
static zcoll_status_t piece_instead(const struct zcoll__run *r, int q) {
  zcoll_comm_t *comm = r->comm;
  const struct zcoll__chan *c = &comm->chans[comm->chan_of[q]];
  const struct zcoll__slot *sl = &c->slots[c->recv_slot];
  if (sl->imm & ZCOLL_IMM_HDR)
    return zcoll__chan_hdr_check(c->recv + (size_t)c->recv_slot * comm->slot_bytes, sl->len, q,
                                 r->ordinal, &r->desc, r->fp);
  if (sl->imm & ZCOLL_IMM_SAME) return zcoll__chan_same_check(c, r->ordinal, &r->desc);
  return zcoll__fail(ZCOLL_ERR_MISMATCH,
                     "collectives out of step: rank %d sent a piece of a collective (its number "
                     "ends in %u) where this rank's collective #%llu, a one-host allreduce, "
                     "should start",
                     q, zcoll__imm_ord(sl->imm), (unsigned long long)r->ordinal);
}

/* Peer q took back its box: its call of this collective failed after publishing. */
static zcoll_status_t withdrawn(const struct zcoll__run *r, int q) {
  return zcoll__fail(ZCOLL_ERR_PEER_FAILED,
                     "rank %d's call of collective #%llu (a one-host allreduce) failed after it "
                     "published its vector (revoked, aborted, timed out or refused there): this "
                     "rank's call fails too",
                     q, (unsigned long long)r->ordinal);
}

/* After combining: did a peer take its box back meanwhile? A rank whose call fails after
 * publishing swaps its box's seq for the withdrawn mark (sequentially consistent, then
 * these loads are too): a rank that reads every box after that fails, and one that read
 * them all before had every vector -- its result is whole, and it keeps it (faults.md).
 * So a call that fails before every rank has published leaves nobody OK. */
static zcoll_status_t still_published(const struct zcoll__run *r) {
  const zcoll_comm_t *comm = r->comm;
  for (int q = 0; q < comm->size; q++) {
    if (q == comm->rank) continue;
    const struct zcoll__oh_box *b = zcoll__oh_box_of(comm->oh, q, r->oh_which);
    if (atomic_load_explicit(&b->seq, memory_order_seq_cst) != r->ordinal + 1)
      return withdrawn(r, q);
  }
  return ZCOLL_OK;
}

void zcoll__onehost_quiesce(zcoll_comm_t *comm) {
  if (!comm->oh) return;
  /* A blocking call's run (one at a time) that published and has not ended. */
  for (const struct zcoll__run *r = comm->active; r; r = r->next) {
    if (r->ops != &zcoll__onehost_run || r->oh_next < 0 || !r->remaining) continue;
    struct zcoll__oh_box *b = zcoll__oh_box_of(comm->oh, comm->rank, r->oh_which);
    uint64_t want = r->ordinal + 1;
    atomic_compare_exchange_strong_explicit(&b->seq, &want, want | ZCOLL_OH_WITHDRAWN,
                                            memory_order_seq_cst, memory_order_relaxed);
    zcoll__onehost_knock(comm);
  }
  zcoll__onehost_big_quiesce(comm);
}

/* Every box read: x_0 op x_1 op ... op x_{p-1}, into the result. */
static void combine(struct zcoll__run *r) {
  zcoll_comm_t *comm = r->comm;
  const struct zcoll__onehost *oh = comm->oh;
  size_t n = (size_t)r->desc.count;
  int p = comm->size, avg = r->op == ZCOLL_AVG ? p : 0;
  char *dst = r->buf[ZCOLL_BUF_DST];
  int64_t t0 = r->started_ns ? zcoll__now_ns() : 0;
  zcoll__reduce(r->dtype, r->op, dst, zcoll__oh_box_of(oh, 0, r->oh_which)->data,
                zcoll__oh_box_of(oh, 1, r->oh_which)->data, n, p == 2 ? avg : 0);
  for (int q = 2; q < p; q++)
    zcoll__reduce(r->dtype, r->op, dst, dst, zcoll__oh_box_of(oh, q, r->oh_which)->data, n,
                  q == p - 1 ? avg : 0);
  if (t0) {
    int64_t t1 = zcoll__now_ns();
    zcoll__trace_event(&comm->trace, ZCOLL_STAGE_REDUCE, t0, t1, -1, n * r->dsize);
    zcoll__trace_event(&comm->trace, ZCOLL_STAGE_COLLECTIVE, r->started_ns, t1, -1, n * r->dsize);
    r->started_ns = 0;
  }
}

static zcoll_status_t run_step(struct zcoll__run *r, int *progress) {
  zcoll_comm_t *comm = r->comm;
  if (r->oh_phase) return zcoll__onehost_big_step(r, progress); /* past the handshake */
  if (r->oh_next < 0) {
    publish(r);
    *progress = 1;
  }
  const struct zcoll__onehost *oh = comm->oh;
  uint64_t want = r->ordinal + 1;
  for (int q = r->oh_next; q < comm->size; q = ++r->oh_next) {
    if (q == comm->rank) continue;
    const struct zcoll__oh_box *b = zcoll__oh_box_of(oh, q, r->oh_which);
    uint64_t seq = atomic_load_explicit(&b->seq, memory_order_acquire);
    if (seq != want) {
      if (seq == (want | ZCOLL_OH_WITHDRAWN)) return withdrawn(r, q);
      /* A box is rewritten two one-host calls later, after this rank's next one: a number
       * past ours means the peer counts its calls differently. */
      if (seq > want) return box_differs(r, q, b, seq);
      if (comm->active == r) {
        const struct zcoll__chan *c = &comm->chans[comm->chan_of[q]];
        if (c->slots[c->recv_slot].arrived &&
            atomic_load_explicit(&b->seq, memory_order_acquire) != want)
          return piece_instead(r, q);
      }
      return ZCOLL_OK;
    }
    if (b->fp != r->fp || memcmp(&b->desc, &r->desc, sizeof(r->desc)) != 0)
      return box_differs(r, q, b, seq);
    *progress = 1;
  }
  if (r->oh_big) return zcoll__onehost_big_step(r, progress); /* every box read: on */
  combine(r);
  zcoll_status_t st = still_published(r);
  if (st != ZCOLL_OK) return st;
  r->remaining = 0;
  *progress = 1;
  return ZCOLL_OK;
}

int zcoll__onehost_ready(const zcoll_comm_t *comm) {
  if (!comm->oh) return 0;
  for (const struct zcoll__run *r = comm->active; r; r = r->next) {
    if (r->ops != &zcoll__onehost_run || r->remaining == 0) continue;
    if (r->oh_phase) {
      if (zcoll__onehost_big_ready(r)) return 1;
      continue;
    }
    if (r->oh_next < 0 || r->oh_next >= comm->size) return 1; /* its step has work */
    const struct zcoll__oh_box *b = zcoll__oh_box_of(comm->oh, r->oh_next, r->oh_which);
    if (atomic_load_explicit(&b->seq, memory_order_acquire) >= r->ordinal + 1) return 1;
  }
  return 0;
}

static int run_waiting_on(const struct zcoll__run *r) {
  return r->oh_next >= 0 && r->oh_next < r->comm->size ? r->oh_next : -1;
}

zcoll_status_t zcoll__onehost_crosscheck(zcoll_comm_t *comm) {
  const struct zcoll__run *r = comm->active;
  if (!comm->oh || !r) return ZCOLL_OK;
  /* The oldest run's number in a box it does not read: the peer went through its mailbox
   * at this collective. (A peer may be further on, legitimately: a larger number.) */
  for (int q = 0; q < comm->size; q++) {
    if (q == comm->rank) continue;
    for (int w = 0; w < 2; w++) {
      if (r->ops == &zcoll__onehost_run && w == r->oh_which) continue; /* the step's */
      const struct zcoll__oh_box *b = zcoll__oh_box_of(comm->oh, q, w);
      uint64_t seq = atomic_load_explicit(&b->seq, memory_order_acquire);
      /* (A large call's handshake that fell back to this very run: expected.) */
      if (seq == r->ordinal + 1 && seq != comm->oh->handshake_seq) return box_differs(r, q, b, seq);
    }
  }
  return ZCOLL_OK;
}

const struct zcoll__run_ops zcoll__onehost_run = {run_init, run_step, run_waiting_on, 1};
