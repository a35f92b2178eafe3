/* xchg.c -- the rest of MPI's set (alltoall, alltoallv, allgatherv, gather, gatherv, scatter,
 * scatterv): argument checks, the layout of what moves between each pair of ranks
 * (algorithms.h), the algorithm choice and the schedule. The uniform kinds' schedules are
 * cached like the others' (they depend on the block's count and the root); a v-form's is
 * built per call from its counts (xchg_sched), its description's count being
 * ZCOLL_COUNT_PER_PAIR so that the executor states each pair's counts in its headers
 * (lib/core/exec_run.c). The public calls are in xchg_api.c. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/algorithms.h"
#include "algorithms/select.h"
#include "base/log.h"
#include "core/comm.h"
#include "core/kind.h"
#include "kernels/op.h"
#include "xchg.h"

static const char *kind_name(int kind) {
  const struct zcoll__kind *k = zcoll__kind_of(kind);
  return k ? k->name : "?";
}

static int rooted(int kind) {
  return kind == ZCOLL_COLL_GATHER || kind == ZCOLL_COLL_GATHERV || kind == ZCOLL_COLL_SCATTER ||
         kind == ZCOLL_COLL_SCATTERV;
}

static int vform(int kind) {
  return kind == ZCOLL_COLL_ALLTOALLV || kind == ZCOLL_COLL_ALLGATHERV ||
         kind == ZCOLL_COLL_GATHERV || kind == ZCOLL_COLL_SCATTERV;
}

/* [off, off + n) elements addressable (the byte count below PTRDIFF_MAX). */
static zcoll_status_t check_range(const char *fn, const char *what, int q, size_t off, size_t n,
                                  size_t dsize) {
  size_t lim = (size_t)PTRDIFF_MAX / dsize;
  if (off > lim || n > lim - off)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "%s: %s[%d]: displacement %zu plus count %zu overflows the address space",
                       fn, what, q, off, n);
  return ZCOLL_OK;
}

static int overlap(const void *a, size_t alen, const void *b, size_t blen) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return alen && blen && x < y + blen && y < x + alen;
}

/* The buffers a rank uses: there where they hold elements, apart unless in place. */
static zcoll_status_t check_bufs(const char *fn, const void *sendbuf, size_t in_bytes,
                                 const void *recvbuf, size_t out_bytes) {
  if (in_bytes && !sendbuf) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: sendbuf is NULL", fn);
  if (out_bytes && !recvbuf) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: recvbuf is NULL", fn);
  if (overlap(sendbuf, in_bytes, recvbuf, out_bytes))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "%s: sendbuf and recvbuf overlap; pass ZCOLL_IN_PLACE for the in-place "
                       "form",
                       fn);
  return ZCOLL_OK;
}

/* Fills one direction of the layout from a call's counts and displacements (NULL displs:
 * blocks of `counts` packed in rank order) and returns its extent in elements. */
static zcoll_status_t fill(const char *fn, const char *cname, const char *dname, int p,
                           const size_t *counts, const size_t *displs, size_t dsize, size_t *lc,
                           size_t *ld, size_t *extent) {
  if (!counts) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: %s is NULL", fn, cname);
  if (!displs) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: %s is NULL", fn, dname);
  *extent = 0;
  for (int q = 0; q < p; q++) {
    zcoll_status_t st = check_range(fn, dname, q, displs[q], counts[q], dsize);
    if (st != ZCOLL_OK) return st;
    lc[q] = counts[q];
    ld[q] = displs[q];
    if (counts[q] && displs[q] + counts[q] > *extent) *extent = displs[q] + counts[q];
  }
  return ZCOLL_OK;
}

/* allgatherv's description: a hash of recvcounts, the same on every rank that agrees, below
 * ZCOLL_COUNT_PER_PAIR (kind.h). */
static uint64_t counts_hash(const size_t *counts, int p) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int q = 0; q < p; q++) {
    h = (h ^ (uint64_t)counts[q]) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  return h >> 1;
}

/* A uniform kind's checks: the block count, its buffers, ZCOLL_IN_PLACE where it may be. */
static zcoll_status_t uniform_checks(const zcoll_comm_t *comm, const struct zcoll__xargs *x,
                                     const char *fn, int *in_place) {
  size_t dsize = zcoll__dsize(x->dtype), p = (size_t)comm->size, n = x->count;
  if (n > (size_t)PTRDIFF_MAX / dsize / p)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "%s: %zu x %zu elements of %s overflow the address space", fn, p, n,
                       zcoll_dtype_name(x->dtype));
  int root = comm->rank == x->root, gather = x->kind == ZCOLL_COLL_GATHER;
  size_t in = n, out = n;
  if (x->kind == ZCOLL_COLL_ALLTOALL) {
    in = out = n * p;
    *in_place = x->sendbuf == ZCOLL_IN_PLACE;
  } else {
    const void *ip = gather ? x->sendbuf : x->recvbuf;
    *in_place = ip == ZCOLL_IN_PLACE;
    if (*in_place && !root)
      return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                         "%s: ZCOLL_IN_PLACE is the root's only (rank %d is not root %d)", fn,
                         comm->rank, x->root);
    if (gather) out = root ? n * p : 0;
    if (!gather) in = root ? n * p : 0;
  }
  if (*in_place) {
    if (x->kind == ZCOLL_COLL_ALLTOALL || gather) in = 0; /* sendbuf is not read */
    if (x->kind == ZCOLL_COLL_SCATTER) out = 0;           /* recvbuf is not written */
  }
  return check_bufs(fn, *in_place && in == 0 ? NULL : x->sendbuf, in * dsize,
                    *in_place && out == 0 ? NULL : x->recvbuf, out * dsize);
}

/* A v-form's layout and buffer checks; *desc_count: its description's count. */
static zcoll_status_t v_layout(const zcoll_comm_t *comm, const struct zcoll__xargs *x,
                               const char *fn, struct zcoll__layout *l, int *in_place,
                               uint64_t *desc_count) {
  int p = comm->size, r = comm->rank, root = r == x->root;
  size_t dsize = zcoll__dsize(x->dtype), in = 0, out = 0;
  zcoll_status_t st = ZCOLL_OK;
  *desc_count = ZCOLL_COUNT_PER_PAIR;
  if (x->kind == ZCOLL_COLL_ALLTOALLV) {
    *in_place = x->sendbuf == ZCOLL_IN_PLACE;
    st = fill(fn, "recvcounts", "rdispls", p, x->recvcounts, x->rdispls, dsize, l->rcount,
              l->rdispl, &out);
    if (st == ZCOLL_OK && *in_place) {
      memcpy(l->scount, l->rcount, sizeof(size_t) * (size_t)p);
      memcpy(l->sdispl, l->rdispl, sizeof(size_t) * (size_t)p);
    } else if (st == ZCOLL_OK) {
      st = fill(fn, "sendcounts", "sdispls", p, x->sendcounts, x->sdispls, dsize, l->scount,
                l->sdispl, &in);
    }
    if (st == ZCOLL_OK && l->scount[r] != l->rcount[r])
      st = zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "%s: rank %d sends itself %zu elements (sendcounts[%d]) but expects %zu "
                       "(recvcounts[%d])",
                       fn, r, l->scount[r], r, l->rcount[r], r);
  } else if (x->kind == ZCOLL_COLL_ALLGATHERV) {
    *in_place = x->sendbuf == ZCOLL_IN_PLACE;
    st = fill(fn, "recvcounts", "displs", p, x->recvcounts, x->rdispls, dsize, l->rcount, l->rdispl,
              &out);
    if (st != ZCOLL_OK) return st;
    memcpy(l->scount, l->rcount, sizeof(size_t) * (size_t)p);
    memcpy(l->sdispl, l->rdispl, sizeof(size_t) * (size_t)p);
    in = *in_place ? 0 : x->count;
    if (!*in_place && x->count != l->rcount[r])
      return zcoll__fail(ZCOLL_ERR_MISMATCH,
                         "%s: rank %d sends %zu elements but recvcounts[%d] says %zu", fn, r,
                         x->count, r, l->rcount[r]);
    *desc_count = counts_hash(x->recvcounts, p);
  } else { /* gatherv (to the root) or scatterv (from it) */
    int gather = x->kind == ZCOLL_COLL_GATHERV;
    *in_place = (gather ? x->sendbuf : x->recvbuf) == ZCOLL_IN_PLACE;
    if (*in_place && !root)
      return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                         "%s: ZCOLL_IN_PLACE is the root's only (rank %d is not root %d)", fn, r,
                         x->root);
    size_t *many_c = gather ? l->rcount : l->scount, *many_d = gather ? l->rdispl : l->sdispl;
    size_t *one_c = gather ? l->scount : l->rcount, *one_d = gather ? l->sdispl : l->rdispl;
    for (int q = 0; q < p; q++) many_c[q] = one_c[q] = ZCOLL_LAYOUT_NONE;
    size_t ext = 0;
    if (root) {
      st = gather ? fill(fn, "recvcounts", "displs", p, x->recvcounts, x->rdispls, dsize, many_c,
                         many_d, &ext)
                  : fill(fn, "sendcounts", "displs", p, x->sendcounts, x->sdispls, dsize, many_c,
                         many_d, &ext);
      if (st != ZCOLL_OK) return st;
      for (int q = 0; q < p; q++) one_c[q] = 0, one_d[q] = 0; /* the acks */
      one_c[r] = *in_place ? ZCOLL_LAYOUT_NONE : x->count;
      if (*in_place) many_c[r] = ZCOLL_LAYOUT_NONE;
      if (!*in_place && x->count != many_c[r])
        return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                           "%s: the root's own block is %zu elements here and %zu in %s[%d]", fn,
                           x->count, many_c[r], gather ? "recvcounts" : "sendcounts", r);
    } else {
      one_c[x->root] = x->count, one_d[x->root] = 0;
      many_c[x->root] = 0, many_d[x->root] = 0; /* the root's ack */
    }
    size_t mine = root && *in_place ? 0 : x->count;
    in = gather ? mine : ext;
    out = gather ? ext : mine;
    if ((st = check_range(fn, gather ? "sendcount" : "recvcount", r, 0, x->count, dsize)))
      return st;
    st = check_bufs(fn, gather && *in_place ? NULL : x->sendbuf, in * dsize,
                    !gather && *in_place ? NULL : x->recvbuf, out * dsize);
    *in_place = 0; /* the root's block stays where it is: no op touches it (exchange.c) */
    return st;
  }
  if (st != ZCOLL_OK) return st;
  return check_bufs(fn, *in_place ? NULL : x->sendbuf, in * dsize, x->recvbuf, out * dsize);
}

/* A v-form's schedule, of its own (counts differ per call). */
static zcoll_status_t xchg_sched(zcoll_comm_t *comm, int kind, int algo, int in_place, int root,
                                 const struct zcoll__layout *l, struct zcoll__plan *pl) {
  struct zcoll__sched *s = malloc(sizeof(*s));
  if (!s) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for a schedule");
  zcoll__sched_init(s, comm->rank, comm->size, 0, in_place);
  s->root = root;
  s->lay = l;
  zcoll__kind_build(kind, algo, s, &comm->plan.algo_params);
  s->lay = NULL;
  zcoll_status_t st = zcoll__sched_finish(s);
  if (st != ZCOLL_OK) {
    zcoll__sched_free(s);
    free(s);
    return st;
  }
  pl->owned = s;
  pl->s = s;
  return ZCOLL_OK;
}

zcoll_status_t zcoll__xchg_plan(zcoll_comm_t *comm, const struct zcoll__xargs *x,
                                struct zcoll__plan *pl) {
  const char *fn = kind_name(x->kind);
  memset(pl, 0, sizeof(*pl));
  if ((unsigned)x->dtype >= ZCOLL_DTYPE_COUNT)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: unknown dtype %d", fn, (int)x->dtype);
  int has_root = rooted(x->kind);
  if (has_root && (x->root < 0 || x->root >= comm->size))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: root %d is not a rank (0..%d)", fn, x->root,
                       comm->size - 1);
  /* Every rank decides this alike (size, host layout), so all refuse together: none waits. */
  if (x->kind != ZCOLL_COLL_ALLGATHERV && !zcoll__wires_all_peers(comm))
    return zcoll__fail(ZCOLL_ERR_UNSUPPORTED,
                       "%s: %d ranks across hosts: this communicator has channels only to its "
                       "algorithms' peers (every peer up to %d ranks, or on one host); channels "
                       "made on first use are not there yet",
                       fn, comm->size, ZCOLL_ALL_PEERS_MAX);
  int pair = vform(x->kind);
  int in_place = 0, built = 0, root = has_root ? x->root : -1;
  uint64_t desc_count = x->count;
  int algo = zcoll__xchg_algo(comm, x, NULL, 0);
  zcoll_status_t st;
  if (!pair) {
    if ((st = uniform_checks(comm, x, fn, &in_place)) != ZCOLL_OK) return st;
    st = zcoll__sched_get(comm, x->kind, algo, x->count, in_place, root, pl, &built);
  } else {
    size_t p = (size_t)comm->size;
    size_t *a = malloc(4 * p * sizeof(*a));
    if (!a) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for %s's layout", fn);
    struct zcoll__layout l = {a, a + p, a + 2 * p, a + 3 * p};
    st = v_layout(comm, x, fn, &l, &in_place, &desc_count);
    if (st == ZCOLL_OK) st = xchg_sched(comm, x->kind, algo, in_place, root, &l, pl);
    free(a);
    built = 1;
  }
  if (st != ZCOLL_OK) return st;
  if (built && zcoll__log_level >= ZCOLL_LOG_INFO) {
    char why[200];
    zcoll__xchg_algo(comm, x, why, sizeof(why));
    zcoll_log_info("%s of %s on %d ranks: %s (%s)", fn, zcoll_dtype_name(x->dtype), comm->size,
                   zcoll__kind_algo_name(x->kind, algo), why);
  }
  pl->desc = (struct zcoll__coll_desc){.kind = (uint8_t)x->kind,
                                       .dtype = (uint8_t)x->dtype,
                                       .algo = (uint8_t)algo,
                                       .root = root,
                                       .count = desc_count};
  int keep_in = x->sendbuf != ZCOLL_IN_PLACE, keep_out = x->recvbuf != ZCOLL_IN_PLACE;
  pl->src = keep_in ? x->sendbuf : x->recvbuf;
  pl->dst = keep_out ? x->recvbuf : NULL;
  return ZCOLL_OK;
}

int zcoll__xchg_algo(const zcoll_comm_t *comm, const struct zcoll__xargs *x, char *why,
                     size_t len) {
  if ((unsigned)x->dtype < ZCOLL_DTYPE_COUNT &&
      (x->kind == ZCOLL_COLL_GATHER || x->kind == ZCOLL_COLL_SCATTER))
    return zcoll__select_rooted(comm->size, x->count * zcoll__dsize(x->dtype), why, len);
  if ((unsigned)x->dtype < ZCOLL_DTYPE_COUNT && x->kind == ZCOLL_COLL_ALLTOALL)
    return zcoll__select_alltoall(comm->size, x->count * zcoll__dsize(x->dtype),
                                  x->sendbuf == ZCOLL_IN_PLACE, why, len);
  if (why) snprintf(why, len, "the only %s algorithm", kind_name(x->kind));
  return 0;
}

int zcoll__xchg_kind_named(const char *coll) {
  static const int kinds[] = {ZCOLL_COLL_ALLTOALL, ZCOLL_COLL_ALLTOALLV, ZCOLL_COLL_ALLGATHERV,
                              ZCOLL_COLL_GATHER,   ZCOLL_COLL_GATHERV,   ZCOLL_COLL_SCATTER,
                              ZCOLL_COLL_SCATTERV};
  for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
    if (!strcmp(coll, kind_name(kinds[i]))) return kinds[i];
  return 0;
}
