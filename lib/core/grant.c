/*
 * grant.c -- zero-copy results over transports where the writer places the data (RDMA):
 * a receiver tells a sender which ranges it may write straight into the receiver's
 * result (the protocol is in channel.h).
 *
 * Why grants rather than keys exchanged once: the receiver alone knows when a range of
 * its result is free to be overwritten -- its own ops may still read or write it (a ring
 * sends a block of the result before the allgather brings the block back), and that
 * changes from start to start as pieces race. So the receiver grants a range once its
 * dependencies have progressed over all of it, in the channel, in the order of its
 * receives; the sender uses a grant only for the collective it names (ordinal and
 * fingerprint) and only for pieces it has not issued yet. Nothing waits for a grant:
 * without one a piece takes a slot and is copied, as before.
 */
#include <stdint.h>
#include <string.h>

#include "exec.h"
#include "base/log.h"

/* How far from `a` the receive o may be granted now: the end of the longest run of whole
 * pieces over which the ops it depends on have progressed (readiness only grows with the
 * range's end, so a binary search over the pieces finds it). */
static size_t ready_end(const struct zcoll__run *r, const struct zcoll__sop *o, size_t a) {
  size_t end = zcoll__op_end(o);
  if (zcoll__deps_ready(r, o, a, end)) return end;
  size_t lo = 0, hi = (end - a + r->chunk - 1) / r->chunk; /* pieces: lo ready, hi not */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (zcoll__deps_ready(r, o, a, a + mid * r->chunk))
      lo = mid;
    else
      hi = mid;
  }
  return a + lo * r->chunk;
}

zcoll_status_t zcoll__grants_give(struct zcoll__run *r, int j, int *progress) {
  zcoll_comm_t *comm = r->comm;
  const struct zcoll__sched *s = r->s;
  struct zcoll__exec_state *e = r->e;
  struct zcoll__chan *c = &comm->chans[e->chan[j]];
  int last = s->peer_sends[j + 1];
  if (!c->staged) { /* grants go over the instance the result is registered with */
    e->grant_cur[j] = last;
    return ZCOLL_OK;
  }
  while (e->grant_cur[j] < last) {
    int k = e->grant_cur[j];
    int i = s->peer_ops[k];
    const struct zcoll__sop *o = &s->ops[i];
    size_t end = zcoll__op_end(o);
    /* From where this rank is, or where its last grant of the op ended. */
    size_t a = e->gfrom[i] == SIZE_MAX ? e->pos[i] : e->gto[i];
    /* Copies of two pieces or more: for one the grant costs a message as much as the
     * copy it saves. */
    /* The peer writes at its grant's base + the coordinate: a result starting at 0. */
    if (o->kind != ZCOLL_SOP_RECV_COPY || o->buf != ZCOLL_BUF_DST || s->base[ZCOLL_BUF_DST] ||
        a >= end || end - a <= r->chunk) {
      e->grant_cur[j]++;
      continue;
    }
    /* Nothing of ours may still read or write a granted range: the peer writes it any
     * time. What is ready goes now if it is worth a message -- all the rest, or at least
     * two pieces of it (in place, a range frees up as this rank sends it, and waiting for
     * more is too late: the peer answers each piece as it comes); later grants extend it.
     * Where all is ready at once (out of place, most in-place rings) that is one grant. */
    size_t b = ready_end(r, o, a);
    if (b != end && b - a < 2 * r->chunk) break;
    uint32_t slot = c->send_slot;
    if (!c->credits || c->inflight[slot].busy) break;
    if (!r->grant->mr) return ZCOLL_OK; /* revoked */
    char *buf = c->stage + (size_t)slot * comm->slot_bytes;
    struct zcoll__chan_grant g = {r->ordinal,      r->fp,         a,
                                  b - a,           r->grant_base, (uint32_t)(k - s->peer_recvs[j]),
                                  r->grant->keylen};
    memcpy(buf, &g, sizeof(g));
    memcpy(buf + sizeof(g), r->grant->key, r->grant->keylen);
    size_t len = sizeof(g) + r->grant->keylen;
    uint64_t cookie = zcoll__cookie(c->imm_set, (uint32_t)e->chan[j], slot);
    zcoll_status_t st = zcoll__chan_put(
        comm, c, buf, comm->reg->send_mr, c->rkey, c->roff + (uint64_t)slot * comm->slot_bytes, len,
        zcoll__imm_piece(c->send_seq, r->ordinal, ZCOLL_IMM_GRANT, c->imm_set), cookie);
    if (st != ZCOLL_OK) return st;
    c->inflight[slot] = (struct zcoll__inflight){1, 0, -1, NULL, 0, 0, (uint32_t)len};
    c->credits--;
    c->send_seq++;
    c->send_slot = zcoll__slot_next(c->send_slot, comm->depth);
    if (e->gfrom[i] == SIZE_MAX) e->gfrom[i] = a;
    e->gto[i] = b;
    if (b == end) e->grant_cur[j]++;
    *progress = 1;
  }
  return ZCOLL_OK;
}

static zcoll_status_t bad_grant(const struct zcoll__run *r, int peer, const char *what) {
  return zcoll__fail(ZCOLL_ERR_MISMATCH,
                     "rank %d granted a range of its result for collective #%llu that %s "
                     "(protocol mismatch: different zcoll versions?)",
                     peer, (unsigned long long)r->ordinal, what);
}

zcoll_status_t zcoll__grants_take(struct zcoll__run *r, int j, struct zcoll__chan *c,
                                  struct zcoll__slot *sl, int *wait) {
  zcoll_comm_t *comm = r->comm;
  const struct zcoll__sched *s = r->s;
  struct zcoll__exec_state *e = r->e;
  struct zcoll__chan_grant g;
  const char *buf = c->recv + (size_t)c->recv_slot * comm->slot_bytes;
  memcpy(&g, buf, sizeof(g)); /* chan_arrived checked the length */
  *wait = 0;
  if (g.ordinal > r->ordinal) { /* a later collective's: it takes it */
    *wait = 1;
    return ZCOLL_OK;
  }
  /* A grant for a collective this rank calls differently is not used, and not an error
   * here: the peer's header says what differs, in words (grants may precede it). */
  if (g.ordinal == r->ordinal && g.fingerprint == r->fp) {
    if (!c->staged) return bad_grant(r, c->peer, "came over a transport without grants");
    if (g.keylen != sl->len - sizeof(g)) return bad_grant(r, c->peer, "came with a torn key");
    int nsends = s->peer_recvs[j] - s->peer_sends[j];
    if (g.pair >= (uint32_t)nsends) return bad_grant(r, c->peer, "this rank does not send");
    int i = s->peer_ops[s->peer_sends[j] + (int)g.pair];
    const struct zcoll__sop *o = &s->ops[i];
    size_t end = zcoll__op_end(o);
    /* The range must lie in the op, start where one of its pieces does, and end where
     * one does or at the op's end. */
    if (g.off < o->off || g.off >= end || !g.count || g.count > end - g.off ||
        (g.off - o->off) % r->chunk != 0 || (g.off + g.count != end && g.count % r->chunk != 0))
      return bad_grant(r, c->peer, "is not a range of what this rank sends it");
    /* The first grant of an op: pieces already issued went to the slots, and the receiver
     * granted from where it was, so none not yet issued lies before it. A later one
     * extends the range where the last ended. */
    int granted = e->gfrom[i] != SIZE_MAX;
    if (granted ? g.off == e->gto[i] : e->issued[i] < end && g.off <= e->issued[i]) {
      if (!e->gkey[j]) {
        zcoll_status_t st = c->ops->rkey_unpack(c->ep, buf + sizeof(g), g.keylen, &e->gkey[j]);
        if (st != ZCOLL_OK) return st;
        r->ngkeys++;
        e->gbase[j] = g.base;
      }
      if (!granted) e->gfrom[i] = g.off;
      e->gto[i] = g.off + g.count;
    }
  }
  /* Used, or a stale one from a collective that finished without it. */
  return zcoll__chan_consume(comm, c, sl);
}

void zcoll__run_drop_grants(struct zcoll__run *r) {
  for (int j = 0; j < r->s->npeers && r->ngkeys; j++)
    if (r->e->gkey[j]) {
      r->comm->chans[r->e->chan[j]].ops->rkey_release(r->e->gkey[j]);
      r->e->gkey[j] = NULL;
      r->ngkeys--;
    }
  r->ngkeys = 0;
}

int zcoll__grant_open(zcoll_comm_t *comm, void *addr, size_t len, struct zcoll__grant_src *g) {
  if (!comm->reg) return 0; /* the others place data themselves, or copy from anywhere */
  const struct zcoll_tl_ops *ops = comm->reg->ops;
  if (!(ops->caps & ZCOLL_TL_CAP_REMOTE_USER) || ops->set_placement ||
      comm->slot_bytes < ZCOLL_GRANT_MAX_BYTES)
    return 0;
  struct zcoll_tl_mr *mr;
  if (ops->mem_reg(comm->reg->tl, addr, len, 1, &mr) != ZCOLL_OK) {
    zcoll_log_debug("results into %zu bytes at %p will be copied: %s", len, addr,
                    zcoll__last_error());
    return 0;
  }
  size_t klen = sizeof(g->key);
  if (ops->rkey_pack(mr, g->key, &klen) != ZCOLL_OK) {
    ops->mem_dereg(mr);
    return 0;
  }
  g->mr = mr;
  g->keylen = (uint32_t)klen;
  return 1;
}

void zcoll__grant_revoke(zcoll_comm_t *comm, struct zcoll__grant_src *g) {
  if (!g || !g->mr) return;
  comm->reg->ops->mem_dereg(g->mr);
  g->mr = NULL;
}
