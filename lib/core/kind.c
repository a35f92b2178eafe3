/* kind.c -- the table of collective kinds (kind.h): one row each. */
#include "kind.h"

/* The one-host mailboxes' run (onehost.h) under its name: no schedule, nothing to build. */
static const struct zcoll__algo onehost = {"onehost", "one host's shared mailboxes", NULL, NULL};

/* An allreduce's row, under another kind: the same algorithms, one-host runs included. */
#define ALLREDUCE_ALGOS \
  .algos = zcoll__algos, .nalgos = &zcoll__nalgos, .extra_id = ZCOLL_ALGO_ONEHOST, .extra = &onehost

static const struct zcoll__kind kinds[] = {
    {.id = ZCOLL_COLL_ALLREDUCE,
     .name = "allreduce",
     .head = "allreduce(",
     .root = ZCOLL_KIND_NO_ROOT,
     .has_op = 1,
     ALLREDUCE_ALGOS},
    {.id = ZCOLL_COLL_BROADCAST,
     .name = "broadcast",
     .head = "broadcast(",
     .root = ZCOLL_KIND_ROOT,
     .algos = zcoll__bcast_algos,
     .nalgos = &zcoll__nbcast_algos},
    {.id = ZCOLL_COLL_VEC,
     .name = "vec_allreduce",
     .head = "a vector key's round (",
     .root = ZCOLL_KIND_KEY_HASH,
     .has_op = 1,
     ALLREDUCE_ALGOS},
    {.id = ZCOLL_COLL_AGREE,
     .name = "agreement",
     .fixed = "the agreement that ends a collective with a created op",
     .root = ZCOLL_KIND_NO_ROOT,
     .has_op = 1,
     ALLREDUCE_ALGOS},
    {.id = ZCOLL_COLL_BARRIER,
     .name = "barrier",
     .fixed = "barrier",
     .root = ZCOLL_KIND_NO_ROOT,
     ALLREDUCE_ALGOS},
    {.id = ZCOLL_COLL_ALLGATHER,
     .name = "allgather",
     .head = "allgather(",
     .root = ZCOLL_KIND_NO_ROOT,
     .result_spans = 1,
     .algos = zcoll__ag_algos,
     .nalgos = &zcoll__nag_algos},
    {.id = ZCOLL_COLL_REDUCE_SCATTER,
     .name = "reduce_scatter",
     .head = "reduce_scatter(",
     .root = ZCOLL_KIND_NO_ROOT,
     .has_op = 1,
     .algos = zcoll__rs_algos,
     .nalgos = &zcoll__nrs_algos},
    /* A reduce runs an allreduce algorithm folded to the root, or the tree toward it. */
    {.id = ZCOLL_COLL_REDUCE,
     .name = "reduce",
     .head = "reduce(",
     .root = ZCOLL_KIND_ROOT,
     .has_op = 1,
     .algos = zcoll__algos,
     .nalgos = &zcoll__nalgos,
     .extra_id = ZCOLL_REDUCE_TREE,
     .extra = &zcoll__reduce_tree,
     .build = zcoll__reduce_build},
    {.id = ZCOLL_COLL_PARTIAL,
     .name = "partial_round",
     .head = "a partial allreduce's round (",
     .root = ZCOLL_KIND_QUORUM,
     .has_op = 1,
     ALLREDUCE_ALGOS},
    {.id = ZCOLL_COLL_ALLTOALL,
     .name = "alltoall",
     .head = "alltoall(",
     .root = ZCOLL_KIND_NO_ROOT,
     .algos = zcoll__a2a_algos,
     .nalgos = &zcoll__na2a_algos},
    {.id = ZCOLL_COLL_ALLTOALLV,
     .name = "alltoallv",
     .head = "alltoallv(",
     .root = ZCOLL_KIND_NO_ROOT,
     .pair_counts = 1,
     .algos = zcoll__a2av_algos,
     .nalgos = &zcoll__na2av_algos},
    {.id = ZCOLL_COLL_ALLGATHERV,
     .name = "allgatherv",
     .head = "allgatherv(",
     .root = ZCOLL_KIND_NO_ROOT,
     .counts_hashed = 1,
     .algos = zcoll__agv_algos,
     .nalgos = &zcoll__nagv_algos},
    {.id = ZCOLL_COLL_GATHER,
     .name = "gather",
     .head = "gather(",
     .root = ZCOLL_KIND_ROOT,
     .algos = zcoll__gather_algos,
     .nalgos = &zcoll__ngather_algos},
    {.id = ZCOLL_COLL_GATHERV,
     .name = "gatherv",
     .head = "gatherv(",
     .root = ZCOLL_KIND_ROOT,
     .pair_counts = 1,
     .algos = zcoll__gatherv_algos,
     .nalgos = &zcoll__ngatherv_algos},
    {.id = ZCOLL_COLL_SCATTER,
     .name = "scatter",
     .head = "scatter(",
     .root = ZCOLL_KIND_ROOT,
     .algos = zcoll__scatter_algos,
     .nalgos = &zcoll__nscatter_algos},
    {.id = ZCOLL_COLL_SCATTERV,
     .name = "scatterv",
     .head = "scatterv(",
     .root = ZCOLL_KIND_ROOT,
     .pair_counts = 1,
     .algos = zcoll__scatterv_algos,
     .nalgos = &zcoll__nscatterv_algos},
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
