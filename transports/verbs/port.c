/* port.c -- how peers reach a port: its GID (RoCE, routed InfiniBand) or its LID.
 *
 * The GID index is chosen as NCCL's net_ib does, so that every rank of a fabric takes the
 * same kind of entry without being told: RoCE v2 before v1 (v2 is routable), then an
 * IPv4-mapped address, then a global IPv6 one, then a link-local one; the lowest index
 * among equals. ZCOLL_IB_GID_INDEX overrides it. An InfiniBand port is LID-routed (no
 * GRH) unless a GID index is set. No IP address is needed on either. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs.h"

static int gid_kind(const union ibv_gid *g) {
  static const uint8_t v4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (!memcmp(g->raw, v4, sizeof(v4))) return ZCOLL_VERBS_GID_IPV4;
  if (g->raw[0] == 0xfe && (g->raw[1] & 0xc0) == 0x80) return ZCOLL_VERBS_GID_LOCAL;
  return ZCOLL_VERBS_GID_IPV6;
}

static int gid_zero(const union ibv_gid *g) {
  for (size_t i = 0; i < sizeof(g->raw); i++)
    if (g->raw[i]) return 0;
  return 1;
}

/* The entry for a RoCE port, or -1 (*why says). */
static int choose_gid(struct ibv_context *ctx, uint8_t port, int table_len, int want,
                      struct zcoll__verbs_port *pa, char *why, size_t why_len) {
  /* The table holds every port's entries: room for each port's whole table. */
  struct ibv_device_attr da;
  size_t ports = ibv_query_device(ctx, &da) == 0 && da.phys_port_cnt ? da.phys_port_cnt : 1;
  size_t max = (table_len > 0 ? (size_t)table_len : 1) * ports;
  struct ibv_gid_entry *e = calloc(max, sizeof(*e));
  if (!e) {
    snprintf(why, why_len, "out of memory");
    return -1;
  }
  /* Every valid entry of every port (rdma-core reads sysfs where the kernel has no ioctl). */
  ssize_t n = ibv_query_gid_table(ctx, e, max, 0);
  int best = -1, best_score = -1;
  for (ssize_t i = 0; i < n; i++) {
    if (e[i].port_num != port || gid_zero((const union ibv_gid *)&e[i].gid)) continue;
    int v2 = e[i].gid_type == IBV_GID_TYPE_ROCE_V2;
    int score = v2 * 10 + gid_kind((const union ibv_gid *)&e[i].gid);
    if (want >= 0
            ? (int)e[i].gid_index == want
            : score > best_score || (score == best_score && e[i].gid_index < (uint32_t)best)) {
      best = (int)e[i].gid_index;
      best_score = score;
      memcpy(pa->gid.raw, &e[i].gid, sizeof(pa->gid.raw));
      pa->roce_v2 = v2;
    }
  }
  if (n < 0)
    snprintf(why, why_len, "cannot read the GID table: %s", strerror(errno));
  else if (best < 0 && want >= 0)
    snprintf(why, why_len, "no GID at index %d (ZCOLL_IB_GID_INDEX)", want);
  else if (best < 0)
    snprintf(why, why_len, "no GID in the table (no address on its network device?)");
  free(e);
  if (best < 0) return -1;
  pa->gid_index = best;
  pa->gid_kind = gid_kind(&pa->gid);
  return 0;
}

int zcoll__verbs_port_addr(struct ibv_context *ctx, const char *dev, uint8_t port, int want_gid,
                           struct zcoll__verbs_port *pa, char *why, size_t why_len) {
  struct ibv_port_attr a;
  memset(pa, 0, sizeof(*pa));
  pa->gid_index = -1;
  if (ibv_query_port(ctx, port, &a)) {
    snprintf(why, why_len, "ibv_query_port(%s, %u): %s", dev, port, strerror(errno));
    return -1;
  }
  pa->link_layer = a.link_layer;
  pa->lid = a.lid;
  pa->mtu = a.active_mtu;
  if (a.link_layer != IBV_LINK_LAYER_ETHERNET && want_gid < 0) {
    if (a.lid) return 0;
    snprintf(why, why_len, "no LID (no subnet manager?)");
    return -1;
  }
  return choose_gid(ctx, port, a.gid_tbl_len, want_gid, pa, why, why_len);
}

void zcoll__verbs_port_str(const struct zcoll__verbs_port *pa, char *buf, size_t len) {
  if (pa->gid_index < 0) {
    snprintf(buf, len, "LID 0x%x", pa->lid);
    return;
  }
  char addr[INET6_ADDRSTRLEN] = "?";
  if (pa->gid_kind == ZCOLL_VERBS_GID_IPV4)
    inet_ntop(AF_INET, pa->gid.raw + 12, addr, sizeof(addr));
  else
    inet_ntop(AF_INET6, pa->gid.raw, addr, sizeof(addr));
  snprintf(buf, len, "GID index %d (%s, %s)", pa->gid_index,
           pa->link_layer != IBV_LINK_LAYER_ETHERNET ? "IB"
           : pa->roce_v2                             ? "RoCE v2"
                                                     : "RoCE v1",
           addr);
}
