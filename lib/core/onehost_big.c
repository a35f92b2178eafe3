/*
 * onehost_big.c -- the one-host allreduce of large vectors that lie in memory every rank can
 * map (zcoll_mem_alloc): one pass over each byte per phase, where the executor's puts make
 * two (the writer's copy into the receiver's slot, then the receiver's reduction or copy).
 *
 * The handshake is the small path's (onehost.c): every rank publishes a box -- here saying
 * where its vectors lie -- and reads everybody's, checking the call as a header is checked.
 * If any rank's vector lies elsewhere, every rank sees it in the same boxes, and they all
 * run the executor's schedule instead, under the same collective number (allreduce.c).
 * Otherwise, with block q = [q*n/p, (q+1)*n/p):
 *
 *   reduce   rank r computes its block of the result from every rank's input where it lies,
 *            in rank order (the same bits on every rank), then says stage 2;
 *   copy     for each peer q at stage 2, r copies block q of q's result into its own;
 *            then says stage 3: it reads nobody's memory any more;
 *   wait     r returns once every peer is at stage 3, so that nobody reads r's vectors
 *            after the call returned (the application may reuse them).
 *
 * In place, r writes block q of its vector only once q is at stage 2, past reading it; the
 * blocks r writes during its reduction nobody else reads. Peers only ever read each other's
 * memory: a peer that fails cannot write into ours, and a call that fails has written
 * nothing but its own result.
 */
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "exec.h"
#include "kernels/copy.h"
#include "kernels/reduce.h"
#include "mem.h"
#include "onehost.h"

enum { PH_COPY = 1, PH_WAIT };

static void block_of(const struct zcoll__run *r, int q, size_t *first, size_t *n) {
  uint64_t c = r->desc.count, p = (uint64_t)r->comm->size;
  *first = (size_t)(c * (uint64_t)q / p);
  *n = (size_t)(c * (uint64_t)(q + 1) / p) - *first;
}

void zcoll__onehost_big_publish(struct zcoll__run *r, struct zcoll__oh_box *b) {
  zcoll_comm_t *comm = r->comm;
  size_t bytes = (size_t)r->desc.count * r->dsize;
  zcoll__mem_place(comm, r->buf[ZCOLL_BUF_SRC], bytes, &b->big.src);
  zcoll__mem_place(comm, r->buf[ZCOLL_BUF_DST], bytes, &b->big.dst);
  atomic_store_explicit(&b->big.stage, 1, memory_order_relaxed); /* seq's release covers it */
}

/* Peer q's region `serial`, mapped here: from the cache, else through the transport. */
static zcoll_status_t map_peer(zcoll_comm_t *comm, int q, const struct zcoll__oh_place *pl,
                               size_t bytes, char **out) {
  struct zcoll__onehost *oh = comm->oh;
  struct zcoll__oh_mapped *m = &oh->maps[(size_t)q * ZCOLL_OH_MAPS], *hit = NULL, *victim = m;
  const struct zcoll__chan *c = &comm->chans[comm->chan_of[q]];
  for (int i = 0; i < ZCOLL_OH_MAPS && !hit; i++) {
    if (m[i].serial == pl->serial) hit = &m[i];
    if (m[i].used < victim->used) victim = &m[i];
  }
  if (!hit) {
    struct zcoll_tl_rkey *k = NULL;
    zcoll_status_t st = c->ops->rkey_unpack(c->ep, pl->key, pl->keylen, &k);
    if (st != ZCOLL_OK) return st;
    if (victim->rkey) c->ops->rkey_release(victim->rkey);
    *victim = (struct zcoll__oh_mapped){pl->serial, 0, k};
    hit = victim;
  }
  hit->used = ++oh->map_clock;
  /* The peer's offsets are checked against its region as mapped: a wrong one is refused,
   * never followed. */
  if (!(*out = c->ops->rkey_ptr(hit->rkey, pl->off, bytes)))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                       "one-host allreduce: rank %d's vector (%zu bytes at %llu) is outside "
                       "the region it names",
                       q, bytes, (unsigned long long)pl->off);
  return ZCOLL_OK;
}

/* Every box read: all mappable, or the executor for everyone. */
static zcoll_status_t decide(struct zcoll__run *r, int *mapped) {
  zcoll_comm_t *comm = r->comm;
  struct zcoll__onehost *oh = comm->oh;
  size_t bytes = (size_t)r->desc.count * r->dsize;
  *mapped = 1;
  for (int q = 0; q < comm->size && *mapped; q++) {
    const struct zcoll__oh_box *b = zcoll__oh_box_of(oh, q, r->oh_which);
    *mapped = b->big.src.serial && b->big.dst.serial;
  }
  if (!*mapped) return ZCOLL_OK;
  for (int q = 0; q < comm->size; q++) {
    if (q == comm->rank) {
      oh->src[q] = r->buf[ZCOLL_BUF_SRC];
      oh->dst[q] = r->buf[ZCOLL_BUF_DST];
      continue;
    }
    const struct zcoll__oh_box *b = zcoll__oh_box_of(oh, q, r->oh_which);
    zcoll_status_t st = map_peer(comm, q, &b->big.src, bytes, &oh->src[q]);
    if (st == ZCOLL_OK) st = map_peer(comm, q, &b->big.dst, bytes, &oh->dst[q]);
    if (st != ZCOLL_OK) return st;
  }
  return ZCOLL_OK;
}

/* This rank's block of the result, from every rank's input, in rank order. Past two ranks
 * the partial result waits in a chunk of scratch until the last input: in place, this
 * rank's input is its result, and must be read before it is written. */
static void reduce_block(struct zcoll__run *r) {
  zcoll_comm_t *comm = r->comm;
  char **src = comm->oh->src, *tmp = comm->oh->tmp;
  int p = comm->size, avg = r->op == ZCOLL_AVG ? p : 0;
  size_t first, n, step = ZCOLL_ONEHOST_CHUNK / r->dsize;
  block_of(r, comm->rank, &first, &n);
  int64_t t0 = r->started_ns ? zcoll__now_ns() : 0;
  for (size_t a = first; a < first + n; a += step) {
    size_t k = first + n - a < step ? first + n - a : step, off = a * r->dsize;
    char *dst = r->buf[ZCOLL_BUF_DST] + off;
    if (p == 2) {
      zcoll__reduce(r->dtype, r->op, dst, src[0] + off, src[1] + off, k, avg);
      continue;
    }
    zcoll__reduce(r->dtype, r->op, tmp, src[0] + off, src[1] + off, k, 0);
    for (int q = 2; q < p - 1; q++) zcoll__reduce(r->dtype, r->op, tmp, tmp, src[q] + off, k, 0);
    zcoll__reduce(r->dtype, r->op, dst, tmp, src[p - 1] + off, k, avg);
  }
  if (t0)
    zcoll__trace_event(&comm->trace, ZCOLL_STAGE_REDUCE, t0, zcoll__now_ns(), -1, n * r->dsize);
}

static void set_stage(struct zcoll__run *r, uint32_t stage) {
  struct zcoll__oh_box *b = zcoll__oh_box_of(r->comm->oh, r->comm->rank, r->oh_which);
  atomic_store_explicit(&b->big.stage, stage, memory_order_release);
  zcoll__onehost_knock(r->comm);
}

static uint32_t stage_of(const struct zcoll__run *r, int q) {
  const struct zcoll__oh_box *b = zcoll__oh_box_of(r->comm->oh, q, r->oh_which);
  return atomic_load_explicit(&b->big.stage, memory_order_acquire);
}

/* The i-th peer in this rank's order: the next ranks first, so that the ranks do not all
 * read from one at once. */
static int peer_at(const struct zcoll__run *r, int i) {
  return (r->comm->rank + 1 + i) % r->comm->size;
}

zcoll_status_t zcoll__onehost_big_step(struct zcoll__run *r, int *progress) {
  zcoll_comm_t *comm = r->comm;
  int p = comm->size;
  if (r->oh_phase == 0) { /* the handshake just ended */
    int mapped;
    zcoll_status_t st = decide(r, &mapped);
    if (st != ZCOLL_OK) return st;
    *progress = 1;
    if (!mapped) {
      comm->oh->fell_back = 1;
      comm->oh->handshake_seq = r->ordinal + 1;
      r->started_ns = 0; /* the executor's run traces the collective */
      r->remaining = 0;
      return ZCOLL_OK;
    }
    comm->oh->fell_back = 0;
    reduce_block(r);
    set_stage(r, 2);
    r->oh_phase = PH_COPY;
    r->oh_i = 0;
  }
  if (r->oh_phase == PH_COPY) {
    for (; r->oh_i < p - 1; r->oh_i++) {
      int q = peer_at(r, r->oh_i);
      if (stage_of(r, q) < 2) {
        r->oh_next = q;
        return ZCOLL_OK;
      }
      size_t first, n;
      block_of(r, q, &first, &n);
      int64_t t0 = r->started_ns ? zcoll__now_ns() : 0;
      zcoll__copy(r->buf[ZCOLL_BUF_DST] + first * r->dsize, comm->oh->dst[q] + first * r->dsize,
                  n * r->dsize);
      if (t0)
        zcoll__trace_event(&comm->trace, ZCOLL_STAGE_COPY_OUT, t0, zcoll__now_ns(), q,
                           n * r->dsize);
      *progress = 1;
    }
    set_stage(r, 3);
    r->oh_phase = PH_WAIT;
    r->oh_i = 0;
  }
  for (; r->oh_i < p - 1; r->oh_i++) {
    int q = peer_at(r, r->oh_i);
    if (stage_of(r, q) < 3) {
      r->oh_next = q;
      return ZCOLL_OK;
    }
  }
  if (r->started_ns) {
    zcoll__trace_event(&comm->trace, ZCOLL_STAGE_COLLECTIVE, r->started_ns, zcoll__now_ns(), -1,
                       (size_t)r->desc.count * r->dsize);
    r->started_ns = 0;
  }
  r->oh_next = p; /* nobody awaited */
  r->remaining = 0;
  *progress = 1;
  return ZCOLL_OK;
}

int zcoll__onehost_big_ready(const struct zcoll__run *r) {
  int q = r->oh_next;
  if (q < 0 || q >= r->comm->size || q == r->comm->rank) return 1;
  return stage_of(r, q) >= (r->oh_phase == PH_COPY ? 2u : 3u);
}

void zcoll__onehost_big_free(zcoll_comm_t *comm, int local) {
  struct zcoll__onehost *oh = comm->oh;
  for (int q = 0; q < comm->size; q++)
    for (int i = 0; i < ZCOLL_OH_MAPS; i++) {
      struct zcoll__oh_mapped *m = &oh->maps[(size_t)q * ZCOLL_OH_MAPS + i];
      int ci = comm->chan_of ? comm->chan_of[q] : -1;
      if (m->rkey && !local && ci >= 0) comm->chans[ci].ops->rkey_release(m->rkey);
      m->rkey = NULL;
    }
}
