/*
 * executor.c -- runs a schedule over the communicator's channels.
 *
 * Every op is cut into pieces of at most slot_bytes. A piece moves as soon as three
 * things hold: its op is the oldest unfinished one of its kind on its channel (the
 * channel is a FIFO), a slot at the receiver is free (credit), and the pieces of
 * earlier ops it depends on have progressed past it. That last rule, checked per
 * piece rather than per op, is the pipeline: a ring forwards the first chunk of a
 * block while later chunks of the same block are still arriving and being reduced.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/copy.h"
#include "exec.h"
#include "exec_piece.h"
#include "base/log.h"
#include "kernels/op.h"
#include "kernels/reduce.h"
#include "mr.h"
#include "onehost.h"

#define MAX_EVENTS 64

/* A reduce-scatter in place ends with its block moved to the buffer's start (MPI's
 * place), once nothing reads or writes the buffer any more: after its last op. */
static void post_move(const struct zcoll__run *r) {
  const struct zcoll__sched *s = r->s;
  if (s->post_off != s->base[ZCOLL_BUF_DST])
    memmove(r->buf[ZCOLL_BUF_DST], zcoll__at(r, ZCOLL_BUF_DST, s->post_off),
            s->post_count * r->dsize);
}

static void finish_op(struct zcoll__run *r, int i) {
  if (!r->e->finished[i]) {
    r->e->finished[i] = 1;
    if (--r->remaining == 0 && r->s->post_count) post_move(r);
  }
}

/* ---- sending ------------------------------------------------------------------------ */

/* Where a piece we copy before putting it waits for its PUT_DONE, and the registration
 * that covers it (NULL with PUT_ANY). */
static char *stage_buf(const struct zcoll__run *r, const struct zcoll__chan *c, uint32_t slot,
                       struct zcoll_tl_mr **lmr) {
  *lmr = c->staged ? r->comm->reg->send_mr : NULL;
  return c->staged ? c->stage + (size_t)slot * r->comm->slot_bytes
                   : c->small + (size_t)slot * (ZCOLL_CHAN_HDR_BYTES + ZCOLL_CHAN_MERGE_MAX);
}

/* Below this an op's bytes are copied: staging a few KiB costs less than looking the
 * buffer up, and registering every small temporary would churn the cache. */
#define RCACHE_MIN_BYTES ((size_t)16 << 10)

/* The registration an op's source lies in: the application's, else the cache's (which
 * keeps what any collective in flight uses), else NULL (staged). */
static struct zcoll_tl_mr *src_registration(const struct zcoll__run *r, const char *src,
                                            size_t bytes) {
  zcoll_comm_t *comm = r->comm;
  struct zcoll_tl_mr *mr = zcoll__mr_find(comm, src, bytes);
  if (mr || !comm->rcache || bytes < RCACHE_MIN_BYTES) return mr;
  const struct zcoll__run *oldest = comm->active ? comm->active : r;
  return zcoll__rcache_get(comm->rcache, src, bytes, oldest->rc_since);
}

/* This collective's header, alone in a slot: the first piece is too big to carry it. */
static zcoll_status_t put_header(struct zcoll__run *r, int j, struct zcoll__chan *c,
                                 uint32_t slot) {
  zcoll_comm_t *comm = r->comm;
  struct zcoll_tl_mr *lmr;
  char *buf = stage_buf(r, c, slot, &lmr);
  uint64_t fp;
  const struct zcoll__coll_desc *d = zcoll__hdr_out(r, j, &fp);
  zcoll__chan_hdr_write(buf, r->ordinal, d, fp);
  uint64_t cookie = zcoll__cookie(c->imm_set, (uint32_t)r->e->chan[j], slot);
  zcoll_status_t st = zcoll__chan_put(
      comm, c, buf, lmr, c->rkey, c->roff + (uint64_t)slot * comm->slot_bytes, ZCOLL_CHAN_HDR_BYTES,
      zcoll__imm_piece(c->send_seq, r->ordinal, ZCOLL_IMM_HDR, c->imm_set), cookie);
  if (st != ZCOLL_OK) return st;
  c->sent_desc = *d;
  c->sent_valid = 1;
  c->inflight[slot] = (struct zcoll__inflight){1, 0, -1, NULL, 0, 0, ZCOLL_CHAN_HDR_BYTES};
  c->credits--;
  c->send_seq++;
  c->send_slot = zcoll__slot_next(c->send_slot, comm->depth);
  r->e->hdr_sent[j] = 1;
  return ZCOLL_OK;
}

static zcoll_status_t do_sends(struct zcoll__run *r, int j, int *progress) {
  zcoll_comm_t *comm = r->comm;
  const struct zcoll__sched *s = r->s;
  struct zcoll__chan *c = &comm->chans[r->e->chan[j]];
  int *cur = &r->e->send_cur[j];
  while (*cur < s->peer_recvs[j]) {
    /* A grant from the peer waiting at the head of its channel: take it before the
     * next piece, which it may send straight to the result. */
    struct zcoll__slot *head = &c->slots[c->recv_slot];
    if (head->arrived && zcoll__imm_kind(head->imm) == ZCOLL_IMM_GRANT) {
      int wait;
      zcoll_status_t st = zcoll__grants_take(r, j, c, head, &wait);
      if (st != ZCOLL_OK) return st;
      if (!wait) {
        *progress = 1;
        continue;
      }
    }
    int i = s->peer_ops[*cur];
    const struct zcoll__sop *o = &s->ops[i];
    size_t a = r->e->issued[i], b = zcoll__piece_end(r, o, a);
    uint32_t slot = c->send_slot;
    if (!c->credits || c->inflight[slot].busy) break;
    size_t len = (b - a) * r->wsize;
    int first = !r->e->hdr_sent[j];
    /* A collective described as the last header put here needs no header of its own. */
    int same = first && c->sent_valid && !memcmp(&c->sent_desc, &r->desc, sizeof(r->desc));
    int hdr = first && !same;
    if (hdr && !zcoll__chan_hdr_merges(len, comm->slot_bytes)) {
      zcoll_status_t st = put_header(r, j, c, slot);
      if (st != ZCOLL_OK) return st;
      *progress = 1;
      continue;
    }
    if (!zcoll__deps_ready(r, o, a, b)) break;
    const char *src = zcoll__at(r, o->buf, a);
    /* Sources inside a user registration go out as they are (decided per op, so that
     * an op's pieces are released in order); others through staging. */
    /* Data that leaves changed (exec_piece.h) goes through staging, never as it is. */
    int changed = zcoll__piece_changed(r, o);
    if (a == o->off && c->staged)
      r->e->src_mr[i] = o->count && !changed ? src_registration(r, src, o->count * r->dsize) : NULL;
    struct zcoll_tl_mr *lmr = c->staged ? r->e->src_mr[i] : NULL;
    /* Granted: this piece goes into the peer's result, not a slot (never the first,
     * which says what the collective is). */
    int direct = !first && len && r->e->gfrom[i] <= a && b <= r->e->gto[i] && r->e->gkey[j];
    /* A piece that carries the header is copied behind it, so it is staged too. */
    int stage = (c->staged && !lmr) || hdr || changed;
    size_t off = hdr ? ZCOLL_CHAN_HDR_BYTES : 0;
    int64_t t0 = comm->trace.f ? zcoll__now_ns() : 0;
    if (stage) {
      char *staging = stage_buf(r, c, slot, &lmr);
      if (changed && !c->staged) staging = c->stage + (size_t)slot * comm->slot_bytes;
      if (hdr) {
        uint64_t fp;
        const struct zcoll__coll_desc *d = zcoll__hdr_out(r, j, &fp);
        zcoll__chan_hdr_write(staging, r->ordinal, d, fp);
        c->sent_desc = *d;
        c->sent_valid = 1;
      }
      zcoll__piece_out(r, o, staging + off, src, b - a);
      src = staging;
      if (t0) {
        int64_t t1 = zcoll__now_ns();
        zcoll__trace_event(&comm->trace, ZCOLL_STAGE_COPY_IN, t0, t1, c->peer, len);
        t0 = t1;
      }
    }
    uint32_t imm = zcoll__imm_piece(c->send_seq, r->ordinal,
                                    hdr      ? ZCOLL_IMM_HDR
                                    : same   ? ZCOLL_IMM_SAME
                                    : direct ? ZCOLL_IMM_DIRECT
                                             : 0,
                                    c->imm_set);
    uint64_t cookie = zcoll__cookie(c->imm_set, (uint32_t)r->e->chan[j], slot);
    zcoll_status_t st = direct ? zcoll__chan_put(comm, c, src, lmr, r->e->gkey[j],
                                                 r->e->gbase[j] + (uint64_t)a * r->dsize, len, imm,
                                                 cookie)
                               : zcoll__chan_put(comm, c, src, lmr, c->rkey,
                                                 c->roff + (uint64_t)slot * comm->slot_bytes,
                                                 len + off, imm, cookie);
    if (st != ZCOLL_OK) return st;
    c->bytes_out += len;
    r->e->hdr_sent[j] = 1;
    int last = b == zcoll__op_end(o);
    /* A staged piece's source is free once copied; a direct one once PUT_DONE says so. */
    c->inflight[slot] = (struct zcoll__inflight){1, 0,  stage ? -1 : i, stage ? NULL : r,
                                                 b, t0, (uint32_t)len};
    c->credits--;
    c->send_seq++;
    c->send_slot = zcoll__slot_next(c->send_slot, comm->depth);
    r->e->issued[i] = b;
    if (stage) r->e->pos[i] = b;
    *progress = 1;
    if (!last) continue;
    (*cur)++;
    if (stage) finish_op(r, i);
  }
  return ZCOLL_OK;
}

static void put_done(zcoll_comm_t *comm, uint64_t cookie) {
  struct zcoll__chan *c = &comm->chans[zcoll__cookie_chan(cookie)];
  uint32_t slot = (uint32_t)cookie; /* the cookie carries the slot, not the 64-bit seq */
  if (slot < (uint32_t)comm->depth) c->inflight[slot].done = 1;
  /* Sources are released in order, so an op's position is a prefix. */
  while (c->tail_seq != c->send_seq) {
    struct zcoll__inflight *f = &c->inflight[c->tail_slot];
    if (!f->done) break;
    if (f->issued_ns)
      zcoll__trace_event(&comm->trace, ZCOLL_STAGE_TRANSFER, f->issued_ns, zcoll__now_ns(), c->peer,
                         f->bytes);
    struct zcoll__run *r = f->run;
    if (f->op >= 0 && r) {
      r->e->pos[f->op] = f->end;
      if (f->end == zcoll__op_end(&r->s->ops[f->op]) && r->e->issued[f->op] == f->end)
        finish_op(r, f->op);
    }
    f->busy = 0;
    c->tail_seq++;
    c->tail_slot = zcoll__slot_next(c->tail_slot, comm->depth);
  }
}

/* ---- receiving ---------------------------------------------------------------------- */

/* The first piece of this collective from the peer: its header must say that the peer
 * is at the same collective and calls it alike, before any of its data is used. */
static zcoll_status_t take_header(struct zcoll__run *r, int j, struct zcoll__chan *c,
                                  struct zcoll__slot *sl, size_t first_len, int *consumed) {
  zcoll_comm_t *comm = r->comm;
  uint32_t slot = c->recv_slot;
  *consumed = 0;
  if (sl->imm & ZCOLL_IMM_SAME) {
    if (!zcoll__chan_seen_same(c, &r->desc)) /* out of line: it only formats the news */
      return zcoll__chan_same_check(c, r->ordinal, &r->desc);
    /* Checked: from here on it is a piece like the others (its payload may wait for
     * dependencies, and a SAME still on it would then be one too many). The ordinal's low
     * bits are checked with the payload, as on every piece. */
    sl->imm &= ~ZCOLL_IMM_SAME;
    r->e->hdr_seen[j] = 1;
    return ZCOLL_OK;
  }
  if (!(sl->imm & ZCOLL_IMM_HDR))
    return zcoll__fail(ZCOLL_ERR_MISMATCH,
                       "collectives out of step: rank %d sent a piece of a collective already "
                       "under way (its number ends in %u) where this rank's collective #%llu "
                       "should start (a rank skipped a call, or made one more)",
                       c->peer, zcoll__imm_ord(sl->imm), (unsigned long long)r->ordinal);
  uint64_t fp;
  const struct zcoll__coll_desc *d = zcoll__hdr_in(r, j, &fp);
  zcoll_status_t st = zcoll__chan_hdr_check(c->recv + (size_t)slot * comm->slot_bytes, sl->len,
                                            c->peer, r->ordinal, d, fp);
  if (st != ZCOLL_OK) return st;
  r->e->hdr_seen[j] = 1;
  c->seen_desc = *d;
  c->seen_valid = 1;
  sl->data_off = ZCOLL_CHAN_HDR_BYTES;
  if (zcoll__chan_hdr_merges(first_len, comm->slot_bytes)) return ZCOLL_OK;
  if (sl->len != ZCOLL_CHAN_HDR_BYTES)
    return zcoll__fail(ZCOLL_ERR_MISMATCH,
                       "rank %d sent a header of %u bytes where one of %u was due (protocol "
                       "mismatch)",
                       c->peer, sl->len, ZCOLL_CHAN_HDR_BYTES);
  *consumed = 1;
  return zcoll__chan_consume(comm, c, sl);
}

static zcoll_status_t do_recvs(struct zcoll__run *r, int j, int *progress) {
  zcoll_comm_t *comm = r->comm;
  const struct zcoll__sched *s = r->s;
  struct zcoll__chan *c = &comm->chans[r->e->chan[j]];
  int *cur = &r->e->recv_cur[j];
  int end = s->peer_sends[j + 1];
  while (*cur < end) {
    int i = s->peer_ops[*cur];
    const struct zcoll__sop *o = &s->ops[i];
    size_t a = r->e->pos[i], b = zcoll__piece_end(r, o, a);
    uint32_t slot = c->recv_slot;
    struct zcoll__slot *sl = &c->slots[slot];
    if (!sl->arrived) break;
    if (zcoll__imm_kind(sl->imm) == ZCOLL_IMM_GRANT) { /* for our sends to the peer */
      int wait;
      zcoll_status_t st = zcoll__grants_take(r, j, c, sl, &wait);
      if (st != ZCOLL_OK) return st;
      if (wait) break;
      *progress = 1;
      continue;
    }
    size_t len = (b - a) * r->wsize;
    if (!r->e->hdr_seen[j]) {
      int consumed;
      zcoll_status_t st = take_header(r, j, c, sl, len, &consumed);
      if (st != ZCOLL_OK) return st;
      if (consumed) {
        r->e->awaited_ns[j] = 0;
        *progress = 1;
        continue;
      }
    }
    if (!zcoll__deps_ready(r, o, a, b)) break;
    if (zcoll__imm_ord(sl->imm) != ((uint32_t)r->ordinal & ZCOLL_IMM_ORD_MASK))
      return zcoll__fail(ZCOLL_ERR_MISMATCH,
                         "collectives out of step: rank %d sent a piece of its collective whose "
                         "number ends in %u (mod %u) where this rank's collective #%llu was due "
                         "(a rank skipped a call, or made one more)",
                         c->peer, zcoll__imm_ord(sl->imm), ZCOLL_IMM_ORD_MASK + 1,
                         (unsigned long long)r->ordinal);
    if ((sl->imm & ZCOLL_IMM_EXT) &&
        (o->kind != ZCOLL_SOP_RECV_COPY || r->e->gfrom[i] > a || b > r->e->gto[i]))
      return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                         "protocol violation by rank %d: it wrote piece %u of collective #%llu "
                         "straight into this rank's result, which no grant allowed",
                         c->peer, sl->imm & ZCOLL_IMM_SEQ_MASK, (unsigned long long)r->ordinal);
    if (!(sl->imm & ZCOLL_IMM_HDR) != !sl->data_off || (sl->imm & ZCOLL_IMM_SAME) ||
        sl->len != len + sl->data_off)
      return zcoll__fail(ZCOLL_ERR_MISMATCH,
                         "rank %d's collective #%llu does not match this rank's: a piece of %u "
                         "bytes (collective number ending in %u) where %zu bytes were due",
                         c->peer, (unsigned long long)r->ordinal, sl->len - sl->data_off,
                         zcoll__imm_ord(sl->imm), len);
    const char *data = c->recv + (size_t)slot * comm->slot_bytes + sl->data_off;
    char *dst = zcoll__at(r, o->buf, a);
    int64_t t0 = comm->trace.f ? zcoll__now_ns() : 0;
    if (o->kind == ZCOLL_SOP_RECV_REDUCE) {
      int divisor = o->final && r->op == ZCOLL_AVG ? s->size : 0;
      zcoll_status_t st0 = zcoll__piece_reduce(r, o, dst, zcoll__at(r, o->acc, a), data, b - a,
                                               divisor);
      if (st0 != ZCOLL_OK)
        return st0; /* before this piece counts: nothing made from it leaves this rank */
    } else if (sl->placed) {
      comm->pieces_placed++;
      t0 = 0; /* nothing was done here: no stage to trace */
    } else {
      zcoll__piece_in(r, dst, data, b - a);
      comm->pieces_copied++;
    }
    if (t0)
      zcoll__trace_event(&comm->trace,
                         o->kind == ZCOLL_SOP_RECV_REDUCE ? ZCOLL_STAGE_REDUCE
                                                          : ZCOLL_STAGE_COPY_OUT,
                         t0, zcoll__now_ns(), c->peer, len);
    r->e->pos[i] = b;
    r->e->awaited_ns[j] = 0;
    *progress = 1;
    zcoll_status_t st = zcoll__chan_consume(comm, c, sl);
    if (st != ZCOLL_OK) return st;
    if (b == zcoll__op_end(o)) {
      finish_op(r, i);
      (*cur)++;
    }
  }
  return ZCOLL_OK;
}

/* An event's peer, numbered by the transport instance (the family's first communicator),
 * as a rank of comm; -1 if not a member. */
static int rank_of(const zcoll_comm_t *comm, int peer) {
  if (!comm->crank_of) return peer >= 0 && peer < comm->size ? peer : -1;
  return peer >= 0 && peer < comm->fam->size ? comm->crank_of[peer] : -1;
}

static zcoll_status_t arrived(zcoll_comm_t *comm, const struct zcoll_tl_event *ev) {
  int q = rank_of(comm, ev->peer), ci = q >= 0 ? comm->chan_of[q] : -1;
  if (ci < 0)
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "a notification came from rank %d, not a peer",
                       q >= 0 ? q : ev->peer);
  return zcoll__chan_arrived(&comm->chans[ci], comm->depth, comm->slot_bytes, ev);
}

/* A notification on comm's point-to-point set (channel.h: sets in pairs): booked on the
 * peer's p2p channel, whose pieces lib/p2p reads from its slots. 0: not of that set. */
static int p2p_event(zcoll_comm_t *comm, const struct zcoll_tl_event *ev, zcoll_status_t *st) {
  if (!comm->p2p_chans) return 0;
  if (ev->kind == ZCOLL_TL_EV_PUT_DONE) {
    if (zcoll__cookie_set(ev->cookie) != (uint32_t)ZCOLL_CHAN_P2P_SET(comm->set)) return 0;
    uint32_t ci = zcoll__cookie_chan(ev->cookie);
    if (ev->status != ZCOLL_OK)
      *st = zcoll__fail(ev->status, "a message put to rank %d failed", rank_of(comm, ev->peer));
    else if (!(ev->cookie & ZCOLL_COOKIE_CREDIT) && ci < (uint32_t)comm->nchans)
      zcoll__chan_sent_done(&comm->p2p_chans[ci], (uint32_t)ev->cookie, comm->p2p_depth);
    return 1;
  }
  if (zcoll__imm_set(ev->imm) != (uint32_t)ZCOLL_CHAN_P2P_SET(comm->set)) return 0;
  if ((ev->imm & ZCOLL_IMM_CREDIT) && zcoll__imm_gen(ev->imm) != (uint32_t)comm->set_gen)
    return 1; /* an older communicator's, on the set before us (channel.h) */
  int q = rank_of(comm, ev->peer), ci = q >= 0 ? comm->chan_of[q] : -1;
  comm->p2p_news = 1;
  *st = ci < 0 ? zcoll__fail(ZCOLL_ERR_TRANSPORT, "a message came from rank %d, not a peer",
                             q >= 0 ? q : ev->peer)
               : zcoll__chan_arrived(&comm->p2p_chans[ci], comm->p2p_depth, comm->slot_bytes, ev);
  return 1;
}

static zcoll_status_t lost(zcoll_comm_t *comm, int peer, const char *tl) {
  int q = rank_of(comm, peer);
  if (q < 0) return ZCOLL_OK; /* a shared instance's peer that is not ours */
  return zcoll__fail(ZCOLL_ERR_PEER_FAILED, "rank %d died (%s saw its process end)", q, tl);
}

/* Is this arrival comm's: its set, and for a credit return the set's generation
 * (family.c routes by the same rule)? */
static inline int mine(const zcoll_comm_t *comm, const struct zcoll_tl_event *ev) {
  return zcoll__imm_set(ev->imm) == (uint32_t)comm->set &&
         (!(ev->imm & ZCOLL_IMM_CREDIT) || zcoll__imm_gen(ev->imm) == (uint32_t)comm->set_gen);
}

static zcoll_status_t pump_one(zcoll_comm_t *comm, int k, int *progress) {
  struct zcoll_tl_event ev[MAX_EVENTS];
  struct zcoll__tli *t = &comm->tlis[k];
  /* Alone in its family, with nothing routed to it: the instance is this communicator's,
   * polled directly (the 8-byte path notices a call more), and only a late credit return
   * of a destroyed sibling can be another's -- dropped here as the family would. */
  const int direct = !zcoll__family_locks(comm->fam) && !comm->inbox.q.len;
  for (;;) {
    int n = 0;
    zcoll_status_t st = direct ? t->ops->poll(t->tl, ev, MAX_EVENTS, &n)
                               : zcoll__family_poll(comm, k, ev, MAX_EVENTS, &n);
    if (st != ZCOLL_OK) return st;
    for (int i = 0; i < n; i++) {
      if (ev[i].kind == ZCOLL_TL_EV_ARRIVED) {
        if (!mine(comm, &ev[i])) { /* a message's, or nobody's (family.c routes alike) */
          if (p2p_event(comm, &ev[i], &st) && st != ZCOLL_OK) return st;
          continue;
        }
        if ((st = arrived(comm, &ev[i])) != ZCOLL_OK) return st;
      } else if (ev[i].kind == ZCOLL_TL_EV_PEER_LOST) {
        if ((st = lost(comm, ev[i].peer, comm->tlis[k].ops->name)) != ZCOLL_OK) return st;
      } else if (p2p_event(comm, &ev[i], &st)) {
        if (st != ZCOLL_OK) return st;
      } else {
        if (ev[i].status != ZCOLL_OK)
          return zcoll__fail(ev[i].status, "a put to rank %d failed", rank_of(comm, ev[i].peer));
        if (!(ev[i].cookie & ZCOLL_COOKIE_CREDIT)) put_done(comm, ev[i].cookie);
      }
    }
    if (n) *progress = 1;
    if (n < MAX_EVENTS) return ZCOLL_OK;
  }
}

static zcoll_status_t pump(zcoll_comm_t *comm, int *progress) {
  /* A member lost, as another member of the family's thread heard. */
  int gone = atomic_load_explicit(&comm->inbox.lost, memory_order_relaxed);
  if (gone < 0) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for a notification");
  if (gone > 0) {
    zcoll_status_t st = lost(comm, gone - 1, comm->tlis[0].ops->name);
    if (st != ZCOLL_OK) return st;
  }
  for (int k = 0; k < comm->ntlis; k++) {
    zcoll_status_t st = pump_one(comm, k, progress);
    if (st != ZCOLL_OK) return st;
  }
  return comm->p2p_pump ? comm->p2p_pump(comm, progress) : ZCOLL_OK;
}

static zcoll_status_t do_local(struct zcoll__run *r, int *progress) {
  const struct zcoll__sched *s = r->s;
  while (r->local_cur < s->nlocal) {
    int i = s->local_ops[r->local_cur];
    const struct zcoll__sop *o = &s->ops[i];
    size_t a = r->e->pos[i], b = zcoll__piece_end(r, o, a);
    if (!zcoll__deps_ready(r, o, a, b)) break;
    char *dst = zcoll__at(r, o->buf, a);
    const char *src = zcoll__at(r, o->acc, a);
    zcoll__piece_local(r, o, dst, src, b - a);
    r->e->pos[i] = b;
    *progress = 1;
    if (b == zcoll__op_end(o)) {
      finish_op(r, i);
      r->local_cur++;
    }
  }
  return ZCOLL_OK;
}

static zcoll_status_t run_step(struct zcoll__run *r, uint8_t *block, int *progress) {
  if (r->ops->step) return r->ops->step(r, progress); /* a run that is no schedule's */
  const struct zcoll__sched *s = r->s;
  zcoll_status_t st = ZCOLL_OK;
  for (int j = 0; j < s->npeers && st == ZCOLL_OK; j++) {
    if (!block) { /* the checks first: a call per peer and step shows at 8 bytes */
      if (r->e->recv_cur[j] < s->peer_sends[j + 1]) st = do_recvs(r, j, progress);
      if (st == ZCOLL_OK && r->grant) st = zcoll__grants_give(r, j, progress);
      if (st == ZCOLL_OK && r->e->send_cur[j] < s->peer_recvs[j]) st = do_sends(r, j, progress);
      continue;
    }
    /* A channel is a FIFO: this run's pieces go after those of every earlier run. */
    uint8_t *b = &block[r->e->chan[j]];
    if (!(*b & ZCOLL_BLOCK_RECV)) st = do_recvs(r, j, progress);
    /* Grants first: the peer's pieces still to come may then skip the copy. */
    if (st == ZCOLL_OK && r->grant && !(*b & ZCOLL_BLOCK_SEND))
      st = zcoll__grants_give(r, j, progress);
    if (st == ZCOLL_OK && !(*b & ZCOLL_BLOCK_SEND)) st = do_sends(r, j, progress);
    if (r->e->recv_cur[j] < s->peer_sends[j + 1]) *b |= ZCOLL_BLOCK_RECV;
    if (r->e->send_cur[j] < s->peer_recvs[j]) *b |= ZCOLL_BLOCK_SEND;
  }
  if (st != ZCOLL_OK) return st;
  if (r->local_cur < s->nlocal) do_local(r, progress);
  if (r->remaining == 0 && r->ngkeys) zcoll__run_drop_grants(r);
  if (r->remaining == 0 && r->started_ns)
    zcoll__trace_event(&r->comm->trace, ZCOLL_STAGE_COLLECTIVE, r->started_ns, zcoll__now_ns(), -1,
                       s->count * r->dsize);
  return ZCOLL_OK;
}

/* Here rather than in exec_queue.c: with pump and run_step in one file the compiler
 * inlines them, which the 8-byte hot path notices. */
zcoll_status_t zcoll__progress(zcoll_comm_t *comm, int *progress) {
  zcoll_status_t st = pump(comm, progress);
  if (st != ZCOLL_OK) return st;
  struct zcoll__run *r = comm->active;
  if (!r) return ZCOLL_OK;
  uint8_t *block = NULL;
  if (r->next && comm->nchans) { /* several in flight: keep each channel's order */
    if (comm->chan_block_cap < comm->nchans) {
      uint8_t *b = realloc(comm->chan_block, (size_t)comm->nchans);
      if (!b) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for the executor");
      comm->chan_block = b;
      comm->chan_block_cap = comm->nchans;
    }
    block = comm->chan_block;
    memset(block, 0, (size_t)comm->nchans);
  }
  int done = 0;
  for (; r; r = r->next) {
    /* A fenced run waits for those before it; the runs after it wait behind it. */
    if (r->fence && r != comm->active) break;
    if ((st = run_step(r, block, progress)) != ZCOLL_OK) return st;
    done |= r->remaining == 0;
  }
  if (done) zcoll__reap(comm);
  return ZCOLL_OK;
}

/* A blocking call. With nothing else in flight (the common case) it runs its own loop,
 * as tight as before requests existed; otherwise it queues behind the others. */
zcoll_status_t zcoll__execute(zcoll_comm_t *comm, const struct zcoll__sched *s,
                              const struct zcoll__coll_desc *desc, const void *src, void *dst) {
  /* The number is taken whatever happens next: ranks count calls, not successes. */
  uint64_t ordinal = comm->ordinal++;
  struct zcoll__run r;
  const struct zcoll__exec_state *e = comm->exec;
  zcoll_status_t st = ZCOLL_OK; /* the scratch grows on the first calls only */
  if (!e || s->nops > e->cap_ops || s->npeers > e->cap_peers || comm->nchans > e->cap_chans)
    st = zcoll__exec_reserve(&comm->exec, s->nops, s->npeers, comm->nchans);
  const struct zcoll__run_ops *ops = zcoll__run_ops_of(comm, s);
  if (st == ZCOLL_OK && !ops->mailboxes) /* the mailboxes see it (onehost.c) */
    st = zcoll__news_at_start(comm);
  if (st == ZCOLL_OK && (comm->active || comm->progress.on)) {
    st = zcoll__run_start(comm, &r, s, comm->exec, desc, ordinal, src, dst);
    return st == ZCOLL_OK ? zcoll__run_wait(comm, &r) : zcoll__comm_break(comm, st);
  }
  if (st == ZCOLL_OK) st = zcoll__run_init(comm, &r, s, comm->exec, desc, ordinal, src, dst);
  /* Whatever fails from here on, the peers are in this collective: break and tell them. */
  if (st != ZCOLL_OK) return zcoll__comm_break(comm, st);
  /* A small one is stamped from the clock reads of its waits (flight.h). */
  int lazy = desc->count * r.dsize <= ZCOLL_FLIGHT_LAZY_BYTES;
  r.fl = zcoll__flight_start(&comm->flight, ordinal, desc, lazy);
  comm->active = comm->active_tail = &r; /* for the placement hook */
  struct zcoll__idle id = {0, 0, 0, 0, 0};
  /* A step that moved nothing moves nothing again until an event comes (an arrival, a
   * credit, a put done): while waiting, only poll -- a shorter loop notices the arrival
   * sooner. */
  int step_idle = 0;
  /* A one-host run's news is in the peers' mailboxes, not in events: it always looks, and
   * looks before its first poll (it may end there, with nothing to poll for). Every later
   * look polls: a wait that slept must disarm the transport, or the peers' every
   * publication would knock with a system call. */
  int first_look = ops->mailboxes;
  while (r.remaining > 0) {
    int progress = 0;
    if (!first_look && (st = pump(comm, &progress)) != ZCOLL_OK) break;
    first_look = 0;
    if (progress || !step_idle) {
      int moved = 0;
      if ((st = run_step(&r, NULL, &moved)) != ZCOLL_OK) break;
      step_idle = !moved && !ops->mailboxes;
      progress |= moved;
    }
    if (progress) {
      zcoll__idle_done(comm, &id);
      continue;
    }
    if ((st = zcoll__idle_wait(comm, &r, &id)) != ZCOLL_OK) break;
  }
  if (st != ZCOLL_OK) return zcoll__comm_break(comm, st);
  comm->active = comm->active_tail = NULL;
  if (r.ngkeys) zcoll__run_drop_grants(&r);
  r.status = ZCOLL_OK;
  zcoll__mem_unhold(&r.hold);
  zcoll__flight_end(r.fl, ordinal, ZCOLL_OK, lazy && id.seen_ns ? id.seen_ns / 1000 : 0);
  if (!s->nops && r.started_ns) /* nothing to move: run_step never saw it end */
    zcoll__trace_event(&comm->trace, ZCOLL_STAGE_COLLECTIVE, r.started_ns, zcoll__now_ns(), -1, 0);
  return ZCOLL_OK;
}

zcoll_status_t zcoll__drain(zcoll_comm_t *comm) {
  struct zcoll__idle id = {0};
  for (;;) {
    int busy = 0, progress = 0;
    for (int c = 0; c < comm->nchans; c++)
      busy |= comm->chans[c].tail_seq != comm->chans[c].send_seq ||
              (comm->p2p_chans && comm->p2p_chans[c].tail_seq != comm->p2p_chans[c].send_seq);
    if (!busy) return ZCOLL_OK;
    zcoll_status_t st = pump(comm, &progress);
    if (st == ZCOLL_OK && !progress) st = zcoll__idle_wait(comm, NULL, &id);
    if (progress) zcoll__idle_done(comm, &id);
    if (st != ZCOLL_OK) return st;
  }
}
