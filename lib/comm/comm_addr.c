/*
 * comm_addr.c -- the address round of a wiring: each rank sends rank 0 its peer list and,
 * per transport instance, its address, the parts of it meant for each peer alone
 * (transport.h's peer_address: RDMA queue pair numbers) and its receive key; rank 0
 * answers each rank with its peers' entries only, each with the part for that rank --
 * the rendezvous moves p * peers entries, not the p^2 an allgather would.
 */
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "core/comm.h"
#include "transports.h"
#include "wire.h"

/* This rank's addresses and receive keys: how many entries, then one per instance:
 * {index, address length, key length, part length}, the address, one part for each
 * position of the peer list (transport.h's peer_address; none without it) and the key.
 * Rank 0 hands each peer only its own part (slice_entries). */
struct blob_entry {
  uint32_t idx, alen, klen, each;
};

#define ADDR_MAX 4096 /* bytes of an instance's address */
#define KEY_MAX 1024  /* of its receive key */
#define PART_MAX 64   /* of the part of its address for one peer */

/* The ranks instance t makes an endpoint for, at each position of the peer list: a peer
 * it reaches and does not reach already (the family's endpoint, comm_share.c). */
static void part_ranks(const zcoll_comm_t *comm, const struct zcoll__tli *t, const int *peers,
                       int npeers, const int *kinds, int *ranks) {
  for (int i = 0; i < npeers; i++) {
    int e = comm->erank_of ? comm->erank_of[peers[i]] : peers[i];
    ranks[i] = kinds[i] == t->idx && !(t->ftl && t->ftl->ep_of[e]) ? e : -1;
  }
}

static zcoll_status_t pack_blob(zcoll_comm_t *comm, const int *peers, int npeers, const int *kinds,
                                char **out, size_t *len) {
  size_t parts = (size_t)npeers * PART_MAX;
  size_t cap = sizeof(uint32_t) +
               (size_t)comm->ntlis * (sizeof(struct blob_entry) + ADDR_MAX + KEY_MAX + parts);
  char *b = malloc(cap);
  int *ranks = malloc(sizeof(int) * (size_t)(npeers ? npeers : 1));
  if (!b || !ranks) {
    free(b), free(ranks);
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
  }
  uint32_t n = (uint32_t)comm->ntlis;
  memcpy(b, &n, sizeof(n));
  size_t off = sizeof(n);
  zcoll_status_t st = ZCOLL_OK;
  for (int k = 0; k < comm->ntlis && st == ZCOLL_OK; k++) {
    struct zcoll__tli *t = &comm->tlis[k];
    size_t alen = ADDR_MAX, klen = KEY_MAX, each = 0;
    char *e = b + off + sizeof(struct blob_entry);
    st = t->ops->address(t->tl, e, &alen);
    if (st == ZCOLL_OK && t->ops->peer_address && npeers) {
      part_ranks(comm, t, peers, npeers, kinds, ranks);
      each = PART_MAX;
      st = t->ops->peer_address(t->tl, npeers, ranks, e + alen, &each);
    }
    size_t plen = each * (size_t)npeers;
    if (st == ZCOLL_OK) st = t->ops->rkey_pack(t->recv_mr, e + alen + plen, &klen);
    struct blob_entry h = {(uint32_t)t->idx, (uint32_t)alen, (uint32_t)klen, (uint32_t)each};
    memcpy(b + off, &h, sizeof(h));
    off += sizeof(h) + alen + plen + klen;
  }
  free(ranks);
  if (st != ZCOLL_OK) {
    free(b);
    return st;
  }
  *out = b;
  *len = off;
  return ZCOLL_OK;
}

/* Rank q's address (with this rank's part of it) and key for transport idx in the blob
 * rank 0 relayed. */
zcoll_status_t zcoll__wire_find_entry(const char *blob, size_t len, int q, int idx,
                                      const char **addr, size_t *alen, const char **key,
                                      size_t *klen) {
  uint32_t n = 0;
  if (len >= sizeof(n)) memcpy(&n, blob, sizeof(n));
  size_t off = sizeof(n);
  for (uint32_t k = 0; k < n && off + sizeof(struct blob_entry) <= len; k++) {
    struct blob_entry h;
    memcpy(&h, blob + off, sizeof(h));
    size_t body = (size_t)h.alen + h.each + h.klen;
    if (body > len - off - sizeof(h)) break;
    if ((int)h.idx == idx) {
      *addr = blob + off + sizeof(h);
      *alen = (size_t)h.alen + h.each;
      *key = *addr + *alen;
      *klen = h.klen;
      return ZCOLL_OK;
    }
    off += sizeof(h) + body;
  }
  return zcoll__fail(ZCOLL_ERR_BOOTSTRAP,
                     "rank %d published no %s address, though both ends chose it (different "
                     "ZCOLL_* settings across ranks?)",
                     q, zcoll__transports[idx].name);
}

/* Rank 0: a rank's blob as one of its peers gets it -- each entry with only the part at
 * position pos of the rank's peer list of nparts (none if pos is no position). Writes at
 * most len bytes; -1 for a malformed blob. */
static int slice_entries(const char *in, size_t len, uint32_t nparts, uint32_t pos, char *out,
                         size_t *olen) {
  uint32_t n = 0;
  if (len < sizeof(n)) return -1;
  memcpy(&n, in, sizeof(n));
  memcpy(out, &n, sizeof(n));
  size_t off = sizeof(n), o = sizeof(n);
  for (uint32_t k = 0; k < n; k++) {
    struct blob_entry h;
    if (len - off < sizeof(h)) return -1;
    memcpy(&h, in + off, sizeof(h));
    off += sizeof(h);
    if (h.each > PART_MAX || h.alen > ADDR_MAX || h.klen > KEY_MAX) return -1;
    size_t plen = (size_t)h.each * nparts;
    if ((size_t)h.alen + plen + h.klen > len - off) return -1;
    struct blob_entry oh = {h.idx, h.alen, h.klen, pos < nparts ? h.each : 0};
    memcpy(out + o, &oh, sizeof(oh));
    o += sizeof(oh);
    memcpy(out + o, in + off, h.alen);
    o += h.alen;
    memcpy(out + o, in + off + h.alen + (size_t)pos * oh.each, oh.each);
    o += oh.each;
    memcpy(out + o, in + off + h.alen + plen, h.klen);
    o += h.klen;
    off += h.alen + plen + h.klen;
  }
  if (off != len) return -1;
  *olen = o;
  return 0;
}

/* ---- the address round ------------------------------------------------------------ */

/* What a rank gets back for each of its peers, in its list's order: {where it is in the
 * peer's list (its ring in the peer's region), the peer's blob length}, then the blob. */
struct peer_entry {
  uint32_t pos; /* UINT32_MAX: the peer does not list this rank */
  uint32_t len;
};

struct addr_state { /* rank 0: every rank's contribution, parsed once */
  int size;
  const int32_t **lists;
  uint32_t *nlist;
  const char **blob;
  uint32_t *blen;
};

static zcoll_status_t parse_all(struct addr_state *as, const void *const *blobs,
                                const uint32_t *lens) {
  int p = as->size;
  as->lists = malloc(sizeof(*as->lists) * (size_t)p);
  as->nlist = malloc(sizeof(uint32_t) * (size_t)p);
  as->blob = malloc(sizeof(*as->blob) * (size_t)p);
  as->blen = malloc(sizeof(uint32_t) * (size_t)p);
  if (!as->lists || !as->nlist || !as->blob || !as->blen)
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
  for (int r = 0; r < p; r++) {
    uint32_t n = 0;
    if (lens[r] >= sizeof(n)) memcpy(&n, blobs[r], sizeof(n));
    size_t head = sizeof(n) + sizeof(int32_t) * (size_t)n;
    if (lens[r] < sizeof(n) || n > (uint32_t)p || head > lens[r])
      return zcoll__fail(ZCOLL_ERR_BOOTSTRAP,
                         "rank %d sent a malformed peer list (%u bytes; different zcoll "
                         "versions?)",
                         r, lens[r]);
    as->nlist[r] = n;
    as->lists[r] = (const int32_t *)((const char *)blobs[r] + sizeof(n));
    as->blob[r] = (const char *)blobs[r] + head;
    as->blen[r] = lens[r] - (uint32_t)head;
    for (uint32_t k = 0; k < n; k++) {
      int32_t q;
      memcpy(&q, as->lists[r] + k, sizeof(q));
      if (q < 0 || q >= p || q == r)
        return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "rank %d lists %d among its peers", r, (int)q);
    }
  }
  return ZCOLL_OK;
}

static zcoll_status_t addr_reply(void *arg, int rank, const void *const *blobs,
                                 const uint32_t *lens, void **reply, size_t *len) {
  struct addr_state *as = arg;
  zcoll_status_t st;
  if (!as->lists && (st = parse_all(as, blobs, lens)) != ZCOLL_OK) return st;
  size_t total = 0;
  for (uint32_t k = 0; k < as->nlist[rank]; k++) {
    int32_t q;
    memcpy(&q, as->lists[rank] + k, sizeof(q));
    total += sizeof(struct peer_entry) + as->blen[q];
  }
  char *b = malloc(total ? total : 1);
  if (!b) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
  size_t off = 0;
  for (uint32_t k = 0; k < as->nlist[rank]; k++) {
    int32_t q;
    memcpy(&q, as->lists[rank] + k, sizeof(q));
    struct peer_entry e = {UINT32_MAX, 0};
    for (uint32_t i = 0; i < as->nlist[q] && e.pos == UINT32_MAX; i++) {
      int32_t x;
      memcpy(&x, as->lists[q] + i, sizeof(x));
      if (x == rank) e.pos = i;
    }
    size_t slen = 0;
    if (slice_entries(as->blob[q], as->blen[q], as->nlist[q], e.pos, b + off + sizeof(e), &slen)) {
      free(b);
      return zcoll__fail(ZCOLL_ERR_BOOTSTRAP,
                         "rank %d sent malformed addresses (%u bytes; different zcoll versions?)",
                         q, as->blen[q]);
    }
    e.len = (uint32_t)slen;
    memcpy(b + off, &e, sizeof(e));
    off += sizeof(e) + slen;
  }
  *reply = b;
  *len = off;
  return ZCOLL_OK;
}

zcoll_status_t zcoll__wire_addresses(zcoll_comm_t *comm, const int *peers, int npeers,
                                     const int *kinds, uint32_t *pos, const char **blob,
                                     uint32_t *blen, void **reply) {
  char *mine = NULL;
  size_t mlen = 0;
  zcoll_status_t st = pack_blob(comm, peers, npeers, kinds, &mine, &mlen);
  if (st != ZCOLL_OK) return st;
  uint32_t n = (uint32_t)npeers;
  size_t head = sizeof(n) + sizeof(int32_t) * (size_t)npeers;
  char *c = malloc(head + mlen);
  if (!c) {
    free(mine);
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
  }
  memcpy(c, &n, sizeof(n));
  for (int i = 0; i < npeers; i++) {
    int32_t q = peers[i];
    memcpy(c + sizeof(n) + sizeof(q) * (size_t)i, &q, sizeof(q));
  }
  memcpy(c + head, mine, mlen);
  free(mine);
  struct addr_state as = {comm->size, NULL, NULL, NULL, NULL};
  size_t rlen = 0;
  st = zcoll__bootstrap_gather_reply(comm->bs, c, head + mlen, addr_reply, &as, reply, &rlen);
  free(c);
  free(as.lists), free(as.nlist), free(as.blob), free(as.blen);
  if (st != ZCOLL_OK) return st;
  size_t off = 0;
  for (int i = 0; i < npeers; i++) {
    struct peer_entry e;
    if (rlen - off < sizeof(e)) goto bad;
    memcpy(&e, (char *)*reply + off, sizeof(e));
    if (e.len > rlen - off - sizeof(e)) goto bad;
    pos[i] = e.pos;
    blob[i] = (char *)*reply + off + sizeof(e);
    blen[i] = e.len;
    off += sizeof(e) + e.len;
  }
  if (off == rlen) return ZCOLL_OK;
bad:
  return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "rank 0's reply with the peers' addresses is malformed");
}
