/*
 * partial_home.c -- the partial allreduce's ticket counter: its words made at rank 0 in
 * memory the transports can reach (shm's memfd where there is one), registered with each
 * instance that has a fetch_add, and a key to them for every other rank.
 *
 * A device's atomics (verbs) are atomic with that device's only: where the others reach
 * the words through one, rank 0 goes through its own too (the transport's self_ep), and
 * ranks that would mix them with the CPU's (a shm peer beside a verbs one) are refused.
 * A probe word written before anyone reads checks the path end to end, and tells a device
 * that returns the old value big-endian (Mellanox's, on x86) from one that does not.
 */
#include "partial_home.h"

#include <byteswap.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "base/log.h"
#include "core/report.h"

#define PROBE 0x0102030405060708ull

zcoll_status_t zcoll__phome_add(struct zcoll__phome *h, uint32_t off, uint64_t add, uint64_t *old) {
  if (!h->key || !h->t) { /* rank 0, with the CPU's atomics */
    *old = __atomic_fetch_add(&h->words[off / 8], add, __ATOMIC_SEQ_CST);
    return ZCOLL_OK;
  }
  int locked = zcoll__tl_lock(h->pc->fam);
  zcoll_status_t st = h->t->ops->fetch_add(h->ep, h->key, off, add, old);
  zcoll__tl_unlock(h->pc->fam, locked);
  if (h->swap) *old = bswap_64(*old);
  return st;
}

/* Rank 0's keys to the home, one per transport instance (by index in pc->tlis): room for
 * a UCP key for atomics (transports/ucx/mr.c). */
#define HOME_KEY_MAX 1024u
struct home_keys {
  uint32_t len[ZCOLL_TL_MAX];
  uint8_t key[ZCOLL_TL_MAX][HOME_KEY_MAX];
};

static zcoll_status_t make(struct zcoll__phome *h, size_t nwords, struct home_keys *k) {
  zcoll_comm_t *pc = h->pc;
  h->len = (8 * (nwords + 1) + 4095) & ~(size_t)4095; /* and the probe */
  /* Peers reach it the way they reach the slots: memory a transport allocates where it
   * must (shm: a memfd they map), and can give back while its instance stays open. */
  for (int i = 0; i < pc->ntlis && !h->alloc; i++)
    if (pc->tlis[i].ops->mem_alloc && pc->tlis[i].ops->mem_free) h->alloc = &pc->tlis[i];
  int locked = zcoll__tl_lock(pc->fam);
  void *m = NULL;
  zcoll_status_t st = ZCOLL_OK;
  if (h->alloc) {
    st = h->alloc->ops->mem_alloc(h->alloc->tl, h->len, &m);
  } else {
    m = mmap(NULL, h->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      m = NULL;
      st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "partial allreduce: cannot map the ticket counter");
    }
  }
  if (st == ZCOLL_OK) {
    memset(m, 0, h->len);
    h->words = m;
    h->words[nwords] = PROBE;
  }
  for (int i = 0; st == ZCOLL_OK && i < pc->ntlis; i++) {
    struct zcoll__tli *t = &pc->tlis[i];
    if (!t->ops->fetch_add) continue;
    size_t len = HOME_KEY_MAX;
    if ((st = t->ops->mem_reg(t->tl, m, h->len, 1, &h->mr[i])) == ZCOLL_OK &&
        (st = t->ops->rkey_pack(h->mr[i], k->key[i], &len)) == ZCOLL_OK)
      k->len[i] = (uint32_t)len;
  }
  zcoll__tl_unlock(pc->fam, locked);
  return st;
}

static zcoll_status_t reach(struct zcoll__phome *h, const struct home_keys *k) {
  zcoll_comm_t *pc = h->pc;
  int ci = pc->chan_of[0];
  struct zcoll__chan *c = ci >= 0 ? &pc->chans[ci] : NULL;
  if (!c || !c->t->ops->fetch_add || !k->len[c->t - pc->tlis])
    return zcoll__fail(ZCOLL_ERR_UNSUPPORTED,
                       "partial allreduce: rank %d reaches rank 0 over %s, which has no remote "
                       "atomics for the round's ticket counter",
                       pc->rank, c ? c->ops->name : "nothing");
  int i = (int)(c->t - pc->tlis);
  h->t = c->t;
  h->ep = c->ep;
  int locked = zcoll__tl_lock(pc->fam);
  zcoll_status_t st = c->ops->rkey_unpack(c->ep, k->key[i], k->len[i], &h->key);
  zcoll__tl_unlock(pc->fam, locked);
  return st;
}

/* Rank 0, where the others use a device's atomics: its own words through its device. */
static zcoll_status_t reach_self(struct zcoll__phome *h, const struct home_keys *k) {
  zcoll_comm_t *pc = h->pc;
  struct zcoll__tli *t = NULL;
  for (int i = 0; i < pc->ntlis && !t; i++)
    if (pc->tlis[i].ops->self_ep && k->len[i]) t = &pc->tlis[i];
  if (!t)
    return zcoll__fail(ZCOLL_ERR_UNSUPPORTED,
                       "partial allreduce: rank 0 has no device to reach its own ticket counter");
  int i = (int)(t - pc->tlis);
  int locked = zcoll__tl_lock(pc->fam);
  zcoll_status_t st = t->ops->self_ep(t->tl, &h->ep);
  if (st == ZCOLL_OK) st = t->ops->rkey_unpack(h->ep, k->key[i], k->len[i], &h->key);
  zcoll__tl_unlock(pc->fam, locked);
  if (st == ZCOLL_OK) h->t = t;
  return st;
}

/* The probe word read through this rank's path: the value written, or byte-swapped. */
static zcoll_status_t probe(struct zcoll__phome *h, size_t nwords) {
  uint64_t v = 0;
  zcoll_status_t st = zcoll__phome_add(h, (uint32_t)(8 * nwords), 0, &v);
  if (st != ZCOLL_OK || v == PROBE) return st;
  if (v == bswap_64(PROBE)) {
    h->swap = 1;
    return ZCOLL_OK;
  }
  return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                     "partial allreduce: rank %d read %016llx through %s's atomics where rank 0 "
                     "wrote %016llx",
                     h->pc->rank, (unsigned long long)v, h->t ? h->t->ops->name : "the CPU",
                     (unsigned long long)PROBE);
}

void zcoll__phome_close(struct zcoll__phome *h) {
  zcoll_comm_t *pc = h->pc;
  if (!pc) return;
  int locked = zcoll__tl_lock(pc->fam);
  for (int i = 0; i < ZCOLL_TL_MAX; i++)
    if (h->mr[i]) pc->tlis[i].ops->mem_dereg(h->mr[i]);
  if (h->key) h->t->ops->rkey_release(h->key);
  if (h->words && h->alloc)
    h->alloc->ops->mem_free(h->alloc->tl, h->words, h->len);
  else if (h->words)
    munmap(h->words, h->len);
  zcoll__tl_unlock(pc->fam, locked);
  h->words = NULL;
  h->key = NULL;
  memset(h->mr, 0, sizeof(h->mr));
}

zcoll_status_t zcoll__phome_setup(struct zcoll__phome *h, zcoll_comm_t *pc, size_t nwords,
                                  zcoll_status_t mine) {
  int rank = pc->rank;
  h->pc = pc;
  struct home_keys k;
  memset(&k, 0, sizeof(k));
  if (mine == ZCOLL_OK && rank == 0) mine = make(h, nwords, &k);
  zcoll_status_t st = zcoll_broadcast(pc, &k, sizeof(k), ZCOLL_UINT8, 0);
  if (st != ZCOLL_OK) return st;
  if (mine == ZCOLL_OK && rank != 0) mine = reach(h, &k);
  /* Who goes through a device's atomics, who through the CPU's: not both. */
  int device = rank != 0 && h->t && h->t->ops->self_ep;
  int32_t v[3] = {mine != ZCOLL_OK ? rank + 1 : 0, device, rank != 0 && h->t && !device};
  if ((st = zcoll_allreduce(pc, ZCOLL_IN_PLACE, v, 3, ZCOLL_INT32, ZCOLL_MAX)) != ZCOLL_OK)
    return st;
  if (mine != ZCOLL_OK) return mine;
  if (v[0])
    return zcoll__fail(ZCOLL_ERR_UNSUPPORTED,
                       "zcoll_allreduce_partial_init: rank %d cannot reach the round's ticket "
                       "counter (its message says why)",
                       v[0] - 1);
  if (v[1] && v[2])
    return zcoll__fail(ZCOLL_ERR_UNSUPPORTED,
                       "zcoll_allreduce_partial_init: some ranks reach the ticket counter with "
                       "an RDMA device's atomics and some with the CPU's (shared memory), which "
                       "are not atomic with each other; ZCOLL_TRANSPORT=verbs puts every rank "
                       "on the device");
  mine = rank == 0 && v[1] ? reach_self(h, &k) : ZCOLL_OK;
  if (mine == ZCOLL_OK) mine = probe(h, nwords);
  int32_t bad = mine != ZCOLL_OK ? rank + 1 : 0;
  if ((st = zcoll_allreduce(pc, ZCOLL_IN_PLACE, &bad, 1, ZCOLL_INT32, ZCOLL_MAX)) != ZCOLL_OK)
    return st;
  if (mine != ZCOLL_OK) return mine;
  if (bad)
    return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                       "zcoll_allreduce_partial_init: rank %d's atomics on the round's ticket "
                       "counter failed their check (its message says why)",
                       bad - 1);
  return ZCOLL_OK;
}
