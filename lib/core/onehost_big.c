/*
 * onehost_big.c -- the one-host allreduce of large vectors that lie in memory every rank can
 * map (zcoll_mem_alloc): each byte of the result is computed once, from the inputs where
 * they lie, and written once into every rank's vector -- the traffic of one memcpy per rank,
 * where the executor's puts move each byte twice (the writer's copy into the receiver's
 * slot, then the receiver's reduction or copy).
 *
 * The handshake is the small path's (onehost.c): every rank publishes a box -- here saying
 * where its vectors lie -- and reads everybody's, checking the call as a header is checked.
 * If any rank's vector lies elsewhere, every rank sees it in the same boxes, and they all
 * run the executor's schedule instead, under the same collective number (allreduce.c).
 * Otherwise, with block q = [q*n/p, (q+1)*n/p), rank r
 *
 *   says WRITING, then looks whether any rank is OUT (it stops there if so);
 *   for each chunk of block r: reduces every rank's input in rank order (the same bits on
 *            every rank) into a chunk of scratch, and streams it into every rank's result
 *            (non-temporal stores: the result is not read again soon);
 *   says DONE, and returns once every rank is DONE -- nobody touches its vectors after.
 *
 * In place, block r of q's vector is q's input there, which only r reads, and r writes it
 * only after reading it. A rank that leaves on an error (exec_wait.c calls
 * zcoll__onehost_quiesce before the error reaches the application) says OUT, then waits
 * until every peer is past WRITING or dead: the peer's store of WRITING and ours of OUT come
 * before each one's look at the other's (sequentially consistent), so a peer either sees OUT
 * before it writes anything, or is seen writing and is waited for -- and a writer waits for
 * nothing, so that wait ends. No peer writes into a rank's memory after its call returned.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "exec.h"
#include "kernels/copy.h"
#include "kernels/reduce.h"
#include "mem.h"
#include "onehost.h"

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
  atomic_store_explicit(&b->big.stage, ZCOLL_OH_PUBLISHED, memory_order_relaxed); /* seq's
                                                                     release covers it */
  comm->oh->open_seq = r->ordinal + 1;
  comm->oh->open_which = r->oh_which;
  comm->oh->open_dst = r->buf[ZCOLL_BUF_DST];
  comm->oh->open_bytes = bytes;
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
    if (!*mapped) /* why a large call was not read where it lies: zcoll_perf -M, torch */
      zcoll_log_debug("allreduce of %zu bytes: rank %d's %s is not in zcoll_mem_alloc memory; "
                      "the schedule moves it",
                      bytes, q, b->big.src.serial ? "result" : "input");
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

/* This rank's block of the result, from every rank's input in rank order, by chunks that
 * wait in scratch (in place, a rank's input is its result: every input of a chunk is read
 * before any result is written), then streamed into every rank's result -- the next
 * ranks' first, so that the ranks do not all write into one at once. */
static void push_block(struct zcoll__run *r) {
  zcoll_comm_t *comm = r->comm;
  char **src = comm->oh->src, **dst = comm->oh->dst, *tmp = comm->oh->tmp;
  int p = comm->size, avg = r->op == ZCOLL_AVG ? p : 0;
  size_t first, n, step = ZCOLL_ONEHOST_CHUNK / r->dsize;
  block_of(r, comm->rank, &first, &n);
  int64_t t0 = r->started_ns ? zcoll__now_ns() : 0;
  /* Streaming stores where the vectors outgrow the cache, out of place only: in place,
   * every line written was just read for the reduction, and is in cache. */
  int stream = r->buf[ZCOLL_BUF_SRC] != r->buf[ZCOLL_BUF_DST] &&
               2 * (size_t)p * r->desc.count * r->dsize >= ZCOLL_ONEHOST_STREAM_MIN;
  for (size_t a = first; a < first + n; a += step) {
    size_t k = first + n - a < step ? first + n - a : step, off = a * r->dsize;
    zcoll__reduce(r->dtype, r->op, tmp, src[0] + off, src[1] + off, k, p == 2 ? avg : 0);
    for (int q = 2; q < p; q++)
      zcoll__reduce(r->dtype, r->op, tmp, tmp, src[q] + off, k, q == p - 1 ? avg : 0);
    for (int i = 0; i < p; i++) {
      if (stream)
        zcoll__copy_stream(dst[(comm->rank + 1 + i) % p] + off, tmp, k * r->dsize);
      else
        zcoll__copy(dst[(comm->rank + 1 + i) % p] + off, tmp, k * r->dsize);
    }
  }
  if (t0)
    zcoll__trace_event(&comm->trace, ZCOLL_STAGE_REDUCE, t0, zcoll__now_ns(), -1, n * r->dsize);
}

static void set_stage(struct zcoll__run *r, uint32_t stage) {
  struct zcoll__oh_box *b = zcoll__oh_box_of(r->comm->oh, r->comm->rank, r->oh_which);
  atomic_store_explicit(&b->big.stage, stage, memory_order_seq_cst);
  zcoll__onehost_knock(r->comm);
}

static uint32_t stage_of(const struct zcoll__run *r, int q) {
  const struct zcoll__oh_box *b = zcoll__oh_box_of(r->comm->oh, q, r->oh_which);
  return atomic_load_explicit(&b->big.stage, memory_order_seq_cst);
}

/* The i-th peer in this rank's order: the next ranks first, so that the ranks do not all
 * wait on one at once. */
static int peer_at(const struct zcoll__run *r, int i) {
  return (r->comm->rank + 1 + i) % r->comm->size;
}

static zcoll_status_t peer_out(int q) {
  return zcoll__fail(ZCOLL_ERR_PEER_FAILED,
                     "rank %d left the one-host allreduce on an error of its own", q);
}

zcoll_status_t zcoll__onehost_big_step(struct zcoll__run *r, int *progress) {
  zcoll_comm_t *comm = r->comm;
  int p = comm->size;
  if (r->oh_phase == 0) { /* the handshake just ended */
    int mapped;
    zcoll_status_t st = decide(r, &mapped);
    if (st != ZCOLL_OK) return st;
    *progress = 1;
    if (!mapped) { /* every rank saw the same boxes: nobody writes */
      comm->oh->open_seq = 0;
      comm->oh->fell_back = 1;
      comm->oh->handshake_seq = r->ordinal + 1;
      r->started_ns = 0; /* the executor's run traces the collective */
      r->remaining = 0;
      return ZCOLL_OK;
    }
    comm->oh->fell_back = 0;
    comm->mapped_collectives++;
    set_stage(r, ZCOLL_OH_WRITING);
    for (int q = 0; q < p; q++)
      if (q != comm->rank && stage_of(r, q) == ZCOLL_OH_OUT) {
        /* Nothing written: OUT at once, so that nobody quiescing waits on us meanwhile. */
        set_stage(r, ZCOLL_OH_OUT);
        return peer_out(q);
      }
    push_block(r);
    set_stage(r, ZCOLL_OH_DONE);
    r->oh_phase = 1;
    r->oh_i = 0;
  }
  for (; r->oh_i < p - 1; r->oh_i++) {
    int q = peer_at(r, r->oh_i);
    uint32_t st = stage_of(r, q);
    if (st == ZCOLL_OH_OUT) return peer_out(q);
    if (st < ZCOLL_OH_DONE) {
      r->oh_next = q;
      return ZCOLL_OK;
    }
  }
  comm->oh->open_seq = 0; /* everybody is DONE: nobody writes here any more */
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
  return stage_of(r, q) >= ZCOLL_OH_DONE;
}

/* How long a failed call waits for a live peer to finish writing its block into this
 * rank's result before it stops waiting: a writer waits for nothing, so this is its copy's
 * time (a few ms per 16 MiB here). A writer that is not through by then is stopped, or
 * starved of its core: the wait must not be its to end (ZCOLL_TIMEOUT, revoke). */
#define QUIESCE_GRACE_NS 20000000

static int writing(const struct zcoll__onehost *oh, const struct zcoll__oh_box *own,
                   const struct zcoll__oh_box *b) {
  /* The stage first, sequentially consistent: the other half of the Dekker pair with the
   * writer's store of WRITING (an acquire load of seq ahead of it could be ordered before
   * our store of OUT on POWER or ARMv8.3's LDAPR). Then whether the box is this very
   * call's: a small call's box holds data where the stage is. */
  return atomic_load_explicit(&b->big.stage, memory_order_seq_cst) == ZCOLL_OH_WRITING &&
         atomic_load_explicit(&b->seq, memory_order_acquire) == oh->open_seq && b->fp == own->fp &&
         memcmp(&b->desc, &own->desc, sizeof(own->desc)) == 0;
}

void zcoll__onehost_big_quiesce(zcoll_comm_t *comm) {
  struct zcoll__onehost *oh = comm->oh;
  if (!oh->open_seq) return;
  struct zcoll__oh_box *own = zcoll__oh_box_of(oh, comm->rank, oh->open_which);
  atomic_store_explicit(&own->big.stage, ZCOLL_OH_OUT, memory_order_seq_cst);
  zcoll__onehost_knock(comm);
  int64_t until = zcoll__now_ns() + QUIESCE_GRACE_NS;
  int may_detach = 1;
  for (int q = 0; q < comm->size; q++) {
    if (q == comm->rank) continue;
    const struct zcoll__oh_box *b = zcoll__oh_box_of(oh, q, oh->open_which);
    const struct zcoll__chan *c = &comm->chans[comm->chan_of[q]];
    while (writing(oh, own, b) && !c->ops->peer_gone(c->ep)) {
      if (may_detach && (atomic_load(&comm->revoked) || zcoll__now_ns() >= until)) {
        /* Still writing: this process stops mapping the pages it writes into, keeping
         * their bytes (mem.c), so that nothing it writes from here on is ours. */
        if (zcoll__mem_detach(comm, oh->open_dst, oh->open_bytes, q)) {
          oh->open_seq = 0;
          return;
        }
        may_detach = 0; /* no memory for the copy: the writer's time after all */
      }
      nanosleep(&(struct timespec){0, 20000}, NULL);
    }
  }
  oh->open_seq = 0;
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
