/*
 * channel.h -- the wire protocol between two ranks, written down once.
 *
 * A channel carries pieces (chunks) between this rank and one peer, both ways.
 *
 * Slots. Each rank owns, per peer, a ring of `depth` receive slots of `slot_bytes` in one
 * registered region; the peer writes piece number `seq` into slot seq % depth and may do
 * so only while it holds a credit for that slot. Piece numbers run on across
 * collectives, so a fast rank may already write the next collective's pieces into free
 * slots.
 *
 * Credits. The receiver hands credits back after it has consumed pieces: a zero-length
 * put whose immediate has ZCOLL_IMM_CREDIT set and the number of freed slots in its low
 * 16 bits.
 *
 * The immediate (the 32-bit notification of a put that carries a piece):
 *
 *   bit  31      0 (1 is a credit return, above)
 *   bit  30      HDR: the piece starts with a collective header (below)
 *   bit  29      SAME: the first piece of a collective described exactly as the last one
 *                whose header went this way on this channel (below)
 *   bit  28      EXT: with HDR a grant, alone a direct piece (below)
 *   bits 22..27  the channel's set (below); a credit return carries it too
 *   bits 12..21  the low 10 bits of the collective's ordinal (a credit return: the set's
 *                generation, below)
 *   bits  0..11  the piece's number on this channel, mod 2^12 (a credit return: how many)
 *
 * Sets. Several channels may run between the same two ranks over one connection, each
 * with its own slots, credits, piece numbers and collectives: a communicator's, and those
 * of others that share its transports. The set number tells the receiver whose a piece
 * or credit is; both ends agree on it when the channel is made. Piece numbers need only
 * tell apart the pieces of one window (a depth of at most 256 slots), and an ordinal's
 * low bits the collectives a rank can be ahead of its peer by (one, in practice): twelve
 * and ten bits leave six for the set. A set is used again once its communicator is gone,
 * and the last credit returns of the old one may still be on their way (a transport may
 * hold a notification back while the receiver's queue is full): credit returns carry the
 * set's generation, which the ranks of a new communicator agree on and the old one's
 * lack, so that they are dropped rather than counted. Pieces need none: a communicator
 * is destroyed only after every piece sent to it was consumed.
 *
 * Sets in pairs. A communicator's collectives run on a set below ZCOLL_CHAN_SETS / 2, its
 * point-to-point messages (lib/p2p/p2p.h) on that set plus ZCOLL_CHAN_SETS / 2
 * (ZCOLL_CHAN_P2P_SET): a second channel per peer over the same connection, with slots,
 * credits and piece numbers of its own, so that a message is never taken for a
 * collective's piece or the reverse, and a rank that sends no message disturbs no
 * collective. The p2p layer gives its pieces its own meaning (p2p.h); credit returns and
 * the generation are as here.
 *
 * so that a piece is one of five kinds (zcoll__imm_kind): plain, HDR, SAME, GRANT
 * (EXT|HDR) or DIRECT (EXT). Every kind takes a piece number and a credit, whether or not
 * its bytes land in the slot, so that the window and the credits stay one simple count.
 *
 * Grants (zero-copy results, lib/core/grant.c). Over a transport where the writer places the
 * data (RDMA), a receiver whose result buffer is registered for remote writes (a
 * persistent request) may tell a sender "write the rest of this range straight into my
 * result": a GRANT piece holding a struct zcoll__chan_grant and the buffer's key, sent
 * once the receiver's own ops no longer read or write that range. The sender then puts
 * the range's remaining pieces into the result with DIRECT pieces (never the first piece
 * of a collective on a channel, which carries its header); the receiver checks that each
 * DIRECT piece falls in a range it granted and copies nothing. Grants are optional on
 * both sides: a sender that has not seen one, or a piece the grant came too late for,
 * uses the slots as before.
 *
 * Collective header. The first piece of every collective on every channel and direction
 * starts with a struct zcoll__chan_hdr padded to ZCOLL_CHAN_HDR_BYTES: the collective's
 * ordinal (its number on the communicator, the same on every rank) and what it is (kind,
 * count, dtype, op, algorithm, its parameters) with a 64-bit fingerprint of all that.
 * The receiver checks it before it reduces or delivers any data of that collective from
 * that peer, so ranks that disagree on a call, or are out of step, get
 * ZCOLL_ERR_MISMATCH rather than each other's data -- whatever the count. The pieces that
 * follow carry the ordinal's low bits, so a piece of another collective cannot pass for
 * one of this one.
 *
 * A first piece whose payload is small goes with the header in one put (header, then
 * payload, in one slot); otherwise the header goes alone, in a slot of its own, and the
 * payload pieces follow. Both ends decide it the same way (zcoll__chan_hdr_merges).
 *
 * Same as last. A loop of like collectives would send the same header over and over: on
 * the 8-byte hot path, writing, moving and reading it costs more than the payload. So the
 * sender remembers the description in the last header it put on the channel, and when
 * the next collective is described alike, its first piece carries SAME instead of a
 * header. The receiver remembers the description in the last header it checked from that
 * peer, and accepts SAME only if its own collective is described alike too. Pieces arrive
 * in order, so both remember the same header, and SAME proves what the header would have:
 * the peer's collective is this one (the ordinal's low bits, checked on every piece, say
 * it is at the same point in the sequence).
 */
#ifndef ZCOLL_CHANNEL_H
#define ZCOLL_CHANNEL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kind.h"
#include "tl/transport.h"
#include "zcoll.h"

#define ZCOLL_IMM_CREDIT 0x80000000u
#define ZCOLL_IMM_HDR 0x40000000u
#define ZCOLL_IMM_SAME 0x20000000u
#define ZCOLL_IMM_EXT 0x10000000u
#define ZCOLL_IMM_SET_SHIFT 22
#define ZCOLL_IMM_SET_MASK 0x3fu
#define ZCOLL_IMM_SEQ_MASK 0xfffu
#define ZCOLL_IMM_ORD_SHIFT 12
#define ZCOLL_IMM_ORD_MASK 0x3ffu
#define ZCOLL_IMM_GEN_SHIFT 12 /* a credit return's: where pieces have the ordinal */
#define ZCOLL_IMM_GEN_MASK 0x3ffu
/* Sets a rank can tell apart: ZCOLL_IMM_SET_MASK + 1. */
#define ZCOLL_CHAN_SETS 64
/* The set of the point-to-point channels of the communicator on collective set s. */
#define ZCOLL_CHAN_P2P_SET(s) ((s) + ZCOLL_CHAN_SETS / 2)
/* Slots per peer and direction of the point-to-point channels, at most (comm_setup.c):
 * half the collectives' default, as a message is one piece or a rendezvous that streams
 * through them -- and they cost receive memory per peer like the collectives' do. */
#define ZCOLL_P2P_DEPTH_MAX 4

/* The kinds of piece (the flag bits of the immediate, credit aside). */
#define ZCOLL_IMM_KIND_MASK (ZCOLL_IMM_HDR | ZCOLL_IMM_SAME | ZCOLL_IMM_EXT)
#define ZCOLL_IMM_GRANT (ZCOLL_IMM_EXT | ZCOLL_IMM_HDR)
#define ZCOLL_IMM_DIRECT ZCOLL_IMM_EXT
static inline uint32_t zcoll__imm_kind(uint32_t imm) { return imm & ZCOLL_IMM_KIND_MASK; }
static inline uint32_t zcoll__imm_set(uint32_t imm) {
  return (imm >> ZCOLL_IMM_SET_SHIFT) & ZCOLL_IMM_SET_MASK;
}

/* A grant: the receiver's pair-th receive from the sender (in schedule order, which is
 * the sender's pair-th send to it) may have its elements [off, off + count) written
 * straight into the receiver's result through the key that follows (keylen bytes), at
 * base plus element offset times element size -- for collective `ordinal` only, and only if the
 * sender's collective has the same fingerprint. */
struct zcoll__chan_grant {
  uint64_t ordinal;
  uint64_t fingerprint;
  uint64_t off, count;
  uint64_t base; /* where the result starts in the key's region, in bytes */
  uint32_t pair;
  uint32_t keylen;
};
#define ZCOLL_GRANT_KEY_MAX 64u
#define ZCOLL_GRANT_MAX_BYTES (sizeof(struct zcoll__chan_grant) + ZCOLL_GRANT_KEY_MAX)

/* Room the header takes at the start of a slot: exactly the header, so that a small
 * payload shares its cache line (one line to move between cores, not two; the reduction
 * kernels take any alignment). The smallest slot (ZCOLL_CHUNK_BYTES=64) holds it. */
#define ZCOLL_CHAN_HDR_BYTES 48u
/* A first piece up to this many payload bytes travels with its header. */
#define ZCOLL_CHAN_MERGE_MAX (1024u - ZCOLL_CHAN_HDR_BYTES)

/* What a collective is: ranks must agree on all of it. Its kind (ZCOLL_COLL_*) and what
 * its algo and root mean for that kind: kind.h. */
struct zcoll__coll_desc {
  uint8_t kind, dtype, op, algo;
  uint16_t arity;  /* parameters of the algorithm that shape the schedule (tree: 2..64) */
  uint8_t wire;    /* float32 data travelling as this 16-bit dtype (ZCOLL_WIRE_DTYPE); 0 */
  uint8_t zero;    /* 0: no padding, descriptions compare with memcmp */
  int32_t root;    /* -1 where the kind has no root */
  uint32_t op_tag; /* a created op's kind, commutativity, element size (op.h); else 0 */
  uint64_t count;
};
_Static_assert(sizeof(struct zcoll__coll_desc) == 24, "a description must have no padding");

struct zcoll__chan_hdr {
  uint32_t magic; /* ZCOLL_CHAN_MAGIC: what follows is a header of this version */
  uint32_t version;
  uint64_t ordinal;
  uint64_t fingerprint;
  struct zcoll__coll_desc desc;
};
_Static_assert(sizeof(struct zcoll__chan_hdr) == ZCOLL_CHAN_HDR_BYTES,
               "header and its room differ");

struct zcoll__slot {
  uint8_t arrived;
  uint8_t placed;   /* already in its final place: nothing to copy */
  uint8_t data_off; /* where the payload starts: past a header already checked */
  uint32_t imm, len;
};

struct zcoll__run;
struct zcoll__inflight { /* a piece we put and whose PUT_DONE we await */
  uint8_t busy;
  uint8_t done;
  int op;                 /* the SEND op it belongs to, -1 once the op no longer cares */
  struct zcoll__run *run; /* the collective of that op (NULL with op -1) */
  size_t end;             /* the op's position once this piece's source is released */
  int64_t issued_ns;      /* for the trace */
  uint32_t bytes;
};

static inline uint32_t zcoll__slot_next(uint32_t slot, int depth) {
  return ++slot == (uint32_t)depth ? 0 : slot;
}

struct zcoll__tli;
struct zcoll__chan {
  int peer;
  struct zcoll__tli *t;           /* the transport instance that reaches the peer */
  const struct zcoll_tl_ops *ops; /* t's */
  uint8_t staged;                 /* ops reads only registered memory: stage sends */
  uint8_t same_host;              /* the peer runs on this rank's host */
  uint32_t imm_set;               /* the set, in place in the immediate (ZCOLL_IMM_SET_SHIFT) */
  uint32_t imm_gen;               /* its generation, in place in a credit return's immediate */
  uint64_t bytes_out;             /* payload bytes put to the peer */
  struct zcoll_ep *ep;
  struct zcoll_tl_rkey *rkey; /* the peer's receive region */
  uint64_t roff;              /* our slot ring inside it */
  /* sending */
  /* Piece numbers are 64-bit so that seq % depth never jumps at a wrap (a 32-bit
   * counter would after 4 billion pieces: an hour of 1 us allreduces). */
  uint64_t send_seq; /* next piece number */
  /* Each *_slot is its *_seq % depth, kept in step (zcoll__slot_next): a 64-bit division
   * per piece costs an 8-byte allreduce more than all its arithmetic. */
  uint32_t send_slot, tail_slot, recv_slot;
  struct zcoll__coll_desc sent_desc; /* in the last header put on this channel */
  uint8_t sent_valid;
  uint32_t credits;                 /* free slots at the peer */
  uint64_t tail_seq;                /* oldest piece whose PUT_DONE we await */
  struct zcoll__inflight *inflight; /* depth entries, by seq % depth */
  char *stage;                      /* our send staging ring (transports without PUT_ANY) */
  char *small;                      /* headers and the small pieces they carry, by slot (PUT_ANY) */
  /* receiving */
  uint64_t recv_seq;                 /* next piece number to consume */
  struct zcoll__coll_desc seen_desc; /* in the last header checked from this peer */
  uint8_t seen_valid;
  uint32_t unreturned; /* consumed pieces whose credit the peer has not got back */
  struct zcoll__slot *slots;
  char *recv; /* our receive ring for this peer's pieces */
};

/* flags: 0, ZCOLL_IMM_HDR, ZCOLL_IMM_SAME, ZCOLL_IMM_GRANT or ZCOLL_IMM_DIRECT; set: a
 * channel's imm_set */
static inline uint32_t zcoll__imm_piece(uint64_t seq, uint64_t ordinal, uint32_t flags,
                                        uint32_t set) {
  return ((uint32_t)seq & ZCOLL_IMM_SEQ_MASK) |
         (((uint32_t)ordinal & ZCOLL_IMM_ORD_MASK) << ZCOLL_IMM_ORD_SHIFT) | flags | set;
}
/* set, gen: a channel's imm_set and imm_gen */
static inline uint32_t zcoll__imm_credit(uint32_t count, uint32_t set, uint32_t gen) {
  return ZCOLL_IMM_CREDIT | set | gen | count;
}
static inline uint32_t zcoll__imm_gen(uint32_t imm) {
  return (imm >> ZCOLL_IMM_GEN_SHIFT) & ZCOLL_IMM_GEN_MASK;
}
static inline uint32_t zcoll__imm_ord(uint32_t imm) {
  return (imm >> ZCOLL_IMM_ORD_SHIFT) & ZCOLL_IMM_ORD_MASK;
}

/* A put's cookie: which channel set and channel, and the slot (or ZCOLL_COOKIE_CREDIT for
 * a credit return), so that its PUT_DONE finds its way back whoever polls it. */
#define ZCOLL_COOKIE_CREDIT (1ull << 63)
static inline uint64_t zcoll__cookie(uint32_t imm_set, uint32_t chan, uint32_t slot) {
  return (uint64_t)(imm_set >> ZCOLL_IMM_SET_SHIFT) << 56 | (uint64_t)(chan & 0xffffffu) << 32 |
         slot;
}
static inline uint32_t zcoll__cookie_set(uint64_t cookie) {
  return (uint32_t)(cookie >> 56) & ZCOLL_IMM_SET_MASK;
}
static inline uint32_t zcoll__cookie_chan(uint64_t cookie) {
  return (uint32_t)(cookie >> 32) & 0xffffffu;
}

/* Does the first piece of `len` payload bytes travel with its header? */
static inline int zcoll__chan_hdr_merges(size_t len, size_t slot_bytes) {
  return len <= ZCOLL_CHAN_MERGE_MAX && len + ZCOLL_CHAN_HDR_BYTES <= slot_bytes;
}

uint64_t zcoll__coll_fingerprint(const struct zcoll__coll_desc *d);
/* A v-form pair's header (exec.h: zcoll__pair_hdr): d's fingerprint with `back`, the count
 * the sender expects from the receiver, folded in. */
uint64_t zcoll__pair_fingerprint(const struct zcoll__coll_desc *d, uint64_t back);
/* The same, remembered for the last description: a loop of like collectives hashes once. */
struct zcoll__fp_cache {
  int valid;
  struct zcoll__coll_desc desc;
  uint64_t fp;
};
static inline uint64_t zcoll__coll_fingerprint_cached(struct zcoll__fp_cache *c,
                                                      const struct zcoll__coll_desc *d) {
  if (!c->valid || memcmp(&c->desc, d, sizeof(*d)) != 0) {
    c->desc = *d;
    c->fp = zcoll__coll_fingerprint(d);
    c->valid = 1;
  }
  return c->fp;
}
/* Writes the header of collective `ordinal` described by d (fingerprint fp, computed once
 * per collective) into buf (HDR_BYTES). */
void zcoll__chan_hdr_write(void *buf, uint64_t ordinal, const struct zcoll__coll_desc *d,
                           uint64_t fp);
/* Checks a header that `peer` sent against this rank's collective (fp: its fingerprint):
 * ZCOLL_OK, or ZCOLL_ERR_MISMATCH with a message that says what differs. */
zcoll_status_t zcoll__chan_hdr_check(const void *buf, size_t len, int peer, uint64_t ordinal,
                                     const struct zcoll__coll_desc *mine, uint64_t fp);

/* Is this collective described as the last header checked from the channel's peer (so
 * that a first piece marked SAME is this collective's)? */
static inline int zcoll__chan_seen_same(const struct zcoll__chan *c,
                                        const struct zcoll__coll_desc *d) {
  return c->seen_valid && !memcmp(&c->seen_desc, d, sizeof(*d));
}

/* A first piece marked SAME from c's peer, for this rank's collective `ordinal` described
 * by mine: ZCOLL_OK, or ZCOLL_ERR_MISMATCH saying what the peer called instead. */
zcoll_status_t zcoll__chan_same_check(const struct zcoll__chan *c, uint64_t ordinal,
                                      const struct zcoll__coll_desc *mine);

/* The slot an arriving piece (not a credit) takes, or NULL if it breaks the protocol
 * (not within the window of free slots, too long). */
struct zcoll__slot *zcoll__chan_slot_for(const struct zcoll__chan *c, int depth, size_t slot_bytes,
                                         uint32_t imm, size_t len, uint32_t *ahead);

/* A PUT_DONE of a piece put into slot `slot` of a channel whose pieces belong to no run
 * (a point-to-point channel): the slot's source is free, and the pieces done in order
 * are retired (tail_seq). */
void zcoll__chan_sent_done(struct zcoll__chan *c, uint32_t slot, int depth);

/* A notification from the channel's peer: a credit return, or a piece now in its slot.
 * ZCOLL_ERR_TRANSPORT if it breaks the protocol (outside the window, too long, more
 * credits than slots, a header too short to be one). */
zcoll_status_t zcoll__chan_arrived(struct zcoll__chan *c, int depth, size_t slot_bytes,
                                   const struct zcoll_tl_event *ev);

#endif
