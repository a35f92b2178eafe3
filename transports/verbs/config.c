/* config.c -- the verbs transport's knobs: its table of ZCOLL_IB_* variables (rows as
 * base/config.h lays them out), listed in zcoll_info -c between the job's and the
 * collectives' (comm/config_api.c gathers them). Built whether or not the transport is,
 * so that a build without libibverbs still takes and lists the same variables. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/config.h"
#include "base/hca.h"

static int parse_ib_hca(const char *text, void *dst, size_t size, char *why, size_t why_len,
                        const struct zcoll__config_names *nm) {
  struct zcoll__hca_spec spec;
  if (zcoll__hca_parse(text, &spec, why, why_len)) return -1;
  return zcoll__config_parse_string(text, dst, size, why, why_len, nm);
}

/* -1 in each: unset, the transport's choice (transports/verbs/port.c). */
static int parse_gid_index(const char *text, void *dst, size_t size, char *why, size_t why_len,
                           const struct zcoll__config_names *nm) {
  (void)size, (void)nm;
  return zcoll__config_parse_range(text, dst, -1, 255, why, why_len);
}

static int parse_ib_tc(const char *text, void *dst, size_t size, char *why, size_t why_len,
                       const struct zcoll__config_names *nm) {
  (void)size, (void)nm;
  return zcoll__config_parse_range(text, dst, -1, 255, why, why_len);
}

/* Never 0: that disables retransmission, and one lost packet hangs the queue pair. */
static int parse_ib_sl(const char *text, void *dst, size_t size, char *why, size_t why_len,
                       const struct zcoll__config_names *nm) {
  (void)size, (void)nm;
  return zcoll__config_parse_range(text, dst, 0, 15, why, why_len);
}

/* A 16-bit P_Key as the fabric manager writes it (0x8001); -1: unset. */
static int parse_ib_pkey(const char *text, void *dst, size_t size, char *why, size_t why_len,
                         const struct zcoll__config_names *nm) {
  (void)size, (void)nm;
  char *end;
  errno = 0;
  long v = strtol(text, &end, 0);
  if (errno || end == text || *end || v < -1 || v > 0xffff || (v >= 0 && !(v & 0x7fff))) {
    snprintf(why, why_len,
             "must be a partition key from 0x0001 to 0xffff (not 0x0000 or "
             "0x8000, which are invalid), or -1 for the port's first");
    return -1;
  }
  *(int *)dst = (int)v;
  return 0;
}

static int parse_ib_timeout(const char *text, void *dst, size_t size, char *why, size_t why_len,
                            const struct zcoll__config_names *nm) {
  (void)size, (void)nm;
  return zcoll__config_parse_range(text, dst, 1, 31, why, why_len);
}

static int parse_ib_retry(const char *text, void *dst, size_t size, char *why, size_t why_len,
                          const struct zcoll__config_names *nm) {
  (void)size, (void)nm;
  return zcoll__config_parse_range(text, dst, 0, 7, why, why_len);
}

static int parse_qp_depth(const char *text, void *dst, size_t size, char *why, size_t why_len,
                          const struct zcoll__config_names *nm) {
  (void)size, (void)nm;
  if (zcoll__config_parse_range(text, dst, 0, 1 << 20, why, why_len)) return -1;
  if (*(int *)dst != 0 && *(int *)dst < ZCOLL_IB_QP_DEPTH_MIN) {
    snprintf(why, why_len, "must be 0 (automatic) or from %d to 1048576", ZCOLL_IB_QP_DEPTH_MIN);
    return -1;
  }
  return 0;
}

/* Short names for the rows below only (undefined after them), so that each reads on a line
 * or two. */
#define F ZCOLL_CONFIG_FIELD

// The table reads as one field per entry; clang-format would spread each over five lines.
// clang-format off
const struct zcoll__config_field zcoll__verbs_config[ZCOLL_VERBS_NCONFIG] = {
    F("IB_DEV", "", "RDMA device as name[:port]: the old name of ZCOLL_IB_HCA=\"=name[:port]\", "
      "used when ZCOLL_IB_HCA is empty", ib_dev, zcoll__config_parse_string),
    F("IB_HCA", "", "RDMA devices and ports, as NCCL_IB_HCA: name[:port],... (a name is a "
      "prefix), =name,... (exact names), ^name,... (all but these): every rank uses each port "
      "listed (up to 4) as a rail and stripes its puts over them; empty: every device with an "
      "active port, a host's ranks spread over them one each", ib_hca, parse_ib_hca),
    F("IB_GID_INDEX", "-1", "GID index of the port (RoCE, or routed InfiniBand); -1: RoCE v2 "
      "before v1, then an IPv4-mapped GID, a global IPv6 one, a link-local one; InfiniBand: the "
      "LID", ib_gid_index, parse_gid_index),
    F("IB_TC", "-1", "traffic class of the queue pairs (RoCE: the IP TOS byte; -1: 0)", ib_tc,
      parse_ib_tc),
    F("IB_SL", "0", "service level of the queue pairs, 0..15 (InfiniBand; RoCE: the VLAN "
      "priority)", ib_sl, parse_ib_sl),
    F("IB_PKEY", "-1", "partition key (0x0001..0xffff), looked up in the port's P_Key table; "
      "-1: the table's first entry", ib_pkey, parse_ib_pkey),
    F("IB_TIMEOUT", "16", "local ack timeout, 1..31: a try waits 4.096 us * 2^t (16: 268 ms); "
      "never 0, which turns retransmission off", ib_timeout, parse_ib_timeout),
    F("IB_RETRY_CNT", "7", "retransmissions (0..7) before a send fails: with ZCOLL_IB_TIMEOUT, "
      "how long a lost peer or link takes to show", ib_retry_cnt, parse_ib_retry),
    F("IB_QP_DEPTH", "0", "work requests per queue pair and direction, 576..1048576 (a queue "
      "pair holds the 256 writes in flight to a peer the executor allows, their credits and "
      "flushes), checked against the device's max_qp_wr; 0: 576", ib_qp_depth, parse_qp_depth),
};
// clang-format on
#undef F
