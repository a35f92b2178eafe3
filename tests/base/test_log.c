/*
 * Logs an operator can filter: the subsystem of every source file, ZCOLL_LOG_SUBSYS's
 * include and exclude lists, ZCOLL_LOG_FILE's %h/%p/%r as a file per rank of a real job,
 * the host, pid, rank, level and subsystem on every line, the fallback to stderr, and a
 * failed job (verbs forced where it cannot run) that says why in its log alone.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <regex.h>
#include <sys/stat.h>

#include "base/config.h"
#include "base/log.h"
#include "log_lines.h"
#include "spawn.h"

/* ---- in one process ------------------------------------------------------------- */

static void expect_subsys(const char *file, const char *want) {
  cr_expect_str_eq(zcoll__log_subsys_name(zcoll__log_subsys_of(file)), want, "%s", file);
}

Test(log, subsystem_of_a_file) {
  expect_subsys("/src/zcoll/transports/ucx/ep.c", "net");
  expect_subsys("transports/verbs/iface.c", "net");
  expect_subsys("/src/zcoll/lib/comm/transports.c", "net");
  expect_subsys("/src/zcoll/algorithms/select.c", "tune");
  expect_subsys("/src/zcoll/algorithms/ring.c", "coll");
  expect_subsys("/src/zcoll/lib/core/executor.c", "coll");
  expect_subsys("/src/zcoll/lib/core/exec_wait.c", "coll");
  expect_subsys("/src/zcoll/lib/kernels/op.c", "coll");
  expect_subsys("/src/zcoll/lib/boot/bootstrap_wire.c", "boot");
  expect_subsys("/src/zcoll/lib/boot/pmix_client.c", "boot");
  expect_subsys("/src/zcoll/lib/core/rcache.c", "mem");
  expect_subsys("/src/zcoll/lib/core/mr.c", "mem");
  expect_subsys("/src/zcoll/lib/comm/comm_setup.c", "init");
  /* Only the last folders count: a checkout under a folder named like one of ours. */
  expect_subsys("/home/transports/zcoll/lib/boot/bootstrap.c", "boot");
  cr_expect_eq(zcoll__log_subsys_of("/src/zcoll/tools/zcoll_perf.c"), -1);
  cr_expect_eq(zcoll__log_subsys_of("lib/nonesuch/x.c"), -1);
}

/* A new file in lib/, algorithms/ or transports/ must be given a subsystem in
 * lib/base/log.c's table, or its lines would be filed under init without anybody deciding so. */
static int check_dir(const char *dir) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len < 3 || (strcmp(e->d_name + len - 2, ".c") && strcmp(e->d_name + len - 2, ".h")))
      continue;
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    cr_expect_geq(zcoll__log_subsys_of(path), 0, "no subsystem for %s (lib/base/log.c)", path);
    n++;
  }
  closedir(d);
  return n;
}

/* Every folder of dir (lib/'s layers), each checked as above. */
static int check_subdirs(const char *dir) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.' || e->d_type != DT_DIR) continue;
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    n += check_dir(path);
  }
  closedir(d);
  return n;
}

Test(log, every_source_file_has_a_subsystem) {
  int n = check_subdirs(ZCOLL_TEST_SOURCE_DIR "/lib");
  n += check_dir(ZCOLL_TEST_SOURCE_DIR "/algorithms");
  n += check_subdirs(ZCOLL_TEST_SOURCE_DIR "/transports");
  cr_expect_gt(n, 50, "only %d source files found", n);
}

Test(log, subsys_values) {
  zcoll_config_t *cfg;
  cr_assert_eq(zcoll_config_create(&cfg), ZCOLL_OK);
  static const struct {
    const char *text;
    unsigned mask;
  } ok[] = {
      {"all", ZCOLL_LOG_SUBSYS_ALL},
      {"net", 1u << ZCOLL_LOG_SUBSYS_NET},
      {"init,coll", 1u << ZCOLL_LOG_SUBSYS_INIT | 1u << ZCOLL_LOG_SUBSYS_COLL},
      {"^net", ZCOLL_LOG_SUBSYS_ALL & ~(1u << ZCOLL_LOG_SUBSYS_NET)},
      {"^net,MEM",
       ZCOLL_LOG_SUBSYS_ALL & ~(1u << ZCOLL_LOG_SUBSYS_NET | 1u << ZCOLL_LOG_SUBSYS_MEM)},
      {"boot,tune,mem",
       1u << ZCOLL_LOG_SUBSYS_BOOT | 1u << ZCOLL_LOG_SUBSYS_TUNE | 1u << ZCOLL_LOG_SUBSYS_MEM},
  };
  for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
    cr_expect_eq(zcoll_config_set(cfg, "LOG_SUBSYS", ok[i].text), ZCOLL_OK, "%s", ok[i].text);
    cr_expect_eq(cfg->log_subsys, ok[i].mask, "%s: %#x", ok[i].text, cfg->log_subsys);
    char buf[64];
    cr_expect_eq(zcoll_config_get(cfg, "ZCOLL_LOG_SUBSYS", buf, sizeof(buf)), ZCOLL_OK);
    cr_expect_str_eq(buf, ok[i].text);
  }
  static const char *const bad[] = {"", "^", "foo", "net,", "net,,coll", "^all", "net coll"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    cr_expect_eq(zcoll_config_set(cfg, "LOG_SUBSYS", bad[i]), ZCOLL_ERR_INVALID_ARG, "'%s'",
                 bad[i]);
    cr_expect(strstr(zcoll_last_error(), "ZCOLL_LOG_SUBSYS"), "%s", zcoll_last_error());
  }
  cr_expect_eq(zcoll_config_set(cfg, "LOG_FILE", "/tmp/z-%h-%p-%r-%%.log"), ZCOLL_OK);
  cr_expect_eq(zcoll_config_set(cfg, "LOG_FILE", "/tmp/z-%x.log"), ZCOLL_ERR_INVALID_ARG);
  cr_expect(strstr(zcoll_last_error(), "'%x' is not one of"), "%s", zcoll_last_error());
  cr_expect_eq(zcoll_config_set(cfg, "LOG_FILE", "/tmp/z-%"), ZCOLL_ERR_INVALID_ARG);
  zcoll_config_free(cfg);
}

/* The whole of a small file, NUL-terminated ("" if it cannot be read). */
static char *slurp(const char *path) {
  char *buf = calloc(1, 1 << 20);
  FILE *f = fopen(path, "r");
  if (f) {
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
  }
  return buf;
}

static char tmpdir[64];

static void make_tmpdir(void) {
  snprintf(tmpdir, sizeof(tmpdir), "/tmp/zcoll_test_log.XXXXXX");
  cr_assert_not_null(mkdtemp(tmpdir));
}

static void remove_tmpdir(void) {
  DIR *d = opendir(tmpdir);
  if (!d) return;
  for (struct dirent *e; (e = readdir(d));) {
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, e->d_name);
    if (e->d_name[0] != '.') unlink(path);
  }
  closedir(d);
  rmdir(tmpdir);
}

/* Lines from files of every subsystem, through the library's own writer, with the
 * list set as a program would (zcoll_config_set). */
static char *log_every_subsystem(const char *subsys) {
  make_tmpdir();
  char file[128];
  snprintf(file, sizeof(file), "%s/all.log", tmpdir);
  zcoll_config_t *cfg;
  cr_assert_eq(zcoll_config_create(&cfg), ZCOLL_OK);
  cr_assert_eq(zcoll_config_set(cfg, "LOG_FILE", file), ZCOLL_OK);
  cr_assert_eq(zcoll_config_set(cfg, "LOG_SUBSYS", subsys), ZCOLL_OK);
  cr_assert_eq(zcoll_config_set(cfg, "LOG", "info"), ZCOLL_OK);
  static const char *const files[] = {"lib/comm/comm.c",       "lib/boot/bootstrap.c",
                                      "b/transports/shm/ep.c", "lib/core/executor.c",
                                      "a/algorithms/select.c", "lib/core/rcache.c"};
  for (int i = 0; i < 6; i++) zcoll__log_write(ZCOLL_LOG_WARN, files[i], 7, "line %d", i);
  zcoll_config_free(cfg);
  char *text = slurp(file);
  remove_tmpdir();
  return text;
}

Test(log, subsys_list_keeps_only_those) {
  char *t = log_every_subsystem("net,tune");
  cr_expect(strstr(t, " warn net shm/ep.c:7 line 2\n"), "%s", t);
  cr_expect(strstr(t, " warn tune algorithms/select.c:7 line 4\n"), "%s", t);
  for (int i = 0; i < 6; i++) {
    char want[16];
    snprintf(want, sizeof(want), " line %d\n", i);
    cr_expect(!strstr(t, want) == !(i == 2 || i == 4), "line %d: %s", i, t);
  }
  free(t);
}

Test(log, subsys_caret_drops_those) {
  char *t = log_every_subsystem("^net,mem");
  static const char *const want[] = {
      " warn init comm/comm.c:7 line 0\n", " warn boot boot/bootstrap.c:7 line 1\n",
      " warn coll core/executor.c:7 line 3\n", " warn tune algorithms/select.c:7 line 4\n"};
  for (int i = 0; i < 4; i++) cr_expect(strstr(t, want[i]), "no '%s' in:\n%s", want[i], t);
  cr_expect(!strstr(t, "line 2") && !strstr(t, "line 5"), "%s", t);
  free(t);
}

/* The file is appended to (a rank restarted keeps its earlier lines) and not inherited by
 * programs the application executes. */
Test(log, file_appended_and_closed_on_exec) {
  make_tmpdir();
  char file[128];
  snprintf(file, sizeof(file), "%s/r%%r.log", tmpdir);
  char path[128];
  snprintf(path, sizeof(path), "%s/r3.log", tmpdir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs("earlier\n", f);
  fclose(f);
  zcoll__log_set_rank(3);
  zcoll__log_set_file(file);
  zcoll__log_write(ZCOLL_LOG_WARN, "lib/comm/comm.c", 1, "later");
  char *text = slurp(path);
  cr_expect(!strncmp(text, "earlier\n[zcoll ", 15), "%s", text);
  cr_expect(strstr(text, " r3] warn init comm/comm.c:1 later\n"), "%s", text);
  free(text);
  int found = 0;
  DIR *d = opendir("/proc/self/fd");
  cr_assert_not_null(d);
  for (struct dirent *e; (e = readdir(d));) {
    char link[300], target[256] = "";
    snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
    ssize_t n = readlink(link, target, sizeof(target) - 1);
    if (n <= 0 || strcmp(target, path)) continue;
    found++;
    snprintf(link, sizeof(link), "/proc/self/fdinfo/%s", e->d_name);
    char *info = slurp(link);
    const char *flags = strstr(info, "flags:");
    cr_assert_not_null(flags, "%s", info);
    unsigned long fl = strtoul(flags + 6, NULL, 8);
    cr_expect(fl & O_APPEND, "%s", info);
    cr_expect(fl & O_CLOEXEC, "%s", info);
    free(info);
  }
  closedir(d);
  cr_expect_eq(found, 1);
  zcoll__log_set_file(""); /* closes it */
  remove_tmpdir();
}

static int evaluated;
static int side_effect(void) { return ++evaluated; }

Test(log, level_checked_before_the_arguments) {
  zcoll__log_set_level(ZCOLL_LOG_WARN);
  zcoll_log_debug("%d", side_effect());
  zcoll_log_info("%d", side_effect());
  cr_expect_eq(evaluated, 0);
  zcoll__log_set_subsys(0); /* dropped in the write path, after the arguments */
  zcoll_log_warn("%d", side_effect());
  cr_expect_eq(evaluated, 1);
}

/* ---- real jobs -------------------------------------------------------------------- */

/* "[zcoll HOST:PID rRANK] LEVEL SUBSYS DIR/FILE:LINE message". */
static regex_t line_rx;

static void compile_rx(void) {
  cr_assert_eq(regcomp(&line_rx,
                       "^\\[zcoll ([^ :]+):([0-9]+) r([0-9]+|-)\\] (error|warn|info|debug|trace) "
                       "(init|boot|net|coll|tune|mem) "
                       "[A-Za-z0-9_]+/[A-Za-z0-9_]+\\.[ch]:[0-9]+ [^ ]",
                       REG_EXTENDED | REG_NEWLINE),
               0);
}

struct line {
  char host[64];
  int pid, rank;
  char level[8], subsys[8];
};

/* Every line of out that contains "[zcoll " must have the whole prefix; calls fn on
 * each; returns how many there were. */
static int each_line(const char *out, void (*fn)(const struct line *, const char *, void *),
                     void *arg) {
  int n = 0;
  for (const char *p = out; *p;) {
    const char *eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    char *s = strndup(p, len);
    if (strstr(s, "[zcoll ")) {
      regmatch_t m[6];
      cr_expect_eq(regexec(&line_rx, s, 6, m, 0), 0, "malformed log line: '%s'", s);
      if (m[0].rm_so == 0) {
        struct line l = {.rank = -1};
        snprintf(l.host, sizeof(l.host), "%.*s", (int)(m[1].rm_eo - m[1].rm_so), s + m[1].rm_so);
        l.pid = atoi(s + m[2].rm_so);
        if (s[m[3].rm_so] != '-') l.rank = atoi(s + m[3].rm_so);
        snprintf(l.level, sizeof(l.level), "%.*s", (int)(m[4].rm_eo - m[4].rm_so), s + m[4].rm_so);
        snprintf(l.subsys, sizeof(l.subsys), "%.*s", (int)(m[5].rm_eo - m[5].rm_so),
                 s + m[5].rm_so);
        if (fn) fn(&l, s, arg);
        n++;
      }
    }
    free(s);
    p += len + (eol ? 1 : 0);
  }
  return n;
}

static struct sp_result job(const char *const *env) {
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", "2", SP_PROG("allreduce_check"), "4096", NULL};
  return sp_run(argv, env, 200);
}

static void only_subsys(const struct line *l, const char *s, void *arg) {
  const char *want = arg;
  if (want[0] == '^')
    cr_expect_str_neq(l->subsys, want + 1, "%s", s);
  else
    cr_expect_str_eq(l->subsys, want, "%s", s);
}

Test(log, subsys_filter_in_a_job, .init = compile_rx, .timeout = 240) {
  const char *keep[] = {"ZCOLL_LOG=info", "ZCOLL_LOG_SUBSYS=init", NULL};
  struct sp_result r = job(keep);
  cr_assert_eq(r.status, 0, "%s", r.out);
  cr_expect_geq(each_line(r.out, only_subsys, "init"), 2, "%s", r.out);
  free(r.out);
  const char *drop[] = {"ZCOLL_LOG=info", "ZCOLL_LOG_SUBSYS=^init", NULL};
  r = job(drop);
  cr_assert_eq(r.status, 0, "%s", r.out);
  cr_expect_geq(each_line(r.out, only_subsys, "^init"), 2, "%s", r.out);
  cr_expect(!strstr(r.out, " rank 0 of 2 ready:"), "the init line is init's:\n%s", r.out);
  free(r.out);
}

struct file_check {
  const char *host;
  int pid, rank, lines;
};

static void from_this_rank(const struct line *l, const char *s, void *arg) {
  struct file_check *c = arg;
  cr_expect_str_eq(l->host, c->host, "%s", s);
  cr_expect_eq(l->pid, c->pid, "%s", s);
  cr_expect_eq(l->rank, c->rank, "%s", s);
  c->lines++;
}

Test(log, a_file_per_rank, .init = compile_rx, .timeout = 240) {
  make_tmpdir();
  char host[64] = "";
  gethostname(host, sizeof(host) - 1);
  char var[160];
  snprintf(var, sizeof(var), "ZCOLL_LOG_FILE=%s/z-%%p-%%r-%%h.log", tmpdir); /* host: '-' */
  const char *env[] = {"ZCOLL_LOG=info", var, NULL};
  struct sp_result r = job(env);
  cr_assert_eq(r.status, 0, "%s", r.out);
  cr_expect(!strstr(r.out, "[zcoll "), "log lines outside the files:\n%s", r.out);
  DIR *d = opendir(tmpdir);
  cr_assert_not_null(d);
  int files = 0, ranks_seen = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    files++;
    char fhost[64];
    struct file_check c = {host, 0, -1, 0};
    cr_assert_eq(sscanf(e->d_name, "z-%d-%d-%63s", &c.pid, &c.rank, fhost), 3, "%s", e->d_name);
    size_t hl = strlen(fhost);
    cr_assert(hl > 4 && !strcmp(fhost + hl - 4, ".log"), "%s", e->d_name);
    fhost[hl - 4] = '\0';
    cr_expect_str_eq(fhost, host);
    cr_expect(c.rank == 0 || c.rank == 1, "%s", e->d_name);
    ranks_seen |= 1 << c.rank;
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, e->d_name);
    char *text = slurp(path);
    each_line(text, from_this_rank, &c);
    cr_expect_gt(c.lines, 0, "%s is empty", e->d_name);
    char init[64];
    snprintf(init, sizeof(init), " rank %d of 2 ready: shm to %d;", c.rank, 1 - c.rank);
    cr_expect(strstr(text, init), "no '%s' in %s:\n%s", init, e->d_name, text);
    free(text);
  }
  closedir(d);
  cr_expect_eq(files, 2);
  cr_expect_eq(ranks_seen, 3);
  remove_tmpdir();
  free(r.out);
}

Test(log, unopenable_file_is_one_warning_then_stderr, .init = compile_rx, .timeout = 240) {
  const char *env[] = {"ZCOLL_LOG=info", "ZCOLL_LOG_FILE=/nonexistent/zcoll-%r.log", NULL};
  struct sp_result r = job(env);
  cr_assert_eq(r.status, 0, "%s", r.out);
  int warnings = 0;
  for (const char *p = r.out; (p = strstr(p, "cannot open ZCOLL_LOG_FILE /nonexistent/zcoll-"));
       p++)
    warnings++;
  cr_expect_eq(warnings, 2, "one per rank:\n%s", r.out);
  cr_expect(strstr(r.out, "No such file or directory; logging to stderr"), "%s", r.out);
  cr_expect(strstr(r.out, " rank 0 of 2 ready:") && strstr(r.out, " rank 1 of 2 ready:"), "%s",
            r.out);
  each_line(r.out, NULL, NULL);
  free(r.out);
}

/* Does this machine have an RDMA device at all? */
static int have_rdma(void) {
  DIR *d = opendir("/sys/class/infiniband");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n > 0;
}

struct why_check {
  int info_why[2]; /* per rank: an info line of it says why verbs cannot run */
};

static void says_why(const struct line *l, const char *s, void *arg) {
  struct why_check *c = arg;
  if (l->rank >= 0 && l->rank < 2 && !strcmp(l->level, "info") && strstr(s, "verbs: ") &&
      strstr(s, "RDMA device with an active port"))
    c->info_why[l->rank] = 1;
}

Test(log, forced_verbs_without_a_device_says_why, .init = compile_rx, .timeout = 240) {
  /* Where a device exists, one that does not stands for "no device". */
  const char *env[] = {"ZCOLL_TRANSPORT=verbs", "ZCOLL_LOG=info",
                       have_rdma() ? "ZCOLL_IB_DEV=zcoll_test_none" : NULL, NULL};
  struct sp_result r = job(env);
  cr_assert_neq(r.status, 0, "%s", r.out);
  /* The error the program got: it names verbs and the reason. */
  cr_expect(strstr(r.out, "allreduce_check: zcoll_comm_init: not supported by this build or "
                          "machine: no transport reaches rank"),
            "%s", r.out);
  const char *err = strstr(r.out, "allreduce_check: zcoll_comm_init:");
  cr_expect(err && strstr(err, "verbs: ") && strstr(err, "RDMA device with an active port"), "%s",
            r.out);
  struct why_check c = {{0, 0}};
  each_line(r.out, says_why, &c);
  cr_expect(c.info_why[0] && c.info_why[1], "an info line of each rank says why:\n%s", r.out);
  free(r.out);
}

Test(log, init_line_answers_why_not_verbs, .init = compile_rx, .timeout = 240) {
  /* Two "hosts", so that the network transports are probed and one of them is used. */
  const char *env[] = {"ZCOLL_LOG=info", "ZCOLL_TEST_SPLIT_NODES=1", NULL};
  struct sp_result r = job(env);
  cr_assert_eq(r.status, 0, "%s", r.out);
  for (int a = 0; a < 2; a++) {
    char tl[32] = "";
    cr_expect(ll_pair_transport(r.out, a, 1 - a, tl, sizeof(tl)), "%s", r.out);
    char head[48];
    snprintf(head, sizeof(head), " rank %d of 2 ready: ", a);
    const char *line = strstr(r.out, head);
    cr_assert_not_null(line, "%s", r.out);
    char *one = strndup(line, strcspn(line, "\n"));
    cr_expect(strstr(one, "; chunk ") && strstr(one, ", depth "), "%s", one);
    if (!strcmp(tl, "verbs"))
      cr_expect(strstr(one, "verbs to ") && strstr(one, " on "), "the device: %s", one);
    else
      cr_expect(strstr(one, "; not usable here: ") && strstr(one, "verbs: "), "why not: %s", one);
    free(one);
  }
  free(r.out);
}
