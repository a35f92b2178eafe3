/* p2p_wire.c -- the messages' pieces in and out of the point-to-point channels: matching
 * what arrives, the unexpected copies, the CTS and ACK answers, and the sends' pieces in
 * their order (the protocol: p2p.h). */
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "base/log.h"
#include "core/exec.h"
#include "p2p_impl.h"

static size_t payload_max(const zcoll_comm_t *comm) {
  return comm->slot_bytes - ZCOLL_P2P_HDR_BYTES;
}

static const char *dtype_name(unsigned d) {
  return d < ZCOLL_DTYPE_COUNT ? zcoll_dtype_name((zcoll_dtype_t)d) : "an unknown dtype";
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

static zcoll_status_t answer(struct zcoll__p2p *P, int ci, int type, const struct zcoll__p2p_req *q,
                             uint64_t msg, int bad) {
  struct zcoll__p2p_ctl *k = calloc(1, sizeof(*k));
  if (!k) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for a message's answer");
  k->h = (struct zcoll__p2p_hdr){.magic = ZCOLL_P2P_MAGIC,
                                 .type = (uint8_t)type,
                                 .dtype = (uint8_t)q->dtype,
                                 .status = (uint8_t)bad,
                                 .tag = q->tag,
                                 .count = q->count,
                                 .msg = msg};
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
    return answer(P, ci, eager ? ZCOLL_P2P_ACK : ZCOLL_P2P_CTS, q, h->msg, 1);
  }
  if (eager) {
    if (len != q->bytes)
      return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                         "protocol violation by rank %d: a message of %llu elements with %zu "
                         "bytes",
                         q->peer, (unsigned long long)h->count, len);
    if (len) memcpy(q->buf, data, len);
    zcoll__p2p_finish(q, ZCOLL_OK, NULL);
    return answer(P, ci, ZCOLL_P2P_ACK, q, h->msg, 0);
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
  q->state = P2P_POSTED;
  ZCOLL_P2P_PUSH(pe->recvs, q);
  return ZCOLL_OK;
}

/* An answer (CTS, ACK) to send h->msg of ours. */
static zcoll_status_t answered(struct zcoll__p2p *P, int ci, const struct zcoll__p2p_hdr *h) {
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
    }
    return ZCOLL_OK;
  }
  return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                     "protocol violation by rank %d: an answer to message %llu, which this "
                     "rank has not sent",
                     P->comm->p2p_chans[ci].peer, (unsigned long long)h->msg);
}

/* DATA of a rendezvous this rank matched. */
static zcoll_status_t data_in(struct zcoll__p2p *P, int ci, const struct zcoll__p2p_hdr *h,
                              const char *data, size_t len) {
  struct zcoll__p2p_peer *pe = &P->peers[ci];
  for (struct zcoll__p2p_req **at = &pe->rdv.head; *at; at = &(*at)->next) {
    struct zcoll__p2p_req *q = *at;
    if (q->msg != h->msg) continue;
    if (h->off != q->done || len > q->bytes - q->done || !len) break;
    memcpy(q->buf + q->done, data, len);
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

/* The piece at the head of channel ci. *stop: it must stay in its slot for now (an
 * unexpected message with the copies full). */
static zcoll_status_t piece_in(struct zcoll__p2p *P, int ci, struct zcoll__slot *sl, int *stop) {
  zcoll_comm_t *comm = P->comm;
  struct zcoll__chan *c = &comm->p2p_chans[ci];
  const char *at = c->recv + (size_t)(sl - c->slots) * comm->slot_bytes;
  struct zcoll__p2p_hdr h;
  *stop = 0;
  if (sl->len < ZCOLL_P2P_HDR_BYTES)
    return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                       "protocol violation by rank %d: a message piece of %u bytes", c->peer,
                       sl->len);
  memcpy(&h, at, sizeof(h));
  const char *data = at + ZCOLL_P2P_HDR_BYTES;
  size_t len = sl->len - ZCOLL_P2P_HDR_BYTES;
  if (h.magic != ZCOLL_P2P_MAGIC || h.tag < 0 ||
      (h.type != ZCOLL_P2P_EAGER && h.type != ZCOLL_P2P_DATA && len))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                       "protocol violation by rank %d: a message piece of type %u, magic %08x "
                       "(different zcoll versions?)",
                       c->peer, h.type, h.magic);
  zcoll_status_t st = ZCOLL_OK;
  switch (h.type) {
  case ZCOLL_P2P_EAGER:
  case ZCOLL_P2P_RTS: {
    struct zcoll__p2p_req *q = take_recv(&P->peers[ci], h.tag);
    if (q) {
      st = match(P, ci, q, &h, data, len);
      break;
    }
    size_t need = sizeof(struct zcoll__p2p_unexp) + len;
    if (P->unexp_bytes + need > ZCOLL_P2P_UNEXPECTED_BYTES) {
      *stop = 1; /* the sender waits for this slot's credit (p2p.h: bounds) */
      return ZCOLL_OK;
    }
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
  case ZCOLL_P2P_ACK: st = answered(P, ci, &h); break;
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
  c->inflight[slot].busy = 1;
  c->inflight[slot].done = 0;
  c->credits--;
  c->send_seq++;
  c->send_slot = zcoll__slot_next(c->send_slot, comm->p2p_depth);
  return ZCOLL_OK;
}

/* The next piece for channel ci, in this order: an answer; the next data of the oldest
 * send streaming; the header of the oldest send not yet announced. 0: nothing to put. */
static zcoll_status_t next_out(struct zcoll__p2p *P, int ci, int *put) {
  struct zcoll__p2p_peer *pe = &P->peers[ci];
  *put = 1;
  if (pe->ctl.head) {
    struct zcoll__p2p_ctl *k = pe->ctl.head;
    zcoll_status_t st = piece_out(P, ci, &k->h, NULL, 0);
    if (st != ZCOLL_OK) return st;
    if (!(pe->ctl.head = k->next)) pe->ctl.tail = &pe->ctl.head;
    free(k);
    P->nctl--;
    return ZCOLL_OK;
  }
  size_t max = payload_max(P->comm);
  for (struct zcoll__p2p_req **at = &pe->sends.head; *at; at = &(*at)->next) {
    struct zcoll__p2p_req *q = *at;
    if (q->state == P2P_DATA) {
      size_t len = q->bytes - q->done < max ? q->bytes - q->done : max;
      struct zcoll__p2p_hdr h = {.magic = ZCOLL_P2P_MAGIC,
                                 .type = ZCOLL_P2P_DATA,
                                 .dtype = (uint8_t)q->dtype,
                                 .tag = q->tag,
                                 .count = q->count,
                                 .msg = q->msg,
                                 .off = q->done};
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
  for (struct zcoll__p2p_req *q = pe->sends.head; q; q = q->next) {
    if (q->state != P2P_QUEUED) continue;
    int eager = q->bytes <= max;
    struct zcoll__p2p_hdr h = {.magic = ZCOLL_P2P_MAGIC,
                               .type = eager ? ZCOLL_P2P_EAGER : ZCOLL_P2P_RTS,
                               .dtype = (uint8_t)q->dtype,
                               .tag = q->tag,
                               .count = q->count,
                               .msg = q->msg};
    zcoll_status_t st = piece_out(P, ci, &h, q->buf, eager ? q->bytes : 0);
    if (st == ZCOLL_OK) q->state = eager ? P2P_ACK : P2P_CTS;
    return st;
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
  }
  return ZCOLL_OK;
}
