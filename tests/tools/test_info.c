/*
 * zcoll_info, every mode: the command line (-h, errors), the configuration listing (-c,
 * and what no option prints), the build (-b), the machine (-d) and the allreduce's choice
 * (-s) -- the last two checked against the library's own functions called here directly,
 * and -s against the algorithm column and the chunk and depth of real zcoll_perf jobs.
 */
#include <criterion/criterion.h>
#include <dirent.h>

#include "algorithms/algorithms.h"
#include "algorithms/select.h"
#include "kernels/reduce.h"
#include "comm/transports.h"
#include "core/onehost.h"
#include "tl/transport.h"
#include "sample.h"
#include "spawn.h"

static char *info_run(const char *const *args, const char *const *env, int want_status) {
  const char *argv[24] = {SP_BIN("zcoll_info")};
  for (int i = 0; args[i] && i < 22; i++) argv[i + 1] = args[i];
  struct sp_result r = sp_run(argv, env, 60);
  cr_assert_eq(r.status, want_status, "zcoll_info %s...: exit %d\n%s", args[0] ? args[0] : "",
               r.status, r.out);
  return r.out;
}

static char *info(const char *const *env) {
  const char *args[] = {"-c", NULL};
  return info_run(args, env, 0);
}

/* The line of out that starts with prefix, copied into line; 0 if there is none. */
static int line_starting(const char *out, const char *prefix, char *line, size_t len) {
  for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    if (strncmp(l, prefix, strlen(prefix)) != 0) continue;
    size_t n = strcspn(l, "\n");
    snprintf(line, len, "%.*s", (int)n, l);
    return 1;
  }
  return 0;
}

Test(info, progress_thread_against_the_cores) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  char many[64];
  snprintf(many, sizeof(many), "ZCOLL_LOCAL_SIZE=%ld", cores);
  const char *crowded[] = {"ZCOLL_PROGRESS=thread", many, NULL};
  char *out = info(crowded);
  cr_expect(strstr(out, "more threads than cores"), "%s", out);
  free(out);
  if (cores >= 2) {
    const char *roomy[] = {"ZCOLL_PROGRESS=thread", "ZCOLL_LOCAL_SIZE=1", NULL};
    out = info(roomy);
    cr_expect(strstr(out, "cores: fits"), "%s", out);
    free(out);
  }
  const char *caller[] = {"ZCOLL_PROGRESS=caller", NULL};
  out = info(caller);
  cr_expect(strstr(out, "no thread: requests move only inside zcoll calls"), "%s", out);
  free(out);
}

Test(info, no_option_prints_version_and_configuration) {
  const char *none[] = {NULL}, *env[] = {"ZCOLL_ALGO=ring", NULL};
  char *out = info_run(none, env, 0);
  cr_expect(strstr(out, "# zcoll version "), "%s", out);
  cr_expect(strstr(out, "\nZCOLL_ALGO=ring\n"), "%s", out);
  free(out);
}

Test(info, help_and_bad_command_lines) {
  static const char *const helps[][2] = {{"-h", NULL}, {"--help", NULL}};
  for (int i = 0; i < 2; i++) {
    char *out = info_run(helps[i], NULL, 0);
    cr_expect(strstr(out, "usage: zcoll_info"), "%s", out);
    for (const char *const *m = (const char *const[]){"-d", "-b", "-s -np P", "-c", NULL}; *m; m++)
      cr_expect(strstr(out, *m), "%s not in\n%s", *m, out);
    free(out);
  }
  static const struct {
    const char *args[8];
    const char *says;
  } bad[] = {{{"-x"}, "unknown option '-x'"},
             {{"--devices"}, "unknown option '--devices'"},
             {{"extra"}, "unknown argument 'extra'"},
             {{"-s"}, "-s needs -np P"},
             {{"-s", "-np"}, "-np needs a whole number"},
             {{"-s", "-np", "0"}, "-np needs a whole number"},
             {{"-s", "-np", "2", "-f", "1"}, "-f needs a whole number"},
             {{"-s", "-np", "2", "-e", "4X"}, "-e needs a size"},
             {{"-s", "-np", "2", "-b", "1M", "-e", "1K"}, "-b MIN must not exceed -e MAX"},
             {{"-np", "2"}, "only go with -s"}};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char *out = info_run(bad[i].args, NULL, 2);
    cr_expect(strstr(out, bad[i].says), "zcoll_info %s: want '%s' in\n%s", bad[i].args[0],
              bad[i].says, out);
    free(out);
  }
}

Test(info, build_lists_transports_kernels_and_versions) {
  const char *args[] = {"-b", NULL};
  char *out = info_run(args, NULL, 0), line[512], list[512];
  const char *names[16];
  int built[16], n = zcoll_transport_names(names, built, 16);
  cr_assert(line_starting(out, "transports built:", list, sizeof(list)), "%s", out);
  for (int i = 0; i < n; i++) {
    char want[64], vline[64];
    snprintf(want, sizeof(want), " %s", names[i]);
    char *at = strstr(list, want);
    int listed = at && (at[strlen(want)] == '\0' || at[strlen(want)] == ' ');
    cr_expect_eq(listed, built[i], "%s built %d: %s", names[i], built[i], list);
    snprintf(vline, sizeof(vline), "transport %s: %s", names[i], built[i] ? "" : "not built: ");
    if (!strcmp(names[i], "loopback")) continue; /* it runs on nothing but this process */
    cr_expect(line_starting(out, vline, line, sizeof(line)), "no '%s' in\n%s", vline, out);
  }
  cr_expect(strstr(out, "\ntransport ucx: UCX 1."), "%s", out);
  if (line_starting(out, "transport verbs: lib", line, sizeof(line)))
    cr_expect(strstr(line, "libibverbs.so") && strstr(line, "built against libibverbs "), "%s",
              line);
  cr_assert(line_starting(out, "kernels built: generic", line, sizeof(line)), "%s", out);
  char picked[96];
  snprintf(picked, sizeof(picked), "kernel picked: %s ", zcoll__reduce_isa());
  cr_expect(strstr(out, picked), "want '%s' in\n%s", picked, out);
  cr_expect(strstr(line, zcoll__reduce_isa()), "the picked kernel is not built: %s", line);
  free(out);
}

/* -d: what the transports find, then one verdict line per transport of the table, each
 * the transport's own probe. On this machine: no RDMA device, shm and UCX usable. */
Test(info, devices_and_a_verdict_per_transport) {
  const char *args[] = {"-d", NULL};
  char *out = info_run(args, NULL, 0), line[1024];
  const char *names[16];
  int built[16], n = zcoll_transport_names(names, built, 16);
  zcoll_config_t *cfg;
  cr_assert_eq(zcoll_config_create(&cfg), ZCOLL_OK);
  for (int i = 0; i < n; i++) {
    char usable[64], not_usable[64], why[512];
    snprintf(usable, sizeof(usable), "%-8s usable", names[i]);
    snprintf(not_usable, sizeof(not_usable), "%-8s not usable: ", names[i]);
    int yes = line_starting(out, usable, line, sizeof(line)) && !strcmp(line, usable);
    int no = line_starting(out, not_usable, line, sizeof(line));
    cr_expect(yes + no == 1, "%s: one verdict wanted in\n%s", names[i], out);
    zcoll_status_t st = zcoll_transport_usable(cfg, names[i], why, sizeof(why));
    cr_expect_eq(yes, st == ZCOLL_OK, "%s: zcoll_info says %s, the probe %s (%s)", names[i],
                 yes ? "usable" : "not", zcoll_strerror(st), why);
    if (no) cr_expect(strlen(line) > strlen(not_usable) + 3, "no reason: %s", line);
  }
  cr_expect(line_starting(out, "shm      usable", line, sizeof(line)), "%s", out);
  cr_expect(line_starting(out, "ucx      usable", line, sizeof(line)), "%s", out);
  /* Sections of findings: shm's prerequisites, UCX's resources, RDMA ports or their lack. */
  cr_expect(line_starting(out, "shm      ok   memfd_create", line, sizeof(line)), "%s", out);
  cr_expect(line_starting(out, "shm      ok   /proc/<pid>/fd", line, sizeof(line)), "%s", out);
  cr_expect(strstr(out, "\nshm      -    pidfd_getfd ") ||
                strstr(out, "\nshm      ok   pidfd_getfd "),
            "%s", out);
  cr_expect(line_starting(out, "ucx      ok   self/", line, sizeof(line)), "%s", out);
  cr_expect(line_starting(out, "ucx      ok   tcp/", line, sizeof(line)), "%s", out);
  if (built[zcoll__transport_find("verbs")]) {
    int ports = line_starting(out, "verbs    ok   ", line, sizeof(line)) ||
                (line_starting(out, "verbs    no   ", line, sizeof(line)) &&
                 strstr(line, " port "));
    if (ports)
      cr_expect(strstr(line, "MTU ") && strstr(line, "Gb/s") && strstr(line, "GID"), "%s", line);
    else
      cr_expect(line_starting(out, "verbs    no   devices ", line, sizeof(line)) &&
                    line_starting(out, "verbs    not usable: ", line, sizeof(line)),
                "%s", out);
    /* This machine has no RDMA device: the verdict says so (the rxe harness has two). */
    DIR *d = opendir("/sys/class/infiniband");
    struct dirent *e = NULL;
    while (d && (e = readdir(d)) && e->d_name[0] == '.') {
    }
    if (!e)
      cr_expect(line_starting(out, "verbs    not usable: no RDMA device", line, sizeof(line)), "%s",
                out);
    if (d) closedir(d);
  }
  zcoll_config_free(cfg);
  free(out);
}

struct row {
  size_t bytes, chunk;
  int depth;
  char algo[32], rule[256];
};

/* The rows of a -s listing. */
static int parse_selection(const char *out, struct row *rows, int max) {
  int n = 0;
  for (const char *l = out; l && *l && n < max; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    struct row r;
    int used = 0;
    if (l[0] == '#' ||
        sscanf(l, " %zu %31s %zu %d %n", &r.bytes, r.algo, &r.chunk, &r.depth, &used) != 4)
      continue;
    snprintf(r.rule, sizeof(r.rule), "%.*s", (int)strcspn(l + used, "\n"), l + used);
    rows[n++] = r;
  }
  return n;
}

/* zcoll_info -s -np p -b 8 -e 64M -f factor's rows. */
static int selection(int p, const char *factor, const char *const *env, struct row *rows, int max) {
  char np[8];
  snprintf(np, sizeof(np), "%d", p);
  const char *args[] = {"-s", "-np", np, "-b", "8", "-e", "64M", "-f", factor, NULL};
  char *out = info_run(args, env, 0);
  int n = parse_selection(out, rows, max);
  cr_assert_gt(n, 0, "p=%d: no rows\n%s", p, out);
  free(out);
  return n;
}

/* zcoll_info -s at p = 2..8 over every power of two from 8 B to 64 MiB against the
 * selector itself, with the built-in table, a tuning file, and ZCOLL_ALGO. */
static void selection_agrees(const char *tuning, const char *forced) {
  char tenv[600], aenv[64];
  snprintf(tenv, sizeof(tenv), "ZCOLL_TUNING_FILE=%s", tuning);
  snprintf(aenv, sizeof(aenv), "ZCOLL_ALGO=%s", forced);
  const char *env[] = {tenv, aenv, NULL};
  struct zcoll__selector sel;
  cr_assert_eq(zcoll__selector_init(&sel, tuning), ZCOLL_OK, "%s", zcoll_last_error());
  for (int p = 2; p <= 8; p++) {
    struct row rows[64];
    int n = selection(p, "2", env, rows, 64);
    cr_assert_eq(n, 24, "p=%d: %d rows", p, n); /* 8 B .. 64 MiB */
    for (int i = 0; i < n; i++) {
      cr_expect_eq(rows[i].bytes, (size_t)8 << i, "p=%d row %d", p, i);
      char why[256];
      int a = zcoll__select(&sel, p, rows[i].bytes, why, sizeof(why));
      /* Small vectors on one host: the mailboxes, whatever the table says (onehost.h). */
      int oh = !strcmp(forced, "auto") && rows[i].bytes <= ZCOLL_ONEHOST_MAX_BYTES;
      const char *want = strcmp(forced, "auto") ? forced : oh ? "onehost" : zcoll__algos[a]->name;
      cr_expect_str_eq(rows[i].algo, want, "p=%d %zu bytes", p, rows[i].bytes);
      if (oh)
        cr_expect(strncmp(rows[i].rule, "every rank on one host", 22) == 0, "p=%d %zu bytes: %s", p,
                  rows[i].bytes, rows[i].rule);
      else
        cr_expect_str_eq(rows[i].rule, strcmp(forced, "auto") ? "forced by ZCOLL_ALGO" : why,
                         "p=%d %zu bytes", p, rows[i].bytes);
      cr_expect(rows[i].chunk > 0 && rows[i].depth > 0, "p=%d %zu bytes", p, rows[i].bytes);
    }
  }
  zcoll__selector_free(&sel);
}

Test(info, selection_is_the_selectors) {
  selection_agrees("", "auto");
  selection_agrees("", "tree");
  char path[] = "/tmp/zcoll-info-tuning-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  const char *rules = "# measured here\n2 4 1K tree\n1 inf 1M ring\n";
  cr_assert_eq(write(fd, rules, strlen(rules)), (ssize_t)strlen(rules));
  close(fd);
  selection_agrees(path, "auto"); /* p > 4 past 1 MiB: no rule, ring */
  remove(path);
}

/* -t: the other collectives' choices, from the same code (select.c); an unknown one is a
 * clear error. Allgather and reduce-scatter: recursive doubling / halving for a power of
 * two up to 256 KiB, the ring otherwise; the reduce, the tree toward the root where the
 * allreduce's choice is latency-bound. */
Test(info, selection_of_other_collectives) {
  static const char *const colls[] = {"allgather", "reduce_scatter"};
  static const char *const logs[] = {"recursive_doubling", "recursive_halving"};
  for (int c = 0; c < 2; c++)
    for (int p = 2; p <= 8; p++) {
      char np[8];
      snprintf(np, sizeof(np), "%d", p);
      const char *args[] = {"-s", "-np", np, "-t", colls[c], "-b", "8", "-e", "64M", NULL};
      char *out = info_run(args, NULL, 0);
      struct row rows[32];
      int n = parse_selection(out, rows, 32);
      cr_assert_eq(n, 24, "%s p=%d: %d rows\n%s", colls[c], p, n, out);
      for (int i = 0; i < n; i++) {
        int pow2 = (p & (p - 1)) == 0;
        const char *want = pow2 && rows[i].bytes <= (256u << 10) ? logs[c] : "ring";
        cr_expect_str_eq(rows[i].algo, want, "%s p=%d %zu bytes", colls[c], p, rows[i].bytes);
      }
      free(out);
    }
  const char *reduce[] = {"-s", "-np", "4", "-t", "reduce", "-e", "8", NULL};
  char *out = info_run(reduce, NULL, 0);
  cr_expect(strstr(out, "# reduce of 4 ranks") && strstr(out, "  tree ") &&
                strstr(out, "the tree toward the root, where the allreduce's choice is latency-"
                            "bound: built-in table rule 1"),
            "%s", out);
  free(out);
  /* The exchanges (issue 40): gather's blocks of at most 2 KiB by binomial tree at p >= 4. */
  const char *gather[] = {"-s", "-np", "4", "-t", "gather", "-b", "2048", "-e", "4096", NULL};
  out = info_run(gather, NULL, 0);
  struct row grows[4];
  cr_assert_eq(parse_selection(out, grows, 4), 2, "%s", out);
  cr_expect_str_eq(grows[0].algo, "binomial", "%s", out);
  cr_expect_str_eq(grows[1].algo, "direct", "%s", out);
  free(out);
  /* Every one of the rest of MPI's set, sizes one block: alltoall by Bruck's for blocks of
   * at most 256 bytes on 6 ranks or more, gather and scatter by the tree for blocks of at
   * most 2 KiB on 4 or more; the others their one algorithm. */
  static const struct {
    const char *coll, *small, *large; /* for blocks of at most `limit` bytes, and over */
    int min_ranks;                    /* from which small blocks take `small` */
    size_t limit;
  } xchgs[] = {
      {"alltoall", "bruck", "pairwise", 6, 256}, {"alltoallv", "pairwise", "pairwise", 0, 0},
      {"allgatherv", "ring", "ring", 0, 0},      {"gather", "binomial", "direct", 4, 2048},
      {"gatherv", "direct", "direct", 0, 0},     {"scatter", "binomial", "direct", 4, 2048},
      {"scatterv", "direct", "direct", 0, 0}};
  for (size_t c = 0; c < sizeof xchgs / sizeof xchgs[0]; c++)
    for (int p = 3; p <= 8; p += 5) {
      char np[8], head[64];
      snprintf(np, sizeof(np), "%d", p);
      const char *args[] = {"-s", "-np", np, "-t", xchgs[c].coll, "-b", "64", "-e", "4K", NULL};
      out = info_run(args, NULL, 0);
      snprintf(head, sizeof head, "# %s of %d ranks", xchgs[c].coll, p);
      cr_expect(strstr(out, head) != NULL, "%s", out);
      struct row xrows[8];
      cr_assert_eq(parse_selection(out, xrows, 8), 7, "%s", out); /* 64 .. 4096 */
      for (int i = 0; i < 7; i++) {
        int small = p >= xchgs[c].min_ranks && xrows[i].bytes <= xchgs[c].limit;
        cr_expect_str_eq(xrows[i].algo, small ? xchgs[c].small : xchgs[c].large,
                         "%s p=%d %zu bytes\n%s", xchgs[c].coll, p, xrows[i].bytes, out);
      }
      free(out);
    }
  const char *bad[] = {"-s", "-np", "4", "-t", "alltoallw", NULL};
  out = info_run(bad, NULL, 2);
  cr_expect(strstr(out, "unknown collective 'alltoallw'") && !strstr(out, "# alltoallw"), "%s",
            out);
  free(out);
}

/* The algorithm column of real jobs at p = 2..8, every power of two from 8 B to 64 MiB, and the
 * chunk and depth their ranks log, against zcoll_info -s for the same rank count and sweep.
 * ZCOLL_TEST_SAMPLE=1 (CI's sanitizer pass): p = 2 and 3, the plain pass the rest (sample.h):
 * the job's cost grows with p, 64 MiB on every rank, and the paths it checks do not. */
Test(info, selection_is_what_zcoll_perf_runs, .timeout = 600) {
  for (int p = 2; p <= 8; p++) {
    if (!zt_keep(p <= 3)) continue;
    char np[8];
    snprintf(np, sizeof(np), "%d", p);
    struct row rows[32];
    int n = selection(p, "2", NULL, rows, 32);
    cr_assert_eq(n, 24, "p=%d: %d rows", p, n); /* every power of two, 8 B .. 64 MiB */
    const char *argv[] = {SP_BIN("zcoll_run"),
                          "-np",
                          np,
                          "--timeout",
                          "120",
                          SP_BIN("zcoll_perf"),
                          "-b",
                          "8",
                          "-e",
                          "64M",
                          "-f",
                          "2",
                          "-n",
                          "1",
                          "-w",
                          "0",
                          "-c",
                          "0",
                          NULL};
    const char *env[] = {"ZCOLL_LOG=info", NULL};
    struct sp_result r = sp_run(argv, env, 90);
    cr_assert_eq(r.status, 0, "%s", r.out);
    int seen = 0, ready = 0;
    for (const char *l = r.out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
      char line[512], *tok[24], *save = NULL;
      snprintf(line, sizeof(line), "%.*s", (int)strcspn(l, "\n"), l);
      /* Each rank's init line: "... chunk 128 KiB, depth 8" (B, KiB or MiB). */
      const char *c = strstr(line, "chunk "), *d = strstr(line, "depth ");
      if (c && d && c[6] >= '0' && c[6] <= '9' && d[6] >= '0' && d[6] <= '9') {
        char *unit;
        unsigned long long chunk = strtoull(c + 6, &unit, 10);
        if (!strncmp(unit, " KiB", 4))
          chunk <<= 10;
        else if (!strncmp(unit, " MiB", 4))
          chunk <<= 20;
        cr_expect_eq(chunk, rows[0].chunk, "%s", line);
        cr_expect_eq(strtol(d + 6, NULL, 10), rows[0].depth, "%s", line);
        ready++;
      }
      int k = 0;
      for (char *t = strtok_r(line, " \t", &save); t && k < 24; t = strtok_r(NULL, " \t", &save))
        tok[k++] = t;
      if (k < 3 || strspn(tok[0], "0123456789") != strlen(tok[0])) continue;
      cr_assert_lt(seen, n, "%s", r.out);
      cr_expect_eq(strtoull(tok[0], NULL, 10), rows[seen].bytes, "%s", r.out);
      cr_expect_str_eq(tok[k - 1], rows[seen].algo, "p=%d %zu bytes:\n%s", p, rows[seen].bytes,
                       r.out);
      seen++;
    }
    cr_expect_eq(seen, n, "p=%d: %d rows of %d\n%s", p, seen, n, r.out);
    cr_expect_eq(ready, p, "p=%d: want every rank's chunk and depth at ZCOLL_LOG=info:\n%s", p,
                 r.out);
    free(r.out);
  }
}

/* Where RDMA devices exist (the rxe harness sets ZCOLL_TEST_REQUIRE_RDMA=1 and has two):
 * every device's port is listed ACTIVE with its MTU, speed and GID, RoCE ports by their
 * RoCE v2 GID (port.c prefers v2), one is the port zcoll takes, and verbs is usable. */
Test(info, rdma_ports_where_there_are_devices) {
  const char *names[16];
  int built[16];
  zcoll_transport_names(names, built, 16);
  if (!built[zcoll__transport_find("verbs")]) cr_skip_test("this build has no verbs transport");
  char devs[8][64];
  int ndev = 0;
  DIR *d = opendir("/sys/class/infiniband");
  for (struct dirent *e; d && (e = readdir(d)) && ndev < 8;)
    if (e->d_name[0] != '.') snprintf(devs[ndev++], sizeof(devs[0]), "%.63s", e->d_name);
  if (d) closedir(d);
  if (!ndev) {
    const char *req = getenv("ZCOLL_TEST_REQUIRE_RDMA");
    if (req && !strcmp(req, "1")) cr_assert_fail("ZCOLL_TEST_REQUIRE_RDMA=1 but no RDMA device");
    cr_skip_test("no RDMA device here (ci/rxe.sh provides soft-RoCE ones)");
  }
  const char *args[] = {"-d", NULL};
  char *out = info_run(args, NULL, 0), line[1024];
  for (int i = 0; i < ndev; i++) {
    char want[96];
    snprintf(want, sizeof(want), "verbs    ok   %.63s port ", devs[i]);
    cr_expect(line_starting(out, want, line, sizeof(line)), "no '%s' in\n%s", want, out);
    cr_expect(strstr(line, " ACTIVE, ") && strstr(line, ", MTU ") && strstr(line, " Gb/s, ") &&
                  strstr(line, "GID index "),
              "%s", line);
    if (strstr(line, "Ethernet")) cr_expect(strstr(line, "(RoCE v2, "), "%s", line);
  }
  const char *mine = strstr(out, "; zcoll uses this port\n");
  cr_expect(mine && !strstr(mine + 1, "; zcoll uses this port\n"), "one port wanted:\n%s", out);
  cr_expect(line_starting(out, "verbs    usable", line, sizeof(line)), "%s", out);
  free(out);
}
