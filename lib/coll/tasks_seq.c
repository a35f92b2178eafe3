/* tasks_seq.c -- the vector interface's control messages, and rank 0's sequencer that
 * orders the keys' allreduces (the protocol: tasks.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "kernels/op.h"
#include "tasks.h"

/* Little-endian on the wire, whatever the hosts. */
static void put32(uint8_t **p, uint32_t v) {
  for (int i = 0; i < 4; i++) *(*p)++ = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t **p, uint64_t v) {
  for (int i = 0; i < 8; i++) *(*p)++ = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t **p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t) * (*p)++ << (8 * i);
  return v;
}
static uint64_t get64(const uint8_t **p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t) * (*p)++ << (8 * i);
  return v;
}

void zcoll__vm_pack(const struct zcoll__vec_msg *m, uint8_t wire[ZCOLL_VM_BYTES]) {
  uint8_t *p = wire;
  put32(&p, m->kind), put32(&p, m->round), put32(&p, m->tasks);
  put32(&p, m->dtype), put32(&p, m->op), put32(&p, m->op_tag);
  put64(&p, m->count), put64(&p, m->total);
  memcpy(p, m->key, sizeof(m->key));
  memcpy(p + sizeof(m->key), m->why, sizeof(m->why));
}

int zcoll__vm_unpack(const void *wire, uint32_t len, struct zcoll__vec_msg *m) {
  if (len != ZCOLL_VM_BYTES) return -1;
  const uint8_t *p = wire;
  m->kind = get32(&p), m->round = get32(&p), m->tasks = get32(&p);
  m->dtype = get32(&p), m->op = get32(&p), m->op_tag = get32(&p);
  m->count = get64(&p), m->total = get64(&p);
  memcpy(m->key, p, sizeof(m->key));
  memcpy(m->why, p + sizeof(m->key), sizeof(m->why));
  m->key[sizeof(m->key) - 1] = m->why[sizeof(m->why) - 1] = '\0';
  return m->kind >= ZCOLL_VM_INIT && m->kind <= ZCOLL_VM_REFUSE ? 0 : -1;
}

/* ---- rank 0 ---- */

struct seq_key {
  struct seq_key *next;
  char key[ZCOLL_VEC_KEY_MAX];
  struct zcoll__vec_msg first; /* the first INIT: every other must match it */
  int first_rank;
  int ninit, nfreed, refused;
  uint64_t total;
  uint8_t *inited, *freed; /* per rank */
  uint32_t *ready;         /* per rank: rounds it is ready for (last round + 1) */
  uint32_t go;             /* rounds started */
};

/* Per name, its generations oldest first: a name every rank freed and some rank
 * initialized again is a new key. The ranks' INITs and FREEs travel on different sockets
 * (rank 0's own go in at once), so a new INIT may overtake another rank's FREE of the
 * old key: each message goes to the generation it belongs to. */
struct zcoll__vec_seq {
  struct seq_key *keys, **tail;
};

/* The oldest generation `from` has not initialized: its INIT is for it. */
static struct seq_key *for_init(struct zcoll__vec_seq *q, const char *key, int from) {
  for (struct seq_key *k = q->keys; k; k = k->next)
    if (!k->inited[from] && strcmp(k->key, key) == 0) return k;
  return NULL;
}

/* The generation `from` holds now (initialized, not freed). */
static struct seq_key *live(const struct zcoll__vec_seq *q, const char *key, int from) {
  for (struct seq_key *k = q->keys; k; k = k->next)
    if (k->inited[from] && !k->freed[from] && strcmp(k->key, key) == 0) return k;
  return NULL;
}

static void drop(struct zcoll__vec_seq *q, struct seq_key *k) {
  struct seq_key **pp = &q->keys;
  /* k is on the list: the caller found it there (live). */
  while (*pp != k) pp = &(*pp)->next; /* NOLINT(clang-analyzer-core.NullDereference) */
  *pp = k->next;
  if (q->tail == &k->next) q->tail = pp;
  free(k->inited), free(k->freed), free(k->ready), free(k);
}

static struct seq_key *add(struct zcoll__vec_seq *q, int size, const char *key) {
  struct seq_key *k = calloc(1, sizeof(*k));
  if (!k) return NULL;
  k->inited = calloc((size_t)size, 1);
  k->freed = calloc((size_t)size, 1);
  k->ready = calloc((size_t)size, sizeof(uint32_t));
  if (!k->inited || !k->freed || !k->ready) {
    free(k->inited), free(k->freed), free(k->ready), free(k);
    return NULL;
  }
  snprintf(k->key, sizeof(k->key), "%s", key);
  k->first_rank = -1;
  if (!q->tail) q->tail = &q->keys;
  *q->tail = k; /* the newest generation last */
  q->tail = &k->next;
  return k;
}

static zcoll_status_t to_all(int size, const struct zcoll__vec_msg *m, zcoll__vm_send_fn send,
                             void *arg) {
  zcoll_status_t st = ZCOLL_OK;
  for (int r = 0; r < size && st == ZCOLL_OK; r++) st = send(arg, r, m);
  return st;
}

static zcoll_status_t refuse(struct seq_key *k, int size, zcoll__vm_send_fn send, void *arg,
                             const char *why) {
  struct zcoll__vec_msg m = {.kind = ZCOLL_VM_REFUSE};
  snprintf(m.key, sizeof(m.key), "%s", k->key);
  size_t n = strlen(why) < sizeof(m.why) - 1 ? strlen(why) : sizeof(m.why) - 1;
  memcpy(m.why, why, n); /* truncated, if it must be */
  m.why[n] = '\0';
  k->refused = 1;
  return to_all(size, &m, send, arg);
}

static zcoll_status_t init_key(struct seq_key *k, int size, int from,
                               const struct zcoll__vec_msg *m, zcoll__vm_send_fn send, void *arg) {
  char why[512];
  k->inited[from] = 1;
  k->ninit++;
  k->total += m->tasks;
  if (k->first_rank < 0) {
    k->first = *m;
    k->first_rank = from;
  } else if (m->count != k->first.count || m->dtype != k->first.dtype || m->op != k->first.op ||
             m->op_tag != k->first.op_tag) {
    char op[64], first_op[64];
    zcoll__op_describe(op, sizeof(op), (int)m->op, m->op_tag);
    zcoll__op_describe(first_op, sizeof(first_op), (int)k->first.op, k->first.op_tag);
    snprintf(why, sizeof(why),
             "key '%s' differs between ranks: rank %d has %llu x %s, %s; rank %d %llu x %s, %s",
             k->key, from, (unsigned long long)m->count, zcoll_dtype_name(m->dtype), op,
             k->first_rank, (unsigned long long)k->first.count, zcoll_dtype_name(k->first.dtype),
             first_op);
    return refuse(k, size, send, arg, why);
  }
  return ZCOLL_OK;
}

/* Every round every rank is ready for, and not yet started: start it, everywhere. */
static zcoll_status_t try_go(struct seq_key *k, int size, zcoll__vm_send_fn send, void *arg) {
  zcoll_status_t st = ZCOLL_OK;
  while (st == ZCOLL_OK && !k->refused && k->ninit == size) {
    for (int r = 0; r < size; r++)
      if (k->ready[r] <= k->go) return ZCOLL_OK;
    struct zcoll__vec_msg m = {.kind = ZCOLL_VM_GO, .round = k->go, .total = k->total};
    snprintf(m.key, sizeof(m.key), "%s", k->key);
    k->go++;
    st = to_all(size, &m, send, arg);
  }
  return st;
}

zcoll_status_t zcoll__vec_seq_take(struct zcoll__vec_seq **seq, int size, int from,
                                   const struct zcoll__vec_msg *m, zcoll__vm_send_fn send,
                                   void *arg) {
  if (!*seq && !(*seq = calloc(1, sizeof(**seq))))
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for the vector sequencer");
  struct zcoll__vec_seq *q = *seq;
  if (m->kind == ZCOLL_VM_INIT) {
    struct seq_key *k = for_init(q, m->key, from);
    if (!k && !(k = add(q, size, m->key)))
      return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for the vector sequencer");
    zcoll_status_t st = init_key(k, size, from, m, send, arg);
    return st == ZCOLL_OK ? try_go(k, size, send, arg) : st;
  }
  struct seq_key *k = live(q, m->key, from);
  if (!k)
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP,
                       "vector protocol: rank %d spoke of key '%s' before initializing it", from,
                       m->key);
  if (m->kind == ZCOLL_VM_READY) {
    k->ready[from] = m->round + 1;
    return try_go(k, size, send, arg);
  }
  if (m->kind == ZCOLL_VM_FREE) {
    k->freed[from] = 1;
    k->nfreed++;
    if (k->nfreed == size) drop(q, k);
    return ZCOLL_OK;
  }
  return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "vector protocol: message %u from rank %d", m->kind,
                     from);
}

void zcoll__vec_seq_why(const struct zcoll__vec_seq *seq, int size, const char *key, uint32_t round,
                        char *buf, size_t len) {
  struct seq_key *k = seq ? live(seq, key, 0) : NULL; /* the key rank 0 holds */
  size_t used = 0;
  buf[0] = '\0';
  for (int r = 0; k && r < size && used + 16 < len; r++) {
    const char *what = !k->inited[r]          ? "not initialized it"
                       : k->freed[r]          ? "freed it"
                       : k->ready[r] <= round ? "not committed all its tasks"
                                              : NULL;
    if (what)
      used += (size_t)snprintf(buf + used, len - used, "%srank %d has %s", used ? ", " : "", r,
                               what);
  }
  if (!k) snprintf(buf, len, "no rank has initialized it");
}

void zcoll__vec_seq_free(struct zcoll__vec_seq *seq) {
  if (!seq) return;
  while (seq->keys) drop(seq, seq->keys);
  free(seq);
}
