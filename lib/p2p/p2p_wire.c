/* p2p_wire.c -- the messages' pieces in and out of the point-to-point channels: matching
 * what arrives, the unexpected copies, the CTS and ACK answers, and the sends' pieces in
 * their order (the protocol: p2p.h). */
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "base/log.h"
#include "core/exec.h"
#include "core/mr.h"
#include "p2p_impl.h"

static size_t payload_max(const zcoll_comm_t *comm) {
  return comm->slot_bytes - ZCOLL_P2P_HDR_BYTES;
}

static const char *dtype_name(unsigned d) {
  return d < ZCOLL_DTYPE_COUNT ? zcoll_dtype_name((zcoll_dtype_t)d) : "an unknown dtype";
}

/* Eager send q, met by an announced receive (p2p.h: notes), its header out: done, as the
 * receiver judges it. */
static void noted_done(struct zcoll__p2p_req *q) {
  if (q->rcount == q->count && q->rdtype == (uint8_t)q->dtype) {
    zcoll__p2p_finish(q, ZCOLL_OK, NULL);
    return;
  }
  zcoll__p2p_finish(q, ZCOLL_ERR_MISMATCH,
                    "zcoll_send: rank %d's receive with tag %d expects %llu elements of %s "
                    "where this rank sends %zu of %s",
                    q->peer, q->tag, (unsigned long long)q->rcount, dtype_name(q->rdtype), q->count,
                    dtype_name(q->dtype));
}

/* ---- receiving ---------------------------------------------------------------------- */

/* The slot at the head of channel ci is read: free it, and hand its credit back in
 * batches (half the ring, as the collectives' channels do). */
static zcoll_status_t consume(zcoll_comm_t *comm, int ci, struct zcoll__slot *sl) {
  struct zcoll__chan *c = &comm->p2p_chans[ci];
  sl->arrived = 0;
  c->recv_seq++;
  c->recv_slot = zcoll__slot_next(c->recv_slot, comm->p2p_depth);
  if (++c->unreturned < (uint32_t)(comm->p2p_depth + 1) / 2) return ZCOLL_OK;
  zcoll_status_t st = zcoll__chan_put(
      comm, c, NULL, NULL, NULL, 0, 0, zcoll__imm_credit(c->unreturned, c->imm_set, c->imm_gen),
      ZCOLL_COOKIE_CREDIT | zcoll__cookie(c->imm_set, (uint32_t)ci, 0));
  if (st == ZCOLL_OK) c->unreturned = 0;
  return st;
}

void zcoll__p2p_hold(struct zcoll__p2p *P, int ci, struct zcoll__p2p_req *q) {
  zcoll_comm_t *comm = P->comm;
  struct zcoll_tl_mr *tl;
  /* A grant's key is the registering transport's: only a channel over it can use one. */
  if (q->bytes <= payload_max(comm) || !comm->reg || comm->p2p_chans[ci].t != comm->reg) return;
  q->mr_hold = zcoll__mr_hold(comm, q->buf, q->bytes, 1, &tl, &q->grant, &q->gbase);
}

/* A good CTS for receive q: the key to q's buffer where the sender may write into it
 * (p2p.h: zero-copy rendezvous; zcoll__p2p_hold found it). */
static void grant(struct zcoll__p2p *P, struct zcoll__p2p_req *q, struct zcoll__p2p_ctl *k) {
  const struct zcoll__grant_src *g = q->grant;
  if (!q->mr_hold || !g->mr || g->keylen > sizeof(k->key) ||
      ZCOLL_P2P_HDR_BYTES + g->keylen > P->comm->slot_bytes)
    return;
  memcpy(k->key, g->key, g->keylen);
  k->keylen = g->keylen;
  k->h.off = q->gbase;
  q->granted = 1;
}

static zcoll_status_t answer(struct zcoll__p2p *P, int ci, int type, struct zcoll__p2p_req *q,
                             uint64_t msg, int bad) {
  struct zcoll__p2p_ctl *k = calloc(1, sizeof(*k));
  if (!k) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for a message's answer");
  k->h = (struct zcoll__p2p_hdr){.magic = ZCOLL_P2P_MAGIC,
                                 .type = (uint8_t)type,
                                 .dtype = (uint8_t)q->dtype,
                                 .status = (uint8_t)(bad ? ZCOLL_P2P_ST_MISMATCH : ZCOLL_P2P_ST_OK),
                                 .tag = q->tag,
                                 .count = q->count,
                                 .msg = msg};
  if (type == ZCOLL_P2P_CTS && !bad) grant(P, q, k);
  ZCOLL_P2P_PUSH(P->peers[ci].ctl, k);
  P->nctl++;
  return ZCOLL_OK;
}

/* Message h (EAGER with its len payload bytes at data, or RTS) meets receive q, taken off
 * the posted list: delivered, started, or both refused. */
static zcoll_status_t match(struct zcoll__p2p *P, int ci, struct zcoll__p2p_req *q,
                            const struct zcoll__p2p_hdr *h, const char *data, size_t len) {
  int eager = h->type == ZCOLL_P2P_EAGER;
  if (h->count != q->count || h->dtype != (uint8_t)q->dtype) {
    zcoll__p2p_finish(q, ZCOLL_ERR_MISMATCH,
                      "zcoll_recv: rank %d sent %llu elements of %s with tag %d where this "
                      "rank's receive expects %zu of %s",
                      q->peer, (unsigned long long)h->count, dtype_name(h->dtype), h->tag, q->count,
                      dtype_name(q->dtype));
    /* an announced receive: the sender judged the match from its NOTE, alike */
    if (eager && q->noted) return ZCOLL_OK;
    return answer(P, ci, eager ? ZCOLL_P2P_ACK : ZCOLL_P2P_CTS, q, h->msg, 1);
  }
  if (eager) {
    if (len != q->bytes)
      return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                         "protocol violation by rank %d: a message of %llu elements with %zu "
                         "bytes",
                         q->peer, (unsigned long long)h->count, len);
    if (len) memcpy(q->buf, data, len);
    P->comm->msg_bytes_copied += len;
    zcoll__p2p_finish(q, ZCOLL_OK, NULL);
    return q->noted ? ZCOLL_OK : answer(P, ci, ZCOLL_P2P_ACK, q, h->msg, 0);
  }
  q->state = P2P_DATA;
  q->msg = h->msg;
  q->done = 0;
  ZCOLL_P2P_PUSH(P->peers[ci].rdv, q);
  return answer(P, ci, ZCOLL_P2P_CTS, q, h->msg, 0);
}

/* The oldest posted receive with h's tag, unlinked; NULL if none. */
static struct zcoll__p2p_req *take_recv(struct zcoll__p2p_peer *pe, int tag) {
  for (struct zcoll__p2p_req **at = &pe->recvs.head; *at; at = &(*at)->next) {
    struct zcoll__p2p_req *q = *at;
    if (q->tag != tag) continue;
    ZCOLL_P2P_UNLINK(pe->recvs, at, q);
    return q;
  }
  return NULL;
}

zcoll_status_t zcoll__p2p_match_posted(struct zcoll__p2p *P, int ci, struct zcoll__p2p_req *q) {
  struct zcoll__p2p_peer *pe = &P->peers[ci];
  for (struct zcoll__p2p_unexp **at = &pe->unexp.head; *at; at = &(*at)->next) {
    struct zcoll__p2p_unexp *u = *at;
    if (u->h.tag != q->tag) continue;
    ZCOLL_P2P_UNLINK(pe->unexp, at, u);
    P->unexp_bytes -= sizeof(*u) + u->len;
    zcoll_status_t st = match(P, ci, q, &u->h, u->data, u->len);
    free(u);
    return st;
  }
  /* Announced (p2p.h: notes): its sender can tell that its next message with this tag
   * meets it, without waiting for an answer to that message. */
  zcoll_status_t st = answer(P, ci, ZCOLL_P2P_NOTE, q, pe->taken, 0);
  if (st != ZCOLL_OK) return st;
  q->noted = 1;
  q->state = P2P_POSTED;
  ZCOLL_P2P_PUSH(pe->recvs, q);
  return ZCOLL_OK;
}

/* Send q met the receive a NOTE announced (count rcount of rdtype): the same judgement
 * the receiver makes of it. An eager send whose header is out is done; one still queued
 * is done once its header goes (next_out); a rendezvous waits for its CTS as ever. */
static void met(struct zcoll__p2p_peer *pe, struct zcoll__p2p_req **at, struct zcoll__p2p_req *q,
                const struct zcoll__p2p_hdr *n) {
  q->noted = 1;
  q->rcount = n->count;
  q->rdtype = n->dtype;
  if (q->state != P2P_ACK) return;
  ZCOLL_P2P_UNLINK(pe->sends, at, q);
  noted_done(q);
}

void zcoll__p2p_meet_noted(struct zcoll__p2p *P, int ci, struct zcoll__p2p_req *q) {
  struct zcoll__p2p_peer *pe = &P->peers[ci];
  /* Every earlier send has been tried against every NOTE here (at its post and at each
   * NOTE's coming), so the oldest that fits is q's. */
  for (struct zcoll__p2p_unexp **at = &pe->notes.head; *at; at = &(*at)->next) {
    struct zcoll__p2p_unexp *n = *at;
    if (n->h.tag != q->tag || n->h.msg > q->msg) continue;
    ZCOLL_P2P_UNLINK(pe->notes, at, n);
    q->noted = 1;
    q->rcount = n->h.count;
    q->rdtype = n->h.dtype;
    free(n);
    return;
  }
}

/* A NOTE: the oldest send not yet met that it fits meets it; with none it waits for a
 * later send. */
static zcoll_status_t note_in(struct zcoll__p2p *P, int ci, const struct zcoll__p2p_hdr *h) {
  struct zcoll__p2p_peer *pe = &P->peers[ci];
  for (struct zcoll__p2p_req **at = &pe->sends.head; *at; at = &(*at)->next) {
    struct zcoll__p2p_req *q = *at;
    if (q->noted || q->tag != h->tag || q->msg < h->msg) continue;
    met(pe, at, q, h);
    return ZCOLL_OK;
  }
  struct zcoll__p2p_unexp *n = malloc(sizeof(*n));
  if (!n) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for a receive's note");
  n->h = *h;
  n->len = 0;
  ZCOLL_P2P_PUSH(pe->notes, n);
  return ZCOLL_OK;
}

/* Send q's CTS granted its receive buffer (key: len bytes at data): write into it
 * directly, from q's buffer where that is registered. A key that does not unpack leaves
 * q to the slots (the receiver takes either). */
static void granted(struct zcoll__p2p *P, int ci, struct zcoll__p2p_req *q,
                    const struct zcoll__p2p_hdr *h, const char *data, size_t len) {
  zcoll_comm_t *comm = P->comm;
  const struct zcoll__chan *c = &comm->p2p_chans[ci];
  if (!comm->reg || c->t != comm->reg || h->off > UINT64_MAX - q->bytes) return;
  if (c->ops->rkey_unpack(c->ep, data, len, &q->rkey) != ZCOLL_OK) {
    zcoll_log_debug("the message to rank %d goes through the slots: its key: %s", q->peer,
                    zcoll__last_error());
    q->rkey = NULL;
    return;
  }
  q->rbase = h->off;
  const struct zcoll__grant_src *g;
  uint64_t base;
  q->mr_hold = zcoll__mr_hold(comm, q->buf, q->bytes, 0, &q->lmr, &g, &base);
  if (!q->mr_hold) q->lmr = NULL;
}

/* An answer (CTS, ACK; a CTS's grant: len bytes at data) to send h->msg of ours. */
static zcoll_status_t answered(struct zcoll__p2p *P, int ci, const struct zcoll__p2p_hdr *h,
                               const char *data, size_t len) {
  struct zcoll__p2p_peer *pe = &P->peers[ci];
  int want = h->type == ZCOLL_P2P_CTS ? P2P_CTS : P2P_ACK;
  for (struct zcoll__p2p_req **at = &pe->sends.head; *at; at = &(*at)->next) {
    struct zcoll__p2p_req *q = *at;
    if (q->msg != h->msg || q->state != want) continue;
    if (h->status) {
      ZCOLL_P2P_UNLINK(pe->sends, at, q);
      zcoll__p2p_finish(q, ZCOLL_ERR_MISMATCH,
                        "zcoll_send: rank %d's receive with tag %d expects %llu elements of %s "
                        "where this rank sends %zu of %s",
                        q->peer, q->tag, (unsigned long long)h->count, dtype_name(h->dtype),
                        q->count, dtype_name(q->dtype));
    } else if (want == P2P_ACK) {
      ZCOLL_P2P_UNLINK(pe->sends, at, q);
      zcoll__p2p_finish(q, ZCOLL_OK, NULL);
    } else {
      q->state = P2P_DATA;
      if (len) granted(P, ci, q, h, data, len);
    }
    return ZCOLL_OK;
  }
  return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                     "protocol violation by rank %d: an answer to message %llu, which this "
                     "rank has not sent",
                     P->comm->p2p_chans[ci].peer, (unsigned long long)h->msg);
}

/* DATA of a rendezvous this rank matched (a DIRECT_START: its DIRECT pieces follow). */
static zcoll_status_t data_in(struct zcoll__p2p *P, int ci, const struct zcoll__p2p_hdr *h,
                              const char *data, size_t len) {
  struct zcoll__p2p_peer *pe = &P->peers[ci];
  for (struct zcoll__p2p_req **at = &pe->rdv.head; *at; at = &(*at)->next) {
    struct zcoll__p2p_req *q = *at;
    if (q->msg != h->msg) continue;
    if (h->status == ZCOLL_P2P_DIRECT_START) {
      /* Only into a buffer this rank granted, one message at a time, with data to come. */
      if (len || !q->granted || pe->direct_in || h->off != q->done || q->done == q->bytes) break;
      pe->direct_in = q;
      return ZCOLL_OK;
    }
    if (h->status || h->off != q->done || len > q->bytes - q->done || !len || pe->direct_in == q)
      break;
    memcpy(q->buf + q->done, data, len);
    P->comm->msg_bytes_copied += len;
    q->done += len;
    if (q->done == q->bytes) {
      ZCOLL_P2P_UNLINK(pe->rdv, at, q);
      zcoll__p2p_finish(q, ZCOLL_OK, NULL);
    }
    return ZCOLL_OK;
  }
  return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                     "protocol violation by rank %d: %zu bytes at %llu of message %llu, which "
                     "this rank does not expect there",
                     P->comm->p2p_chans[ci].peer, len, (unsigned long long)h->off,
                     (unsigned long long)h->msg);
}

/* A DIRECT piece: len bytes the sender wrote into the receive its DIRECT_START named. */
static zcoll_status_t direct_in(struct zcoll__p2p *P, int ci, size_t len) {
  struct zcoll__p2p_peer *pe = &P->peers[ci];
  struct zcoll__p2p_req *q = pe->direct_in;
  if (!q || len > q->bytes - q->done)
    return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                       "protocol violation by rank %d: %zu bytes written into this rank's "
                       "memory where it expects %zu",
                       P->comm->p2p_chans[ci].peer, len, q ? q->bytes - q->done : 0);
  q->done += len;
  P->comm->msg_bytes_placed += len;
  if (q->done < q->bytes) return ZCOLL_OK;
  pe->direct_in = NULL;
  for (struct zcoll__p2p_req **at = &pe->rdv.head; *at; at = &(*at)->next)
    if (*at == q) {
      ZCOLL_P2P_UNLINK(pe->rdv, at, q);
      break;
    }
  zcoll__p2p_finish(q, ZCOLL_OK, NULL);
  return ZCOLL_OK;
}

/* The piece at the head of channel ci. *stop: it must stay in its slot for now (an
 * unexpected message with the copies full). */
static zcoll_status_t piece_in(struct zcoll__p2p *P, int ci, struct zcoll__slot *sl, int *stop) {
  zcoll_comm_t *comm = P->comm;
  struct zcoll__chan *c = &comm->p2p_chans[ci];
  const char *at = c->recv + (size_t)(sl - c->slots) * comm->slot_bytes;
  struct zcoll__p2p_hdr h;
  *stop = 0;
  if (zcoll__imm_kind(sl->imm) == ZCOLL_IMM_DIRECT) { /* in place already: no header */
    zcoll_status_t st = direct_in(P, ci, sl->len);
    return st != ZCOLL_OK ? st : consume(comm, ci, sl);
  }
  if (sl->len < ZCOLL_P2P_HDR_BYTES)
    return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                       "protocol violation by rank %d: a message piece of %u bytes", c->peer,
                       sl->len);
  memcpy(&h, at, sizeof(h));
  const char *data = at + ZCOLL_P2P_HDR_BYTES;
  size_t len = sl->len - ZCOLL_P2P_HDR_BYTES;
  int payload_ok = h.type == ZCOLL_P2P_EAGER || h.type == ZCOLL_P2P_DATA ||
                   (h.type == ZCOLL_P2P_CTS && len <= ZCOLL_GRANT_KEY_MAX); /* a grant */
  if (h.magic != ZCOLL_P2P_MAGIC || h.tag < 0 || (!payload_ok && len))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                       "protocol violation by rank %d: a message piece of type %u, magic %08x "
                       "(different zcoll versions?)",
                       c->peer, h.type, h.magic);
  zcoll_status_t st = ZCOLL_OK;
  switch (h.type) {
  case ZCOLL_P2P_EAGER:
  case ZCOLL_P2P_RTS: {
    struct zcoll__p2p_peer *pe = &P->peers[ci];
    if (h.msg != pe->taken) /* what the notes count on (p2p.h) */
      return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                         "protocol violation by rank %d: message %llu where %llu comes next",
                         c->peer, (unsigned long long)h.msg, (unsigned long long)pe->taken);
    struct zcoll__p2p_req *q = take_recv(pe, h.tag);
    if (q) {
      pe->taken++;
      st = match(P, ci, q, &h, data, len);
      break;
    }
    size_t need = sizeof(struct zcoll__p2p_unexp) + len;
    if (P->unexp_bytes + need > ZCOLL_P2P_UNEXPECTED_BYTES) {
      *stop = 1; /* the sender waits for this slot's credit (p2p.h: bounds) */
      return ZCOLL_OK;
    }
    pe->taken++;
    struct zcoll__p2p_unexp *u = malloc(need);
    if (!u) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for an unexpected message");
    u->h = h;
    u->len = len;
    if (len) memcpy(u->data, data, len);
    ZCOLL_P2P_PUSH(P->peers[ci].unexp, u);
    P->unexp_bytes += need;
    break;
  }
  case ZCOLL_P2P_CTS:
  case ZCOLL_P2P_ACK: st = answered(P, ci, &h, data, len); break;
  case ZCOLL_P2P_NOTE: st = note_in(P, ci, &h); break;
  case ZCOLL_P2P_DATA: st = data_in(P, ci, &h, data, len); break;
  default:
    return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                       "protocol violation by rank %d: a message piece of type %u", c->peer,
                       h.type);
  }
  if (st != ZCOLL_OK) return st;
  return consume(comm, ci, sl);
}

/* ---- sending ------------------------------------------------------------------------ */

/* Channel c's next piece is out: its slot waits for the PUT_DONE, its credit is spent. */
static void sent(zcoll_comm_t *comm, struct zcoll__chan *c) {
  c->inflight[c->send_slot].busy = 1;
  c->inflight[c->send_slot].done = 0;
  c->credits--;
  c->send_seq++;
  c->send_slot = zcoll__slot_next(c->send_slot, comm->p2p_depth);
}

/* Puts header h and len payload bytes from src as the next piece on channel ci, which has
 * a credit and a free slot. */
static zcoll_status_t piece_out(struct zcoll__p2p *P, int ci, const struct zcoll__p2p_hdr *h,
                                const char *src, size_t len) {
  zcoll_comm_t *comm = P->comm;
  struct zcoll__chan *c = &comm->p2p_chans[ci];
  uint32_t slot = c->send_slot;
  char *buf = c->stage + (size_t)slot * comm->slot_bytes;
  memcpy(buf, h, sizeof(*h));
  if (len) memcpy(buf + ZCOLL_P2P_HDR_BYTES, src, len);
  zcoll_status_t st = zcoll__chan_put(comm, c, buf, c->staged ? comm->reg->send_mr : NULL, c->rkey,
                                      c->roff + (uint64_t)slot * comm->slot_bytes,
                                      ZCOLL_P2P_HDR_BYTES + len,
                                      zcoll__imm_piece(c->send_seq, 0, 0, c->imm_set),
                                      zcoll__cookie(c->imm_set, (uint32_t)ci, slot));
  if (st != ZCOLL_OK) return st;
  sent(comm, c);
  return ZCOLL_OK;
}

/* The next DIRECT piece of send q (p2p.h: zero-copy rendezvous): up to a slot's worth
 * written into the receive buffer, from q's buffer if registered, else staged. */
static zcoll_status_t direct_piece(struct zcoll__p2p *P, int ci, struct zcoll__p2p_req **at,
                                   struct zcoll__p2p_req *q) {
  zcoll_comm_t *comm = P->comm;
  struct zcoll__chan *c = &comm->p2p_chans[ci];
  struct zcoll__p2p_peer *pe = &P->peers[ci];
  uint32_t slot = c->send_slot;
  size_t len = q->bytes - q->done < comm->slot_bytes ? q->bytes - q->done : comm->slot_bytes;
  const char *src = q->buf + q->done;
  struct zcoll_tl_mr *lmr = q->lmr;
  if (!lmr) {
    char *buf = c->stage + (size_t)slot * comm->slot_bytes;
    memcpy(buf, src, len);
    src = buf;
    lmr = comm->reg->send_mr;
  }
  zcoll_status_t st = zcoll__chan_put(
      comm, c, src, lmr, q->rkey, q->rbase + q->done, len,
      zcoll__imm_piece(c->send_seq, 0, ZCOLL_IMM_DIRECT, c->imm_set),
      zcoll__cookie(c->imm_set, (uint32_t)ci, slot));
  if (st != ZCOLL_OK) return st;
  sent(comm, c);
  if ((q->done += len) < q->bytes) return ZCOLL_OK;
  pe->direct_out = NULL;
  if (q->lmr) { /* the transport reads q's buffer until the PUT_DONEs: wait for the last */
    q->state = P2P_FLUSH;
    q->last_seq = c->send_seq;
  } else {
    ZCOLL_P2P_UNLINK(pe->sends, at, q);
    zcoll__p2p_finish(q, ZCOLL_OK, NULL);
  }
  return ZCOLL_OK;
}

/* A piece of send q of this type: a DATA one's offset is where q has got to. */
static struct zcoll__p2p_hdr send_hdr(const struct zcoll__p2p_req *q, int type) {
  return (struct zcoll__p2p_hdr){.magic = ZCOLL_P2P_MAGIC,
                                 .type = (uint8_t)type,
                                 .dtype = (uint8_t)q->dtype,
                                 .tag = q->tag,
                                 .count = q->count,
                                 .msg = q->msg,
                                 .off = type == ZCOLL_P2P_DATA ? q->done : 0};
}

/* The next piece for channel ci, in this order: an answer; the next data of the oldest
 * send streaming (a zero-copy one's DIRECT pieces once it started); the header of the
 * oldest send not yet announced. 0: nothing to put. */
static zcoll_status_t next_out(struct zcoll__p2p *P, int ci, int *put) {
  struct zcoll__p2p_peer *pe = &P->peers[ci];
  *put = 1;
  if (pe->ctl.head) {
    struct zcoll__p2p_ctl *k = pe->ctl.head;
    zcoll_status_t st = piece_out(P, ci, &k->h, (const char *)k->key, k->keylen);
    if (st != ZCOLL_OK) return st;
    if (!(pe->ctl.head = k->next)) pe->ctl.tail = &pe->ctl.head;
    free(k);
    P->nctl--;
    return ZCOLL_OK;
  }
  size_t max = payload_max(P->comm);
  for (struct zcoll__p2p_req **at = &pe->sends.head; *at; at = &(*at)->next) {
    struct zcoll__p2p_req *q = *at;
    if (q->state == P2P_DATA && q->rkey && pe->direct_out == q) return direct_piece(P, ci, at, q);
    if (q->state == P2P_DATA && q->rkey && !pe->direct_out) {
      struct zcoll__p2p_hdr h = send_hdr(q, ZCOLL_P2P_DATA);
      h.status = ZCOLL_P2P_DIRECT_START;
      zcoll_status_t st = piece_out(P, ci, &h, NULL, 0);
      if (st == ZCOLL_OK) pe->direct_out = q;
      return st;
    }
    if (q->state == P2P_DATA && !q->rkey) {
      size_t len = q->bytes - q->done < max ? q->bytes - q->done : max;
      struct zcoll__p2p_hdr h = send_hdr(q, ZCOLL_P2P_DATA);
      zcoll_status_t st = piece_out(P, ci, &h, q->buf + q->done, len);
      if (st != ZCOLL_OK) return st;
      /* Its data is copied out: the buffer is the application's again. */
      if ((q->done += len) == q->bytes) {
        ZCOLL_P2P_UNLINK(pe->sends, at, q);
        zcoll__p2p_finish(q, ZCOLL_OK, NULL);
      }
      return ZCOLL_OK;
    }
  }
  for (struct zcoll__p2p_req **at = &pe->sends.head; *at; at = &(*at)->next) {
    struct zcoll__p2p_req *q = *at;
    if (q->state != P2P_QUEUED) continue;
    int eager = q->bytes <= max;
    struct zcoll__p2p_hdr h = send_hdr(q, eager ? ZCOLL_P2P_EAGER : ZCOLL_P2P_RTS);
    zcoll_status_t st = piece_out(P, ci, &h, q->buf, eager ? q->bytes : 0);
    if (st != ZCOLL_OK) return st;
    q->state = eager ? P2P_ACK : P2P_CTS;
    if (eager && q->noted) { /* its receive is known: done as its header leaves */
      ZCOLL_P2P_UNLINK(pe->sends, at, q);
      noted_done(q);
    }
    return ZCOLL_OK;
  }
  *put = 0;
  return ZCOLL_OK;
}

zcoll_status_t zcoll__p2p_step(struct zcoll__p2p *P, int *progress) {
  zcoll_comm_t *comm = P->comm;
  for (int ci = 0; ci < comm->nchans; ci++) {
    struct zcoll__chan *c = &comm->p2p_chans[ci];
    if (!c->slots) continue;
    for (;;) {
      struct zcoll__slot *sl = &c->slots[c->recv_slot];
      if (!sl->arrived) break;
      int stop;
      zcoll_status_t st = piece_in(P, ci, sl, &stop);
      if (st != ZCOLL_OK) return st;
      if (stop) break;
      *progress = 1;
    }
    while (c->credits && !c->inflight[c->send_slot].busy) {
      int put;
      zcoll_status_t st = next_out(P, ci, &put);
      if (st != ZCOLL_OK) return st;
      if (!put) break;
      *progress = 1;
    }
    /* Sends written from their own buffers end once the transport no longer reads them. */
    struct zcoll__p2p_peer *pe = &P->peers[ci];
    for (struct zcoll__p2p_req **at = &pe->sends.head; *at;) {
      struct zcoll__p2p_req *q = *at;
      if (q->state != P2P_FLUSH || (int64_t)(c->tail_seq - q->last_seq) < 0) {
        at = &q->next;
        continue;
      }
      ZCOLL_P2P_UNLINK(pe->sends, at, q);
      zcoll__p2p_finish(q, ZCOLL_OK, NULL);
      *progress = 1;
    }
  }
  return ZCOLL_OK;
}
