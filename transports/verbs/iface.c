/* iface.c -- verbs transport: device choice, instance lifecycle, the ops table. */
#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "base/config.h"
#include "base/hca.h"
#include "base/log.h"
#include "verbs.h"

struct candidate {
  char name[64];
  uint8_t port, listed;
  struct zcoll__verbs_port pa;
};

/* Active ports that peers can reach (a GID, or a LID), of the devices the list lets in. */
static int list_candidates(const struct zcoll__hca_spec *spec, int want_gid, struct candidate *out,
                           int max, char *names, size_t names_len) {
  int ndev = 0, n = 0, listed = 0;
  struct ibv_device **devs = ibv_get_device_list(&ndev);
  names[0] = '\0';
  for (int i = 0; devs && i < ndev; i++) {
    const char *name = ibv_get_device_name(devs[i]);
    size_t off = strlen(names);
    snprintf(names + off, names_len - off, "%s%s", off ? ", " : "", name);
    struct ibv_context *ctx = ibv_open_device(devs[i]);
    struct ibv_device_attr attr;
    if (!ctx) continue;
    if (ibv_query_device(ctx, &attr) == 0) {
      for (uint8_t p = 1; p <= attr.phys_port_cnt && n < max; p++) {
        struct ibv_port_attr pa;
        if (!zcoll__hca_match(spec, name, p)) continue;
        uint8_t place = (uint8_t)listed++;
        if (ibv_query_port(ctx, p, &pa) || pa.state != IBV_PORT_ACTIVE) continue;
        struct candidate c = {"", p, place, {0}};
        snprintf(c.name, sizeof(c.name), "%s", name);
        char why[128];
        if (zcoll__verbs_port_addr(ctx, name, p, want_gid, &c.pa, why, sizeof(why)) == 0)
          out[n++] = c;
      }
    }
    ibv_close_device(ctx);
  }
  if (devs) ibv_free_device_list(devs);
  return n;
}

/* The list in force: ZCOLL_IB_HCA, else ZCOLL_IB_DEV's one exact name, else every device;
 * *var names the variable for messages. */
static zcoll_status_t hca_spec(const zcoll_config_t *cfg, struct zcoll__hca_spec *spec,
                               const char **var, const char **text) {
  char why[160] = "", dev[80];
  *var = cfg->ib_hca[0] ? "ZCOLL_IB_HCA" : "ZCOLL_IB_DEV";
  *text = cfg->ib_hca[0] ? cfg->ib_hca : cfg->ib_dev;
  snprintf(dev, sizeof(dev), "=%s", cfg->ib_dev);
  if (zcoll__hca_parse(cfg->ib_hca[0]   ? cfg->ib_hca
                       : cfg->ib_dev[0] ? dev
                                        : "",
                       spec, why, sizeof(why)))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "%s=%s: %s", *var, *text, why);
  return ZCOLL_OK;
}

zcoll_status_t zcoll__verbs_pick_rails(const zcoll_config_t *cfg, int rank,
                                       struct zcoll__verbs_rail *rail, int *nrails) {
  char names[512];
  struct zcoll__hca_spec spec;
  const char *var, *text;
  zcoll_status_t st = hca_spec(cfg, &spec, &var, &text);
  if (st != ZCOLL_OK) return st;
  struct candidate c[32];
  int n = list_candidates(&spec, cfg->ib_gid_index, c, 32, names, sizeof(names));
  if (n == 0) {
    char gid[64] = "";
    if (cfg->ib_gid_index >= 0)
      snprintf(gid, sizeof(gid), " at GID index %d (ZCOLL_IB_GID_INDEX)", cfg->ib_gid_index);
    if (text[0])
      return zcoll__fail(ZCOLL_ERR_UNSUPPORTED,
                         "%s=%s: no such RDMA device with an active port and an address%s "
                         "(devices here: %s)",
                         var, text, gid, names[0] ? names : "none");
    return zcoll__fail(ZCOLL_ERR_UNSUPPORTED,
                       "no RDMA device with an active port and an address%s (devices here: %s)",
                       gid, names[0] ? names : "none");
  }
  /* ZCOLL_IB_HCA lists the ports every rank uses, as NCCL_IB_HCA does: each a rail. Without
   * it, spread the ranks of a node over its ports, one each, as MPI libraries do. A process
   * that is no rank yet (zcoll_info -d: rank -1) is shown what the first rank would take. */
  int local = cfg->local_rank >= 0 ? cfg->local_rank : rank;
  if (local < 0) local = 0;
  int all = cfg->ib_hca[0] != '\0';
  *nrails = all ? (n < ZCOLL_VERBS_MAX_RAILS ? n : ZCOLL_VERBS_MAX_RAILS) : 1;
  if (all && n > ZCOLL_VERBS_MAX_RAILS && rank <= 0)
    zcoll_log_warn("verbs: ZCOLL_IB_HCA=%s matches %d active ports; rails are the first %d "
                   "(%s:%u to %s:%u)",
                   cfg->ib_hca, n, ZCOLL_VERBS_MAX_RAILS, c[0].name, c[0].port,
                   c[ZCOLL_VERBS_MAX_RAILS - 1].name, c[ZCOLL_VERBS_MAX_RAILS - 1].port);
  for (int i = 0; i < *nrails; i++) {
    const struct candidate *pick = &c[all ? i : local % n];
    memset(&rail[i], 0, sizeof(rail[i]));
    snprintf(rail[i].dev_name, sizeof(rail[i].dev_name), "%.63s", pick->name);
    rail[i].port = pick->port;
    rail[i].listed = pick->listed;
    rail[i].pa = pick->pa;
  }
  return ZCOLL_OK;
}

/* Gb/s of a port from its lane speed and width (the codes of ibv_port_attr). */
static double port_gbps(uint8_t speed, uint8_t width) {
  static const struct {
    uint8_t code;
    double gbps;
  } lane[] = {{1, 2.5},      {2, 5},         {4, 10},  {8, 10.3125},
              {16, 14.0625}, {32, 25.78125}, {64, 50}, {128, 100}};
  static const struct { uint8_t code, lanes; } wid[] = {{1, 1}, {2, 4}, {4, 8}, {8, 12}, {16, 2}};
  double g = 0;
  int lanes = 0;
  for (size_t i = 0; i < sizeof(lane) / sizeof(lane[0]); i++)
    if (lane[i].code == speed) g = lane[i].gbps;
  for (size_t i = 0; i < sizeof(wid) / sizeof(wid[0]); i++)
    if (wid[i].code == width) lanes = wid[i].lanes;
  return g * lanes;
}

/* As ibv_devinfo spells the states (ibv_port_state_str's are lowercase). */
static const char *port_state(enum ibv_port_state st) {
  switch (st) {
  case IBV_PORT_DOWN: return "DOWN";
  case IBV_PORT_INIT: return "INIT";
  case IBV_PORT_ARMED: return "ARMED";
  case IBV_PORT_ACTIVE: return "ACTIVE";
  case IBV_PORT_ACTIVE_DEFER: return "ACTIVE_DEFER";
  default: return "NOP";
  }
}

/* One entry per port of every device: what ibv_devinfo shows that matters to zcoll, the
 * GID or LID peers would reach it by (port.c), and which port this rank takes. */
static void describe_port(zcoll_transport_detail_t *d, struct ibv_context *ctx, const char *name,
                          uint8_t p, const struct zcoll__verbs_rail *mine, int nmine, int cfg_gid,
                          const char *unlisted) {
  struct ibv_port_attr pa;
  snprintf(d->what, sizeof(d->what), "%s port %u", name, p);
  if (ibv_query_port(ctx, p, &pa)) {
    d->ok = 0;
    snprintf(d->detail, sizeof(d->detail), "ibv_query_port: %s", strerror(errno));
    return;
  }
  struct zcoll__verbs_port addr;
  char where[96], nowhere[96] = ""; /* with why, within the detail's 256 bytes */
  int reachable = zcoll__verbs_port_addr(ctx, name, p, cfg_gid, &addr, nowhere, sizeof(nowhere)) ==
                  0;
  if (reachable)
    zcoll__verbs_port_str(&addr, where, sizeof(where));
  else
    snprintf(where, sizeof(where), "%s", nowhere);
  int active = pa.state == IBV_PORT_ACTIVE;
  d->ok = active && reachable && !unlisted;
  char why[96] = "";
  int rail = -1;
  for (int i = 0; i < nmine; i++)
    if (!strcmp(name, mine[i].dev_name) && p == mine[i].port) rail = i;
  if (rail >= 0 && nmine > 1)
    snprintf(why, sizeof(why), "; zcoll uses this port (rail %d of %d)", rail, nmine);
  else if (rail >= 0)
    snprintf(why, sizeof(why), "; zcoll uses this port");
  else if (!active)
    snprintf(why, sizeof(why), "; not usable: not ACTIVE");
  else if (!reachable)
    snprintf(why, sizeof(why), "; not usable: peers cannot address it");
  else if (unlisted)
    snprintf(why, sizeof(why), "; not used: not in %s", unlisted);
  snprintf(d->detail, sizeof(d->detail), "%s, %s, MTU %d, %.4g Gb/s, %s%s", port_state(pa.state),
           pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet (RoCE)" : "InfiniBand",
           128 << (int)pa.active_mtu, port_gbps(pa.active_speed, pa.active_width), where, why);
}

static int verbs_describe(const zcoll_config_t *cfg, zcoll_transport_detail_t *out, int max) {
  struct zcoll__verbs_rail mine[ZCOLL_VERBS_MAX_RAILS];
  int nmine = 0;
  if (zcoll__verbs_pick_rails(cfg, cfg->rank, mine, &nmine) != ZCOLL_OK) nmine = 0;
  struct zcoll__hca_spec spec;
  const char *var = NULL, *text = "";
  if (hca_spec(cfg, &spec, &var, &text) != ZCOLL_OK) spec.n = 0;
  int ndev = 0, n = 0;
  struct ibv_device **devs = ibv_get_device_list(&ndev);
  if (!devs || ndev == 0) {
    if (max > 0) {
      snprintf(out[0].what, sizeof(out[0].what), "devices");
      out[0].ok = 0;
      if (devs)
        snprintf(out[0].detail, sizeof(out[0].detail),
                 "no RDMA device (no driver loaded? `rdma link` lists the links)");
      else
        snprintf(out[0].detail, sizeof(out[0].detail),
                 "ibv_get_device_list: %s (no RDMA support in this kernel or container)",
                 strerror(errno));
    }
    if (devs) ibv_free_device_list(devs);
    return 1;
  }
  for (int i = 0; i < ndev; i++) {
    const char *name = ibv_get_device_name(devs[i]);
    struct ibv_context *ctx = ibv_open_device(devs[i]);
    struct ibv_device_attr attr;
    if (!ctx || ibv_query_device(ctx, &attr)) {
      if (n < max) {
        snprintf(out[n].what, sizeof(out[n].what), "%s", name);
        out[n].ok = 0;
        snprintf(out[n].detail, sizeof(out[n].detail), "cannot open or query it: %s",
                 strerror(errno));
      }
      n++;
    } else {
      for (uint8_t p = 1; p <= attr.phys_port_cnt; p++, n++)
        if (n < max)
          describe_port(&out[n], ctx, name, p, mine, nmine, cfg->ib_gid_index,
                        zcoll__hca_match(&spec, name, p) ? NULL : var);
    }
    if (ctx) ibv_close_device(ctx);
  }
  ibv_free_device_list(devs);
  return n;
}

/* The libibverbs this process loaded, by its file's name (rdma-core has no version call),
 * and the one pkg-config found at build time. */
static void verbs_version(char *buf, size_t len) {
  Dl_info di;
  char real[PATH_MAX] = "";
  if (!dladdr((void *)ibv_get_device_list, &di) || !di.dli_fname || !realpath(di.dli_fname, real))
    snprintf(real, sizeof(real), "libibverbs (file unknown)");
  const char *base = strrchr(real, '/');
  snprintf(buf, len, "%s (built against libibverbs %s)", base ? base + 1 : real,
           ZCOLL_VERBS_BUILT_VERSION);
}

static zcoll_status_t verbs_probe(const zcoll_config_t *cfg, char *why, size_t why_len) {
  struct zcoll__verbs_rail rail[ZCOLL_VERBS_MAX_RAILS];
  int n;
  zcoll_status_t st = zcoll__verbs_pick_rails(cfg, cfg->rank, rail, &n);
  if (st != ZCOLL_OK) snprintf(why, why_len, "%s", zcoll__last_error());
  return st;
}

static void verbs_close(struct zcoll_tl *tl) {
  if (!tl) return;
  zcoll__verbs_close_eps(tl);
  zcoll__verbs_amo_close(tl);
  for (int i = 0; i < tl->nrails; i++) {
    struct zcoll__verbs_rail *r = &tl->rail[i];
    if (r->cq) ibv_destroy_cq(r->cq);
    if (r->comp_ch) ibv_destroy_comp_channel(r->comp_ch);
    if (r->pd) ibv_dealloc_pd(r->pd);
    if (r->ctx) ibv_close_device(r->ctx);
  }
  if (tl->epfd >= 0) close(tl->epfd);
  zcoll__evq_free(&tl->evq);
  free(tl);
}

static int nonblock(int fd) {
  int fl = fcntl(fd, F_GETFL);
  return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* The device by name: the context the instance owns. */
static struct ibv_context *open_by_name(const char *name) {
  int n = 0;
  struct ibv_device **devs = ibv_get_device_list(&n);
  struct ibv_context *ctx = NULL;
  for (int i = 0; devs && i < n && !ctx; i++)
    if (!strcmp(ibv_get_device_name(devs[i]), name)) ctx = ibv_open_device(devs[i]);
  if (devs) ibv_free_device_list(devs);
  return ctx;
}

/* ZCOLL_IB_PKEY's index in the port's P_Key table (the first entry without it). */
static zcoll_status_t pkey_index(struct zcoll_tl *tl, struct zcoll__verbs_rail *r) {
  if (tl->cfg->ib_pkey < 0) return ZCOLL_OK;
  int i = ibv_get_pkey_index(r->ctx, r->port, htobe16((uint16_t)tl->cfg->ib_pkey));
  if (i < 0)
    return zcoll__fail(ZCOLL_ERR_UNSUPPORTED,
                       "verbs: ZCOLL_IB_PKEY=0x%04x is not in %s port %u's P_Key table (a "
                       "partition this node is no member of)",
                       tl->cfg->ib_pkey, r->dev_name, r->port);
  r->pkey_index = (uint16_t)i;
  return ZCOLL_OK;
}

/* A rail's device opened: its protection domain, completion channel and limits; its
 * descriptors in the instance's epoll set. */
static zcoll_status_t open_rail(struct zcoll_tl *tl, struct zcoll__verbs_rail *r) {
  if (!(r->ctx = open_by_name(r->dev_name)))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: cannot open %s: %m", r->dev_name);
  zcoll_status_t st = pkey_index(tl, r);
  if (st != ZCOLL_OK) return st;
  if (!(r->pd = ibv_alloc_pd(r->ctx)) || !(r->comp_ch = ibv_create_comp_channel(r->ctx)))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                       "verbs: cannot allocate a protection domain or completion channel on "
                       "%s: %m",
                       r->dev_name);
  if (ibv_query_device(r->ctx, &r->dev))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: ibv_query_device(%s): %m", r->dev_name);
  int fds[2] = {r->comp_ch->fd, r->ctx->async_fd};
  for (int i = 0; i < 2; i++) {
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[i]};
    if (nonblock(fds[i]) || epoll_ctl(tl->epfd, EPOLL_CTL_ADD, fds[i], &ev))
      return zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: cannot set up event descriptors: %m");
  }
  return ZCOLL_OK;
}

static zcoll_status_t verbs_open(const struct zcoll_tl_params *p, struct zcoll_tl **out) {
  struct zcoll_tl *tl = calloc(1, sizeof(*tl));
  if (!tl) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "verbs: out of memory");
  tl->rank = p->rank;
  tl->size = p->size;
  tl->cfg = p->cfg;
  tl->alive = p->alive;
  tl->alive_arg = p->alive_arg;
  tl->epfd = -1;
  int n = 0;
  zcoll_status_t st = zcoll__verbs_pick_rails(p->cfg, p->rank, tl->rail, &n);
  if (st != ZCOLL_OK) goto fail;
  /* One descriptor to sleep on: every rail's completions and asynchronous events. */
  if ((tl->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
    st = zcoll__fail(ZCOLL_ERR_TRANSPORT, "verbs: epoll_create1: %m");
    goto fail;
  }
  tl->atomics = p->cfg->atomics;
  for (; tl->nrails < n; tl->nrails++) {
    struct zcoll__verbs_rail *r = &tl->rail[tl->nrails];
    if ((st = open_rail(tl, r)) != ZCOLL_OK) {
      tl->nrails++; /* closed with the others */
      goto fail;
    }
    /* Atomics go through rail 0 only (amo.c). */
    if (tl->nrails == 0)
      tl->atomics &= r->dev.atomic_cap != IBV_ATOMIC_NONE && r->dev.max_qp_rd_atom > 0;
    char where[128];
    zcoll__verbs_port_str(&r->pa, where, sizeof(where));
    zcoll_log_info("verbs: rank %d uses %s port %u, %s%s", p->rank, r->dev_name, r->port, where,
                   n > 1 ? " (a rail)" : "");
  }
  *out = tl;
  return ZCOLL_OK;
fail:
  verbs_close(tl);
  return st;
}

static zcoll_status_t verbs_address(struct zcoll_tl *tl, void *buf, size_t *len) {
  struct zcoll__verbs_addr a = {ZCOLL_VERBS_ADDR_MAGIC, tl->rank, (uint32_t)tl->nrails, 0};
  size_t need = sizeof(a) + (size_t)tl->nrails * sizeof(struct zcoll__verbs_addr_port);
  if (*len < need) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "verbs: address buffer short");
  memcpy(buf, &a, sizeof(a));
  for (int i = 0; i < tl->nrails; i++) {
    const struct zcoll__verbs_port *pa = &tl->rail[i].pa;
    struct zcoll__verbs_addr_port ap = {{0},
                                        pa->lid,
                                        pa->link_layer,
                                        (uint8_t)pa->mtu,
                                        pa->gid_index >= 0,
                                        (uint8_t)pa->gid_kind,
                                        (uint8_t)pa->roce_v2,
                                        tl->rail[i].listed};
    memcpy(ap.gid, pa->gid.raw, sizeof(ap.gid));
    memcpy((char *)buf + sizeof(a) + (size_t)i * sizeof(ap), &ap, sizeof(ap));
  }
  *len = need;
  return ZCOLL_OK;
}

static void verbs_device(struct zcoll_tl *tl, char *buf, size_t len) {
  size_t off = 0;
  buf[0] = '\0';
  for (int i = 0; i < tl->nrails && off < len; i++)
    off += (size_t)snprintf(buf + off, len - off, "%s%s:%u", i ? "," : "", tl->rail[i].dev_name,
                            (unsigned)tl->rail[i].port);
}

_Static_assert(sizeof(((zcoll_comm_stats_t *)0)->rail_bytes) ==
                   sizeof(uint64_t[ZCOLL_VERBS_MAX_RAILS]),
               "zcoll_comm_stats_t has a count for each rail");

static int verbs_rail_bytes(struct zcoll_tl *tl, uint64_t *bytes, int max) {
  for (int i = 0; i < tl->nrails && i < max; i++) bytes[i] = tl->rail[i].bytes;
  return tl->nrails;
}

const struct zcoll_tl_ops zcoll__tl_verbs = {
    .name = "verbs",
    .caps = ZCOLL_TL_CAP_PINS | ZCOLL_TL_CAP_REMOTE_USER,
    /* On rxe a 1 MiB allreduce ran 1.3x faster than with 128K pieces (per-message
     * overhead); a real NIC is content with either. */
    .default_chunk_bytes = (size_t)256 * 1024,
    .probe = verbs_probe,
    .open = verbs_open,
    .close = verbs_close,
    .address = verbs_address,
    .peer_address = zcoll__verbs_peer_address,
    .connect = zcoll__verbs_connect,
    .mem_reg = zcoll__verbs_mem_reg,
    .mem_dereg = zcoll__verbs_mem_dereg,
    .rkey_pack = zcoll__verbs_rkey_pack,
    .rkey_unpack = zcoll__verbs_rkey_unpack,
    .rkey_release = zcoll__verbs_rkey_release,
    .put = zcoll__verbs_put,
    .fetch_add = zcoll__verbs_fetch_add,
    .self_ep = zcoll__verbs_self_ep,
    .poll = zcoll__verbs_poll,
    .event_fd = zcoll__verbs_event_fd,
    .arm = zcoll__verbs_arm,
    .quiesce = zcoll__verbs_quiesce,
    .device = verbs_device,
    .rail_bytes = verbs_rail_bytes,
    .describe = verbs_describe,
    .version = verbs_version,
};
