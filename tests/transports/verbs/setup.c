/* verbs/setup.c -- test_verbs' connection setup and device settings on real RDMA devices
 * (soft-RoCE in CI): out-of-band connections without IPv4, rails, the ZCOLL_IB_*
 * variables as the queue pairs hold them, and each bad setting refused by name. Linked
 * into test_verbs (tests/CMakeLists.txt), whose filters ci/test.sh runs. */
#include <criterion/criterion.h>
#include <ifaddrs.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>

#include "base/config.h"
#include "spawn.h" /* tests/ is on the quote path only (-iquote): <spawn.h> stays the system's */
#include "transports/verbs/verbs.h"
#include "need_rdma.h"

/* Connections made out of band need no IP: in the harness's IPv6-only mode (ci/rxe.sh
 * --family 6, CI's main rxe stage) the rxe netdevs have no IPv4 address, and jobs of 2 and
 * 3 ranks reduce exactly, every rank on a RoCE v2 GID of fd77::/64 (port.c's choice).
 * Elsewhere it skips, saying so (the IPv4 guests run every other test). */
Test(verbs, no_ipv4_needed, .timeout = 900) {
  need_rdma();
  const char *fam = getenv("ZCOLL_RXE_FAMILY"), *nd = getenv("ZCOLL_RXE_NETDEVS");
  if (!fam || strcmp(fam, "6") || !nd)
    cr_skip_test("not the rxe harness's IPv6-only mode (ci/rxe.sh --family 6)");
  struct ifaddrs *ifs = NULL;
  cr_assert_eq(getifaddrs(&ifs), 0);
  int v6 = 0;
  for (struct ifaddrs *x = ifs; x; x = x->ifa_next) {
    if (!x->ifa_addr || !strstr(nd, x->ifa_name)) continue;
    cr_expect_neq(x->ifa_addr->sa_family, AF_INET, "%s has an IPv4 address", x->ifa_name);
    v6 += x->ifa_addr->sa_family == AF_INET6;
  }
  freeifaddrs(ifs);
  cr_assert_geq(v6, 2, "the rxe netdevs (%s) have no IPv6 addresses", nd);
  for (int p = 2; p <= 3; p++) {
    char np[8];
    snprintf(np, sizeof(np), "%d", p);
    const char *argv[] = {SP_BIN("zcoll_run"),        "-np",    np,
                          SP_PROG("allreduce_check"), "262144", NULL};
    const char *env[] = {"ZCOLL_TRANSPORT=verbs", "ZCOLL_LOG=info", NULL};
    struct sp_result r = sp_run(argv, env, 400);
    cr_log_info("verbs over IPv6 GIDs, p=%d: %.1f s\n", p, r.seconds);
    cr_assert_eq(r.status, 0, "p=%d: exit %d\n%s", p, r.status, r.out);
    cr_expect(strstr(r.out, "over verbs") && strstr(r.out, "every element exact on every rank"),
              "%s", r.out);
    int n = 0;
    for (const char *l = strstr(r.out, "(RoCE v2, fd77::"); l;
         l = strstr(l + 1, "(RoCE v2, fd77::"))
      n++;
    cr_expect_eq(n, p, "every rank should say it uses a RoCE v2 GID of fd77::/64:\n%s", r.out);
    free(r.out);
  }
}

/* Two rails per rank (ZCOLL_IB_HCA=rxe0,rxe1: every rank takes both devices): puts to a
 * peer take the rails in turn and the receiver hands their notifications out in the same
 * turn, so results are exact at p = 2 and 3 (allreduce_check: pieces of every size, the
 * staged and the registered paths), every rank says it uses both, zcoll_perf's bytes
 * per rail show both carrying half (+- 10 %) and zcoll_info -d marks both ports. On rxe both ranks' rail 0 is rxe0 -- a
 * device talking to itself -- and rail 1 rxe1; on a cluster each rail is a NIC of each
 * host. */
Test(verbs, two_rails_carry_half_each, .timeout = 900) {
  need_rdma();
  for (int p = 2; p <= 3; p++) {
    char np[8];
    snprintf(np, sizeof(np), "%d", p);
    const char *argv[] = {SP_BIN("zcoll_run"),        "-np",    np,
                          SP_PROG("allreduce_check"), "262144", NULL};
    const char *env[] = {"ZCOLL_TRANSPORT=verbs", "ZCOLL_IB_HCA=rxe0,rxe1", "ZCOLL_LOG=info",
                         p == 3 ? "ZCOLL_TEST_REGISTER=1" : "ZCOLL_TEST_REGISTER=0", NULL};
    struct sp_result r = sp_run(argv, env, 400);
    cr_log_info("verbs over two rails, p=%d: %.1f s\n", p, r.seconds);
    cr_assert_eq(r.status, 0, "p=%d: exit %d\n%s", p, r.status, r.out);
    cr_expect(strstr(r.out, "over verbs") && strstr(r.out, "every element exact on every rank"),
              "%s", r.out);
    int n = 0;
    for (const char *l = strstr(r.out, "(a rail)"); l; l = strstr(l + 1, "(a rail)")) n++;
    cr_expect_eq(n, 2 * p, "every rank should say it uses rxe0 and rxe1 as rails:\n%s", r.out);
    free(r.out);
  }
  const char *perf[] = {SP_BIN("zcoll_run"),
                        "-np",
                        "2",
                        SP_BIN("zcoll_perf"),
                        "-b",
                        "1M",
                        "-e",
                        "4M",
                        "-f",
                        "2",
                        "-n",
                        "4",
                        "-w",
                        "1",
                        "-c",
                        "1",
                        NULL};
  const char *env[] = {"ZCOLL_TRANSPORT=verbs", "ZCOLL_IB_HCA=rxe0,rxe1", NULL};
  struct sp_result r = sp_run(perf, env, 580);
  cr_log_info("zcoll_perf over two rails:\n%s", r.out);
  cr_assert_eq(r.status, 0, "%s", r.out);
  const char *l = strstr(r.out, "# Bytes per rail       : ");
  double a = 0, b = 0;
  cr_assert(l && sscanf(l, "# Bytes per rail       : rail 0 %lf MiB, rail 1 %lf MiB", &a, &b) == 2,
            "%s", r.out);
  cr_expect(a > 0 && b > 0 && a < 1.1 * b && b < 1.1 * a, "rails uneven: %.1f and %.1f MiB\n%s", a,
            b, r.out);
  cr_expect(strstr(r.out, "device rxe0:1,rxe1:1"), "%s", r.out);
  free(r.out);
  /* zcoll_info -d marks both ports, each with its rail. */
  const char *info[] = {SP_BIN("zcoll_info"), "-d", NULL};
  const char *hca[] = {"ZCOLL_IB_HCA=rxe0,rxe1", NULL};
  r = sp_run(info, hca, 60);
  const char *p0 = strstr(r.out, "rxe0 port 1"), *p1 = strstr(r.out, "rxe1 port 1");
  cr_expect(p0 && p1 && strstr(p0, "zcoll uses this port (rail 0 of 2)") &&
                strstr(p1, "zcoll uses this port (rail 1 of 2)"),
            "%s", r.out);
  free(r.out);
}

Test(verbs, bad_device_is_a_clear_error, .timeout = 120) {
  need_rdma();
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", "2", SP_PROG("allreduce_check"), "64", NULL};
  const char *env[] = {"ZCOLL_TRANSPORT=verbs", "ZCOLL_IB_DEV=mlx9_nonexistent", NULL};
  struct sp_result r = sp_run(argv, env, 100);
  cr_assert_neq(r.status, 0, "%s", r.out);
  cr_assert(strstr(r.out, "ZCOLL_IB_DEV=mlx9_nonexistent") && strstr(r.out, "devices here"), "%s",
            r.out);
  free(r.out);
}

/* The ZCOLL_IB_* settings as the queue pairs hold them (ibv_query_qp, logged at info once
 * a connection is up): the traffic class, service level, ack timeout and retry count
 * asked for (rxe drops the service level, below), the GID index chosen (1: rxe's
 * IPv4-mapped or fd77:: entry), at least the default depth (a device may round it up: rxe
 * gives 1023 for 576); a partition key the port has (0xffff, the default partition) is
 * taken. */
Test(verbs, ib_settings_reach_the_queue_pairs, .timeout = 300) {
  need_rdma();
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", "2", SP_PROG("allreduce_check"), "4096", NULL};
  const char *env[] = {"ZCOLL_TRANSPORT=verbs", "ZCOLL_IB_TC=96",       "ZCOLL_IB_TIMEOUT=14",
                       "ZCOLL_IB_RETRY_CNT=5",  "ZCOLL_IB_GID_INDEX=1", "ZCOLL_IB_SL=3",
                       "ZCOLL_IB_PKEY=0xffff",  "ZCOLL_LOG=info",       NULL};
  struct sp_result r = sp_run(argv, env, 280);
  cr_assert_eq(r.status, 0, "%s", r.out);
  int qps = 0;
  for (const char *l = strstr(r.out, "queue pair to rank"); l;
       l = strstr(l + 1, "queue pair to rank")) {
    int len = (int)strcspn(l, "\n"), sq = 0, rq = 0;
    /* Not the service level: rxe keeps none (RoCE carries no SL; a VLAN's priority comes
     * from it on NICs that tag), and reads back 0 whatever ZCOLL_IB_SL asked. */
    const char *want =
        "GID index 1, traffic class 96, service level 0, ack timeout 14, retry count "
        "5, ";
    const char *at = strstr(l, want);
    cr_expect(at && at < l + len &&
                  sscanf(at + strlen(want), "%d send and %d receive", &sq, &rq) == 2 && sq >= 576 &&
                  rq >= 576,
              "%.*s\nwanted: %s, at least 576 send and receive work requests", len, l, want);
    qps++;
  }
  cr_expect_eq(qps, 2, "a queue pair line per rank:\n%s", r.out);
  free(r.out);
}

/* Sized from the device: a depth the device cannot give is refused naming its limit,
 * never an ibv_create_qp errno. A depth past max_qp_wr where the device's limit is below
 * ZCOLL_IB_QP_DEPTH's range (1048576); where it is not (rxe here takes 1048576), the
 * largest depth, which the completion queue cannot hold (max_cqe). */
Test(verbs, qp_depth_beyond_the_device, .timeout = 120) {
  need_rdma();
  int n = 0;
  struct ibv_device **devs = ibv_get_device_list(&n);
  cr_assert(devs && n > 0);
  struct ibv_context *ctx = ibv_open_device(devs[0]);
  struct ibv_device_attr a;
  cr_assert(ctx && ibv_query_device(ctx, &a) == 0);
  ibv_close_device(ctx);
  ibv_free_device_list(devs);
  int past = a.max_qp_wr < (1 << 20);
  char depth[64], want[160];
  snprintf(depth, sizeof(depth), "ZCOLL_IB_QP_DEPTH=%d", past ? a.max_qp_wr + 1 : 1 << 20);
  if (past)
    snprintf(want, sizeof(want),
             "queue pairs of %d work requests (ZCOLL_IB_QP_DEPTH) are more "
             "than rxe",
             a.max_qp_wr + 1);
  else
    snprintf(want, sizeof(want), "(2 x %d work requests each), more than rxe", 1 << 20);
  cr_log_info("max_qp_wr %d, max_cqe %d: %s\n", a.max_qp_wr, a.max_cqe, depth);
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", "2", SP_PROG("allreduce_check"), "64", NULL};
  const char *env[] = {"ZCOLL_TRANSPORT=verbs", depth, NULL};
  struct sp_result r = sp_run(argv, env, 100);
  cr_assert_neq(r.status, 0, "%s", r.out);
  cr_expect(strstr(r.out, want) && strstr(r.out, past ? "(max_qp_wr " : "(max_cqe "),
            "wanted: %s\n%s", want, r.out);
  cr_expect(strstr(r.out, "not supported by this build or machine"), "%s", r.out);
  free(r.out);
}

/* ZCOLL_IB_HCA picks the port (NCCL's syntax): with "^rxe0" a job's ranks both take rxe1;
 * zcoll_info -d shows the choice without a job (cheaper in the emulated guest): "=rxe0:1"
 * takes rxe0 and says why rxe1 is not used; a GID index with no GID is refused naming
 * it. */
Test(verbs, hca_list_and_gid_index_choose_the_port, .timeout = 300) {
  need_rdma();
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", "2", SP_PROG("allreduce_check"), "64", NULL};
  const char *env[] = {"ZCOLL_TRANSPORT=verbs", "ZCOLL_IB_HCA=^rxe0", "ZCOLL_LOG=info", NULL};
  struct sp_result r = sp_run(argv, env, 280);
  cr_expect_eq(r.status, 0, "%s", r.out);
  int n = 0;
  for (const char *l = strstr(r.out, "uses rxe1 port 1"); l; l = strstr(l + 1, "uses rxe1 port 1"))
    n++;
  cr_expect_eq(n, 2, "both ranks should use rxe1 port 1:\n%s", r.out);
  free(r.out);
  const char *info[] = {SP_BIN("zcoll_info"), "-d", NULL};
  const char *exact[] = {"ZCOLL_IB_HCA==rxe0:1", NULL};
  r = sp_run(info, exact, 60);
  cr_expect(strstr(r.out, "zcoll uses this port") && strstr(r.out, "not used: not in ZCOLL_IB_HCA"),
            "%s", r.out);
  const char *p = strstr(r.out, "rxe0 port 1");
  cr_expect(p && strstr(p, "zcoll uses this port") &&
                strstr(p, "zcoll uses this port") < p + strcspn(p, "\n"),
            "rxe0 port 1 should be the one used:\n%s", r.out);
  free(r.out);
  const char *empty[] = {"ZCOLL_TRANSPORT=verbs", "ZCOLL_IB_GID_INDEX=200", NULL};
  r = sp_run(argv, empty, 120);
  cr_expect_neq(r.status, 0, "%s", r.out);
  cr_expect(strstr(r.out, "at GID index 200 (ZCOLL_IB_GID_INDEX)"), "%s", r.out);
  free(r.out);
}

/* A partition the port is no member of is refused naming the key and the port (rxe's
 * table holds only the default partition, 0xffff); rxe has no subnet manager, so this is
 * as far as P_Keys can be tried here. */
Test(verbs, pkey_outside_the_table_is_refused, .timeout = 120) {
  need_rdma();
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", "2", SP_PROG("allreduce_check"), "64", NULL};
  const char *env[] = {"ZCOLL_TRANSPORT=verbs", "ZCOLL_IB_PKEY=0x8001", NULL};
  struct sp_result r = sp_run(argv, env, 100);
  cr_expect_neq(r.status, 0, "%s", r.out);
  cr_expect(strstr(r.out, "ZCOLL_IB_PKEY=0x8001 is not in rxe") && strstr(r.out, "P_Key table"),
            "%s", r.out);
  free(r.out);
}

/* ZCOLL_IB_DEV's port is a whole number 1..255: anything else is refused by name before
 * any device is looked at (atoi took "1x" for port 1), so this needs no device. (The
 * configuration refuses the same in ZCOLL_IB_HCA: tests/base/test_hca.c, test_errors.c.) */
Test(verbs, bad_port_number_is_refused, .timeout = 60) {
  const char *bad[] = {"mlx5_0:1x", "mlx5_0:", "mlx5_0:0", "mlx5_0:256", "mlx5_0:-1", "rxe0:1.5"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    zcoll_config_t cfg = {0};
    snprintf(cfg.ib_dev, sizeof(cfg.ib_dev), "%s", bad[i]);
    struct zcoll__verbs_rail rail[ZCOLL_VERBS_MAX_RAILS];
    int n = 0;
    cr_expect_eq(zcoll__verbs_pick_rails(&cfg, 0, rail, &n), ZCOLL_ERR_INVALID_ARG,
                 "%s was accepted", bad[i]);
    cr_expect(strstr(zcoll_last_error(), "ZCOLL_IB_DEV") &&
                  strstr(zcoll_last_error(), "port must be a number 1..255"),
              "%s: %s", bad[i], zcoll_last_error());
  }
}
