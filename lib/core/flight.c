/* flight.c -- the flight recorder's entries, and its dump: to the log, and to
 * ZCOLL_FLIGHT_RECORDER_FILE.<rank> when set. */
#include "flight.h"
#include "comm_registry.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm.h"
#include "exec.h"
#include "base/log.h"
#include "kind.h"

zcoll_status_t zcoll__flight_open(struct zcoll__flight *f, unsigned n) {
  memset(f, 0, sizeof(*f));
  if (!n) return ZCOLL_OK;
  /* One cache line each, not two: a collective writes one entry. Zeroed: stamp 0 marks
   * an entry never written. */
  if (!(f->ents = aligned_alloc(64, n * sizeof(*f->ents))))
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for %u flight recorder entries", n);
  memset(f->ents, 0, n * sizeof(*f->ents));
  f->n = n;
  return ZCOLL_OK;
}

void zcoll__flight_close(struct zcoll__flight *f) {
  free(f->ents);
  f->ents = NULL;
}

void zcoll__flight_awaited(const struct zcoll__run *r) {
  struct zcoll__flight_ent *e = r->fl;
  if (atomic_load_explicit(&e->stamp, memory_order_relaxed) != 2 * r->ordinal + 2) return;
  int k = 0;
  for (int j = 0; j < r->s->npeers && k < ZCOLL_FLIGHT_AWAIT; j++)
    if (r->e->awaited_ns[j])
      atomic_store_explicit(&e->await[k++], r->s->peers[j], memory_order_release);
  if (k < ZCOLL_FLIGHT_AWAIT) atomic_store_explicit(&e->await[k], -1, memory_order_release);
}

/* An entry as a reader copied it. */
struct snap {
  uint64_t seq, count;
  uint32_t what;
  int state;
  int64_t start_us, end_us;
  int await[ZCOLL_FLIGHT_AWAIT];
};

/* Copies e into *s: 1, or 0 if it holds nothing or was being rewritten (a torn copy).
 * Acquire loads: none moves after the second look at the stamp, and a value of a new
 * occupant brings its odd stamp along (flight.h). */
static int snap_read(struct zcoll__flight_ent *e, struct snap *s) {
  const memory_order acq = memory_order_acquire;
  uint64_t st1 = atomic_load_explicit(&e->stamp, acq);
  if (!st1 || (st1 & 1)) return 0;
  s->seq = atomic_load_explicit(&e->seq, acq);
  s->count = atomic_load_explicit(&e->count, acq);
  s->what = atomic_load_explicit(&e->what, acq);
  s->state = atomic_load_explicit(&e->state, acq); /* then its end time */
  s->start_us = atomic_load_explicit(&e->start_us, acq);
  s->end_us = atomic_load_explicit(&e->end_us, acq);
  for (int k = 0; k < ZCOLL_FLIGHT_AWAIT; k++)
    s->await[k] = atomic_load_explicit(&e->await[k], acq);
  return atomic_load_explicit(&e->stamp, memory_order_relaxed) == st1 && s->seq * 2 + 2 == st1;
}

static int by_seq(const void *a, const void *b) {
  uint64_t x = ((const struct snap *)a)->seq, y = ((const struct snap *)b)->seq;
  return x < y ? -1 : x > y;
}

/* "timeout", "peer_failed", ...: the status's name in ZCOLL_STATUS_MAP, in lower case,
 * into buf (one word: the dump is key=value). */
static const char *status_word(zcoll_status_t st, char buf[static 24]) {
#define ZCOLL_FLIGHT_NAME_(name, str) #name,
  static const char *const names[] = {ZCOLL_STATUS_MAP(ZCOLL_FLIGHT_NAME_)};
#undef ZCOLL_FLIGHT_NAME_
  if ((unsigned)st >= sizeof(names) / sizeof(names[0])) return "error";
  const char *n = names[st];
  if (!strncmp(n, "ERR_", 4)) n += 4;
  size_t i = 0;
  for (; n[i] && i < 23; i++) buf[i] = (char)(n[i] >= 'A' && n[i] <= 'Z' ? n[i] - 'A' + 'a' : n[i]);
  buf[i] = '\0';
  return buf;
}

const char *zcoll__flight_kind_name(int kind) {
  const struct zcoll__kind *k = zcoll__kind_of(kind);
  return k ? k->name : "unknown";
}

/* A growing text. */
struct text {
  char *p;
  size_t len, cap;
};

__attribute__((format(printf, 2, 3))) static void put(struct text *t, const char *fmt, ...) {
  for (int pass = 0; pass < 2 && t->p; pass++) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (t->len + (size_t)n < t->cap) {
      t->len += (size_t)n;
      return;
    }
    size_t cap = 2 * (t->len + (size_t)n + 1);
    char *p = realloc(t->p, cap);
    if (!p) { /* keep what fits: a dump is diagnostics */
      t->p[t->len] = '\0';
      return;
    }
    t->p = p;
    t->cap = cap;
  }
}

static void put_entry(struct text *t, int rank, const struct snap *s) {
  int kind = (int)(s->what & 0xff), dtype = (int)(s->what >> 8 & 0xff);
  int op = (int)(s->what >> 16 & 0xff), algo = (int)(s->what >> 24);
  int state = s->state & 0xff;
  const char *dname = zcoll_dtype_name((zcoll_dtype_t)dtype);
  const struct zcoll__kind *row = zcoll__kind_of(kind);
  const char *oname = row && !row->has_op   ? "-"
                      : op < ZCOLL_OP_COUNT ? zcoll_op_name((zcoll_op_t)op)
                                            : "user";
  char stname[40], word[24];
  if (state == ZCOLL_FLIGHT_RUNNING)
    snprintf(stname, sizeof(stname), "%s", s->await[0] >= 0 ? "waiting" : "running");
  else if (state == ZCOLL_FLIGHT_DONE)
    snprintf(stname, sizeof(stname), "done");
  else
    snprintf(stname, sizeof(stname), "failed:%s",
             status_word((zcoll_status_t)(s->state >> 8), word));
  put(t,
      "zcoll flight rank=%d seq=%llu kind=%s count=%llu dtype=%s op=%s algo=%s state=%s "
      "awaiting=",
      rank, (unsigned long long)s->seq, zcoll__flight_kind_name(kind), (unsigned long long)s->count,
      dname ? dname : "?", oname ? oname : "?", zcoll__kind_algo_name(kind, algo), stname);
  int any = 0;
  for (int k = 0; state == ZCOLL_FLIGHT_RUNNING && k < ZCOLL_FLIGHT_AWAIT && s->await[k] >= 0;
       k++, any = 1)
    put(t, "%s%d", any ? "," : "", s->await[k]);
  put(t, "%s start_us=", any ? "" : "-");
  if (s->start_us) /* 0: running, not yet stamped (flight.h) */
    put(t, "%lld end_us=", (long long)s->start_us);
  else
    put(t, "- end_us=");
  if (s->end_us && state != ZCOLL_FLIGHT_RUNNING)
    put(t, "%lld\n", (long long)s->end_us);
  else
    put(t, "-\n");
}

/* The dump as text: a header line, then the entries, oldest first. */
static char *dump_text(zcoll_comm_t *comm, const char *trigger) {
  struct zcoll__flight *f = &comm->flight;
  struct text t = {malloc(4096), 0, 4096};
  if (!t.p) return NULL;
  struct snap *s = f->n ? malloc(f->n * sizeof(*s)) : NULL;
  unsigned n = 0;
  for (unsigned i = 0; s && i < f->n; i++)
    if (snap_read(&f->ents[i], &s[n])) n++;
  if (n) qsort(s, n, sizeof(*s), by_seq);
  uint64_t next = n ? s[n - 1].seq + 1 : 0;
  long long last_done = -1;
  for (unsigned i = 0; i < n; i++)
    if ((s[i].state & 0xff) == ZCOLL_FLIGHT_DONE) last_done = (long long)s[i].seq;
  int broken = atomic_load_explicit(&f->dumped, memory_order_relaxed); /* the failure */
  char word[24];
  put(&t,
      "zcoll flight rank=%d size=%d next_seq=%llu last_done=%lld state=%s trigger=%s "
      "entries=%u now_us=%lld%s\n",
      comm->rank, comm->size, (unsigned long long)next, last_done,
      broken ? status_word((zcoll_status_t)broken, word) : "ok", trigger, n,
      (long long)zcoll__now_us_coarse(), f->ents ? "" : " recorder=off");
  for (unsigned i = 0; i < n; i++) put_entry(&t, comm->rank, &s[i]);
  free(s);
  return t.p;
}

/* Logs text (at level) line by line, and appends it to the rank's file if one is set:
 * 0, or -1 with the reason in why if the file could not be written. */
static int dump_out(zcoll_comm_t *comm, const char *text, zcoll__log_level_t level, char *path,
                    size_t path_len, char *why, size_t why_len) {
  for (const char *p = text; *p;) {
    const char *eol = strchr(p, '\n');
    int len = eol ? (int)(eol - p) : (int)strlen(p);
    zcoll__log(level, "%.*s", len, p);
    p += len + (eol != NULL);
  }
  const char *prefix = comm->cfg->flight_file;
  if (!prefix[0]) return 0;
  snprintf(path, path_len, "%s.%d", prefix, comm->rank); /* as ZCOLL_TRACE names its files */
  /* One write to a file opened for appending: dumps of several communicators (a split's
   * rank may equal another's) land whole, one after the other. A regular file only, its
   * own name not a link's: a FIFO with no reader (or a slow one) would hold the failing
   * call, a link would append to a file somebody else chose. */
  int fd = zcoll__open_regular(path, O_APPEND, why, why_len);
  if (fd < 0) return -1;
  size_t len = strlen(text);
  ssize_t put_n = write(fd, text, len);
  int err = put_n < 0 ? errno : ENOSPC;
  close(fd);
  if (put_n == (ssize_t)len) return 0;
  errno = err; /* for %m: strerror is not thread-safe */
  snprintf(why, why_len, "%m");
  return -1;
}

zcoll_status_t zcoll_comm_dump(zcoll_comm_t *comm) {
  if (!comm) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_comm_dump: comm is NULL");
  /* Any thread, any time: a destroy or abort on another thread must not free comm while
   * it is read here, and a handle already freed is refused, not read. */
  zcoll_status_t st = zcoll__registry_hold(comm, "zcoll_comm_dump");
  if (st != ZCOLL_OK) return st;
  char *text = dump_text(comm, "request");
  char path[600], why[256];
  /* Asked for: shown at the default level. */
  int rc = text ? dump_out(comm, text, ZCOLL_LOG_WARN, path, sizeof(path), why, sizeof(why)) : 0;
  zcoll__registry_unhold();
  if (!text) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "zcoll_comm_dump: out of memory");
  free(text);
  if (rc)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "ZCOLL_FLIGHT_RECORDER_FILE: cannot write %s: %s",
                       path, why);
  return ZCOLL_OK;
}

void zcoll__flight_dump_failure(zcoll_comm_t *comm, zcoll_status_t st, const char *trigger) {
  int none = 0;
  /* The first failure is the one to explain; an abort after it adds nothing. */
  if (!comm->flight.ents || st == ZCOLL_OK ||
      !atomic_compare_exchange_strong(&comm->flight.dumped, &none, (int)st))
    return;
  char word[24];
  char *text = dump_text(comm, trigger ? trigger : status_word(st, word));
  if (!text) return;
  char path[600], why[256];
  /* At info: the failure itself was logged as an error; a page of history after every
   * one would bury it. The file, where set, always has it; where it cannot, that is an
   * error of its own (logged, not recorded: the message of the failure is the call's). */
  if (dump_out(comm, text, ZCOLL_LOG_INFO, path, sizeof(path), why, sizeof(why)))
    zcoll_log_error("ZCOLL_FLIGHT_RECORDER_FILE: cannot write %s: %s", path, why);
  free(text);
}
