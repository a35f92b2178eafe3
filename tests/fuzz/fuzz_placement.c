/*
 * libFuzzer target: the receive side of the wire protocol -- notifications (credits and
 * pieces, lib/core/channel.c), the placement hook that decides where an arriving payload
 * lands (zcoll__place in lib/core/executor.c), and the collective header check. A peer (or a
 * broken transport) controls every notification field, so whatever it sends, a placement
 * must fall inside the slot ring of that peer's channel or inside the result range
 * still to be received, and nothing may read out of bounds or crash.
 *
 * Input: a geometry (depth, slot size, count, algorithm, which headers were checked and
 * how far receives have progressed), then 8-byte notifications (peer, imm, len, bytes
 * to write into the placed area).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/algorithms.h"
#include "core/exec.h"
#include "base/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define P 4

static uint32_t take(const uint8_t **d, size_t *n, int bytes) {
  uint32_t v = 0;
  for (int i = 0; i < bytes; i++, (*d)++, (*n)--) v = v << 8 | (*n ? **d : 0);
  if (!*n) *d = NULL;
  return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8) return 0;
  zcoll__log_mute(1);
  const uint8_t *d = data;
  size_t n = size;
  int depth = 1 + (int)(take(&d, &n, 1) % 16);
  size_t slot_bytes = 64u << (take(&d, &n, 1) % 7); /* 64 B .. 4 KiB */
  size_t count = take(&d, &n, 2) % 3000;
  int algo = (int)(take(&d, &n, 1) % (uint32_t)zcoll__nalgos);
  uint32_t progress = take(&d, &n, 2);
  if (!d) return 0;

  struct zcoll_comm comm;
  memset(&comm, 0, sizeof(comm));
  comm.rank = 0;
  comm.size = P;
  comm.depth = depth;
  comm.slot_bytes = slot_bytes;
  comm.nchans = P - 1;
  struct zcoll__chan chans[P - 1];
  int chan_of[P] = {-1, 0, 1, 2};
  memset(chans, 0, sizeof(chans));
  char *ring = malloc((size_t)(P - 1) * (size_t)depth * slot_bytes);
  for (int i = 0; i < P - 1; i++) {
    chans[i].peer = i + 1;
    chans[i].slots = calloc((size_t)depth, sizeof(struct zcoll__slot));
    chans[i].recv = ring + (size_t)i * (size_t)depth * slot_bytes;
    chans[i].credits = (uint32_t)depth;
  }
  comm.chans = chans;
  comm.chan_of = chan_of;

  /* A real schedule of rank 0, mid-way through: some headers checked, some receives
   * progressed, so that the hook's walk over the schedule runs. */
  struct zcoll__algo_params params = {.tree_arity = 2};
  struct zcoll__sched s;
  zcoll__sched_init(&s, 0, P, count, 0);
  zcoll__algos[algo]->build(&s, &params);
  float *dst = malloc((count ? count : 1) * sizeof(float));
  struct zcoll__exec_state e;
  memset(&e, 0, sizeof(e));
  struct zcoll__run r;
  memset(&r, 0, sizeof(r));
  if (zcoll__sched_finish(&s) == ZCOLL_OK) {
    int nops = s.nops ? s.nops : 1, np = s.npeers ? s.npeers : 1;
    e.pos = calloc((size_t)nops, sizeof(size_t));
    e.issued = calloc((size_t)nops, sizeof(size_t));
    e.finished = calloc((size_t)nops, 1);
    e.recv_cur = calloc((size_t)np, sizeof(int));
    e.send_cur = calloc((size_t)np, sizeof(int));
    e.chan = calloc((size_t)np, sizeof(int));
    e.peer_of_chan = malloc(sizeof(int) * (P - 1));
    e.hdr_seen = calloc((size_t)np, 1);
    e.hdr_sent = calloc((size_t)np, 1);
    e.awaited_ns = calloc((size_t)np, sizeof(int64_t));
    for (int c = 0; c < P - 1; c++) e.peer_of_chan[c] = -1;
    for (int i = 0; i < s.nops; i++) e.pos[i] = e.issued[i] = s.ops[i].off;
    for (int j = 0; j < s.npeers; j++) {
      e.recv_cur[j] = s.peer_recvs[j];
      e.send_cur[j] = s.peer_sends[j];
      e.chan[j] = chan_of[s.peers[j]];
      e.peer_of_chan[e.chan[j]] = j;
      e.hdr_seen[j] = (progress >> j) & 1;
      /* Advance the first receive by some elements (never past its end). */
      int first = s.peer_recvs[j];
      if (first < s.peer_sends[j + 1]) {
        const struct zcoll__sop *o = &s.ops[s.peer_ops[first]];
        e.pos[s.peer_ops[first]] = o->off + (o->count ? (progress >> 8) % (o->count + 1) : 0);
        if (e.pos[s.peer_ops[first]] == o->off + o->count && first + 1 < s.peer_sends[j + 1])
          e.recv_cur[j] = first + 1;
      }
    }
    r.comm = &comm;
    r.s = &s;
    r.e = &e;
    r.buf[ZCOLL_BUF_SRC] = (char *)dst;
    r.buf[ZCOLL_BUF_DST] = (char *)dst;
    r.dsize = sizeof(float);
    r.chunk = slot_bytes / sizeof(float);
    r.dtype = ZCOLL_FLOAT32;
    r.op = ZCOLL_SUM;
    r.ordinal = progress & 0xff;
    r.next = NULL;
    comm.active = comm.active_tail = &r;
  }

  while (d && n >= 8) {
    int peer = (int)(take(&d, &n, 1) % (P + 2)) - 1;
    uint32_t imm = take(&d, &n, 4);
    uint32_t len = take(&d, &n, 2) % (uint32_t)(slot_bytes + 65);
    uint8_t fill = (uint8_t)take(&d, &n, 1);
    int final = 0;
    char *at = zcoll__place(&comm, peer, imm, len, &final);
    if (at) {
      int ci = chan_of[peer];
      const char *lo = final ? (const char *)dst : chans[ci].recv;
      const char *hi = final ? (const char *)(dst + count)
                             : chans[ci].recv + (size_t)depth * slot_bytes;
      if (at < lo || at + len > hi) __builtin_trap(); /* aimed outside what it may write */
      memset(at, fill, len);                          /* ASan checks the bytes too */
    }
    struct zcoll_tl_event ev = {ZCOLL_TL_EV_ARRIVED, peer, imm, len, (uint8_t) final, 0, ZCOLL_OK};
    if (peer >= 1 && peer < P &&
        zcoll__chan_arrived(&chans[peer - 1], depth, slot_bytes, &ev) == ZCOLL_OK &&
        !(imm & ZCOLL_IMM_CREDIT)) {
      struct zcoll__chan *c = &chans[peer - 1];
      struct zcoll__slot *sl = &c->slots[c->recv_slot];
      if (sl->arrived && (sl->imm & ZCOLL_IMM_HDR)) {
        struct zcoll__coll_desc mine = {
            ZCOLL_COLL_ALLREDUCE, ZCOLL_FLOAT32, ZCOLL_SUM, (uint8_t)algo, 2, -1, 0, count};
        zcoll__chan_hdr_check(c->recv + (size_t)c->recv_slot * slot_bytes, sl->len, peer, r.ordinal,
                              &mine, zcoll__coll_fingerprint(&mine));
      }
      if (sl->arrived && (fill & 1)) { /* consume it, as the executor would */
        sl->arrived = 0;
        c->recv_seq++;
        c->recv_slot = zcoll__slot_next(c->recv_slot, depth);
      }
    }
  }

  free(e.pos), free(e.issued), free(e.finished), free(e.recv_cur), free(e.send_cur);
  free(e.chan), free(e.peer_of_chan), free(e.hdr_seen), free(e.hdr_sent), free(e.awaited_ns);
  zcoll__sched_free(&s);
  free(dst);
  for (int i = 0; i < P - 1; i++) free(chans[i].slots);
  free(ring);
  zcoll__log_mute(0);
  return 0;
}
