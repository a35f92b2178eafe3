/* transport.c -- the table of built-in transports and the choice among them. */
#include "transport.h"

#include <stdio.h>
#include <string.h>

#include "config.h"
#include "log.h"

/* In order of preference for ZCOLL_TRANSPORT=auto. Shared memory first where every
 * rank is on one host: a copy through a mapping beats a NIC's loopback and UCX's
 * rendezvous (as NCCL prefers its P2P/SHM paths within a node). loopback is never
 * chosen automatically: it only works when every rank is a thread of one process. */
static const struct {
  int id;
  const struct zcoll_tl_ops *ops;
  int automatic;
  int one_node; /* needs every rank on this host */
} transports[] = {
    {ZCOLL_TL_SHM, &zcoll__tl_shm, 1, 1},
#ifdef ZCOLL_HAVE_VERBS
    {ZCOLL_TL_VERBS, &zcoll__tl_verbs, 1, 0},
#endif
    {ZCOLL_TL_UCX, &zcoll__tl_ucx, 1, 0},
    {ZCOLL_TL_LOOPBACK, &zcoll__tl_loopback, 0, 0},
};

zcoll_status_t zcoll__transport_select(const zcoll_config_t *cfg, int one_node,
                                       const struct zcoll_tl_ops **out) {
  char why[512] = "";
#ifndef ZCOLL_HAVE_VERBS
  if (cfg->transport == ZCOLL_TL_VERBS)
    return zcoll__fail(ZCOLL_ERR_UNSUPPORTED,
                       "ZCOLL_TRANSPORT=verbs: this build has no verbs transport (libibverbs and "
                       "librdmacm were not found when it was configured)");
#endif
  for (size_t i = 0; i < sizeof(transports) / sizeof(transports[0]); i++) {
    if (cfg->transport == ZCOLL_TL_AUTO ? !transports[i].automatic
                                        : cfg->transport != transports[i].id)
      continue;
    char this_why[300] = "";
    if (transports[i].one_node && !one_node) {
      if (cfg->transport != ZCOLL_TL_AUTO)
        return zcoll__fail(ZCOLL_ERR_UNSUPPORTED,
                           "ZCOLL_TRANSPORT=%s needs every rank on one host (and in one PID "
                           "namespace); this job spans several",
                           transports[i].ops->name);
      continue;
    }
    /* A probe's refusal is an answer, not an error: keep it quiet unless nothing works. */
    zcoll__log_mute(cfg->transport == ZCOLL_TL_AUTO && zcoll__log_level < ZCOLL_LOG_DEBUG);
    zcoll_status_t st = transports[i].ops->probe(cfg, this_why, sizeof(this_why));
    zcoll__log_mute(0);
    if (st == ZCOLL_OK) {
      zcoll_log_info("transport %s selected", transports[i].ops->name);
      *out = transports[i].ops;
      return ZCOLL_OK;
    }
    size_t off = strlen(why);
    snprintf(why + off, sizeof(why) - off, "%s%s: %s", off ? "; " : "", transports[i].ops->name,
             this_why);
  }
  if (cfg->transport != ZCOLL_TL_AUTO) return zcoll__fail(ZCOLL_ERR_UNSUPPORTED, "%s", why);
  return zcoll__fail(ZCOLL_ERR_UNSUPPORTED, "no usable transport (%s)", why[0] ? why : "none built");
}
