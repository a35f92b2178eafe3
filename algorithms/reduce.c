/*
 * reduce.c -- a reduce to a root: an allreduce schedule whose result, on every rank but
 * the root, lands in scratch and stays there.
 *
 * Every allreduce algorithm serves, so a reduce has what they have (the chain's rank order
 * for non-commutative ops, the tree's latency, the ring's bandwidth, zero-copy, pipelining);
 * what it costs is the result's way back to the non-roots, up to twice a true reduce's
 * traffic for big vectors (a reduce-scatter and a gather to the root would not move it).
 */
#include "algorithms.h"

void zcoll__reduce_build(struct zcoll__sched *s, const struct zcoll__algo *al,
                         const struct zcoll__algo_params *params) {
  if (s->rank != s->root) {
    s->tmp_count = s->count;
    s->remap_dst = ZCOLL_BUF_TMP;
  }
  al->build(s, params);
  s->remap_dst = 0;
}
