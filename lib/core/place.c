/* place.c -- the placement hook (transports that deliver by rendezvous, UCX): where an
 * arriving piece lands is the receiver's decision, made here from the executor's state. */
#include "exec.h"

/* The placement hook: the receiver, not the writer, decides where a piece lands -- the
 * slot its sequence number implies, checked to be free; or, for a piece this rank will
 * only copy into the result (allgather-like steps) and whose range nothing still reads
 * or writes, the result itself, which saves the copy out of the slot. */
void *zcoll__place(void *arg, int peer, uint32_t imm, size_t len, int *final) {
  zcoll_comm_t *comm = arg;
  *final = 0;
  if ((imm & ZCOLL_IMM_CREDIT) || peer < 0 || peer >= comm->size || len > comm->slot_bytes)
    return NULL;
  int ci = comm->chan_of[peer];
  if (ci < 0) return NULL;
  struct zcoll__chan *c = &comm->chans[ci];
  if ((imm & (ZCOLL_IMM_SET_MASK << ZCOLL_IMM_SET_SHIFT)) != c->imm_set) {
    /* A message's piece (lib/p2p): always into its slot, the p2p layer copies it out. */
    c = comm->p2p_chans ? &comm->p2p_chans[ci] : NULL;
    if (!c || (imm & (ZCOLL_IMM_SET_MASK << ZCOLL_IMM_SET_SHIFT)) != c->imm_set) return NULL;
    struct zcoll__slot *sl = zcoll__chan_slot_for(c, comm->p2p_depth, comm->slot_bytes, imm, len,
                                                  NULL);
    return sl ? c->recv + (size_t)(sl - c->slots) * comm->slot_bytes : NULL;
  }
  uint32_t ahead;
  struct zcoll__slot *sl = zcoll__chan_slot_for(c, comm->depth, comm->slot_bytes, imm, len, &ahead);
  if (!sl) return NULL;
  char *slot = c->recv + (size_t)(sl - c->slots) * comm->slot_bytes;
  /* The run this channel's pieces are for now: the oldest still receiving on it. */
  struct zcoll__run *r = comm->active;
  int j = -1;
  for (; r; r = r->next) {
    j = r->e->peer_of_chan[ci];
    if (j >= 0 && r->e->recv_cur[j] < r->s->peer_sends[j + 1]) break;
  }
  if (!r || r->wire) return slot; /* a 16-bit piece is widened on its way into the result */
  /* Only data of a collective whose header from this peer has been checked (or that is
   * this collective's first piece, marked SAME, and would pass that check) goes to the
   * user's buffer; headers, and anything else, to the slot. */
  if (j < 0 || (imm & ZCOLL_IMM_HDR) ||
      zcoll__imm_ord(imm) != ((uint32_t)r->ordinal & ZCOLL_IMM_ORD_MASK))
    return slot;
  if (r->e->hdr_seen[j] ? (imm & ZCOLL_IMM_SAME) != 0
                        : !(imm & ZCOLL_IMM_SAME) || ahead || !zcoll__chan_seen_same(c, &r->desc))
    return slot;
  const struct zcoll__sched *s = r->s;
  /* Walk this channel's receives from the one in progress to the piece that arrived. */
  int cur = r->e->recv_cur[j], end = s->peer_sends[j + 1];
  if (cur >= end) return slot;
  size_t a = r->e->pos[s->peer_ops[cur]];
  for (;;) {
    const struct zcoll__sop *o = &s->ops[s->peer_ops[cur]];
    size_t b = zcoll__piece_end(r, o, a);
    if (!ahead) {
      if (o->kind != ZCOLL_SOP_RECV_COPY || (b - a) * r->dsize != len ||
          !zcoll__deps_ready(r, o, a, b))
        return slot;
      *final = 1;
      return zcoll__at(r, o->buf, a);
    }
    ahead--;
    if (b == zcoll__op_end(o)) {
      if (++cur >= end) return slot; /* the next collective's: not placeable yet */
      a = s->ops[s->peer_ops[cur]].off;
    } else {
      a = b;
    }
  }
}
