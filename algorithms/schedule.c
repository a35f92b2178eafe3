/* schedule.c -- building schedules and deriving their dependencies. */
#include "schedule.h"

#include <stdlib.h>
#include <string.h>

#include "base/log.h"

void zcoll__sched_init(struct zcoll__sched *s, int rank, int size, size_t count, int in_place) {
  memset(s, 0, sizeof(*s));
  s->rank = rank;
  s->size = size;
  s->count = count;
  s->in_place = in_place;
  s->root = -1;
}

void zcoll__sched_free(struct zcoll__sched *s) {
  free(s->ops);
  free(s->deps);
  free(s->peers);
  free(s->peer_ops);
  free(s->peer_sends);
  free(s->peer_recvs);
  free(s->local_ops);
  memset(s, 0, sizeof(*s));
}

static int grow(struct zcoll__sched *s, void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t ncap = *cap ? *cap * 2 : 16;
  while (ncap < need) ncap *= 2;
  void *np = realloc(*p, ncap * elem);
  if (!np) {
    if (s->error == ZCOLL_OK)
      s->error = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory building a schedule");
    return -1;
  }
  *p = np;
  *cap = ncap;
  return 0;
}

/* The ranges of the result (or scratch) an op reads and writes. The source buffer is
 * never written (in place it *is* the result buffer, which the builder maps to DST), so
 * only DST and TMP ranges can conflict; they share coordinates (schedule.h). */
struct dst_use {
  size_t rd_off, rd_len, wr_off, wr_len;
};

static struct dst_use dst_use_of(const struct zcoll__sop *o) {
  struct dst_use u = {0, 0, 0, 0};
  switch (o->kind) {
  case ZCOLL_SOP_SEND:
    if (o->buf != ZCOLL_BUF_SRC) u.rd_off = o->off, u.rd_len = o->count;
    break;
  case ZCOLL_SOP_RECV_REDUCE:
  case ZCOLL_SOP_COPY:
    if (o->acc != ZCOLL_BUF_SRC) u.rd_off = o->off, u.rd_len = o->count;
    u.wr_off = o->off, u.wr_len = o->count;
    break;
  default: u.wr_off = o->off, u.wr_len = o->count; break;
  }
  return u;
}

static int overlap(size_t a, size_t alen, size_t b, size_t blen) {
  return alen && blen && a < b + blen && b < a + alen;
}

static int covers(size_t a, size_t alen, size_t b, size_t blen) {
  return !blen || (alen && a <= b && b + blen <= a + alen);
}

/* Appends o and its dependencies: every earlier op it conflicts with (read after
 * write, write after read or write), scanning back until an earlier write covers
 * everything o touches -- that write already waited for whatever came before it. */
static void append(struct zcoll__sched *s, struct zcoll__sop o) {
  if (s->error) return;
  if (s->remap_dst) { /* before in place maps SRC to DST: the input stays the input */
    if (o.buf == ZCOLL_BUF_DST) o.buf = (uint8_t)s->remap_dst;
    if (o.acc == ZCOLL_BUF_DST) o.acc = (uint8_t)s->remap_dst;
  }
  int has_acc = o.kind == ZCOLL_SOP_RECV_REDUCE || o.kind == ZCOLL_SOP_COPY;
  o.input = (o.kind == ZCOLL_SOP_SEND && o.buf == ZCOLL_BUF_SRC) ||
            (has_acc && o.acc == ZCOLL_BUF_SRC);
  if (s->in_place) {
    if (o.buf == ZCOLL_BUF_SRC) o.buf = ZCOLL_BUF_DST;
    if (o.acc == ZCOLL_BUF_SRC) o.acc = ZCOLL_BUF_DST;
  }
  size_t cap = (size_t)s->ops_cap;
  if (grow(s, (void **)&s->ops, &cap, (size_t)s->nops + 1, sizeof(*s->ops))) return;
  s->ops_cap = (int)cap;
  struct dst_use u = dst_use_of(&o);
  o.dep_first = (uint32_t)s->ndeps;
  o.ndeps = 0;
  for (int i = s->nops - 1; i >= 0 && (u.rd_len || u.wr_len); i--) {
    struct dst_use v = dst_use_of(&s->ops[i]);
    int conflict = overlap(u.wr_off, u.wr_len, v.wr_off, v.wr_len) ||
                   overlap(u.wr_off, u.wr_len, v.rd_off, v.rd_len) ||
                   overlap(u.rd_off, u.rd_len, v.wr_off, v.wr_len);
    if (!conflict) continue;
    if (grow(s, (void **)&s->deps, &s->deps_cap, s->ndeps + 1, sizeof(*s->deps))) return;
    s->deps[s->ndeps++] = (uint32_t)i;
    o.ndeps++;
    if (covers(v.wr_off, v.wr_len, u.rd_off, u.rd_len) &&
        covers(v.wr_off, v.wr_len, u.wr_off, u.wr_len))
      break;
  }
  s->ops[s->nops++] = o;
}

void zcoll__sched_send(struct zcoll__sched *s, int peer, int buf, size_t off, size_t count) {
  append(
      s,
      (struct zcoll__sop){
          .kind = ZCOLL_SOP_SEND, .buf = (uint8_t)buf, .peer = peer, .off = off, .count = count});
}

void zcoll__sched_recv_reduce(struct zcoll__sched *s, int peer, int acc, size_t off, size_t count,
                              int final) {
  zcoll__sched_recv_reduce_to(s, peer, ZCOLL_BUF_DST, acc, off, count, final);
}

void zcoll__sched_recv_reduce_to(struct zcoll__sched *s, int peer, int to, int acc, size_t off,
                                 size_t count, int final) {
  append(s, (struct zcoll__sop){.kind = ZCOLL_SOP_RECV_REDUCE,
                                .final = (uint8_t) !!final,
                                .buf = (uint8_t)to,
                                .acc = (uint8_t)acc,
                                .peer = peer,
                                .off = off,
                                .count = count});
}

void zcoll__sched_recv_copy(struct zcoll__sched *s, int peer, size_t off, size_t count) {
  append(s, (struct zcoll__sop){.kind = ZCOLL_SOP_RECV_COPY,
                                .buf = ZCOLL_BUF_DST,
                                .peer = peer,
                                .off = off,
                                .count = count});
}

void zcoll__sched_copy(struct zcoll__sched *s, size_t off, size_t count) {
  if (s->in_place || count == 0) return;
  append(s, (struct zcoll__sop){.kind = ZCOLL_SOP_COPY,
                                .buf = ZCOLL_BUF_DST,
                                .acc = ZCOLL_BUF_SRC,
                                .peer = -1,
                                .off = off,
                                .count = count});
}

void zcoll__sched_move(struct zcoll__sched *s, int from, int to, size_t off, size_t count) {
  if (count == 0) return;
  append(s, (struct zcoll__sop){.kind = ZCOLL_SOP_COPY,
                                .buf = (uint8_t)to,
                                .acc = (uint8_t)from,
                                .peer = -1,
                                .off = off,
                                .count = count});
}

void zcoll__sched_prefer(struct zcoll__sched *s, int peer) {
  if (s->nfirst < 2) s->first[s->nfirst++] = peer;
}

zcoll_status_t zcoll__sched_finish(struct zcoll__sched *s) {
  if (s->error) return s->error;
  int n = s->nops;
  s->peers = malloc(sizeof(int) * (size_t)(n + 1));
  s->peer_ops = malloc(sizeof(int) * (size_t)(n + 1));
  s->peer_sends = malloc(sizeof(int) * (size_t)(n + 2));
  s->peer_recvs = malloc(sizeof(int) * (size_t)(n + 2));
  s->local_ops = malloc(sizeof(int) * (size_t)(n + 1));
  if (!s->peers || !s->peer_ops || !s->peer_sends || !s->peer_recvs || !s->local_ops)
    return s->error = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory indexing a schedule");
  s->npeers = 0;
  s->nlocal = 0;
  for (int k = 0; k < ZCOLL_NBUFS; k++) s->reach[k] = 0;
  for (int i = 0; i < n; i++) {
    const struct zcoll__sop *o = &s->ops[i];
    int two = o->kind == ZCOLL_SOP_RECV_REDUCE || o->kind == ZCOLL_SOP_COPY;
    for (int b = 0; b < 1 + two; b++) {
      int k = b ? o->acc : o->buf;
      size_t end = o->off + o->count;
      if (end > s->base[k] && end - s->base[k] > s->reach[k]) s->reach[k] = end - s->base[k];
    }
  }
  size_t post_end = s->post_off + s->post_count, dbase = s->base[ZCOLL_BUF_DST];
  if (s->post_count && post_end > dbase && post_end - dbase > s->reach[ZCOLL_BUF_DST])
    s->reach[ZCOLL_BUF_DST] = post_end - dbase;
  for (int f = 0; f < s->nfirst; f++) /* those with ops only */
    for (int i = 0; i < n; i++)
      if (s->ops[i].peer == s->first[f]) {
        if (!f || s->first[0] != s->first[1]) s->peers[s->npeers++] = s->first[f];
        break;
      }
  for (int i = 0; i < n; i++) {
    if (s->ops[i].peer < 0) {
      s->local_ops[s->nlocal++] = i;
      continue;
    }
    int j = 0;
    while (j < s->npeers && s->peers[j] != s->ops[i].peer) j++;
    if (j == s->npeers) s->peers[s->npeers++] = s->ops[i].peer;
  }
  /* Few peers per schedule (ring 2, butterfly log p): the quadratic pass is cheap. */
  int k = 0;
  for (int j = 0; j < s->npeers; j++) {
    s->peer_sends[j] = k;
    for (int i = 0; i < n; i++)
      if (s->ops[i].peer == s->peers[j] && s->ops[i].kind == ZCOLL_SOP_SEND) s->peer_ops[k++] = i;
    s->peer_recvs[j] = k;
    for (int i = 0; i < n; i++)
      if (s->ops[i].peer == s->peers[j] && s->ops[i].kind != ZCOLL_SOP_SEND) s->peer_ops[k++] = i;
  }
  s->peer_sends[s->npeers] = k;
  s->peer_recvs[s->npeers] = k;
  return ZCOLL_OK;
}
