/*
 * hier.c -- hierarchical allreduce for jobs with several ranks per host: reduce inside
 * each host, allreduce between hosts, spread inside each host again, so that only one
 * share of the vector per rank crosses the network instead of a flat ring's 2(p-1)/p of
 * it going between hosts on most of its links.
 *
 * With K the fewest ranks any host has, the vector is cut into K slices and local rank j
 * (j < K) of every host owns slice j:
 *   1. inside the host, every rank sends slice j to its owner, which reduces them
 *      (a direct reduce-scatter: one step, each slice's pieces streamed as they come);
 *   2. the owners of slice j -- one per host, so every host's NIC carries one K-th --
 *      allreduce it around a ring of the hosts (reduce-scatter + allgather, as ring.c);
 *   3. inside the host, each owner sends its finished slice to every other rank.
 * Ranks past K on a host with more (uneven hosts) own nothing: they send in phase 1 and
 * receive in phase 3. Every element is finished by one rank and copied from there, so
 * all ranks get bit-identical results. Any operator that commutes (non-commutative ones
 * run on chain). On one host (or host_of NULL) it is the ring: phase 1 and 3 alone would
 * connect every pair of the host's ranks for nothing a ring does not do.
 *
 * Its cost: every rank of a host is a peer of every other (k - 1 channels, each with its
 * receive slots), which at 64 ranks per host is 63 channels; rings inside the host
 * (reduce-scatter, allgather) would keep it to 4, for uneven hosts at the price of a
 * slice mapping this version does not have.
 */
#include <stdlib.h>

#include "algorithms.h"

/* Where rank r's host is, and the ranks of that host in order. */
struct hier_view {
  int host, nhosts, j, k, K; /* r's host, its local rank j of k, the fewest per host */
};

static int host_of(const struct zcoll__algo_params *p, int r) {
  return p->host_of ? p->host_of[r] : 0;
}

static struct hier_view view_of(int rank, int size, const struct zcoll__algo_params *p) {
  struct hier_view v = {host_of(p, rank), p->host_of ? p->nhosts : 1, 0, 0, size};
  int counts[64], *cnt = counts, big = v.nhosts > 64;
  if (big && !(cnt = calloc((size_t)v.nhosts, sizeof(int)))) big = 0, cnt = NULL;
  if (cnt && !big)
    for (int h = 0; h < v.nhosts; h++) cnt[h] = 0;
  for (int r = 0; r < size; r++) {
    int h = host_of(p, r);
    if (h == v.host) {
      if (r < rank) v.j++;
      v.k++;
    }
    if (cnt) cnt[h]++;
  }
  if (cnt)
    for (int h = 0; h < v.nhosts; h++)
      if (cnt[h] < v.K) v.K = cnt[h];
  if (big) free(cnt);
  if (!cnt) v.K = 1; /* no memory to count: one slice is always valid */
  return v;
}

/* Local rank j of host h (-1 if it has fewer). */
static int member(int size, const struct zcoll__algo_params *p, int h, int j) {
  for (int r = 0; r < size; r++)
    if (host_of(p, r) == h && j-- == 0) return r;
  return -1;
}

static int mod(int a, int n) { return ((a % n) + n) % n; }

static void hier_build(struct zcoll__sched *s, const struct zcoll__algo_params *params) {
  int r = s->rank, p = s->size;
  if (p == 1) {
    zcoll__sched_copy(s, 0, s->count);
    return;
  }
  struct hier_view v = view_of(r, p, params);
  if (v.nhosts <= 1) { /* one host: nothing to save, and no channel to every rank */
    zcoll__algo_ring.build(s, params);
    return;
  }
  size_t off, len, boff, blen;
  /* The ring of hosts is the critical path: a forward that waits behind a round of the
   * host's own copies delays every host after it (perf/sim: 8 MiB at 1024 hosts of 8, 5x). */
  if (v.j < v.K && v.nhosts > 1) {
    zcoll__sched_prefer(s, member(p, params, mod(v.host + 1, v.nhosts), v.j));
    zcoll__sched_prefer(s, member(p, params, mod(v.host - 1, v.nhosts), v.j));
  }
  /* 1. reduce each slice at its owner */
  for (int sl = 0; sl < v.K; sl++) {
    if (sl == v.j) continue;
    zcoll__block(s->count, v.K, sl, &off, &len);
    zcoll__sched_send(s, member(p, params, v.host, sl), ZCOLL_BUF_SRC, off, len);
  }
  int owner = v.j < v.K, acc = ZCOLL_BUF_SRC;
  zcoll__block(s->count, v.K, v.j < v.K ? v.j : 0, &off, &len);
  if (owner) {
    for (int m = 0, seen = 0; m < v.k; m++) {
      if (m == v.j) continue;
      int last = ++seen == v.k - 1;
      zcoll__sched_recv_reduce(s, member(p, params, v.host, m), acc, off, len,
                               last && v.nhosts == 1);
      acc = ZCOLL_BUF_DST;
    }
  }
  /* 2. the slice's owners, one per host, allreduce it around a ring of the hosts */
  if (owner && v.nhosts > 1) {
    int H = v.nhosts, t = v.host;
    int next = member(p, params, mod(t + 1, H), v.j), prev = member(p, params, mod(t - 1, H), v.j);
    for (int step = 0; step < H - 1; step++) {
      zcoll__block(len, H, mod(t - step, H), &boff, &blen);
      zcoll__sched_send(s, next, step == 0 ? acc : ZCOLL_BUF_DST, off + boff, blen);
      zcoll__block(len, H, mod(t - step - 1, H), &boff, &blen);
      zcoll__sched_recv_reduce(s, prev, acc, off + boff, blen, step == H - 2);
    }
    for (int step = 0; step < H - 1; step++) {
      zcoll__block(len, H, mod(t + 1 - step, H), &boff, &blen);
      zcoll__sched_send(s, next, ZCOLL_BUF_DST, off + boff, blen);
      zcoll__block(len, H, mod(t - step, H), &boff, &blen);
      zcoll__sched_recv_copy(s, prev, off + boff, blen);
    }
  }
  /* 3. every owner hands its finished slice to the rest of its host */
  if (owner)
    for (int m = 0; m < v.k; m++)
      if (m != v.j) zcoll__sched_send(s, member(p, params, v.host, m), ZCOLL_BUF_DST, off, len);
  for (int sl = 0; sl < v.K; sl++) {
    if (sl == v.j) continue;
    zcoll__block(s->count, v.K, sl, &boff, &blen);
    zcoll__sched_recv_copy(s, member(p, params, v.host, sl), boff, blen);
  }
}

static int hier_peers(int rank, int size, const struct zcoll__algo_params *params, int *out,
                      int max) {
  struct hier_view v = view_of(rank, size, params);
  /* Every rank of the host is a peer: a job on one host would connect every pair. */
  if (v.nhosts <= 1) return zcoll__algo_ring.peers(rank, size, params, out, max);
  int n = 0;
  for (int q = 0; q < size && n < max; q++)
    if (q != rank && host_of(params, q) == v.host) out[n++] = q;
  if (v.j < v.K && v.nhosts > 1) {
    int next = member(size, params, mod(v.host + 1, v.nhosts), v.j);
    int prev = member(size, params, mod(v.host - 1, v.nhosts), v.j);
    if (n < max) out[n++] = next;
    if (prev != next && n < max) out[n++] = prev;
  }
  return n;
}

const struct zcoll__algo zcoll__algo_hier = {
    "hier",
    "reduce inside each host, ring allreduce of a slice per local rank between hosts, spread "
    "inside each host; for several ranks per host",
    hier_build, hier_peers};
