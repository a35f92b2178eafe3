/* transports.c -- the table of built-in transports and the choice among them per pair. */
#include "transports.h"

#include <stdio.h>
#include <string.h>

#include "base/config.h"
#include "base/config_fields.h"
#include "base/log.h"
#include "transports/verbs/config.h"

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
     "RDMA WRITE with immediate over InfiniBand or RoCE (rdma-core)", zcoll__verbs_config,
     ZCOLL_VERBS_NCONFIG},
#else
    {"verbs", NULL,
     "this build has no verbs transport (libibverbs was not found when it was "
     "configured)",
     ZCOLL_TLE_AUTO, "RDMA WRITE with immediate over InfiniBand or RoCE (rdma-core)",
     zcoll__verbs_config, ZCOLL_VERBS_NCONFIG},
#endif
    {"ucx", &zcoll__tl_ucx, NULL, ZCOLL_TLE_AUTO, "UCX's put with a notification (any network)"},
    {"loopback", &zcoll__tl_loopback, NULL, 0, "ranks are threads of one process"},
};
const int zcoll__ntransports = sizeof(zcoll__transports) / sizeof(zcoll__transports[0]);
/* Every transport's knobs and base's make the one list of fields (comm/config_api.c). */
_Static_assert(ZCOLL_CONFIG_NJOB + ZCOLL_VERBS_NCONFIG + ZCOLL_CONFIG_NRUN == ZCOLL_CONFIG_NFIELDS,
               "ZCOLL_CONFIG_NFIELDS counts every table's rows");
_Static_assert(sizeof(zcoll__transports) / sizeof(zcoll__transports[0]) <= ZCOLL_TL_MAX,
               "a transport mask has a bit per transport");

int zcoll__transport_find(const char *name) {
  for (int i = 0; i < zcoll__ntransports; i++)
    if (!strcmp(zcoll__transports[i].name, name)) return i;
  return -1;
}

/* ZCOLL_OK if t can run here, else why not. quiet: a refusal is an answer, not an error
 * (auto, or zcoll_info asking): keep it out of the log unless debugging. */
static zcoll_status_t probe_one(const struct zcoll__tl_entry *t, const zcoll_config_t *cfg,
                                int quiet, char *why, size_t why_len) {
  if (!t->ops) {
    snprintf(why, why_len, "%s", t->missing);
    return ZCOLL_ERR_UNSUPPORTED;
  }
  zcoll__log_mute(quiet && zcoll__log_level < ZCOLL_LOG_DEBUG);
  zcoll_status_t st = t->ops->probe(cfg, why, why_len);
  zcoll__log_mute(0);
  return st;
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
    zcoll_status_t st = probe_one(t, cfg, cfg->transport == ZCOLL_TL_AUTO, this_why,
                                  sizeof(this_why));
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

size_t zcoll__transport_chunk(const zcoll_config_t *cfg, unsigned mask) {
  size_t chunk = cfg->chunk_bytes;
  for (int i = 0; !cfg->chunk_bytes && i < zcoll__ntransports; i++)
    if ((mask >> i & 1u) && zcoll__transports[i].ops &&
        zcoll__transports[i].ops->default_chunk_bytes > chunk)
      chunk = zcoll__transports[i].ops->default_chunk_bytes;
  return chunk ? chunk : 256 << 10; /* nothing runs anywhere: the choice will say so */
}

/* The table's entry of that name; records the error (INVALID_ARG) if there is none. */
static const struct zcoll__tl_entry *entry_named(const char *name, const char *caller) {
  int i = name ? zcoll__transport_find(name) : -1;
  if (i < 0) {
    zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s: no transport named '%s'", caller,
                name ? name : "(null)");
    return NULL;
  }
  return &zcoll__transports[i];
}

zcoll_status_t zcoll_transport_usable(const zcoll_config_t *cfg, const char *name, char *why,
                                      size_t why_len) {
  const struct zcoll__tl_entry *t = entry_named(name, "zcoll_transport_usable");
  if (!t) return ZCOLL_ERR_INVALID_ARG;
  if (!cfg || !why || !why_len)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_transport_usable: NULL argument");
  why[0] = '\0';
  zcoll_status_t st = probe_one(t, cfg, 1, why, why_len);
  if (st != ZCOLL_OK && !why[0]) snprintf(why, why_len, "%s", zcoll_strerror(st));
  return st;
}

int zcoll_transport_details(const zcoll_config_t *cfg, const char *name,
                            zcoll_transport_detail_t *out, int max) {
  const struct zcoll__tl_entry *t = entry_named(name, "zcoll_transport_details");
  if (!t || !cfg || (max > 0 && !out)) return -1;
  if (!t->ops || !t->ops->describe) return 0;
  zcoll__log_mute(zcoll__log_level < ZCOLL_LOG_DEBUG);
  int n = t->ops->describe(cfg, out, max < 0 ? 0 : max);
  zcoll__log_mute(0);
  return n;
}

zcoll_status_t zcoll_transport_version(const char *name, char *buf, size_t len) {
  const struct zcoll__tl_entry *t = entry_named(name, "zcoll_transport_version");
  if (!t) return ZCOLL_ERR_INVALID_ARG;
  if (!buf || !len) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_transport_version: no buffer");
  buf[0] = '\0';
  if (!t->ops) {
    snprintf(buf, len, "%s", t->missing);
    return ZCOLL_ERR_UNSUPPORTED;
  }
  if (t->ops->version) t->ops->version(buf, len);
  return ZCOLL_OK;
}
