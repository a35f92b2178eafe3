/* iface.c -- UCX transport: context and worker lifecycle, and the ops table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/fsize.h"
#include "base/log.h"
#include "base/node.h"
#include "base/clock.h"
#include "base/config.h"
#include "ucx.h"

static zcoll_status_t ucx_probe(const zcoll_config_t *cfg, char *why, size_t why_len) {
  (void)cfg;
  if (zcoll__ucx_load(why, why_len) != ZCOLL_OK) return ZCOLL_ERR_UNSUPPORTED;
  ucp_config_t *uc;
  ucs_status_t s = zcoll__ucp.config_read(NULL, NULL, &uc);
  if (s != UCS_OK) {
    snprintf(why, why_len, "ucp_config_read: %s", zcoll__ucp.status_string(s));
    return ZCOLL_ERR_UNSUPPORTED;
  }
  zcoll__ucp.config_release(uc);
  return ZCOLL_OK;
}

/* One memory domain's transports and devices, as entries "tl/dev". */
static int describe_md(uct_component_h comp, const char *md_name, zcoll_transport_detail_t *out,
                       int max, int n) {
  static const char *const types[] = {"network", "shared memory", "accelerator", "loopback"};
  uct_md_config_t *mc;
  uct_md_h md;
  uct_tl_resource_desc_t *res = NULL;
  unsigned nres = 0;
  if (zcoll__uct.md_config_read(comp, NULL, NULL, &mc) != UCS_OK) return n;
  ucs_status_t s = zcoll__uct.md_open(comp, md_name, mc, &md);
  zcoll__uct.config_release(mc);
  if (s != UCS_OK) return n;
  if (zcoll__uct.md_query_tl_resources(md, &res, &nres) == UCS_OK) {
    for (unsigned i = 0; i < nres; i++, n++) {
      if (n >= max) continue;
      snprintf(out[n].what, sizeof(out[n].what), "%s/%s", res[i].tl_name, res[i].dev_name);
      out[n].ok = 1;
      snprintf(out[n].detail, sizeof(out[n].detail), "%s, memory domain %s",
               (unsigned)res[i].dev_type < sizeof(types) / sizeof(types[0]) ? types[res[i].dev_type]
                                                                            : "device",
               md_name);
    }
    zcoll__uct.release_tl_resource_list(res);
  }
  zcoll__uct.md_close(md);
  return n;
}

/* UCX's transports and devices (ucx_info -d's list): what UCP may choose among, subject to
 * UCX_TLS and UCX_NET_DEVICES, which UCX reads itself. */
static int ucx_describe(const zcoll_config_t *cfg, zcoll_transport_detail_t *out, int max) {
  (void)cfg;
  char why[256] = "";
  uct_component_h *comps;
  unsigned ncomps;
  if (zcoll__uct_load(why, sizeof(why)) != ZCOLL_OK ||
      zcoll__uct.query_components(&comps, &ncomps) != UCS_OK) {
    if (max > 0) {
      snprintf(out[0].what, sizeof(out[0].what), "uct");
      out[0].ok = 0;
      snprintf(out[0].detail, sizeof(out[0].detail), "%s",
               why[0] ? why : "uct_query_components failed");
    }
    return 1;
  }
  int n = 0;
  for (unsigned c = 0; c < ncomps; c++) {
    uct_component_attr_t a = {.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                                            UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT};
    if (zcoll__uct.component_query(comps[c], &a) != UCS_OK || !a.md_resource_count) continue;
    uct_md_resource_desc_t *mds = calloc(a.md_resource_count, sizeof(*mds));
    if (!mds) break;
    a.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    a.md_resources = mds;
    if (zcoll__uct.component_query(comps[c], &a) == UCS_OK)
      for (unsigned m = 0; m < a.md_resource_count; m++)
        n = describe_md(comps[c], mds[m].md_name, out, max, n);
    free(mds);
  }
  zcoll__uct.release_component_list(comps);
  return n;
}

/* ---- RLIMIT_FSIZE: UCX's shared-memory files ----------------------------------------- */

/* Whether UCX_TLS lets UCP open the posix transport ("^posix,..." or a list without it
 * keeps it off; sm, shm and mm are UCX's names for its group). */
static int tls_allow_posix(void) {
  const char *t = getenv("UCX_TLS");
  if (!t || !*t) return 1;
  int negate = t[0] == '^', named = 0;
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", t + negate);
  char *save = NULL;
  for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
    if (*w == '\\') w++; /* "\posix": that one, not its aliases */
    named |= !strcasecmp(w, "posix") || !strcasecmp(w, "sm") || !strcasecmp(w, "shm") ||
             !strcasecmp(w, "mm") || (!negate && !strcasecmp(w, "all"));
  }
  return negate ? !named : named;
}

/* One of UCX's configuration values as a number ("8256", "16K", "1.5"); dflt if absent
 * or not a plain number ("inf", "auto"). Its name has carried a "MM_" prefix. */
static double ucx_value(uct_iface_config_t *ic, const char *name, double dflt) {
  char v[64], full[64];
  snprintf(full, sizeof(full), "MM_%s", name);
  if (zcoll__uct.config_get(ic, full, v, sizeof(v)) != UCS_OK &&
      zcoll__uct.config_get(ic, name, v, sizeof(v)) != UCS_OK)
    return dflt;
  char *end;
  double x = strtod(v, &end);
  if (end == v || !(x >= 0)) return dflt;
  switch (*end) {
  case 'k':
  case 'K': x *= 1024.0; break;
  case 'm':
  case 'M': x *= 1048576.0; break;
  case 'g':
  case 'G': x *= 1073741824.0; break;
  default: break;
  }
  return x;
}

/* The largest file UCX's posix transport (shared memory under /dev/shm) makes, 0 if it
 * makes none: its receive FIFO, and the chunks of its receive-buffer pool, RX_BUFS_GROW
 * buffers of SEG_SIZE bytes and their headers each (UCX 1.13.1 with its defaults: files
 * of 8447 and 4292720 bytes, which it fills with write(); measured under strace). From
 * UCX's own configuration (UCX_POSIX_*, its config file), with room for the headers;
 * UCX's defaults where it cannot be read. */
static uint64_t posix_file_bytes(void) {
  if (!tls_allow_posix()) return 0;
  double seg = 8256, grow = 512, fifo = 256, elem = 128, factor = 1, chunk_max = 128 << 20;
  uct_component_h *comps;
  unsigned ncomps;
  int found = 0;
  if (zcoll__uct_load(NULL, 0) == ZCOLL_OK &&
      zcoll__uct.query_components(&comps, &ncomps) == UCS_OK) {
    for (unsigned c = 0; c < ncomps && !found; c++) {
      uct_component_attr_t a = {.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME};
      if (zcoll__uct.component_query(comps[c], &a) != UCS_OK || strcmp(a.name, "posix") != 0)
        continue;
      found = 1;
      uct_md_config_t *mc;
      uct_md_h md;
      uct_iface_config_t *ic;
      if (zcoll__uct.md_config_read(comps[c], NULL, NULL, &mc) != UCS_OK) break;
      ucs_status_t s = zcoll__uct.md_open(comps[c], "posix", mc, &md);
      zcoll__uct.config_release(mc);
      if (s != UCS_OK) break;
      if (zcoll__uct.md_iface_config_read(md, "posix", NULL, NULL, &ic) == UCS_OK) {
        seg = ucx_value(ic, "SEG_SIZE", seg);
        grow = ucx_value(ic, "RX_BUFS_GROW", grow);
        fifo = ucx_value(ic, "FIFO_SIZE", fifo);
        elem = ucx_value(ic, "FIFO_ELEM_SIZE", elem);
        factor = ucx_value(ic, "RX_GROW_FACTOR", factor);
        chunk_max = ucx_value(ic, "RX_MAX_CHUNK_SIZE", chunk_max);
        zcoll__uct.config_release(ic);
      }
      zcoll__uct.md_close(md);
    }
    zcoll__uct.release_component_list(comps);
    if (!found) return 0; /* this UCX has no posix transport */
  }
  double rx = grow * (seg + 1024) + 65536, need = fifo * elem + 65536;
  if (factor > 1 && chunk_max > rx) rx = chunk_max; /* later chunks grow up to that */
  if (rx > need) need = rx;
  return need >= 1e18 ? (uint64_t)1e18 : (uint64_t)need;
}

/* UCX writes its shared-memory files when the worker is created: past RLIMIT_FSIZE that
 * write raises SIGXFSZ and the process dies inside UCX. Say so before. */
static zcoll_status_t check_fsize(void) {
  if (zcoll__fsize_limit() == UINT64_MAX) return ZCOLL_OK;
  uint64_t need = posix_file_bytes();
  return need ? zcoll__fsize_check(need,
                                   "UCX (not zcoll itself: its posix shared-memory "
                                   "transport, under /dev/shm)",
                                   "; or keep UCX off it with UCX_TLS=^posix")
              : ZCOLL_OK;
}

static void ucx_close(struct zcoll_tl *tl) {
  if (!tl) return;
  if (tl->worker && !tl->quiesced) {
    /* Healthy: our puts are drained and the peers have met us in the rendezvous, so
     * endpoints can be flushed shut. Failed: forced shut. Either way whatever UCX has not
     * finished by the deadline is cancelled or released: ucp_worker_destroy asserts
     * (SIGABRT) on requests still in flight. (A quiesced instance must not be progressed
     * again: its call has returned, the memory its puts read may be freed already.) */
    int64_t deadline = zcoll__deadline(2.0);
    int stuck = zcoll__ucx_close_eps(tl, tl->failed != ZCOLL_OK, deadline);
    stuck += zcoll__ucx_cancel_all(tl, deadline, 0);
    if (stuck) zcoll_log_debug("ucx: %d operations still in flight at close; released", stuck);
  }
  if (tl->worker) {
    zcoll__ucx_close_eps(tl, 1, 0); /* endpoints a failed open or connect left open */
    zcoll__ucx_release_stuck(tl);
  }
  zcoll__ucx_free_eps(tl);
  if (tl->worker) zcoll__ucp.worker_destroy(tl->worker);
  if (tl->ctx) zcoll__ucp.cleanup(tl->ctx);
  while (tl->all_ops) {
    struct zcoll__ucx_op *op = tl->all_ops;
    tl->all_ops = op->all_next;
    free(op);
  }
  free(tl->regions);
  zcoll__ucx_free_held(tl);
  zcoll__evq_free(&tl->evq);
  free(tl);
}

static zcoll_status_t ucx_open(const struct zcoll_tl_params *p, struct zcoll_tl **out) {
  char why[256];
  if (zcoll__ucx_load(why, sizeof(why)) != ZCOLL_OK)
    return zcoll__fail(ZCOLL_ERR_UNSUPPORTED, "ucx: %s", why);
  zcoll_status_t fst = check_fsize();
  if (fst != ZCOLL_OK) return fst;
  struct zcoll_tl *tl = calloc(1, sizeof(*tl));
  if (!tl) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "ucx: out of memory");
  tl->rank = p->rank;
  tl->size = p->size;
  tl->efd = -1;
  if (!(tl->held = calloc((size_t)p->size, sizeof(*tl->held)))) {
    free(tl);
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "ucx: out of memory");
  }
  zcoll__node_id(tl->node, sizeof(tl->node), p->rank);
  tl->alive = p->alive;
  tl->alive_arg = p->alive_arg;
  tl->timeout = p->cfg ? p->cfg->timeout : 0;
  tl->atomics = p->cfg && p->cfg->atomics;
  ucp_config_t *uc;
  ucs_status_t s = zcoll__ucp.config_read(NULL, NULL, &uc);
  if (s != UCS_OK) goto ucs_fail;
  ucp_params_t cp = {.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                                   UCP_PARAM_FIELD_ESTIMATED_NUM_EPS,
                     /* Wakeup makes UCX's shared memory signal a descriptor on every
                      * message (measured: 4 us -> 21 us per 8-byte allreduce on 2
                      * ranks), so it is only worth it when waiting ranks must sleep. */
                     /* AMO64 only where asked (a partial allreduce's ticket counter,
                      * amo.c): UCX 1.13 may abort the process in its wireup
                      * (wireup_ep.c:241, pending_count) when a peer dies with atomics
                      * lanes configured -- conformance's dead_peer, 2 runs in 6. */
                     .features = UCP_FEATURE_AM | (tl->atomics ? UCP_FEATURE_AMO64 : 0) |
                                 (p->oversubscribed ? UCP_FEATURE_WAKEUP : 0),
                     .mt_workers_shared = 0,
                     .estimated_num_eps = 8};
  s = zcoll__ucp.init_version(UCP_API_MAJOR, UCP_API_MINOR, &cp, uc, &tl->ctx);
  zcoll__ucp.config_release(uc);
  if (s != UCS_OK) goto ucs_fail;
  ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                            .thread_mode = UCS_THREAD_MODE_SINGLE};
  if ((s = zcoll__ucp.worker_create(tl->ctx, &wp, &tl->worker)) != UCS_OK) goto ucs_fail;
  ucp_am_handler_param_t hp = {.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                                             UCP_AM_HANDLER_PARAM_FIELD_CB |
                                             UCP_AM_HANDLER_PARAM_FIELD_ARG,
                               .id = ZCOLL_UCX_AM_ID,
                               .cb = zcoll__ucx_am_handler,
                               .arg = tl};
  if ((s = zcoll__ucp.worker_set_am_recv_handler(tl->worker, &hp)) != UCS_OK) goto ucs_fail;
  if (p->oversubscribed && zcoll__ucp.worker_get_efd(tl->worker, &tl->efd) != UCS_OK) {
    /* Not fatal: the executor yields instead of sleeping. */
    zcoll_log_info("ucx: no wakeup descriptor; waiting ranks will yield instead of sleep");
    tl->efd = -1;
  }
  *out = tl;
  return ZCOLL_OK;
ucs_fail:;
  zcoll_status_t st = zcoll__fail(zcoll__ucx_status(s), "ucx: initialization failed: %s",
                                  zcoll__ucp.status_string(s));
  ucx_close(tl);
  return st;
}

static zcoll_status_t ucx_address(struct zcoll_tl *tl, void *buf, size_t *len) {
  ucp_address_t *a;
  size_t alen;
  ucs_status_t s = zcoll__ucp.worker_get_address(tl->worker, &a, &alen);
  if (s != UCS_OK)
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "ucx: ucp_worker_get_address: %s",
                       zcoll__ucp.status_string(s));
  struct zcoll__ucx_addr_hdr h = {.magic = ZCOLL_UCX_ADDR_MAGIC, .len = alen};
  memcpy(h.node, tl->node, sizeof(h.node));
  zcoll_status_t st = ZCOLL_OK;
  if (alen > *len || *len - alen < sizeof(h))
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG, "ucx: worker address of %zu bytes is too long", alen);
  else {
    memcpy(buf, &h, sizeof(h));
    memcpy((char *)buf + sizeof(h), a, alen);
    *len = sizeof(h) + alen;
  }
  zcoll__ucp.worker_release_address(tl->worker, a);
  return st;
}

/* UCX chooses its devices per endpoint and lane; what it was allowed to choose from is
 * what an operator can change (UCX_NET_DEVICES, UCX_TLS). */
static void ucx_device(struct zcoll_tl *tl, char *buf, size_t len) {
  (void)tl;
  const char *dev = getenv("UCX_NET_DEVICES"), *tls = getenv("UCX_TLS");
  snprintf(buf, len, "%s%s%s", dev && *dev ? dev : "all", tls && *tls ? "/" : "",
           tls && *tls ? tls : "");
}

const struct zcoll_tl_ops zcoll__tl_ucx = {
    .name = "ucx",
    .caps = ZCOLL_TL_CAP_PUT_ANY,
    .default_chunk_bytes = (size_t)256 * 1024,
    .probe = ucx_probe,
    .describe = ucx_describe,
    .version = zcoll__ucx_version,
    .open = ucx_open,
    .close = ucx_close,
    .address = ucx_address,
    .connect = zcoll__ucx_connect,
    .mem_reg = zcoll__ucx_mem_reg,
    .mem_dereg = zcoll__ucx_mem_dereg,
    .rkey_pack = zcoll__ucx_rkey_pack,
    .rkey_unpack = zcoll__ucx_rkey_unpack,
    .rkey_release = zcoll__ucx_rkey_release,
    .put = zcoll__ucx_put,
    .fetch_add = zcoll__ucx_fetch_add,
    .poll = zcoll__ucx_poll,
    .event_fd = zcoll__ucx_event_fd,
    .arm = zcoll__ucx_arm,
    .set_placement = zcoll__ucx_set_placement,
    .quiesce = zcoll__ucx_quiesce,
    .device = ucx_device,
};
