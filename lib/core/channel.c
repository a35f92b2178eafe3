/* channel.c -- the wire protocol's encoding and checks (the layout is in channel.h), and the
 * receiver's side of the credits: a consumed slot handed back to the peer. */
#include "channel.h"

#include <stdio.h>
#include <string.h>

#include "algorithms/algorithms.h"
#include "base/log.h"
#include "exec.h"
#include "kernels/op.h"

#define ZCOLL_CHAN_MAGIC 0x7a636f6cu /* "zcol" */
#define ZCOLL_CHAN_VERSION 2u        /* 2: the description carries the wire dtype */

static uint64_t mix(uint64_t h, uint64_t x) {
  /* splitmix64's finalizer over an FNV-style chain: every input bit reaches every
   * output bit, so two descriptions that differ anywhere collide with odds 2^-64. */
  h = (h ^ x) * 0x100000001b3ull;
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

uint64_t zcoll__coll_fingerprint(const struct zcoll__coll_desc *d) {
  uint64_t h = 0xcbf29ce484222325ull;
  h = mix(h, d->kind);
  h = mix(h, d->dtype);
  h = mix(h, d->op);
  h = mix(h, d->algo);
  h = mix(h, d->arity);
  h = mix(h, d->wire);
  h = mix(h, (uint64_t)(int64_t)d->root);
  h = mix(h, d->op_tag);
  return mix(h, d->count);
}

uint64_t zcoll__pair_fingerprint(const struct zcoll__coll_desc *d, uint64_t back) {
  return mix(zcoll__coll_fingerprint(d) ^ 0x5061697273ull /* "Pairs" */, back);
}

void zcoll__chan_hdr_write(void *buf, uint64_t ordinal, const struct zcoll__coll_desc *d,
                           uint64_t fp) {
  /* The header fills its room (static-asserted): none of our memory goes out by chance. */
  struct zcoll__chan_hdr h = {ZCOLL_CHAN_MAGIC, ZCOLL_CHAN_VERSION, ordinal, fp, *d};
  memcpy(buf, &h, sizeof(h));
}

static void describe(char *buf, size_t len, const struct zcoll__coll_desc *d) {
  const struct zcoll__kind *k = zcoll__kind_of(d->kind);
  if (!k) {
    snprintf(buf, len, "collective kind %u", d->kind);
    return;
  }
  if (k->fixed) {
    snprintf(buf, len, "%s", k->fixed);
    return;
  }
  const char *dt = d->dtype < ZCOLL_DTYPE_COUNT ? zcoll_dtype_name(d->dtype) : "?";
  char wired[32];
  if (d->wire) { /* ranks that differ in ZCOLL_WIRE_DTYPE see it named */
    snprintf(wired, sizeof(wired), "%s sent as %s", dt,
             d->wire < ZCOLL_DTYPE_COUNT ? zcoll_dtype_name(d->wire) : "?");
    dt = wired;
  }
  char algo[48];
  snprintf(algo, sizeof(algo), "%s", zcoll__kind_algo_name(d->kind, d->algo));
  if (strcmp(algo, "tree") == 0) snprintf(algo, sizeof(algo), "tree of arity %u", d->arity);
  char op[66] = "", root[32] = "", lead[32] = "";
  if (k->has_op) {
    op[0] = ',', op[1] = ' ';
    zcoll__op_describe(op + 2, sizeof(op) - 2, d->op, d->op_tag);
  }
  if (k->root == ZCOLL_KIND_ROOT) snprintf(root, sizeof(root), ", root %d", d->root);
  char count[48];
  if (k->pair_counts && d->count == ZCOLL_COUNT_PER_PAIR)
    snprintf(count, sizeof(count), "counts per pair");
  else if (k->pair_counts)
    snprintf(count, sizeof(count), "count %llu for the pair", (unsigned long long)d->count);
  else if (k->counts_hashed)
    snprintf(count, sizeof(count), "counts hashed %016llx", (unsigned long long)d->count);
  else
    snprintf(count, sizeof(count), "count %llu", (unsigned long long)d->count);
  if (k->root == ZCOLL_KIND_KEY_HASH)
    snprintf(lead, sizeof(lead), "key hash %08x; ", (unsigned)d->root);
  if (k->root == ZCOLL_KIND_QUORUM) snprintf(lead, sizeof(lead), "quorum %d; ", d->root);
  snprintf(buf, len, "%s%s%s, %s%s%s, %s)", k->head, lead, count, dt, op, root, algo);
}

zcoll_status_t zcoll__chan_hdr_check(const void *buf, size_t len, int peer, uint64_t ordinal,
                                     const struct zcoll__coll_desc *mine, uint64_t fp) {
  struct zcoll__chan_hdr h;
  if (len < ZCOLL_CHAN_HDR_BYTES)
    return zcoll__fail(ZCOLL_ERR_MISMATCH,
                       "rank %d sent a collective header of %zu bytes (protocol mismatch: "
                       "different zcoll versions?)",
                       peer, len);
  memcpy(&h, buf, sizeof(h));
  if (h.magic != ZCOLL_CHAN_MAGIC || h.version != ZCOLL_CHAN_VERSION)
    return zcoll__fail(ZCOLL_ERR_MISMATCH,
                       "rank %d sent a collective header of another protocol (magic %08x, "
                       "version %u; this rank speaks %08x version %u)",
                       peer, h.magic, h.version, ZCOLL_CHAN_MAGIC, ZCOLL_CHAN_VERSION);
  /* The hot path: three compares, no hashing, no formatting. The description is compared
   * as well as the fingerprint, so that a header whose fields and fingerprint disagree
   * (a peer's bug) cannot pass. */
  if (h.ordinal == ordinal && h.fingerprint == fp && !memcmp(&h.desc, mine, sizeof(h.desc)))
    return ZCOLL_OK;
  char theirs[256], ours[256];
  describe(theirs, sizeof(theirs), &h.desc);
  describe(ours, sizeof(ours), mine);
  if (h.ordinal != ordinal)
    return zcoll__fail(ZCOLL_ERR_MISMATCH,
                       "collectives out of step: rank %d is at its collective #%llu, %s, while "
                       "this rank is at #%llu, %s (a rank skipped a call, or made one more)",
                       peer, (unsigned long long)h.ordinal, theirs, (unsigned long long)ordinal,
                       ours);
  const struct zcoll__kind *k = zcoll__kind_of(mine->kind);
  if (k && k->pair_counts && !memcmp(&h.desc, mine, sizeof(h.desc))) /* the other direction */
    return zcoll__fail(ZCOLL_ERR_MISMATCH,
                       "collective #%llu differs between ranks: rank %d expects another count "
                       "from this rank than this rank sends it, in %s",
                       (unsigned long long)ordinal, peer, ours);
  return zcoll__fail(ZCOLL_ERR_MISMATCH,
                     "collective #%llu differs between ranks: rank %d called %s, this rank %s "
                     "(fingerprints %016llx and %016llx)",
                     (unsigned long long)ordinal, peer, theirs, ours,
                     (unsigned long long)h.fingerprint, (unsigned long long)fp);
}

zcoll_status_t zcoll__chan_same_check(const struct zcoll__chan *c, uint64_t ordinal,
                                      const struct zcoll__coll_desc *mine) {
  if (zcoll__chan_seen_same(c, mine)) return ZCOLL_OK;
  char ours[256];
  describe(ours, sizeof(ours), mine);
  if (!c->seen_valid)
    return zcoll__fail(ZCOLL_ERR_MISMATCH,
                       "rank %d started collective #%llu as a repeat of a header this rank never "
                       "got (protocol mismatch)",
                       c->peer, (unsigned long long)ordinal);
  char theirs[256];
  describe(theirs, sizeof(theirs), &c->seen_desc);
  return zcoll__fail(ZCOLL_ERR_MISMATCH,
                     "collective #%llu differs between ranks: rank %d called %s, this rank %s",
                     (unsigned long long)ordinal, c->peer, theirs, ours);
}

struct zcoll__slot *zcoll__chan_slot_for(const struct zcoll__chan *c, int depth, size_t slot_bytes,
                                         uint32_t imm, size_t len, uint32_t *ahead) {
  uint32_t a = ((imm & ZCOLL_IMM_SEQ_MASK) - (uint32_t)c->recv_seq) & ZCOLL_IMM_SEQ_MASK;
  if (a >= (uint32_t)depth) return NULL;
  uint32_t i = c->recv_slot + a; /* both below depth */
  struct zcoll__slot *sl = &c->slots[i >= (uint32_t)depth ? i - (uint32_t)depth : i];
  if (sl->arrived || len > slot_bytes) return NULL;
  if (ahead) *ahead = a;
  return sl;
}

zcoll_status_t zcoll__chan_arrived(struct zcoll__chan *c, int depth, size_t slot_bytes,
                                   const struct zcoll_tl_event *ev) {
  if ((ev->imm & (ZCOLL_IMM_SET_MASK << ZCOLL_IMM_SET_SHIFT)) != c->imm_set)
    return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                       "protocol violation by rank %d: a notification of channel set %u on a "
                       "channel of set %u",
                       c->peer, zcoll__imm_set(ev->imm), c->imm_set >> ZCOLL_IMM_SET_SHIFT);
  if (ev->imm & ZCOLL_IMM_CREDIT) {
    c->credits += ev->imm & ZCOLL_IMM_SEQ_MASK;
    if (c->credits > (uint32_t)depth)
      return zcoll__fail(ZCOLL_ERR_TRANSPORT, "rank %d returned more credits than slots", c->peer);
    return ZCOLL_OK;
  }
  struct zcoll__slot *sl = zcoll__chan_slot_for(c, depth, slot_bytes, ev->imm, ev->len, NULL);
  uint32_t kind = zcoll__imm_kind(ev->imm);
  int ok = 0;
  switch (kind) {
  case 0:
  case ZCOLL_IMM_SAME: ok = 1; break;
  case ZCOLL_IMM_HDR: ok = ev->len >= ZCOLL_CHAN_HDR_BYTES && !ev->placed; break;
  case ZCOLL_IMM_GRANT:
    ok = ev->len >= sizeof(struct zcoll__chan_grant) && ev->len <= ZCOLL_GRANT_MAX_BYTES &&
         !ev->placed;
    break;
  /* Written by the peer into our result: only a transport where the writer places data
   * delivers one, and it holds data. Whether we granted it is the executor's check. */
  case ZCOLL_IMM_DIRECT: ok = ev->len > 0 && !ev->placed; break;
  }
  if (!sl || !ok)
    return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                       "protocol violation by rank %d: piece %u of %u bytes while expecting "
                       "piece %u",
                       c->peer, ev->imm & ZCOLL_IMM_SEQ_MASK, ev->len,
                       (uint32_t)c->recv_seq & ZCOLL_IMM_SEQ_MASK);
  sl->arrived = 1;
  sl->placed = ev->placed || kind == ZCOLL_IMM_DIRECT;
  sl->data_off = 0;
  sl->imm = ev->imm;
  sl->len = ev->len;
  return ZCOLL_OK;
}

void zcoll__chan_sent_done(struct zcoll__chan *c, uint32_t slot, int depth) {
  if (slot < (uint32_t)depth) c->inflight[slot].done = 1;
  while (c->tail_seq != c->send_seq && c->inflight[c->tail_slot].done) {
    c->inflight[c->tail_slot].busy = 0;
    c->inflight[c->tail_slot].done = 0;
    c->tail_seq++;
    c->tail_slot = zcoll__slot_next(c->tail_slot, depth);
  }
}

/* ---- credits: the receiver hands consumed slots back ---- */

static zcoll_status_t return_credits(zcoll_comm_t *comm, struct zcoll__chan *c) {
  zcoll_status_t st = zcoll__chan_put(
      comm, c, NULL, NULL, NULL, 0, 0, zcoll__imm_credit(c->unreturned, c->imm_set, c->imm_gen),
      ZCOLL_COOKIE_CREDIT | zcoll__cookie(c->imm_set, (uint32_t)(c - comm->chans), 0));
  if (st == ZCOLL_OK) c->unreturned = 0;
  return st;
}

/* A consumed slot is free again; its credit goes back in batches. */
zcoll_status_t zcoll__chan_consume(zcoll_comm_t *comm, struct zcoll__chan *c,
                                   struct zcoll__slot *sl) {
  sl->arrived = 0;
  sl->data_off = 0;
  c->recv_seq++;
  c->recv_slot = zcoll__slot_next(c->recv_slot, comm->depth);
  c->unreturned++;
  if (c->unreturned >= (uint32_t)(comm->depth + 1) / 2) return return_credits(comm, c);
  return ZCOLL_OK;
}
