/* group.c -- zcoll_group_start / zcoll_group_end: the calls between them are recorded,
 * then issued together by the end, NCCL's ncclGroupStart/End shape.
 *
 * - Recording: a call inside a group is checked as far as it can be alone (its checker) and
 *   queued with its arguments; its buffers are read only when the end issues it.
 * - The end issues the queue in order, each call as its i-form, and only then waits for
 *   them all: every send and receive is posted before anything waits, so no order of them
 *   in a group can deadlock. Runs of small allreduces alike in everything the fingerprint
 *   holds are fused into one allreduce of a packed buffer (fuse_run).
 * - What is fused, and whether a call runs alone (a queue that fuses to one call runs it
 *   blocking, as outside a group), depends on the recorded sequence alone: every rank that
 *   made the same calls decides alike, and one that did not meets a mismatch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "base/log.h"
#include "core/guard.h"
#include "core/kind.h"
#include "core/report.h"
#include "group.h"
#include "request.h"

/* Fusion's bounds. An allreduce of up to 4 KiB costs its latency, not its bytes: fifty of
 * them are fifty latencies, packed they are one. A pack stays under 32 KiB, below where
 * the selection table leaves the latency algorithms (recursive doubling, the tree) for the
 * bandwidth ones, so that the packed call is still one round of small messages; the copy
 * in and out is then a few microseconds. Constants, not settings: every rank must fuse
 * alike. */
#define FUSE_ONE_MAX ((size_t)4096)
#define FUSE_PACK_MAX ((size_t)32768)

/* A request made by an i-form inside a group: its handle, what the end found, and its link
 * in the group's list (freed by zcoll_request_free or at destroy). */
struct greq {
  zcoll_comm_t *comm;
  zcoll_request_t *handle;
  int ended; /* the end has issued the call and seen it end */
  zcoll_status_t st;
  struct greq *prev, *next;
};

struct gcall {
  struct zcoll__gargs a; /* its arrays owned */
  zcoll__group_issuer issue;
  struct greq *req; /* an i-form's, or NULL */
  zcoll_request_t *inner;
  zcoll_status_t st;
};

/* The queue's arrays outlive their group (kept to RETAIN_BYTES): a loop of groups of 50
 * small calls would otherwise spend a tenth of its time in malloc and realloc. */
struct unit;
struct zcoll__group {
  struct gcall *calls;
  int n, cap;
  struct greq *live;
  struct unit *units; /* the end's, ucap of them */
  int ucap;
  char *pack; /* every fused unit's pack, one after another */
  size_t pack_cap;
};
#define RETAIN_BYTES ((size_t)1 << 20)

/* ---- the requests of i-forms inside a group ---- */

static const struct zcoll__request_ops greq_ops;

static zcoll_status_t greq_refuse(zcoll_request_t *h, const char *fn, const char *why) {
  zcoll_comm_t *comm = ((const struct greq *)zcoll__request_impl(h, &greq_ops))->comm;
  zcoll_status_t st = zcoll__enter(comm, fn);
  if (st != ZCOLL_OK) return st;
  st = zcoll__report(comm, zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: %s", fn, why));
  zcoll__leave(comm);
  return st;
}

static zcoll_status_t greq_start(zcoll_request_t *h) {
  return greq_refuse(h, "zcoll_start",
                     "the request is an i-form's inside a group, not persistent (zcoll_group_end "
                     "issues its call)");
}
static zcoll_status_t greq_test(zcoll_request_t *h) {
  const struct greq *g = zcoll__request_impl(h, &greq_ops);
  if (g->ended) return g->st;
  return greq_refuse(h, "zcoll_test",
                     "the request's call is queued in a group that is still open: "
                     "zcoll_group_end issues it");
}
static zcoll_status_t greq_wait(zcoll_request_t *h, int timeout_ms) {
  const struct greq *g = zcoll__request_impl(h, &greq_ops);
  if (g->ended) return g->st;
  return greq_refuse(h, timeout_ms < 0 ? "zcoll_wait" : "zcoll_wait_timeout",
                     "the request's call is queued in a group that is still open: waiting for it "
                     "before zcoll_group_end would never end");
}
static zcoll_status_t greq_free(zcoll_request_t *h) {
  struct greq *g = zcoll__request_impl(h, &greq_ops);
  if (!g->ended)
    return greq_refuse(h, "zcoll_request_free",
                       "the request's call is queued in a group that is still open (free it "
                       "after zcoll_group_end)");
  zcoll_comm_t *comm = g->comm;
  zcoll_status_t st = zcoll__enter(comm, "zcoll_request_free");
  if (st != ZCOLL_OK) return st;
  struct zcoll__group *G = comm->coll.group;
  if (g->prev)
    g->prev->next = g->next;
  else
    G->live = g->next;
  if (g->next) g->next->prev = g->prev;
  zcoll__request_forget(h);
  free(g);
  zcoll__leave(comm);
  return ZCOLL_OK;
}
static const struct zcoll__request_ops greq_ops = {greq_start, greq_test, greq_wait, greq_free};

/* ---- recording ---- */

static struct zcoll__group *group_of(zcoll_comm_t *comm) {
  if (!comm->coll.group) comm->coll.group = calloc(1, sizeof(struct zcoll__group));
  return comm->coll.group;
}

static void gcall_free(struct gcall *c) {
  if (!c->a.sendcounts && !c->a.sdispls && !c->a.recvcounts && !c->a.rdispls) return;
  free((void *)c->a.sendcounts);
  free((void *)c->a.sdispls);
  free((void *)c->a.recvcounts);
  free((void *)c->a.rdispls);
}

/* A copy of a v-form's array (p entries), or NULL for NULL; *ok 0 if out of memory. */
static const size_t *copy_counts(const size_t *v, int p, int *ok) {
  if (!v) return NULL;
  size_t *c = malloc((size_t)p * sizeof(*c));
  if (!c) {
    *ok = 0;
    return NULL;
  }
  memcpy(c, v, (size_t)p * sizeof(*c));
  return c;
}

static zcoll_status_t record(zcoll_comm_t *comm, const struct zcoll__gargs *a,
                             zcoll__group_issuer issue, int nb, zcoll_request_t **req) {
  struct zcoll__group *G = group_of(comm);
  if (!G) return ZCOLL_ERR_NO_MEMORY;
  if (G->n == G->cap) {
    int cap = G->cap ? 2 * G->cap : 16;
    struct gcall *calls = realloc(G->calls, (size_t)cap * sizeof(*calls));
    if (!calls) return ZCOLL_ERR_NO_MEMORY;
    G->calls = calls;
    G->cap = cap;
  }
  /* Built in its place: the common call (no v-form arrays, no request) copies nothing twice. */
  struct gcall *c = &G->calls[G->n];
  *c = (struct gcall){.a = *a, .issue = issue};
  int ok = 1;
  if (a->sendcounts || a->sdispls || a->recvcounts || a->rdispls) {
    c->a.sendcounts = copy_counts(a->sendcounts, comm->size, &ok);
    c->a.sdispls = copy_counts(a->sdispls, comm->size, &ok);
    c->a.recvcounts = copy_counts(a->recvcounts, comm->size, &ok);
    c->a.rdispls = copy_counts(a->rdispls, comm->size, &ok);
  }
  if (ok && nb) {
    struct greq *g = calloc(1, sizeof(*g));
    zcoll_request_t *h = g ? zcoll__request_wrap(comm, &greq_ops, g) : NULL;
    if (!h) {
      free(g);
      ok = 0;
    } else {
      g->comm = comm;
      g->handle = h;
      g->next = G->live;
      if (g->next) g->next->prev = g;
      G->live = g;
      c->req = g;
      *req = h;
    }
  }
  if (!ok) {
    gcall_free(c);
    return ZCOLL_ERR_NO_MEMORY;
  }
  G->n++;
  return ZCOLL_OK;
}

static zcoll_status_t add(zcoll_comm_t *comm, const char *fn, const struct zcoll__gargs *a,
                          zcoll__group_checker check, zcoll__group_issuer issue, int nb,
                          zcoll_request_t **req) {
  if (req) *req = NULL;
  if (nb && !req) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: req is NULL", fn);
  zcoll_status_t st = zcoll__enter(comm, fn);
  if (st != ZCOLL_OK) return st;
  if ((st = zcoll__check_usable(comm)) == ZCOLL_OK && (st = check(comm, a)) == ZCOLL_OK &&
      record(comm, a, issue, nb, req) != ZCOLL_OK) {
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "%s: out of memory recording the call in a group", fn);
    /* the peers will issue it at their end: they must hear that this rank cannot */
    if (a->kind) st = zcoll__poison(comm, st);
  }
  st = zcoll__report(comm, st);
  zcoll__leave(comm);
  return st;
}

/* ---- the end ---- */

/* What the end issues: calls [first, first + n), fused into one allreduce if pack. */
struct unit {
  int first, n;
  void *pack;
  size_t bytes;
  zcoll_request_t *inner;
};

static size_t ar_bytes(const struct gcall *c) { return c->a.count * zcoll__dsize(c->a.dtype); }

/* Can c be packed at all: an allreduce of a built-in op (a created op's function may be
 * a scan over its call's own elements), small, not empty. */
static int fusable(const struct gcall *c) {
  return c->a.kind == ZCOLL_COLL_ALLREDUCE && (unsigned)c->a.op < ZCOLL_OP_COUNT && c->a.count &&
         ar_bytes(c) <= FUSE_ONE_MAX;
}

/* How many calls from first on fuse: alike in dtype and op (what their fingerprints hold
 * besides the count), the pack within its bound. */
static int fuse_run(const struct gcall *calls, int n, int first, size_t *bytes) {
  const struct gcall *c0 = &calls[first];
  *bytes = 0;
  if (!fusable(c0)) return 1;
  int k = first;
  while (k < n && fusable(&calls[k]) && calls[k].a.dtype == c0->a.dtype &&
         calls[k].a.op == c0->a.op && *bytes + ar_bytes(&calls[k]) <= FUSE_PACK_MAX)
    *bytes += ar_bytes(&calls[k++]);
  return k - first;
}

static void pack_in(const struct unit *u, const struct gcall *calls) {
  char *p = u->pack;
  for (int i = u->first; i < u->first + u->n; i++) {
    const struct gcall *c = &calls[i];
    const void *src = c->a.sendbuf == ZCOLL_IN_PLACE ? c->a.recvbuf : c->a.sendbuf;
    memcpy(p, src, ar_bytes(c));
    p += ar_bytes(c);
  }
}

static void pack_out(const struct unit *u, const struct gcall *calls) {
  const char *p = u->pack;
  for (int i = u->first; i < u->first + u->n; i++) {
    memcpy(calls[i].a.recvbuf, p, ar_bytes(&calls[i]));
    p += ar_bytes(&calls[i]);
  }
}

/* Issues unit u: as its i-form into u->inner, or (req NULL: the group's only unit) blocking. */
static zcoll_status_t unit_issue(zcoll_comm_t *comm, struct unit *u, struct gcall *calls,
                                 zcoll_request_t **req) {
  if (!u->pack) return calls[u->first].issue(comm, &calls[u->first].a, req);
  const struct gcall *c = &calls[u->first];
  size_t count = u->bytes / zcoll__dsize(c->a.dtype);
  return req ? zcoll_iallreduce(comm, ZCOLL_IN_PLACE, u->pack, count, c->a.dtype, c->a.op, req)
             : zcoll_allreduce(comm, ZCOLL_IN_PLACE, u->pack, count, c->a.dtype, c->a.op);
}

/* A pack starts on a cache line: its reduction's kernel reads it vector by vector. */
#define PACK_ALIGN ((size_t)64)

/* The units of the queue, fusion decided, in G->units; each fused one's pack (n > 1) in
 * G->pack. NULL if out of memory. */
static struct unit *units_of(struct zcoll__group *G, struct gcall *calls, int n, int *nu) {
  if (G->ucap < n || !G->units) {
    int cap = n > 16 ? n : 16;
    struct unit *u = realloc(G->units, (size_t)cap * sizeof(*u));
    if (!u) return NULL;
    G->units = u;
    G->ucap = cap;
  }
  struct unit *u = G->units;
  size_t total = 0;
  int k = 0;
  for (int i = 0; i < n; k++) {
    u[k] = (struct unit){.first = i};
    u[k].n = fuse_run(calls, n, i, &u[k].bytes);
    if (u[k].n == 1) u[k].bytes = 0; /* alone: issued as it was called */
    total += (u[k].bytes + PACK_ALIGN - 1) & ~(PACK_ALIGN - 1);
    i += u[k].n;
  }
  if (total > G->pack_cap) {
    free(G->pack);
    G->pack_cap = 0;
    if (!(G->pack = aligned_alloc(PACK_ALIGN, total))) return NULL;
    G->pack_cap = total;
  }
  size_t off = 0;
  for (int j = 0; j < k; j++) {
    if (!u[j].bytes) continue;
    u[j].pack = G->pack + off;
    off += (u[j].bytes + PACK_ALIGN - 1) & ~(PACK_ALIGN - 1);
  }
  *nu = k;
  return u;
}

/* What the end keeps for the next group, past which it gives the memory back. */
static void retain(struct zcoll__group *G, struct gcall *calls, int cap) {
  if (!G->calls && (size_t)cap * sizeof(*calls) <= RETAIN_BYTES) {
    G->calls = calls;
    G->cap = cap;
  } else {
    free(calls);
  }
  if (G->pack_cap > RETAIN_BYTES) {
    free(G->pack);
    G->pack = NULL;
    G->pack_cap = 0;
  }
  if ((size_t)G->ucap * sizeof(*G->units) > RETAIN_BYTES) {
    free(G->units);
    G->units = NULL;
    G->ucap = 0;
  }
}

/* The first failed unit's message (*first: its index), kept as it fails: later calls'
 * errors overwrite the communicator's record. */
static void note(zcoll_comm_t *comm, zcoll_status_t st, int k, int *first, char *why, size_t len) {
  if (st == ZCOLL_OK || k >= *first) return;
  *first = k;
  snprintf(why, len, "%s", comm->last_error);
}

/* Runs the queue: every unit issued before any is waited for; each call's outcome set. */
static void run_queue(zcoll_comm_t *comm, struct gcall *calls, struct unit *u, int nu, char *why,
                      size_t len) {
  zcoll_status_t st;
  int first = nu;
  for (int k = 0; k < nu; k++) {
    if (u[k].pack) pack_in(&u[k], calls);
    /* one unit alone runs as its blocking call: what the same call outside a group does */
    st = unit_issue(comm, &u[k], calls, nu == 1 ? NULL : &u[k].inner);
    note(comm, st, k, &first, why, len);
    for (int i = u[k].first; i < u[k].first + u[k].n; i++) calls[i].st = st;
  }
  for (int k = 0; k < nu; k++) {
    if (u[k].inner) {
      st = zcoll_wait(u[k].inner);
      zcoll_request_free(u[k].inner);
      note(comm, st, k, &first, why, len);
      for (int i = u[k].first; i < u[k].first + u[k].n; i++) calls[i].st = st;
    }
    if (u[k].pack && calls[u[k].first].st == ZCOLL_OK) pack_out(&u[k], calls);
  }
}

static const struct zcoll__group_hooks hooks = {add, zcoll__group_coll_check,
                                                zcoll__group_coll_issue};

zcoll_status_t zcoll_group_start(zcoll_comm_t *comm) {
  if (!comm) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_group_start: comm is NULL");
  zcoll_status_t st = zcoll__enter(comm, "zcoll_group_start");
  if (st != ZCOLL_OK) return st;
  if (!group_of(comm))
    st = zcoll__report(comm, zcoll__fail(ZCOLL_ERR_NO_MEMORY, "zcoll_group_start: out of memory"));
  else
    comm->coll.group_depth++; /* nested: only the outermost end issues */
  comm->coll.group_hooks = &hooks;
  zcoll__leave(comm);
  return st;
}

zcoll_status_t zcoll_group_end(zcoll_comm_t *comm) {
  if (!comm) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_group_end: comm is NULL");
  zcoll_status_t st = zcoll__enter(comm, "zcoll_group_end");
  if (st != ZCOLL_OK) return st;
  if (comm->coll.group_depth == 0) {
    st = zcoll__report(comm, zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                                         "zcoll_group_end: no group is open on this communicator "
                                         "(zcoll_group_start first)"));
    zcoll__leave(comm);
    return st;
  }
  struct zcoll__group *G = comm->coll.group;
  if (--comm->coll.group_depth > 0) {
    zcoll__leave(comm);
    return ZCOLL_OK;
  }
  /* The queue is the end's now: the calls it makes below are ordinary ones. */
  struct gcall *calls = G->calls;
  int n = G->n, cap = G->cap, nu = 0;
  G->calls = NULL;
  G->n = G->cap = 0;
  zcoll__leave(comm);
  char why[sizeof(comm->last_error)];
  why[0] = '\0';
  struct unit *u = units_of(G, calls, n, &nu);
  if (!u) {
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "zcoll_group_end: out of memory");
    for (int i = 0; i < n; i++) calls[i].st = st;
    if (zcoll__enter(comm, "zcoll_group_end") == ZCOLL_OK) {
      zcoll__poison(comm, st); /* the peers issue theirs: they must hear this rank cannot */
      snprintf(why, sizeof(why), "%s", zcoll__last_error());
      zcoll__leave(comm);
    }
  } else {
    run_queue(comm, calls, u, nu, why, sizeof(why));
  }
  st = ZCOLL_OK;
  for (int i = 0; i < n; i++) {
    if (st == ZCOLL_OK) st = calls[i].st;
    if (calls[i].req) {
      calls[i].req->st = calls[i].st;
      calls[i].req->ended = 1;
    }
    gcall_free(&calls[i]);
  }
  retain(G, calls, cap);
  if (st != ZCOLL_OK && zcoll__enter(comm, "zcoll_group_end") == ZCOLL_OK) {
    /* the first error, already logged where it was decided, is the group's */
    st = zcoll__report(comm, zcoll__record_error(st, "zcoll_group_end: %s", why));
    zcoll__leave(comm);
  }
  return st;
}

void zcoll__group_release(zcoll_comm_t *comm) {
  struct zcoll__group *G = comm->coll.group;
  if (!G) return;
  for (int i = 0; i < G->n; i++) gcall_free(&G->calls[i]);
  free(G->calls);
  free(G->units);
  free(G->pack);
  while (G->live) {
    struct greq *g = G->live;
    G->live = g->next;
    zcoll__request_forget(g->handle);
    free(g);
  }
  free(G);
  comm->coll.group = NULL;
  comm->coll.group_depth = 0;
}
