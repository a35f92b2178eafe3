/* transport.c -- the table of built-in transports and the choice among them per pair. */
#include "transport.h"

#include <stdio.h>
#include <string.h>

#include "config.h"
#include "log.h"

/* In order of preference for ZCOLL_TRANSPORT=auto. Shared memory first between ranks on
 * one host: a copy through a mapping beats a NIC's loopback and UCX's rendezvous (as
 * NCCL prefers its P2P/SHM paths within a node). Between hosts verbs where both ends
 * have an active RDMA device, else UCX. loopback is never chosen automatically: it only
 * works when every rank is a thread of one process. Adding a transport is a line here
 * and its folder. */
const struct zcoll__tl_entry zcoll__transports[] = {
    {"shm", &zcoll__tl_shm, NULL, ZCOLL_TLE_AUTO | ZCOLL_TLE_ONE_HOST,
     "shared memory between ranks on one host (and PID namespace)"},
#ifdef ZCOLL_HAVE_VERBS
    {"verbs", &zcoll__tl_verbs, NULL, ZCOLL_TLE_AUTO,
     "RDMA WRITE with immediate over InfiniBand or RoCE (rdma-core)"},
#else
    {"verbs", NULL,
     "this build has no verbs transport (libibverbs and librdmacm were not found when it "
     "was configured)",
     ZCOLL_TLE_AUTO, "RDMA WRITE with immediate over InfiniBand or RoCE (rdma-core)"},
#endif
    {"ucx", &zcoll__tl_ucx, NULL, ZCOLL_TLE_AUTO, "UCX's put with a notification (any network)"},
    {"loopback", &zcoll__tl_loopback, NULL, 0, "ranks are threads of one process"},
};
const int zcoll__ntransports = sizeof(zcoll__transports) / sizeof(zcoll__transports[0]);
_Static_assert(sizeof(zcoll__transports) / sizeof(zcoll__transports[0]) <= ZCOLL_TL_MAX,
               "a transport mask has a bit per transport");

int zcoll__transport_find(const char *name) {
  for (int i = 0; i < zcoll__ntransports; i++)
    if (!strcmp(zcoll__transports[i].name, name)) return i;
  return -1;
}

unsigned zcoll__transport_probe(const zcoll_config_t *cfg, unsigned with, char *why,
                                size_t why_len) {
  unsigned mask = 0;
  size_t off = why_len ? strlen(why) : 0;
  for (int i = 0; i < zcoll__ntransports; i++) {
    const struct zcoll__tl_entry *t = &zcoll__transports[i];
    if (cfg->transport == ZCOLL_TL_AUTO ? !(t->flags & ZCOLL_TLE_AUTO) : cfg->transport != i)
      continue;
    if (with && (t->flags & with) != with) continue;
    char this_why[300] = "";
    zcoll_status_t st = ZCOLL_ERR_UNSUPPORTED;
    if (!t->ops) {
      snprintf(this_why, sizeof(this_why), "%s", t->missing);
    } else {
      /* A probe's refusal is an answer, not an error: keep it quiet unless forced. */
      zcoll__log_mute(cfg->transport == ZCOLL_TL_AUTO && zcoll__log_level < ZCOLL_LOG_DEBUG);
      st = t->ops->probe(cfg, this_why, sizeof(this_why));
      zcoll__log_mute(0);
    }
    if (st == ZCOLL_OK) {
      mask |= 1u << i;
    } else if (off < why_len) {
      off += (size_t)snprintf(why + off, why_len - off, "%s%s: %s", off ? "; " : "", t->name,
                              this_why);
      zcoll_log_debug("transport %s cannot run here: %s", t->name, this_why);
    }
  }
  return mask;
}

int zcoll__transport_pick(const zcoll_config_t *cfg, int same_host, unsigned a, unsigned b) {
  for (int i = 0; i < zcoll__ntransports; i++) {
    if (!((a & b) >> i & 1u)) continue;
    if ((zcoll__transports[i].flags & ZCOLL_TLE_ONE_HOST) && !same_host) continue;
    if (cfg->transport != ZCOLL_TL_AUTO && cfg->transport != i) continue;
    return i;
  }
  return -1;
}

int zcoll_transport_names(const char **names, int *built, int max) {
  for (int i = 0; i < zcoll__ntransports && i < max; i++) {
    if (names) names[i] = zcoll__transports[i].name;
    if (built) built[i] = zcoll__transports[i].ops != NULL;
  }
  return zcoll__ntransports;
}
