/* zcoll_perf as it runs: 2 ranks over shm under zcoll_run, a small sweep (8 B .. 256 KiB)
 * with every element checked, once per mode of nccl-tests' flags and for --overlap; and
 * -t broadcast on 3 ranks over shm and UCX, from two roots, across the 256 KiB switch
 * from tree to chain; the exchanges (-t alltoall, alltoallv, allgatherv, gather, scatter) at
 * p = 2 and 3 and, where the choice depends on the block, gather at p = 4; their algorithm
 * column zcoll's choice. Each run must exit 0, say "Out of bounds values : 0 OK", and every
 * row must have the shape its mode gives it, numbers where numbers belong, N/A where
 * nothing was measured and 0 in every #wrong column. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <unistd.h>

#include "spawn.h"

#define SIZES 6 /* 8, 64, 512, 4K, 32K, 256K: -b 8 -e 1M -f 8 */

/* The job: how many ranks, over which transport, and the sweep. */
struct job {
  const char *np, *transport;
  const char *sweep[8]; /* -b, -e and -f with their values */
};

/* 8, 64, 512, 4K, 32K, 256K */
static const struct job small_job = {
    "2", "ZCOLL_TRANSPORT=shm", {"-b", "8", "-e", "1M", "-f", "8"}};

/* Runs the job with extra arguments (NULL-terminated) and extra environment entries;
 * returns the output (stdout and stderr), after checking the exit status and footer. */
static char *run_job(const struct job *job, const char *const *extra,
                     const char *const *env_extra) {
  const char *argv[40] = {SP_BIN("zcoll_run"),
                          "-np",
                          job->np,
                          "--timeout",
                          "150",
                          SP_BIN("zcoll_perf"),
                          "-n",
                          "3",
                          "-w",
                          "1",
                          "-c",
                          "1"};
  size_t n = 0;
  while (argv[n]) n++;
  for (size_t i = 0; i < 8 && job->sweep[i]; i++) argv[n++] = job->sweep[i];
  for (size_t i = 0; extra[i] && n < 39; i++) argv[n++] = extra[i];
  const char *env[8] = {job->transport};
  for (size_t i = 0; env_extra && env_extra[i] && i < 6; i++) env[i + 1] = env_extra[i];
  struct sp_result r = sp_run(argv, env, 180);
  cr_assert_eq(r.status, 0, "exit %d\n%s", r.status, r.out ? r.out : "");
  cr_expect(strstr(r.out, "# Out of bounds values : 0 OK") != NULL, "%s", r.out);
  return r.out;
}

/* A number and nothing else, in [lo, hi]. */
static bool number_in(const char *tok, double lo, double hi) {
  char *end;
  double v = strtod(tok, &end);
  return end != tok && *end == '\0' && v >= lo && v <= hi;
}

/* What a row of the table must look like. */
struct shape {
  int fields;           /* whitespace-separated, the algorithm included */
  int wrong[2], nwrong; /* where the #wrong counts are */
  int num[4], nnum;     /* further columns that must be numbers >= 0 */
  int percent;          /* a column in 0..100, or -1 */
  int na[4], nna;       /* columns that must say N/A (not measured) */
  /* optional: what the last column (the algorithm) must say for a row of that many bytes */
  const char *(*algorithm)(double bytes);
};

/* Checks every data row against the shape; returns how many tables and rows there were. */
static void check_rows(const char *out, const struct shape *sh, int *tables, int *rows) {
  *tables = *rows = 0;
  for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    size_t len = strcspn(l, "\n");
    char line[512];
    if (len >= sizeof line) continue;
    memcpy(line, l, len);
    line[len] = '\0';
    if (strncmp(line, "#       size", 12) == 0) ++*tables;
    char *tok[24], *save = NULL;
    int n = 0;
    for (char *t = strtok_r(line, " \t", &save); t && n < 24; t = strtok_r(NULL, " \t", &save))
      tok[n++] = t;
    if (n == 0 || tok[0][0] < '0' || tok[0][0] > '9' ||
        strspn(tok[0], "0123456789") != strlen(tok[0]))
      continue; /* a comment, or a line the library logged */
    ++*rows;
    cr_expect_eq(n, sh->fields, "row with %d fields, want %d: %.*s", n, sh->fields, (int)len, l);
    if (n != sh->fields) continue;
    for (int k = 0; k < sh->nwrong; k++)
      cr_expect_str_eq(tok[sh->wrong[k]], "0", "#wrong in column %d: %.*s", sh->wrong[k], (int)len,
                       l);
    for (int k = 0; k < sh->nnum; k++)
      cr_expect(number_in(tok[sh->num[k]], 0.0, 1e12), "column %d is not a number: %.*s",
                sh->num[k], (int)len, l);
    if (sh->percent >= 0)
      cr_expect(number_in(tok[sh->percent], 0.0, 100.0), "column %d not in 0..100: %.*s",
                sh->percent, (int)len, l);
    for (int k = 0; k < sh->nna; k++)
      cr_expect_str_eq(tok[sh->na[k]], "N/A", "column %d: %.*s", sh->na[k], (int)len, l);
    if (sh->algorithm)
      cr_expect_str_eq(tok[n - 1], sh->algorithm(strtod(tok[0], NULL)), "%.*s", (int)len, l);
  }
}

/* size count type redop root | time algbw busbw #wrong | time algbw busbw #wrong | algo */
static const struct shape table = {14, {8, 12}, 2, {5, 6, 9, 10}, 4, -1};
/* ... with cpu(us) after each time */
static const struct shape table_cpu = {16, {9, 14}, 2, {5, 6, 10, 11}, 4, -1};
/* size count type redop | comm compute overall overlap #wrong | algo */
static const struct shape overlap = {10, {8, 0}, 1, {4, 5, 6, 7}, 4, 7};
static const struct shape overlap_cpu = {11, {9, 0}, 1, {4, 5, 6, 7}, 4, 8};

/* zcoll's choice: the tree below 256 KiB, the chain from there */
static const char *bcast_auto(double bytes) { return bytes < 262144.0 ? "tree" : "chain"; }

/* size count type none root | N/A x4 | time algbw busbw #wrong | algo (tree or chain) */
static const struct shape bcast = {14, {12, 0},      1, {1, 9, 10, 11}, 4,
                                   -1, {5, 6, 7, 8}, 4, bcast_auto};

/* Returns the output for more checks (free it). */
static char *expect_job_tables(const struct job *job, const char *const *extra,
                               const char *const *env, const struct shape *sh, int want_tables,
                               int sizes) {
  char *out = run_job(job, extra, env);
  int tables, rows;
  check_rows(out, sh, &tables, &rows);
  cr_expect_eq(tables, want_tables, "%d tables, want %d:\n%s", tables, want_tables, out);
  cr_expect_eq(rows, want_tables * sizes, "%d rows, want %d:\n%s", rows, want_tables * sizes, out);
  return out;
}

static char *expect_tables(const char *const *extra, const char *const *env, const struct shape *sh,
                           int want_tables) {
  return expect_job_tables(&small_job, extra, env, sh, want_tables, SIZES);
}

/* The run's banner says how it measured. */
static void expect_banner(const char *const *extra, const char *const *env, const struct shape *sh,
                          int want_tables, const char *banner) {
  char *out = expect_tables(extra, env, sh, want_tables);
  cr_expect(strstr(out, banner) != NULL, "no '%s' in:\n%s", banner, out);
  free(out);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NONE ((const char *const[]){NULL})

TestSuite(perf_run, .timeout = 300);

Test(perf_run, nonblocking) {
  expect_banner(ARGS("-z", "0"), NULL, &table, 1, "blocking 0 (-z)");
  expect_banner(NONE, NULL, &table, 1, "blocking 0 (-z)"); /* the default */
}

Test(perf_run, blocking) { expect_banner(ARGS("-z", "1"), NULL, &table, 1, "blocking 1 (-z)"); }

Test(perf_run, aggregated) {
  expect_banner(ARGS("-m", "3"), NULL, &table, 1, "agg iters: 3 ");
  expect_banner(ARGS("-m", "3", "-z", "1"), NULL, &table, 1, "agg iters: 3 ");
}

/* --group 1: each iteration's -m calls queued in one group (small allreduces fused), every
 * element still checked; sendrecv as a queued zcoll_recv and zcoll_send at p = 3 (every
 * rank's send first: only the group keeps that from waiting for ever). */
Test(perf_run, grouped) {
  expect_banner(ARGS("-m", "50", "--group", "1"), NULL, &table, 1,
                "each iteration one group (--group)");
  const struct job job = {"3", "ZCOLL_TRANSPORT=shm", {"-b", "96", "-e", "96K", "-f", "32"}};
  char *out = run_job(&job, ARGS("-t", "sendrecv", "-m", "4", "--group", "1", "-z", "1"), NULL);
  cr_expect(strstr(out, "each iteration one group (--group)") != NULL, "%s", out);
  cr_expect(strstr(out, "\n       98304 ") != NULL, "no 96K row:\n%s", out);
  free(out);
}

Test(perf_run, two_cycles) { expect_banner(ARGS("-N", "2"), NULL, &table, 2, "# cycle 2 of 2"); }

Test(perf_run, cputime) { expect_banner(ARGS("-C", "1"), NULL, &table_cpu, 1, "      cpu"); }

Test(perf_run, registered) { expect_banner(ARGS("-R", "1"), NULL, &table, 1, "registered 1 (-R)"); }

Test(perf_run, rank0_and_min) {
  expect_banner(ARGS("-a", "0"), NULL, &table, 1, "average 0: rank 0's (-a)");
  expect_banner(ARGS("-a", "2", "-T", "60"), NULL, &table, 1, "average 2: min over ranks (-a)");
}

Test(perf_run, overlap) {
  expect_banner(ARGS("--overlap"), NULL, &overlap, 1, "# Avg overlap (%)");
  expect_banner(ARGS("--overlap", "-C", "1", "-d", "half", "-o", "avg"), NULL, &overlap_cpu, 1,
                "   half     avg");
}

Test(perf_run, overlap_with_progress_thread) {
  const char *const env[] = {"ZCOLL_PROGRESS=thread", NULL};
  expect_banner(ARGS("--overlap"), env, &overlap, 1, ", progress thread,");
  expect_banner(ARGS("--overlap=idle"), env, &overlap, 1, "overlap mode (idle: compute sleeps)");
  expect_banner(ARGS("--overlap=busy"), env, &overlap, 1, "overlap mode (busy: compute computes)");
}

/* -t broadcast: 3 ranks, 16K 64K 256K 1M (tree, tree, chain, chain), each row checked on
 * every rank; from root 0 and root 1, non-blocking and blocking. */
static void broadcast_job(const char *transport, const char *banner) {
  const struct job job = {"3", transport, {"-b", "16K", "-e", "1M", "-f", "4"}};
  const struct {
    const char *const *args;
    const char *banner, *root_column;
  } runs[] = {
      {ARGS("-t", "broadcast"), "# zcoll_perf: broadcast from root 0 (-r), blocking 0 (-z)",
       "   none       0  "},
      {ARGS("-t", "broadcast", "-r", "1", "-z", "1"),
       "# zcoll_perf: broadcast from root 1 (-r), blocking 1 (-z)", "   none       1  "},
      {ARGS("--coll", "broadcast", "--root", "2", "-R", "1", "-o", "all"),
       "# zcoll_perf: broadcast from root 2 (-r), blocking 0 (-z)", "   none       2  "},
  };
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    char *out = expect_job_tables(&job, runs[i].args, NULL, &bcast, 1, 4);
    cr_expect(strstr(out, banner) != NULL, "no '%s' in:\n%s", banner, out);
    cr_expect(strstr(out, runs[i].banner) != NULL, "no '%s' in:\n%s", runs[i].banner, out);
    cr_expect(strstr(out, runs[i].root_column) != NULL, "no '%s' in:\n%s", runs[i].root_column,
              out);
    cr_expect(strstr(out, "#       size         count      type   redop    root") != NULL, "%s",
              out);
    free(out);
  }
}

Test(perf_run, broadcast_shm) {
  broadcast_job("ZCOLL_TRANSPORT=shm", "# zcoll_perf: transport shm, algorithm auto, ranks 3,");
}

/* ZCOLL_TUNING_FILE's broadcast rules reach the broadcast (and its algorithm column):
 * the tree where the built-in table would take the chain. */
static const char *bcast_tree(double bytes) { return (void)bytes, "tree"; }

Test(perf_run, broadcast_tuning_file) {
  char path[] = "/tmp/zcoll_perf_tuning_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  const char rules[] = "broadcast 1 inf inf tree\n1 inf inf ring\n";
  cr_assert_eq(write(fd, rules, sizeof rules - 1), (ssize_t)(sizeof rules - 1));
  close(fd);
  char env0[64];
  snprintf(env0, sizeof env0, "ZCOLL_TUNING_FILE=%s", path);
  const char *const env[] = {env0, NULL};
  const struct job job = {"3", "ZCOLL_TRANSPORT=shm", {"-b", "64K", "-e", "1M", "-f", "4"}};
  struct shape sh = bcast;
  sh.algorithm = bcast_tree;
  free(expect_job_tables(&job, ARGS("-t", "broadcast", "-r", "2"), env, &sh, 1, 3));
  unlink(path);
}

Test(perf_run, broadcast_ucx) {
  broadcast_job("ZCOLL_TRANSPORT=ucx", "# zcoll_perf: transport ucx, algorithm auto, ranks 3,");
}

/* ---- -F, -v, -a and the rank list ---------------------------------------------------- */

/* Splits line at commas in place (no quoting: no field has a comma); returns the count. */
static int csv_split(char *line, char **f, int max) {
  int n = 0;
  for (char *p = line; n < max;) {
    f[n++] = p;
    char *c = strchr(p, ',');
    if (!c) break;
    *c = '\0';
    p = c + 1;
  }
  return n;
}

/* -F: the file holds the table as CSV, read back as a reader with header=[0, 1, 2] would:
 * three header rows of the same width (group, name, unit), then a row per size of the
 * printed table, with the same sizes, numbers in the measured columns and 0 wrong. */
static void expect_csv(const char *const *extra, bool cpu) {
  char path[] = "/tmp/zcoll_perf_csv_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  const char *args[16] = {"-F", path};
  size_t n = 2;
  for (size_t i = 0; extra[i]; i++) args[n++] = extra[i];
  args[n] = NULL;
  char *out = expect_tables(args, NULL, cpu ? &table_cpu : &table, 1);
  FILE *f = fopen(path, "r");
  cr_assert(f, "no %s", path);
  static const char *const names[] = {"size",  "count", "type",   "redop",    "root", "time",
                                      "cpu",   "algbw", "busbw",  "#wrong",   "time", "cpu",
                                      "algbw", "busbw", "#wrong", "algorithm"};
  const int width = cpu ? 16 : 14;
  char line[1024], *fld[32];
  int rows = 0;
  for (int l = 0; fgets(line, sizeof line, f); l++) {
    line[strcspn(line, "\n")] = '\0';
    int k = csv_split(line, fld, 32);
    cr_expect_eq(k, width, "CSV line %d has %d fields, want %d", l, k, width);
    if (k != width) continue;
    if (l == 0) {
      cr_expect_str_eq(fld[0], "");
      cr_expect_str_eq(fld[5], "out-of-place");
      cr_expect_str_eq(fld[width - 2], "in-place");
    } else if (l == 1) {
      for (int i = 0, j = 0; i < width; i++, j++) {
        if (!cpu && (j == 6 || j == 11)) j++; /* no cpu columns */
        cr_expect_str_eq(fld[i], names[j], "header column %d", i);
      }
    } else if (l == 2) {
      cr_expect_str_eq(fld[0], "(B)");
      cr_expect_str_eq(fld[5], "(us)");
    } else {
      rows++;
      for (int i = 0; i < width - 1; i++) {
        if (i >= 2 && i <= 3) continue; /* type, redop */
        char *end;
        double v = strtod(fld[i], &end);
        cr_expect(end != fld[i] && *end == '\0' && (i == 4 || v >= 0.0),
                  "CSV row %d column %d is not a number: '%s'", rows, i, fld[i]);
      }
      cr_expect_str_eq(fld[2], "float");
      cr_expect_str_eq(fld[cpu ? 9 : 8], "0", "#wrong out of place, row %d", rows);
      cr_expect_str_eq(fld[width - 2], "0", "#wrong in place, row %d", rows);
      /* the same size as the printed table's row of that rank */
      char want[64];
      snprintf(want, sizeof want, "\n%12s  %12s", fld[0], fld[1]);
      cr_expect(strstr(out, want) != NULL, "no table row for size %s:\n%s", fld[0], out);
    }
  }
  fclose(f);
  unlink(path);
  cr_expect_eq(rows, SIZES, "%d CSV rows, want %d", rows, SIZES);
  free(out);
}

Test(perf_run, csv) { expect_csv(NONE, false); }
Test(perf_run, csv_with_cputime) { expect_csv(ARGS("-C", "1", "-z", "1"), true); }

/* One table row and the -v lines under it: the table's time columns, the ranks' own. */
struct vrow {
  double table[2];
  double rank[8][2];
  unsigned long timed[8][2];
  int nranks;
};

/* The rows of a -v run with np ranks. */
static int parse_verbose(const char *out, struct vrow *rows, int max) {
  int n = -1;
  for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    char tok[14][32];
    if (sscanf(l, "%31s %31s %31s %31s %31s %31s %31s %31s %31s %31s %31s %31s %31s %31s", tok[0],
               tok[1], tok[2], tok[3], tok[4], tok[5], tok[6], tok[7], tok[8], tok[9], tok[10],
               tok[11], tok[12], tok[13]) == 14 &&
        l[0] == ' ' && n + 1 < max) {
      struct vrow *r = &rows[++n];
      r->table[0] = strtod(tok[5], NULL);
      r->table[1] = strtod(tok[9], NULL);
      r->nranks = 0;
      continue;
    }
    int rk;
    double t0, t1;
    unsigned long c0, c1;
    if (n >= 0 &&
        sscanf(l,
               "#   rank %d: time %lf %lf us (out of place, in place), timed "
               "collectives %lu %lu",
               &rk, &t0, &t1, &c0, &c1) == 5 &&
        rk == rows[n].nranks && rk < 8) {
      rows[n].rank[rk][0] = t0;
      rows[n].rank[rk][1] = t1;
      rows[n].timed[rk][0] = c0;
      rows[n].timed[rk][1] = c1;
      rows[n].nranks++;
    }
  }
  return n + 1;
}

/* What -a makes of the ranks' times, within the table's rounding (2 decimals below 100 us,
 * 1 below 10 ms, none above) and -v's (3 decimals). */
static void expect_average(int a, const struct vrow *r, int k) {
  double want = a == 0 ? r->rank[0][k] : a == 2 ? 1e300 : a == 3 ? -1e300 : 0.0;
  for (int i = 0; i < r->nranks && a != 0; i++) {
    double t = r->rank[i][k];
    want = a == 1 ? want + t / r->nranks : a == 2 ? (t < want ? t : want) : (t > want ? t : want);
  }
  double tol = (want >= 10000.0 ? 0.5 : want >= 100.0 ? 0.05 : 0.005) + 0.001;
  cr_expect(fabs(r->table[k] - want) <= tol, "-a %d, column %d: table %.3f, ranks give %.3f", a, k,
            r->table[k], want);
}

/* -v prints each rank's own times; the table's are their rank 0 / mean / min / max (-a),
 * and each rank's timed loops issued -n x -m collectives, blocking or not. */
Test(perf_run, verbose_average_and_agg_counts) {
  const struct job job = {"3", "ZCOLL_TRANSPORT=shm", {"-b", "8", "-e", "64K", "-f", "64"}};
  static const char *const mode[][4] = {{"-a", "0", "-m", "1"},
                                        {"-a", "1", "-m", "4"},
                                        {"-a", "2", "-m", "3"},
                                        {"-a", "3", "-m", "2"}};
  for (int a = 0; a < 4; a++) {
    for (int z = 0; z < 2; z++) {
      const char *extra[] = {"-v",       mode[a][0], mode[a][1],    mode[a][2],
                             mode[a][3], "-z",       z ? "1" : "0", NULL};
      char *out = run_job(&job, extra, NULL);
      struct vrow rows[8];
      int n = parse_verbose(out, rows, 8);
      cr_expect_eq(n, 3, "-a %d: %d rows:\n%s", a, n, out);
      const unsigned long want = 3UL * strtoul(mode[a][3], NULL, 10); /* -n 3 */
      for (int i = 0; i < n; i++) {
        cr_expect_eq(rows[i].nranks, 3, "-a %d row %d: %d rank lines:\n%s", a, i, rows[i].nranks,
                     out);
        for (int k = 0; k < 2; k++) expect_average(a, &rows[i], k);
        for (int r = 0; r < rows[i].nranks; r++)
          cr_expect(rows[i].timed[r][0] == want && rows[i].timed[r][1] == want,
                    "rank %d timed %lu and %lu collectives, want %lu:\n%s", r, rows[i].timed[r][0],
                    rows[i].timed[r][1], want, out);
      }
      free(out);
    }
  }
}

/* nccl-tests' "# Using devices": one line per rank, in rank order, with its own pid, this
 * host, the transport and the device. */
Test(perf_run, rank_list) {
  const struct job job = {"3", "ZCOLL_TRANSPORT=shm", {"-b", "8", "-e", "8"}};
  char *out = run_job(&job, NONE, NULL);
  char host[64];
  cr_assert_eq(gethostname(host, sizeof host), 0);
  const char *l = strstr(out, "# Using devices\n");
  cr_assert(l, "%s", out);
  l = strchr(l, '\n') + 1;
  long pids[3];
  for (int r = 0; r < 3; r++, l = strchr(l, '\n') + 1) {
    int rank;
    long pid;
    char h[64], tl[32], dev[32];
    cr_assert_eq(
        sscanf(l, "#  Rank %d Pid %ld on %63s transport %31s device %31s", &rank, &pid, h, tl, dev),
        5, "%s", out);
    cr_expect_eq(rank, r);
    cr_expect_str_eq(h, host);
    cr_expect_str_eq(tl, "shm");
    cr_expect_str_eq(dev, "-");
    pids[r] = pid;
    for (int q = 0; q < r; q++) cr_expect_neq(pids[q], pid, "ranks %d and %d: pid %ld", q, r, pid);
  }
  free(out);
}

/* The 96K row's out-of-place busbw is its algbw * (p-1)/p, nccl-tests' factor for the
 * exchanges (within the table's rounding to 0.01). */
static void expect_exchange_busbw(const char *out, int np) {
  const char *row = strstr(out, "\n       98304 ");
  cr_assert(row != NULL, "no 96K row:\n%s", out);
  double algbw = -1.0, busbw = -1.0;
  cr_assert_eq(sscanf(row, " %*s %*s %*s %*s %*s %*s %lf %lf", &algbw, &busbw), 2, "%s", row);
  const double want = algbw * (np - 1) / np;
  cr_expect(fabs(busbw - want) <= 0.011 + 0.01 * want, "busbw %.2f, algbw %.2f, p %d", busbw, algbw,
            np);
}

/* The exchange and rank count being checked, for xchg_auto (check_rows' callback takes
 * only the size). */
static int xchg_coll, xchg_np;

/* zcoll's choice for one block (docs/tools.md, algorithms/select.c), out of place, as the
 * table's column says it: alltoall by Bruck's for blocks of at most 256 bytes on 6 ranks or
 * more, else pairwise; alltoallv pairwise; allgatherv the ring; gather and scatter by a
 * binomial tree for blocks of at most 2 KiB on 4 ranks or more, else direct. */
static const char *xchg_auto(double bytes) {
  const double block = bytes / xchg_np;
  switch (xchg_coll) {
  case 0: return xchg_np >= 6 && block <= 256.0 ? "bruck" : "pairwise";
  case 1: return "pairwise";
  case 2: return "ring";
  default: return xchg_np >= 4 && block <= 2048.0 ? "binomial" : "direct";
  }
}

/* size count type none root | time algbw busbw #wrong (x2, alltoallv's in place N/A) | algo */
static const struct shape xchg = {14, {8, 12}, 2, {5, 6, 9, 10}, 4, -1, {0}, 0, xchg_auto};
static const struct shape xchg_v = {14, {8, 0}, 1, {5, 6}, 2, -1, {9, 10, 11, 12}, 4, xchg_auto};

/* -t alltoall, alltoallv, allgatherv, gather, scatter: nccl-tests' alltoall_perf,
 * gather_perf and scatter_perf tables (size: one rank's total, count: one block), every
 * element checked (-c 1: run_job wants 0 wrong), at p = 2 and 3 over shm, blocking and
 * not; gather and scatter to and from the last rank, so the root column says it;
 * alltoallv's in-place columns N/A (its pattern is uneven both ways); the algorithm column
 * zcoll's choice. */
Test(perf_run, exchanges) {
  static const char *const colls[] = {"alltoall", "alltoallv", "allgatherv", "gather", "scatter"};
  for (size_t c = 0; c < sizeof colls / sizeof colls[0]; c++) {
    for (int np = 2; np <= 3; np++) {
      char nps[4], root[4], row[96], banner[64];
      snprintf(nps, sizeof nps, "%d", np);
      snprintf(root, sizeof root, "%d", np - 1);
      const bool rooted = c >= 3;
      const struct job job = {nps, "ZCOLL_TRANSPORT=shm", {"-b", "96", "-e", "96K", "-f", "32"}};
      char *out = run_job(&job, ARGS("-t", colls[c], "-r", root, "-z", np == 2 ? "0" : "1"), NULL);
      /* 96 B of float: 24 elements, np = 2: 12 per block, np = 3: 8 */
      snprintf(row, sizeof row, "          96  %12d     float    none  %6d", 24 / np,
               rooted ? np - 1 : -1);
      cr_expect(strstr(out, row) != NULL, "%s np=%d: no row '%s'\n%s", colls[c], np, row, out);
      snprintf(banner, sizeof banner, "# zcoll_perf: %s%s", colls[c],
               c == 3   ? " to root"
               : c == 4 ? " from root"
                        : ",");
      cr_expect(strstr(out, banner) != NULL, "no '%s' in:\n%s", banner, out);
      cr_expect(strstr(out, "size is one rank's total") != NULL, "%s", out);
      cr_expect((strstr(out, "N/A") != NULL) == (c == 1), "%s np=%d\n%s", colls[c], np, out);
      expect_exchange_busbw(out, np);
      xchg_coll = (int)c;
      xchg_np = np;
      int tables, rows;
      check_rows(out, c == 1 ? &xchg_v : &xchg, &tables, &rows);
      cr_expect(tables == 1 && rows == 3, "%s np=%d: %d tables, %d rows\n%s", colls[c], np, tables,
                rows, out);
      free(out);
    }
  }
}

/* -t sendrecv: nccl-tests' sendrecv_perf table (size and count: the one message each rank
 * sends to rank + 1 while it receives from rank - 1), every element checked (-c 1: run_job
 * wants 0 wrong), at p = 2 and 3 over shm, non-blocking (two requests a call in the
 * window) and blocking; busbw = algbw; the in-place columns N/A (no such form). */
Test(perf_run, sendrecv) {
  for (int np = 2; np <= 3; np++) {
    char nps[4];
    snprintf(nps, sizeof nps, "%d", np);
    const struct job job = {nps, "ZCOLL_TRANSPORT=shm", {"-b", "96", "-e", "96K", "-f", "32"}};
    char *out = run_job(&job, ARGS("-t", "sendrecv", "-z", np == 2 ? "0" : "1"), NULL);
    cr_expect(strstr(out, "          96            24     float    none      -1") != NULL,
              "np=%d: no 96 B row of 24 elements\n%s", np, out);
    cr_expect(strstr(out, "# zcoll_perf: sendrecv,") != NULL, "%s", out);
    cr_expect(strstr(out, "size is the one message; busbw = algbw") != NULL, "%s", out);
    const char *row = strstr(out, "\n       98304 ");
    cr_assert(row != NULL, "no 96K row:\n%s", out);
    double algbw = -1.0, busbw = -1.0;
    char inplace[8] = "";
    cr_assert_eq(sscanf(row, " %*s %*s %*s %*s %*s %*s %lf %lf %*s %7s", &algbw, &busbw, inplace),
                 3, "%s", row);
    cr_expect(algbw == busbw && strcmp(inplace, "N/A") == 0, "np=%d: %s", np, row);
    free(out);
  }
}

/* The column follows the choice: gather at p = 4 takes the binomial tree for blocks of at
 * most 2 KiB (the 96 B and 3 KiB rows: 24 and 768 bytes a block) and goes direct above
 * (96 KiB: 24 KiB a block). */
Test(perf_run, exchange_algorithm_column) {
  const struct job job = {"4", "ZCOLL_TRANSPORT=shm", {"-b", "96", "-e", "96K", "-f", "32"}};
  char *out = run_job(&job, ARGS("-t", "gather", "-z", "1"), NULL);
  xchg_coll = 3;
  xchg_np = 4;
  int tables, rows;
  check_rows(out, &xchg, &tables, &rows);
  cr_expect(tables == 1 && rows == 3, "%d tables, %d rows\n%s", tables, rows, out);
  cr_expect(strstr(out, "  binomial\n") && strstr(out, "  direct\n"), "%s", out);
  free(out);
}
