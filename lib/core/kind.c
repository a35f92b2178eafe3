/* kind.c -- the table of collective kinds (kind.h): one row each. */
#include "kind.h"

/* The one-host mailboxes' run (onehost.h) under its name: no schedule, nothing to build. */
static const struct zcoll__algo onehost = {"onehost", "one host's shared mailboxes", NULL, NULL};

/* An allreduce's row, under another kind: the same algorithms, one-host runs included. */
#define ALLREDUCE_ALGOS zcoll__algos, &zcoll__nalgos, ZCOLL_ALGO_ONEHOST, &onehost, NULL

static const struct zcoll__kind kinds[] = {
    {ZCOLL_COLL_ALLREDUCE, "allreduce", NULL, "allreduce(", ZCOLL_KIND_NO_ROOT, 1, ALLREDUCE_ALGOS},
    {ZCOLL_COLL_BROADCAST, "broadcast", NULL, "broadcast(", ZCOLL_KIND_ROOT, 0, zcoll__bcast_algos,
     &zcoll__nbcast_algos, -1, NULL, NULL},
    {ZCOLL_COLL_VEC, "vec_allreduce", NULL, "a vector key's round (", ZCOLL_KIND_KEY_HASH, 1,
     ALLREDUCE_ALGOS},
    {ZCOLL_COLL_AGREE, "agreement", "the agreement that ends a collective with a created op", NULL,
     ZCOLL_KIND_NO_ROOT, 1, ALLREDUCE_ALGOS},
    {ZCOLL_COLL_BARRIER, "barrier", "barrier", NULL, ZCOLL_KIND_NO_ROOT, 0, ALLREDUCE_ALGOS},
    {ZCOLL_COLL_ALLGATHER, "allgather", NULL, "allgather(", ZCOLL_KIND_NO_ROOT, 0, zcoll__ag_algos,
     &zcoll__nag_algos, -1, NULL, NULL},
    {ZCOLL_COLL_REDUCE_SCATTER, "reduce_scatter", NULL, "reduce_scatter(", ZCOLL_KIND_NO_ROOT, 1,
     zcoll__rs_algos, &zcoll__nrs_algos, -1, NULL, NULL},
    /* A reduce runs an allreduce algorithm folded to the root, or the tree toward it. */
    {ZCOLL_COLL_REDUCE, "reduce", NULL, "reduce(", ZCOLL_KIND_ROOT, 1, zcoll__algos, &zcoll__nalgos,
     ZCOLL_REDUCE_TREE, &zcoll__reduce_tree, zcoll__reduce_build},
    {ZCOLL_COLL_PARTIAL, "partial_round", NULL, "a partial allreduce's round (", ZCOLL_KIND_QUORUM,
     1, ALLREDUCE_ALGOS},
};

const struct zcoll__kind *zcoll__kind_of(int id) {
  for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
    if (kinds[i].id == id) return &kinds[i];
  return NULL;
}

const struct zcoll__algo *zcoll__kind_algo(const struct zcoll__kind *k, int algo) {
  if (k->extra && algo == k->extra_id) return k->extra;
  return algo >= 0 && algo < *k->nalgos ? k->algos[algo] : NULL;
}

const char *zcoll__kind_algo_name(int kind, int algo) {
  const struct zcoll__kind *k = zcoll__kind_of(kind);
  const struct zcoll__algo *al = zcoll__kind_algo(k ? k : &kinds[0], algo);
  return al ? al->name : "?";
}

void zcoll__kind_build(int kind, int algo, struct zcoll__sched *s,
                       const struct zcoll__algo_params *p) {
  const struct zcoll__kind *k = zcoll__kind_of(kind);
  const struct zcoll__algo *al = zcoll__kind_algo(k, algo);
  if (k->build)
    k->build(s, al, p);
  else
    al->build(s, p);
}
