/* diag.c -- what zcoll_info reports about the choices the library makes, computed by the
 * code that makes them: the allreduce's algorithm and pipeline for a would-be job of one
 * host, and the reduction kernels. The transports' own diagnostics are in transport.c. */
#include <stdio.h>
#include <string.h>

#include "algorithms/algorithms.h"
#include "algorithms/select.h"
#include "base/config.h"
#include "base/log.h"
#include "core/onehost.h"
#include "transports.h"
#include "kernels/reduce.h"
#include "kernels/reduce_isa.h"
#include "tl/transport.h"

/* The schedule's algorithm and the pipeline; *mask: the transports such a job would run. */
static zcoll_status_t explain_sched(const zcoll_config_t *cfg, int ranks, size_t bytes,
                                    zcoll_allreduce_plan_t *plan, unsigned *mask_out) {
  if (!cfg || !plan)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_allreduce_explain: NULL argument");
  if (ranks < 1)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_allreduce_explain: %d ranks", ranks);
  struct zcoll__selector sel;
  zcoll_status_t st = zcoll__selector_init(&sel, cfg->tuning_file);
  if (st != ZCOLL_OK) return st;
  /* As comm.c sets it up, for ranks all on this host: hier never replaces anything. */
  const struct zcoll__choice c = {&sel,
                                  ranks,
                                  zcoll__algo_find(cfg->algo),
                                  0,
                                  1,
                                  zcoll__algo_find("ring"),
                                  zcoll__algo_find("rhd"),
                                  zcoll__algo_find("hier")};
  zcoll_allreduce_plan_t p = {NULL, 0, cfg->pipeline_depth, ""};
  p.algorithm = zcoll__algos[zcoll__choose(&c, bytes, p.reason, sizeof(p.reason))]->name;
  zcoll__selector_free(&sel);
  /* The transports such a job would run, as comm_hosts.c finds them: those of one host
   * where every rank has one, else the network's. */
  char why[512] = "";
  unsigned mask = zcoll__transport_probe(cfg, ZCOLL_TLE_ONE_HOST, why, sizeof(why));
  if (!mask) mask = zcoll__transport_probe(cfg, 0, why, sizeof(why));
  p.chunk_bytes = zcoll__transport_chunk(cfg, mask);
  *plan = p;
  *mask_out = mask;
  return ZCOLL_OK;
}

zcoll_status_t zcoll_allreduce_explain(const zcoll_config_t *cfg, int ranks, size_t bytes,
                                       zcoll_allreduce_plan_t *plan) {
  unsigned mask = 0;
  zcoll_status_t st = explain_sched(cfg, ranks, bytes, plan, &mask);
  if (st != ZCOLL_OK) return st;
  /* A blocking call of a small vector, every rank on this host over a transport that maps
   * the peers' memory: the mailboxes (core/onehost.h; comm_setup.c decides alike). */
  int k = zcoll__transport_pick(cfg, 1, mask, mask);
  if (bytes && bytes <= ZCOLL_ONEHOST_MAX_BYTES && ranks >= 2 && ranks <= ZCOLL_ONEHOST_MAX_RANKS &&
      zcoll__algo_find(cfg->algo) < 0 && k >= 0 && zcoll__transports[k].ops &&
      zcoll__transports[k].ops->rkey_ptr) {
    const char *sched = plan->algorithm;
    plan->algorithm = "onehost";
    snprintf(plan->reason, sizeof(plan->reason),
             "every rank on one host, at most %d bytes: each reads the others' vectors from their "
             "mailboxes (blocking calls; a request runs %s)",
             ZCOLL_ONEHOST_MAX_BYTES, sched);
  }
  return ZCOLL_OK;
}

/* The rest of MPI's set (lib/coll/xchg.c decides alike): bytes are one block, out of place.
 * 0, or -1 if coll is none of them. */
static int explain_xchg(const char *coll, int ranks, size_t bytes, zcoll_allreduce_plan_t *plan) {
  static const char *const vforms[] = {"alltoallv", "allgatherv", "gatherv", "scatterv"};
  if (!strcmp(coll, "alltoall")) {
    int a = zcoll__select_alltoall(ranks, bytes, 0, plan->reason, sizeof(plan->reason));
    plan->algorithm = zcoll__a2a_algos[a]->name;
    return 0;
  }
  int g = !strcmp(coll, "gather");
  if (g || !strcmp(coll, "scatter")) {
    int a = zcoll__select_rooted(ranks, bytes, plan->reason, sizeof(plan->reason));
    plan->algorithm = g ? zcoll__gather_algos[a]->name : zcoll__scatter_algos[a]->name;
    return 0;
  }
  const struct zcoll__algo *const *lists[] = {zcoll__a2av_algos, zcoll__agv_algos,
                                              zcoll__gatherv_algos, zcoll__scatterv_algos};
  for (int i = 0; i < 4; i++)
    if (!strcmp(coll, vforms[i])) {
      plan->algorithm = lists[i][0]->name;
      snprintf(plan->reason, sizeof(plan->reason), "always: %s", lists[i][0]->description);
      return 0;
    }
  return -1;
}

zcoll_status_t zcoll_collective_explain(const zcoll_config_t *cfg, const char *coll, int ranks,
                                        size_t bytes, zcoll_allreduce_plan_t *plan) {
  if (!coll || !plan)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_collective_explain: NULL argument");
  if (!cfg) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_collective_explain: NULL argument");
  if (ranks < 1)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_collective_explain: %d ranks", ranks);
  zcoll_allreduce_plan_t x = {NULL, 0, cfg->pipeline_depth, ""};
  if (explain_xchg(coll, ranks, bytes, &x) == 0) { /* and the pipeline, as for the others */
    zcoll_status_t st = explain_sched(cfg, ranks, bytes, plan, &(unsigned){0});
    if (st != ZCOLL_OK) return st;
    plan->algorithm = x.algorithm;
    memcpy(plan->reason, x.reason, sizeof(plan->reason));
    return ZCOLL_OK;
  }
  int ag = !strcmp(coll, "allgather"), rs = !strcmp(coll, "reduce_scatter");
  int bc = !strcmp(coll, "broadcast"), ba = !strcmp(coll, "barrier");
  if (!ag && !rs && !bc && !ba && strcmp(coll, "allreduce") != 0 && strcmp(coll, "reduce") != 0)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "zcoll_collective_explain: unknown collective '%s' (allreduce, broadcast, "
                       "reduce, allgather, reduce_scatter, barrier, alltoall, alltoallv, "
                       "allgatherv, gather, gatherv, scatter, scatterv)",
                       coll);
  if (!strcmp(coll, "allreduce")) return zcoll_allreduce_explain(cfg, ranks, bytes, plan);
  /* The pipeline, and the allreduce's schedule, which a reduce chooses by too. */
  unsigned mask;
  zcoll_status_t st = explain_sched(cfg, ranks, bytes, plan, &mask);
  if (st != ZCOLL_OK) return st;
  if (!strcmp(coll, "reduce")) { /* as allgather_reduce.c's reduce_algo */
    int tree = zcoll__reduce_takes_tree(plan->algorithm);
    const char *as = tree ? "the tree toward the root, where the allreduce's choice is latency-"
                            "bound: "
                          : "the allreduce's choice: ";
    if (tree) plan->algorithm = zcoll__reduce_tree.name;
    size_t alen = strlen(as), keep = sizeof(plan->reason) - alen - 1;
    memmove(plan->reason + alen, plan->reason, keep);
    plan->reason[sizeof(plan->reason) - 1] = '\0';
    memcpy(plan->reason, as, alen);
  } else if (ag || rs) {
    int a = zcoll__select_gather(rs, ranks, bytes, plan->reason, sizeof(plan->reason));
    plan->algorithm = rs ? zcoll__rs_algos[a]->name : zcoll__ag_algos[a]->name;
  } else if (ba) {
    plan->algorithm = "butterfly";
    snprintf(plan->reason, sizeof(plan->reason),
             "always: one byte, ceil(log2 p) rounds of one message");
  } else if (cfg->bcast_algo[0] && strcmp(cfg->bcast_algo, "auto") != 0) {
    plan->algorithm = zcoll__bcast_algos[zcoll__bcast_algo_find(cfg->bcast_algo)]->name;
    snprintf(plan->reason, sizeof(plan->reason), "forced by ZCOLL_BCAST_ALGO");
  } else {
    struct zcoll__selector sel;
    if ((st = zcoll__selector_init(&sel, cfg->tuning_file)) != ZCOLL_OK) return st;
    int a = zcoll__select_bcast(&sel, ranks, bytes, plan->reason, sizeof(plan->reason));
    plan->algorithm = zcoll__bcast_algos[a]->name;
    zcoll__selector_free(&sel);
  }
  return ZCOLL_OK;
}

void zcoll_build_info(zcoll_build_info_t *info) {
  if (!info) return;
  zcoll__reduce_isas_built(info->kernels_built, sizeof(info->kernels_built));
  snprintf(info->kernel, sizeof(info->kernel), "%s", zcoll__reduce_isa());
}
