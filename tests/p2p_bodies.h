/*
 * p2p_bodies.h -- point-to-point cases shared by tests/p2p/test_p2p.c (ranks as threads
 * over loopback) and tests/progs/p2p_check.c (processes over shm and UCX); public API only.
 * Each returns 0, or 1 with the reason in msg. Every byte received is checked against a
 * reference made here from (sender, case, index), without zcoll. The chunk (slot) is set
 * to P2P_CHUNK by the callers (ZCOLL_CHUNK_BYTES), so that the counts below fall on the
 * eager limit (a slot less the 40-byte header) and around it.
 */
#ifndef ZCOLL_TEST_P2P_BODIES_H
#define ZCOLL_TEST_P2P_BODIES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zcoll.h"

#define P2P_CHUNK 4096
#define P2P_EAGER_MAX (P2P_CHUNK - 40)

static inline size_t p2p_dsize(zcoll_dtype_t dt) { return zcoll_dtype_size(dt); }

static inline uint8_t p2p_byte(int from, unsigned c, size_t i) {
  uint64_t x = (uint64_t)from * 0x9e3779b97f4a7c15ull ^ (uint64_t)c * 0xbf58476d1ce4e5b9ull ^
               (uint64_t)i * 0x94d049bb133111ebull;
  x ^= x >> 29;
  return (uint8_t)(x * 0xff51afd7ed558ccdull >> 56);
}

static inline void p2p_fill(void *buf, size_t bytes, int from, unsigned c) {
  for (size_t i = 0; i < bytes; i++) ((uint8_t *)buf)[i] = p2p_byte(from, c, i);
}

/* 0 if buf holds what `from` sent in case c, element by element; else 1 and why. */
static inline int p2p_verify(const void *buf, size_t count, zcoll_dtype_t dt, int from, unsigned c,
                             const char *what, char *msg, size_t len) {
  size_t ds = p2p_dsize(dt);
  for (size_t e = 0; e < count; e++)
    for (size_t b = 0; b < ds; b++)
      if (((const uint8_t *)buf)[e * ds + b] != p2p_byte(from, c, e * ds + b)) {
        snprintf(msg, len, "%s: element %zu of %zu (%s) from rank %d differs at byte %zu", what, e,
                 count, zcoll_dtype_name(dt), from, b);
        return 1;
      }
  return 0;
}

#define P2P_TRY(call, ...)                                                               \
  do {                                                                                   \
    zcoll_status_t st_ = (call);                                                         \
    if (st_ != ZCOLL_OK) {                                                               \
      char what_[200];                                                                   \
      snprintf(what_, sizeof(what_), __VA_ARGS__);                                       \
      snprintf(msg, len, "%s: %s (%s)", what_, zcoll_strerror(st_), zcoll_last_error()); \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)

/* Every dt_step-th dtype, counts from 0 to many pieces, around the eager limit, messages
 * of at most max_bytes: a ring exchange, each rank sending to the next and receiving from
 * the one before with isend/irecv, and a second ring the other way round with the blocking
 * calls in an order that cannot block (even ranks send first). */
static inline int p2p_matrix_upto(zcoll_comm_t *comm, size_t max_bytes, int dt_step, char *msg,
                                  size_t len) {
  int rank = zcoll_comm_rank(comm), p = zcoll_comm_size(comm);
  int next = (rank + 1) % p, prev = (rank + p - 1) % p;
  unsigned c = 0;
  for (int dt = 0; dt < ZCOLL_DTYPE_COUNT; dt += dt_step) {
    size_t ds = p2p_dsize((zcoll_dtype_t)dt);
    size_t counts[] = {0,
                       1,
                       5,
                       P2P_EAGER_MAX / ds,
                       P2P_EAGER_MAX / ds + 1,
                       P2P_CHUNK / ds,
                       (3 * P2P_CHUNK) / ds + 3,
                       (size_t)(dt % 3 == 0 ? 300000 : 20000) / ds};
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
      size_t n = counts[k], bytes = n * ds;
      c++;
      if (bytes > max_bytes) continue;
      uint8_t *out = malloc(bytes + 1), *in = malloc(bytes + 1);
      if (!out || !in) {
        free(out), free(in);
        snprintf(msg, len, "out of memory");
        return 1;
      }
      p2p_fill(out, bytes, rank, c);
      memset(in, 0xee, bytes + 1);
      zcoll_request_t *rq = NULL, *sq = NULL;
      int tag = (int)(c % 7);
      zcoll_status_t st = zcoll_irecv(comm, in, n, (zcoll_dtype_t)dt, prev, tag, &rq);
      if (st == ZCOLL_OK) st = zcoll_isend(comm, out, n, (zcoll_dtype_t)dt, next, tag, &sq);
      if (st == ZCOLL_OK) st = zcoll_wait(sq);
      if (st == ZCOLL_OK) st = zcoll_wait(rq);
      if (sq) zcoll_request_free(sq);
      if (rq) zcoll_request_free(rq);
      int bad = st != ZCOLL_OK;
      if (bad)
        snprintf(msg, len, "ring of %zu %s: %s (%s)", n, zcoll_dtype_name((zcoll_dtype_t)dt),
                 zcoll_strerror(st), zcoll_last_error());
      else
        bad = p2p_verify(in, n, (zcoll_dtype_t)dt, prev, c, "ring", msg, len);
      if (!bad && in[bytes] != 0xee) {
        snprintf(msg, len, "ring of %zu: a byte past the buffer was written", n);
        bad = 1;
      }
      if (!bad && p > 1) { /* the other way, blocking: even ranks send first */
        c++;
        p2p_fill(out, bytes, rank, c);
        memset(in, 0xee, bytes);
        for (int turn = 0; turn < 2 && st == ZCOLL_OK; turn++)
          st = (turn == 0) == (rank % 2 == 0)
                   ? zcoll_send(comm, out, n, (zcoll_dtype_t)dt, prev, tag)
                   : zcoll_recv(comm, in, n, (zcoll_dtype_t)dt, next, tag);
        /* An odd p: the last rank and rank 0 are both even or odd; their pair of calls
         * above meet anyway as one of each sends first to the other. */
        if (st != ZCOLL_OK) {
          snprintf(msg, len, "blocking ring of %zu %s: %s (%s)", n,
                   zcoll_dtype_name((zcoll_dtype_t)dt), zcoll_strerror(st), zcoll_last_error());
          bad = 1;
        } else {
          bad = p2p_verify(in, n, (zcoll_dtype_t)dt, next, c, "blocking ring", msg, len);
        }
      }
      free(out), free(in);
      if (bad) return 1;
    }
  }
  return 0;
}

/* The whole matrix: every dtype, every count. */
static inline int p2p_matrix(zcoll_comm_t *comm, char *msg, size_t len) {
  return p2p_matrix_upto(comm, SIZE_MAX, 1, msg, len);
}

/* Rank 0 sends rank 1 tag 1, then tag 2 (small and large); rank 1 receives tag 2 first.
 * Then ten messages on one tag, received in the order sent. */
static inline int p2p_tags(zcoll_comm_t *comm, char *msg, size_t len) {
  int rank = zcoll_comm_rank(comm);
  if (zcoll_comm_size(comm) < 2 || rank > 1) return 0;
  static const size_t sizes[] = {16, 50000};
  for (int k = 0; k < 2; k++) {
    size_t n = sizes[k];
    uint8_t *a = malloc(n), *b = malloc(n);
    if (!a || !b) return free(a), free(b), snprintf(msg, len, "out of memory"), 1;
    int bad = 0;
    if (rank == 0) {
      zcoll_request_t *q1 = NULL, *q2 = NULL;
      p2p_fill(a, n, 0, 101), p2p_fill(b, n, 0, 102);
      zcoll_status_t st = zcoll_isend(comm, a, n, ZCOLL_UINT8, 1, 1, &q1);
      if (st == ZCOLL_OK) st = zcoll_isend(comm, b, n, ZCOLL_UINT8, 1, 2, &q2);
      if (st == ZCOLL_OK) st = zcoll_wait(q1);
      if (st == ZCOLL_OK) st = zcoll_wait(q2);
      if (q1) zcoll_request_free(q1);
      if (q2) zcoll_request_free(q2);
      if (st != ZCOLL_OK)
        bad = 1, snprintf(msg, len, "tags: %s (%s)", zcoll_strerror(st), zcoll_last_error());
    } else {
      zcoll_status_t st = zcoll_recv(comm, b, n, ZCOLL_UINT8, 0, 2);
      if (st == ZCOLL_OK) st = zcoll_recv(comm, a, n, ZCOLL_UINT8, 0, 1);
      if (st != ZCOLL_OK)
        bad = 1, snprintf(msg, len, "tags: %s (%s)", zcoll_strerror(st), zcoll_last_error());
      else
        bad = p2p_verify(b, n, ZCOLL_UINT8, 0, 102, "tag 2 first", msg, len) ||
              p2p_verify(a, n, ZCOLL_UINT8, 0, 101, "then tag 1", msg, len);
    }
    free(a), free(b);
    if (bad) return 1;
  }
  enum { N = 10 };
  uint64_t v[N];
  zcoll_request_t *q[N] = {0};
  for (int i = 0; i < N; i++) {
    v[i] = rank == 0 ? 1000u + (uint64_t)i : 0;
    if (rank == 0) P2P_TRY(zcoll_isend(comm, &v[i], 1, ZCOLL_UINT64, 1, 3, &q[i]), "isend %d", i);
  }
  for (int i = 0; i < N; i++) {
    if (rank == 0) {
      P2P_TRY(zcoll_wait(q[i]), "wait %d", i);
      zcoll_request_free(q[i]);
    } else {
      P2P_TRY(zcoll_recv(comm, &v[i], 1, ZCOLL_UINT64, 0, 3), "recv %d", i);
      if (v[i] != 1000u + (uint64_t)i)
        return snprintf(msg, len, "one tag: message %d holds %llu", i, (unsigned long long)v[i]), 1;
    }
  }
  return 0;
}

/* To oneself: the receive posted first, then a blocking send (small, large); an isend,
 * then the receive; a blocking send with no receive is refused, not left hanging. */
static inline int p2p_self(zcoll_comm_t *comm, char *msg, size_t len) {
  int rank = zcoll_comm_rank(comm);
  static const size_t sizes[] = {0, 3, 100000};
  for (int k = 0; k < 3; k++) {
    size_t n = sizes[k];
    uint32_t *a = malloc(n * 4 + 4), *b = malloc(n * 4 + 4);
    if (!a || !b) return free(a), free(b), snprintf(msg, len, "out of memory"), 1;
    p2p_fill(a, n * 4, rank, 200 + (unsigned)k);
    zcoll_request_t *q = NULL;
    zcoll_status_t st = zcoll_irecv(comm, b, n, ZCOLL_UINT32, rank, 4, &q);
    if (st == ZCOLL_OK) st = zcoll_send(comm, a, n, ZCOLL_UINT32, rank, 4);
    if (st == ZCOLL_OK) st = zcoll_wait(q);
    if (q) zcoll_request_free(q), q = NULL;
    int bad = st != ZCOLL_OK;
    if (bad)
      snprintf(msg, len, "self, irecv first: %s (%s)", zcoll_strerror(st), zcoll_last_error());
    if (!bad) bad = p2p_verify(b, n, ZCOLL_UINT32, rank, 200 + (unsigned)k, "self", msg, len);
    if (!bad) {
      memset(b, 0, n * 4);
      st = zcoll_isend(comm, a, n, ZCOLL_UINT32, rank, 5, &q);
      if (st == ZCOLL_OK) st = zcoll_recv(comm, b, n, ZCOLL_UINT32, rank, 5);
      if (st == ZCOLL_OK) st = zcoll_wait(q);
      if (q) zcoll_request_free(q);
      if (st != ZCOLL_OK)
        bad = 1,
        snprintf(msg, len, "self, isend first: %s (%s)", zcoll_strerror(st), zcoll_last_error());
      else
        bad = p2p_verify(b, n, ZCOLL_UINT32, rank, 200 + (unsigned)k, "self isend", msg, len);
    }
    free(a), free(b);
    if (bad) return 1;
  }
  uint8_t x = 1;
  zcoll_status_t st = zcoll_send(comm, &x, 1, ZCOLL_UINT8, rank, 6);
  if (st != ZCOLL_ERR_INVALID_ARG || !strstr(zcoll_last_error(), "never complete"))
    return snprintf(msg, len, "a blocking send to itself with no receive: %s (%s)",
                    zcoll_strerror(st), zcoll_last_error()),
           1;
  return 0;
}

/* Rank 0 isends 1000 small messages on tag 7 and one on tag 8 to rank 1, which posts
 * nothing for a while, then takes tag 8 first (past the 1000 copied aside), then the
 * 1000 in order. */
static inline int p2p_flood(zcoll_comm_t *comm, char *msg, size_t len) {
  enum { N = 1000 };
  int rank = zcoll_comm_rank(comm);
  if (zcoll_comm_size(comm) < 2 || rank > 1) return 0;
  static __thread uint64_t v[N + 1];
  static __thread zcoll_request_t *q[N + 1];
  if (rank == 0) {
    for (int i = 0; i <= N; i++) {
      v[i] = 7u * (uint64_t)i + 1;
      P2P_TRY(zcoll_isend(comm, &v[i], 1, ZCOLL_UINT64, 1, i == N ? 8 : 7, &q[i]), "isend %d", i);
    }
    for (int i = 0; i <= N; i++) {
      P2P_TRY(zcoll_wait(q[i]), "flood: wait %d", i);
      zcoll_request_free(q[i]);
    }
    return 0;
  }
  struct timespec ts = {0, 50 * 1000 * 1000};
  nanosleep(&ts, NULL);
  uint64_t x = 0;
  P2P_TRY(zcoll_recv(comm, &x, 1, ZCOLL_UINT64, 0, 8), "flood: recv tag 8");
  if (x != 7u * N + 1)
    return snprintf(msg, len, "flood: tag 8 holds %llu", (unsigned long long)x), 1;
  for (int i = 0; i < N; i++) {
    P2P_TRY(zcoll_recv(comm, &x, 1, ZCOLL_UINT64, 0, 7), "flood: recv %d", i);
    if (x != 7u * (uint64_t)i + 1)
      return snprintf(msg, len, "flood: message %d holds %llu", i, (unsigned long long)x), 1;
  }
  return 0;
}

/* Rank 0 sends 8 elements to rank 1, which expects 7, then 9 (a small message and a
 * rendezvous), then the right count of another dtype: ZCOLL_ERR_MISMATCH on both sides,
 * nothing written past the receive's buffer; then a good message still goes. */
static inline int p2p_mismatch(zcoll_comm_t *comm, char *msg, size_t len) {
  int rank = zcoll_comm_rank(comm);
  if (zcoll_comm_size(comm) < 2 || rank > 1) return 0;
  static const size_t base[] = {8, 20000};
  for (int k = 0; k < 2; k++)
    for (int v = 0; v < 3; v++) {
      size_t n = base[k];
      size_t want = v == 0 ? n - 1 : v == 1 ? n + 1 : n;
      zcoll_dtype_t rdt = v == 2 ? ZCOLL_FLOAT32 : ZCOLL_INT32;
      int32_t *buf = calloc(n + 2, 4);
      if (!buf) return snprintf(msg, len, "out of memory"), 1;
      for (size_t i = 0; i < n + 2; i++) buf[i] = rank == 0 ? (int32_t)i : -1;
      zcoll_status_t st = rank == 0 ? zcoll_send(comm, buf, n, ZCOLL_INT32, 1, 9)
                                    : zcoll_recv(comm, buf, want, rdt, 0, 9);
      int past = 0;
      for (size_t i = want; rank == 1 && i < n + 2; i++) past |= buf[i] != -1;
      free(buf);
      if (st != ZCOLL_ERR_MISMATCH || !strstr(zcoll_last_error(), "expects"))
        return snprintf(msg, len, "%zu elements sent, %zu of %s expected: %s (%s)", n, want,
                        zcoll_dtype_name(rdt), zcoll_strerror(st), zcoll_last_error()),
               1;
      if (past) return snprintf(msg, len, "a mismatched receive wrote past its count"), 1;
    }
  int32_t x = rank == 0 ? 77 : 0;
  P2P_TRY(rank == 0 ? zcoll_send(comm, &x, 1, ZCOLL_INT32, 1, 9)
                    : zcoll_recv(comm, &x, 1, ZCOLL_INT32, 0, 9),
          "after the mismatches");
  if (x != 77) return snprintf(msg, len, "after the mismatches: %d", x), 1;
  return 0;
}

/* The two ways a small send learns its receive (p2p.h: notes): a receive posted before
 * the message comes (its NOTE meets the send) and one posted after (the ACK), each good and
 * mismatched, and notes that must meet the right send: tags out of order, a note counted
 * after an unexpected message of the same tag. Rank 0 sends, rank 1 receives; barriers
 * (every rank) order the phases. Values are (phase, index); nothing is written into a
 * receive that was refused. */
#define P2P_NOTE_SENTINEL (-99)
static inline int32_t p2p_note_val(int phase, int i) { return phase * 1000 + i + 1; }

static inline int p2p_note_check(const int32_t *b, int n, int phase, const char *what, char *msg,
                                 size_t len) {
  for (int i = 0; i < n; i++)
    if (b[i] != p2p_note_val(phase, i))
      return snprintf(msg, len, "notes, %s: element %d is %d, not %d", what, i, (int)b[i],
                      (int)p2p_note_val(phase, i)),
             1;
  return 0;
}

static inline int p2p_note_end(zcoll_request_t *q, zcoll_status_t want, const char *what, char *msg,
                               size_t len) {
  zcoll_status_t st = zcoll_wait(q);
  zcoll_request_free(q);
  if (st != want)
    return snprintf(msg, len, "notes, %s: %s where %s was due (%s)", what, zcoll_strerror(st),
                    zcoll_strerror(want), zcoll_last_error()),
           1;
  return 0;
}

static inline int p2p_notes(zcoll_comm_t *comm, char *msg, size_t len) {
  const int rank = zcoll_comm_rank(comm), S = rank == 0, R = rank == 1;
  int32_t out[3][8], in[3][8];
  zcoll_request_t *q[3] = {0};
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < 8; i++) in[k][i] = P2P_NOTE_SENTINEL;
#define NOTE_FILL(k, phase) \
  for (int i = 0; i < 8; i++) out[k][i] = p2p_note_val(phase, i)
#define NOTE_BARRIER(what) P2P_TRY(zcoll_barrier(comm), "notes: barrier %s", what)
  if (zcoll_comm_size(comm) < 2) return 0;
  /* 1: announced, good; 2: announced, 5 sent to a receive of 4. */
  for (int phase = 1; phase <= 2; phase++) {
    int rn = phase == 1 ? 5 : 4;
    for (int i = 0; i < 8; i++) in[0][i] = P2P_NOTE_SENTINEL;
    if (R) P2P_TRY(zcoll_irecv(comm, in[0], (size_t)rn, ZCOLL_INT32, 0, 3, &q[0]), "notes: irecv");
    NOTE_BARRIER("after the receive");
    zcoll_status_t want = phase == 1 ? ZCOLL_OK : ZCOLL_ERR_MISMATCH;
    if (S) {
      NOTE_FILL(0, phase);
      zcoll_status_t st = zcoll_send(comm, out[0], 5, ZCOLL_INT32, 1, 3);
      if (st != want || (phase == 2 && !strstr(zcoll_last_error(), "expects 4")))
        return snprintf(msg, len, "notes, phase %d: the send ended %s (%s)", phase,
                        zcoll_strerror(st), zcoll_last_error()),
               1;
    }
    if (R && p2p_note_end(q[0], want, phase == 1 ? "announced" : "announced, 4 of 5", msg, len))
      return 1;
    if (R && phase == 1 && p2p_note_check(in[0], 5, phase, "announced", msg, len)) return 1;
    for (int i = 0; R && phase == 2 && i < 8; i++)
      if (in[0][i] != P2P_NOTE_SENTINEL)
        return snprintf(msg, len, "notes: a refused receive was written at %d", i), 1;
    NOTE_BARRIER("after an announced receive");
  }
  /* 3: sent first, good; 4: sent first, 5 to a receive of 6. */
  for (int phase = 3; phase <= 4; phase++) {
    zcoll_status_t want = phase == 3 ? ZCOLL_OK : ZCOLL_ERR_MISMATCH;
    for (int i = 0; i < 8; i++) in[0][i] = P2P_NOTE_SENTINEL;
    if (S) {
      NOTE_FILL(0, phase);
      P2P_TRY(zcoll_isend(comm, out[0], 5, ZCOLL_INT32, 1, 4, &q[0]), "notes: isend");
    }
    NOTE_BARRIER("after the send");
    if (R) {
      zcoll_status_t st = zcoll_recv(comm, in[0], phase == 3 ? 5 : 6, ZCOLL_INT32, 0, 4);
      if (st != want)
        return snprintf(msg, len, "notes, phase %d: the receive ended %s (%s)", phase,
                        zcoll_strerror(st), zcoll_last_error()),
               1;
      if (phase == 3 && p2p_note_check(in[0], 5, phase, "sent first", msg, len)) return 1;
      for (int i = 0; phase == 4 && i < 8; i++)
        if (in[0][i] != P2P_NOTE_SENTINEL)
          return snprintf(msg, len, "notes: a refused receive was written at %d", i), 1;
    }
    if (S && p2p_note_end(q[0], want, phase == 3 ? "sent first" : "sent first, 5 to 6", msg, len))
      return 1;
    NOTE_BARRIER("after a message sent first");
  }
  /* 5: receives for tags 7, 8, 7 announced; sends with tags 8, 7, 7 meet them by tag. */
  if (R) {
    P2P_TRY(zcoll_irecv(comm, in[0], 2, ZCOLL_INT32, 0, 7, &q[0]), "notes: irecv 7");
    P2P_TRY(zcoll_irecv(comm, in[1], 3, ZCOLL_INT32, 0, 8, &q[1]), "notes: irecv 8");
    P2P_TRY(zcoll_irecv(comm, in[2], 4, ZCOLL_INT32, 0, 7, &q[2]), "notes: irecv 7 again");
  }
  NOTE_BARRIER("after three receives");
  if (S) {
    static const int tags[3] = {8, 7, 7}, counts[3] = {3, 2, 4};
    for (int k = 0; k < 3; k++) {
      NOTE_FILL(k, 50 + k);
      P2P_TRY(zcoll_isend(comm, out[k], (size_t)counts[k], ZCOLL_INT32, 1, tags[k], &q[k]),
              "notes: isend %d", k);
    }
  }
  for (int k = 0; (S || R) && k < 3; k++)
    if (p2p_note_end(q[k], ZCOLL_OK, "tags out of order", msg, len)) return 1;
  if (R && (p2p_note_check(in[0], 2, 51, "tag 7, first", msg, len) ||
            p2p_note_check(in[1], 3, 50, "tag 8", msg, len) ||
            p2p_note_check(in[2], 4, 52, "tag 7, second", msg, len)))
    return 1;
  NOTE_BARRIER("after tags out of order");
  /* 6: a message of tag 9 waits unexpected; then two receives of tag 9 (the first takes
   * it, the second is announced counting it); then the second message meets the note. */
  if (S) {
    NOTE_FILL(0, 60);
    P2P_TRY(zcoll_isend(comm, out[0], 1, ZCOLL_INT32, 1, 9, &q[0]), "notes: isend 9");
  }
  NOTE_BARRIER("after an unexpected message");
  if (R) {
    P2P_TRY(zcoll_irecv(comm, in[0], 1, ZCOLL_INT32, 0, 9, &q[0]), "notes: irecv 9");
    P2P_TRY(zcoll_irecv(comm, in[1], 2, ZCOLL_INT32, 0, 9, &q[1]), "notes: irecv 9 again");
  }
  NOTE_BARRIER("after two receives of tag 9");
  if (S) {
    NOTE_FILL(1, 61);
    P2P_TRY(zcoll_send(comm, out[1], 2, ZCOLL_INT32, 1, 9), "notes: send 9 again");
    if (p2p_note_end(q[0], ZCOLL_OK, "tag 9, first", msg, len)) return 1;
  }
  if (R && (p2p_note_end(q[0], ZCOLL_OK, "tag 9, first", msg, len) ||
            p2p_note_end(q[1], ZCOLL_OK, "tag 9, second", msg, len) ||
            p2p_note_check(in[0], 1, 60, "tag 9, first", msg, len) ||
            p2p_note_check(in[1], 2, 61, "tag 9, second", msg, len)))
    return 1;
#undef NOTE_FILL
#undef NOTE_BARRIER
  return 0;
}

/* Bad arguments: each refused with ZCOLL_ERR_INVALID_ARG naming it; nothing else breaks. */
static inline int p2p_bad_args(zcoll_comm_t *comm, char *msg, size_t len) {
  int p = zcoll_comm_size(comm);
  uint8_t b[4];
  zcoll_request_t *q = NULL;
  struct {
    zcoll_status_t st;
    const char *says;
  } got[] = {
      {zcoll_send(comm, b, 1, ZCOLL_UINT8, -1, 0), "peer -1"},
      {zcoll_recv(comm, b, 1, ZCOLL_UINT8, p, 0), "is not a rank"},
      {zcoll_isend(comm, b, 1, ZCOLL_UINT8, 0, -3, &q), "tag -3"},
      {zcoll_irecv(comm, NULL, 2, ZCOLL_UINT8, 0, 0, &q), "NULL"},
      {zcoll_send(comm, b, 1, (zcoll_dtype_t)99, 0, 0), "dtype 99"},
      {zcoll_irecv(comm, b, 1, ZCOLL_UINT8, 0, 0, NULL), "req is NULL"},
      {zcoll_send(NULL, b, 1, ZCOLL_UINT8, 0, 0), "comm is NULL"},
  };
  (void)got;
  for (size_t i = 0; i < sizeof(got) / sizeof(got[0]); i++)
    if (got[i].st != ZCOLL_ERR_INVALID_ARG)
      return snprintf(msg, len, "bad argument %zu (%s): %s", i, got[i].says,
                      zcoll_strerror(got[i].st)),
             1;
  zcoll_status_t st = zcoll_send(comm, b, 1, ZCOLL_UINT8, -1, 0);
  if (!strstr(zcoll_last_error(), "peer -1"))
    return snprintf(msg, len, "bad peer: %s says %s", zcoll_strerror(st), zcoll_last_error()), 1;
  st = zcoll_isend(comm, b, 1, ZCOLL_UINT8, 0, -3, &q);
  if (!strstr(zcoll_last_error(), "tag -3"))
    return snprintf(msg, len, "bad tag: %s", zcoll_last_error()), 1;
  /* A NULL buffer with count 0 is fine: a message of nothing, to oneself. */
  int me = zcoll_comm_rank(comm);
  P2P_TRY(zcoll_irecv(comm, NULL, 0, ZCOLL_UINT8, me, 0, &q), "empty irecv from self");
  P2P_TRY(zcoll_send(comm, NULL, 0, ZCOLL_UINT8, me, 0), "empty send to self");
  P2P_TRY(zcoll_wait(q), "empty receive");
  zcoll_request_free(q);
  return zcoll_barrier(comm) == ZCOLL_OK
             ? 0
             : (snprintf(msg, len, "barrier after bad args: %s", zcoll_last_error()), 1);
}

/* Messages and collectives interleaved: rank 0's sends to rank 1 (small and large) are in
 * flight while every rank runs allreduces, and rank 1's receives are posted before them
 * and taken after; neither sees the other's pieces. */
static inline int p2p_interleave(zcoll_comm_t *comm, char *msg, size_t len) {
  enum { N = 30000, M = 1000 };
  int rank = zcoll_comm_rank(comm), p = zcoll_comm_size(comm);
  static __thread uint8_t small[16], big[N];
  static __thread int32_t in[M], out[M];
  zcoll_request_t *q[2] = {0};
  if (p >= 2 && rank == 0) {
    p2p_fill(small, sizeof(small), 0, 301), p2p_fill(big, N, 0, 302);
    P2P_TRY(zcoll_isend(comm, small, sizeof(small), ZCOLL_UINT8, 1, 11, &q[0]), "isend small");
    P2P_TRY(zcoll_isend(comm, big, N, ZCOLL_UINT8, 1, 11, &q[1]), "isend large");
  } else if (p >= 2 && rank == 1) {
    P2P_TRY(zcoll_irecv(comm, small, sizeof(small), ZCOLL_UINT8, 0, 11, &q[0]), "irecv small");
    P2P_TRY(zcoll_irecv(comm, big, N, ZCOLL_UINT8, 0, 11, &q[1]), "irecv large");
  }
  for (int k = 0; k < 3; k++) {
    for (int i = 0; i < M; i++) in[i] = rank + i + k;
    P2P_TRY(zcoll_allreduce(comm, in, out, M, ZCOLL_INT32, ZCOLL_SUM), "allreduce %d", k);
    for (int i = 0; i < M; i++)
      if (out[i] != p * (i + k) + p * (p - 1) / 2)
        return snprintf(msg, len, "allreduce %d beside messages: element %d is %d", k, i, out[i]),
               1;
  }
  for (int i = 0; i < 2 && q[0]; i++) {
    P2P_TRY(zcoll_wait(q[i]), "interleaved message %d", i);
    zcoll_request_free(q[i]);
  }
  if (p >= 2 && rank == 1)
    return p2p_verify(small, sizeof(small), ZCOLL_UINT8, 0, 301, "beside allreduces", msg, len) ||
           p2p_verify(big, N, ZCOLL_UINT8, 0, 302, "large beside allreduces", msg, len);
  return 0;
}

/* Zero-copy rendezvous (lib/p2p/p2p.h): a ring of messages of several pieces into
 * explicitly registered receive buffers -- from a registered send buffer, from an
 * unregistered one, and neither registered -- checked element by element, with guards
 * past the received bytes left alone. Over the transports where the writer places the data
 * (loopback, verbs) a registered receive buffer gets every byte in place and none copied,
 * and its registration cannot be deregistered while the receive is posted; elsewhere
 * every byte is copied. Where the counters say what they do: the stats. */
static inline int p2p_zero_copy(zcoll_comm_t *comm, char *msg, size_t len) {
  int rank = zcoll_comm_rank(comm), size = zcoll_comm_size(comm);
  if (size < 2) return 0;
  const char *tl = zcoll_comm_transport(comm);
  int places = strstr(tl, "verbs") || strstr(tl, "loopback");
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  enum { GUARD = 64 };
  const size_t count = 5 * P2P_CHUNK / 4 + 31; /* uint32s: five pieces and a bit */
  const size_t bytes = count * 4;
  for (unsigned v = 0; v < 3; v++) { /* both registered, the receive only, neither */
    unsigned c = 700 + v;
    uint8_t *sbuf = malloc(bytes), *rbuf = malloc(bytes + GUARD);
    if (!sbuf || !rbuf) return free(sbuf), free(rbuf), snprintf(msg, len, "out of memory"), 1;
    p2p_fill(sbuf, bytes, rank, c);
    memset(rbuf, 0xa5, bytes + GUARD);
    zcoll_mr_t *smr = NULL, *rmr = NULL;
    int bad = 0;
    if (v < 2 && zcoll_mem_register(comm, rbuf, bytes, &rmr) != ZCOLL_OK) bad = 1;
    if (v < 1 && !bad && zcoll_mem_register(comm, sbuf, bytes, &smr) != ZCOLL_OK) bad = 1;
    zcoll_comm_stats_t s0, s1;
    zcoll_request_t *rq = NULL, *sq = NULL;
    if (!bad && zcoll_comm_stats(comm, &s0, sizeof(s0)) != ZCOLL_OK) bad = 1;
    if (!bad && zcoll_irecv(comm, rbuf, count, ZCOLL_UINT32, left, (int)c, &rq) != ZCOLL_OK)
      bad = 1;
    if (!bad && rmr && places && zcoll_mem_deregister(rmr) != ZCOLL_ERR_INVALID_ARG) {
      snprintf(msg, len, "zero copy %u: a registration deregistered under a posted receive", v);
      bad = 2;
    }
    if (!bad && zcoll_isend(comm, sbuf, count, ZCOLL_UINT32, right, (int)c, &sq) != ZCOLL_OK)
      bad = 1;
    if (!bad && (zcoll_wait(rq) != ZCOLL_OK || zcoll_wait(sq) != ZCOLL_OK)) bad = 1;
    if (!bad && zcoll_comm_stats(comm, &s1, sizeof(s1)) != ZCOLL_OK) bad = 1;
    if (bad == 1) snprintf(msg, len, "zero copy %u: %s", v, zcoll_last_error());
    if (!bad) {
      char what[64];
      snprintf(what, sizeof(what), "zero copy %u", v);
      bad = p2p_verify(rbuf, count, ZCOLL_UINT32, left, c, what, msg, len);
    }
    for (size_t i = bytes; !bad && i < bytes + GUARD; i++)
      if (rbuf[i] != 0xa5)
        bad = 1,
        snprintf(msg, len, "zero copy %u: byte %zu past the message written", v, i - bytes);
    uint64_t placed = s1.message_bytes_placed - s0.message_bytes_placed;
    uint64_t copied = s1.message_bytes_copied - s0.message_bytes_copied;
    uint64_t want = places && v < 2 ? bytes : 0;
    if (!bad && (placed != want || placed + copied != bytes))
      bad = 1, snprintf(msg, len,
                        "zero copy %u over %s: %llu bytes placed, %llu copied, of %zu (%llu "
                        "placed expected)",
                        v, tl, (unsigned long long)placed, (unsigned long long)copied, bytes,
                        (unsigned long long)want);
    if (rq) zcoll_request_free(rq);
    if (sq) zcoll_request_free(sq);
    if (smr && zcoll_mem_deregister(smr) != ZCOLL_OK && !bad)
      bad = 1,
      snprintf(msg, len, "zero copy %u: deregistering the send buffer: %s", v, zcoll_last_error());
    if (rmr && zcoll_mem_deregister(rmr) != ZCOLL_OK && !bad)
      bad = 1, snprintf(msg, len, "zero copy %u: deregistering the receive buffer: %s", v,
                        zcoll_last_error());
    free(sbuf);
    free(rbuf);
    if (bad) return 1;
  }
  return 0;
}

/* A ring of 3 dtypes and messages up to 16 KiB (eager, the limit, rendezvous over a few
 * pieces), tags out of order and mismatched counts: the sample an emulated RDMA guest runs
 * in seconds. */
static inline int p2p_quick_matrix(zcoll_comm_t *comm, char *msg, size_t len) {
  return p2p_matrix_upto(comm, 16384, 4, msg, len);
}

/* Every case above (quick: the sample), then a barrier: what a process or a thread runs. */
static inline int p2p_cases(zcoll_comm_t *comm, int quick, char *msg, size_t len) {
  int (*all[])(zcoll_comm_t *, char *, size_t) = {p2p_bad_args,   p2p_matrix,    p2p_tags,
                                                  p2p_self,       p2p_flood,     p2p_mismatch,
                                                  p2p_interleave, p2p_zero_copy, p2p_notes};
  int (*sample[])(zcoll_comm_t *, char *, size_t) = {p2p_quick_matrix, p2p_tags, p2p_mismatch,
                                                     p2p_notes};
  int (**cases)(zcoll_comm_t *, char *, size_t) = quick ? sample : all;
  size_t n = quick ? sizeof(sample) / sizeof(sample[0]) : sizeof(all) / sizeof(all[0]);
  for (size_t i = 0; i < n; i++) {
    if (cases[i](comm, msg, len)) return 1;
    if (zcoll_barrier(comm) != ZCOLL_OK)
      return snprintf(msg, len, "barrier after case %zu: %s", i, zcoll_last_error()), 1;
  }
  return 0;
}

static inline int p2p_all(zcoll_comm_t *comm, char *msg, size_t len) {
  return p2p_cases(comm, 0, msg, len);
}

#endif
