/* Tests of the zcoll_run launcher, with real processes: the helper ranks are
 * tests/progs/run_*.c. Nothing here sleeps to wait: the tests wait on process exit
 * (pidfd + poll) and on lines that the ranks write into pipes. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LAUNCHER ZCOLL_TEST_BIN_DIR "/zcoll_run"
#define PROG(name) ZCOLL_TEST_PROGS_DIR "/" name
#define PIDFD "7" /* where the ranks find the report pipe ... */
#define GOFD "8"  /* ... and the go pipe */

static char tmpdir[64];

static void setup(void) {
  strcpy(tmpdir, "/tmp/zcoll_run_test.XXXXXX");
  cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
  /* Orphaned grandchildren of the launcher come to us, so that we can see them end
   * and reap them, whatever the init process of this machine does with zombies. */
  cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0, "prctl: %s", strerror(errno));
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

static void teardown(void) { nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

TestSuite(zcoll_run, .init = setup, .fini = teardown, .timeout = 120);

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *path_in_tmp(const char *name) {
  static char buf[4][256];
  static int next;
  char *p = buf[next++ % 4];
  snprintf(p, sizeof buf[0], "%s/%s", tmpdir, name);
  return p;
}

/* Start zcoll_run with argv (argv[0] is replaced by the launcher path), stdout and
 * stderr to files in tmpdir, env "NAME=VALUE" entries added, and the given pipe ends
 * placed on fds 7 (report) and 8 (go), where the ranks will inherit them. */
static pid_t spawn(const char *const *argv, const char *const *env, int report_fd, int go_fd) {
  pid_t parent = getpid();
  pid_t pid = fork();
  cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
  if (pid > 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a test that timed out */
  if (getppid() != parent) _exit(120);
  /* Whatever the test runner was started with (`ctest &` ignores SIGINT), the
   * launcher starts with default signal handling. */
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGHUP, SIG_DFL);
  int in = open("/dev/null", O_RDONLY);
  int out = open(path_in_tmp("stdout"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  int err = open(path_in_tmp("stderr"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  int rep = report_fd >= 0 ? fcntl(report_fd, F_DUPFD, 100) : -1;
  int go = go_fd >= 0 ? fcntl(go_fd, F_DUPFD, 100) : -1;
  if (in < 0 || out < 0 || err < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
    _exit(121);
  if ((rep >= 0 && dup2(rep, 7) < 0) || (go >= 0 && dup2(go, 8) < 0)) _exit(122);
  for (; env && *env; env++)
    if (putenv((char *)*env) != 0) _exit(123);
  execv(LAUNCHER, (char *const *)argv);
  _exit(126);
}

/* Wait up to timeout seconds for pid (our child, or any process) to end. For our
 * child, returns its status as a shell would (exit code or 128+signal); otherwise 0.
 * -1: still running at the deadline. */
static int wait_end(pid_t pid, double timeout) {
  int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (pfd < 0) {
    cr_assert_eq(errno, ESRCH, "pidfd_open(%d): %s", (int)pid, strerror(errno));
  } else {
    struct pollfd p = {.fd = pfd, .events = POLLIN};
    int r;
    double deadline = now_s() + timeout;
    do r = poll(&p, 1, (int)((deadline - now_s()) * 1000) + 1);
    while (r < 0 && errno == EINTR);
    close(pfd);
    if (r == 0) return -1;
  }
  int st;
  if (waitpid(pid, &st, WNOHANG) != pid) return 0; /* not our child: someone else reaps it */
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Wait for the launcher to finish; kill it and fail if it takes over timeout s. */
static int wait_launcher(pid_t pid, double timeout, double *elapsed) {
  double t0 = now_s();
  int st = wait_end(pid, timeout);
  if (elapsed) *elapsed = now_s() - t0;
  if (st < 0) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    cr_assert_fail("zcoll_run still running after %.0f s", timeout);
  }
  return st;
}

static int run(const char *const *argv, const char *const *env) {
  return wait_launcher(spawn(argv, env, -1, -1), 60, NULL);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f, "open %s: %s", path, strerror(errno));
  size_t len = 0, cap = 4096;
  char *buf = malloc(cap);
  size_t n;
  while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
    len += n;
    if (cap - len < 2) buf = realloc(buf, cap *= 2);
    cr_assert_not_null(buf);
  }
  buf[len] = '\0';
  fclose(f);
  return buf;
}

/* The value of "KEY=" in a rank.<r> file written by run_env, or NULL. */
static char *rank_value(int rank, const char *key) {
  char name[32], pat[128];
  snprintf(name, sizeof name, "rank.%d", rank);
  char *text = slurp(path_in_tmp(name));
  snprintf(pat, sizeof pat, "%s=", key);
  char *res = NULL;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
    if (strncmp(line, pat, strlen(pat)) == 0) {
      res = strdup(line + strlen(pat));
      break;
    }
  free(text);
  return res;
}

static void expect_value(int rank, const char *key, const char *want) {
  char *got = rank_value(rank, key);
  if (!want)
    cr_expect_null(got, "rank %d: %s should be unset, is '%s'", rank, key, got);
  else if (!got)
    cr_expect_fail("rank %d: %s missing (want '%s')", rank, key, want);
  else
    cr_expect_str_eq(got, want, "rank %d: %s", rank, key);
  free(got);
}

/* Read n lines from fd (pids reported by ranks) within timeout s; parse "<rank> <x>". */
static void read_reports(int fd, int n, int *ranks, int *vals, double timeout) {
  char buf[4096];
  size_t len = 0;
  int got = 0;
  double deadline = now_s() + timeout;
  while (got < n) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r = poll(&p, 1, (int)((deadline - now_s()) * 1000) + 1);
    cr_assert_gt(r, 0, "only %d of %d rank reports arrived", got, n);
    ssize_t k = read(fd, buf + len, sizeof buf - 1 - len);
    cr_assert_gt(k, 0, "report pipe: %s", k < 0 ? strerror(errno) : "EOF");
    len += (size_t)k;
    char *nl;
    while (got < n && (nl = memchr(buf, '\n', len)) != NULL) {
      *nl = '\0';
      cr_assert_eq(sscanf(buf, "%d %d", &ranks[got], &vals[got]), 2, "bad report '%s'", buf);
      got++;
      len -= (size_t)(nl + 1 - buf);
      memmove(buf, nl + 1, len);
    }
  }
}

static void assert_gone(pid_t pid) {
  cr_assert_geq(wait_end(pid, 10), 0, "process %d is still running", (int)pid);
  cr_assert(kill(pid, 0) < 0 && errno == ESRCH, "process %d still exists", (int)pid);
}

static void make_pipe(int p[2]) {
  cr_assert_eq(pipe2(p, O_CLOEXEC), 0, "pipe: %s", strerror(errno));
}

/* ------------------------------------------------------------------------------ */

Test(zcoll_run, environment_of_every_rank) {
  const char *argv[] = {"zcoll_run", "-np", "4", PROG("run_env"), tmpdir, NULL};
  const char *env[] = {"ZCOLL_ROOT_FD=99", "ZCOLL_RANK=77", "ZRTEST_INHERITED=yes", NULL};
  cr_assert_eq(run(argv, env), 0);
  char *root = rank_value(0, "ZCOLL_ROOT"), *key = rank_value(0, "ZCOLL_JOB_KEY");
  cr_assert_not_null(root);
  cr_assert_not_null(key);
  cr_expect_eq(strncmp(root, "127.0.0.1:", 10), 0, "ZCOLL_ROOT=%s", root);
  int port = atoi(root + 10);
  cr_expect(port > 0 && port < 65536, "ZCOLL_ROOT=%s", root);
  cr_expect_eq(strlen(key), 32, "ZCOLL_JOB_KEY=%s", key);
  cr_expect_eq(strspn(key, "0123456789abcdef"), 32, "ZCOLL_JOB_KEY=%s", key);
  for (int r = 0; r < 4; r++) {
    char rs[8];
    snprintf(rs, sizeof rs, "%d", r);
    expect_value(r, "ZCOLL_RANK", rs);
    expect_value(r, "ZCOLL_LOCAL_RANK", rs);
    expect_value(r, "ZCOLL_SIZE", "4");
    expect_value(r, "ZCOLL_LOCAL_SIZE", "4");
    expect_value(r, "ZCOLL_ROOT", root);
    expect_value(r, "ZCOLL_JOB_KEY", key);
    expect_value(r, "ZRTEST_INHERITED", "yes");
    expect_value(r, "ARGC", "0");
    /* Only rank 0 holds the listening socket, and it is the one behind ZCOLL_ROOT. */
    expect_value(r, "ROOT_SOCKETS", r == 0 ? "1" : "0");
    expect_value(r, "ROOT_FD_CHECK", r == 0 ? "ok" : NULL);
    if (r > 0) expect_value(r, "ZCOLL_ROOT_FD", NULL);
  }
  free(root);
  free(key);
}

Test(zcoll_run, every_job_gets_its_own_key_and_port) {
  const char *argv[] = {"zcoll_run", "-np", "1", PROG("run_env"), tmpdir, NULL};
  cr_assert_eq(run(argv, NULL), 0);
  char *key1 = rank_value(0, "ZCOLL_JOB_KEY"), *root1 = rank_value(0, "ZCOLL_ROOT");
  cr_assert_eq(run(argv, NULL), 0);
  char *key2 = rank_value(0, "ZCOLL_JOB_KEY"), *root2 = rank_value(0, "ZCOLL_ROOT");
  cr_assert(key1 && key2 && root1 && root2);
  cr_expect_str_neq(key1, key2);
  free(key1), free(key2), free(root1), free(root2);
}

Test(zcoll_run, export_variables) {
  const char *argv[] = {"zcoll_run",
                        "-x",
                        "ZRTEST_A=hello world",
                        "-np",
                        "2",
                        "-x",
                        "ZRTEST_B",
                        "-x",
                        "ZRTEST_C=a=b=c",
                        "-x",
                        "ZRTEST_EMPTY=",
                        "-x",
                        "ZRTEST_OVER=new",
                        PROG("run_env"),
                        tmpdir,
                        NULL};
  const char *env[] = {"ZRTEST_B=from launcher", "ZRTEST_OVER=old", NULL};
  cr_assert_eq(run(argv, env), 0);
  for (int r = 0; r < 2; r++) {
    expect_value(r, "ZRTEST_A", "hello world");
    expect_value(r, "ZRTEST_B", "from launcher");
    expect_value(r, "ZRTEST_C", "a=b=c");
    expect_value(r, "ZRTEST_EMPTY", "");
    expect_value(r, "ZRTEST_OVER", "new");
  }
}

Test(zcoll_run, export_of_unset_variable_is_an_error) {
  const char *argv[] = {"zcoll_run", "-np", "2", "-x", "ZRTEST_NOT_SET", "true", NULL};
  cr_assert_eq(run(argv, NULL), 2);
  char *err = slurp(path_in_tmp("stderr"));
  cr_expect_not_null(strstr(err, "ZRTEST_NOT_SET"), "stderr: %s", err);
  cr_expect_not_null(strstr(err, "usage:"), "stderr: %s", err);
  free(err);
}

Test(zcoll_run, program_arguments_pass_through) {
  const char *argv[] = {"zcoll_run", "--np=1", "--", PROG("run_env"), tmpdir, "-np", "7",
                        "--bogus",   "-x",     NULL};
  cr_assert_eq(run(argv, NULL), 0);
  expect_value(0, "ARGC", "4");
  expect_value(0, "ARG1", "-np");
  expect_value(0, "ARG2", "7");
  expect_value(0, "ARG3", "--bogus");
  expect_value(0, "ARG4", "-x");
  expect_value(0, "ZCOLL_SIZE", "1");
}

Test(zcoll_run, exit_status_of_failing_rank) {
  const char *argv[] = {"zcoll_run", "-np", "3", PROG("run_fail"), "1", "exit:3", "ok", NULL};
  cr_assert_eq(run(argv, NULL), 3);
  char *err = slurp(path_in_tmp("stderr"));
  cr_expect_not_null(strstr(err, "zcoll_run: rank 1 (pid "), "stderr: %s", err);
  cr_expect_not_null(strstr(err, ") exited with status 3"), "stderr: %s", err);
  free(err);
}

Test(zcoll_run, rank_killed_by_signal) {
  const char *argv[] = {"zcoll_run", "-n", "3", PROG("run_fail"), "2", "kill:9", "ok", NULL};
  cr_assert_eq(run(argv, NULL), 128 + SIGKILL);
  char *err = slurp(path_in_tmp("stderr"));
  cr_expect_not_null(strstr(err, "zcoll_run: rank 2 (pid "), "stderr: %s", err);
  cr_expect_not_null(strstr(err, "was killed by signal 9 (Killed)"), "stderr: %s", err);
  free(err);
}

/* One rank fails while the others would run for 300 s: zcoll_run must return at once
 * with the failing status, and take every other rank with it. */
Test(zcoll_run, failure_terminates_the_other_ranks) {
  int rep[2], go[2];
  make_pipe(rep);
  make_pipe(go);
  const char *argv[] = {"zcoll_run", "-np", "4", PROG("run_fail"), "1", "exit:3", "sleep",
                        PIDFD,       GOFD,  NULL};
  pid_t pid = spawn(argv, NULL, rep[1], go[0]);
  int ranks[4], pids[4];
  read_reports(rep[0], 4, ranks, pids, 60);
  cr_assert_eq(write(go[1], "g", 1), 1);
  double elapsed;
  cr_assert_eq(wait_launcher(pid, 60, &elapsed), 3);
  cr_expect_lt(elapsed, 20, "zcoll_run took %.1f s", elapsed);
  for (int k = 0; k < 4; k++) assert_gone(pids[k]);
  char *err = slurp(path_in_tmp("stderr"));
  cr_expect_not_null(strstr(err, "exited with status 3; terminating the other ranks"), "%s", err);
  free(err);
}

/* The ranks are shell scripts with a background child each: the grandchildren must go
 * too (process groups), including the one of the rank that exited by itself. */
Test(zcoll_run, failure_kills_grandchildren) {
  int rep[2], go[2];
  make_pipe(rep);
  make_pipe(go);
  const char *script = "sleep 300 & echo \"$ZCOLL_RANK $!\" >&7; "
                       "if [ \"$ZCOLL_RANK\" = 1 ]; then read x <&8; exit 5; fi; wait";
  const char *argv[] = {"zcoll_run", "-np", "3", "sh", "-c", script, NULL};
  pid_t pid = spawn(argv, NULL, rep[1], go[0]);
  int ranks[3], pids[3];
  read_reports(rep[0], 3, ranks, pids, 60);
  cr_assert_eq(write(go[1], "g\n", 2), 2); /* sh's read wants a whole line */
  double elapsed;
  cr_assert_eq(wait_launcher(pid, 60, &elapsed), 5);
  cr_expect_lt(elapsed, 20, "zcoll_run took %.1f s", elapsed);
  for (int k = 0; k < 3; k++) assert_gone(pids[k]);
}

/* Ranks that ignore SIGTERM get SIGKILL after the grace period. */
Test(zcoll_run, timeout_kills_ranks_that_ignore_sigterm) {
  int rep[2];
  make_pipe(rep);
  const char *argv[] = {"zcoll_run",       "-np", "3",   "--timeout", "1",
                        PROG("run_sleep"), "300", PIDFD, "ignore",    NULL};
  pid_t pid = spawn(argv, NULL, rep[1], -1);
  int ranks[3], pids[3];
  read_reports(rep[0], 3, ranks, pids, 60);
  double elapsed;
  cr_assert_eq(wait_launcher(pid, 60, &elapsed), 124);
  cr_expect_lt(elapsed, 20, "zcoll_run took %.1f s", elapsed);
  for (int k = 0; k < 3; k++) assert_gone(pids[k]);
  char *err = slurp(path_in_tmp("stderr"));
  cr_expect_not_null(strstr(err, "zcoll_run: timeout after 1 s; terminating ranks"), "%s", err);
  free(err);
}

Test(zcoll_run, timeout_does_not_fire_for_a_quick_job) {
  const char *argv[] = {"zcoll_run", "-np", "2", "--timeout=600", PROG("run_fail"), "0",
                        "exit:0",    "ok",  NULL};
  double elapsed;
  cr_assert_eq(wait_launcher(spawn(argv, NULL, -1, -1), 60, &elapsed), 0);
  cr_expect_lt(elapsed, 20);
}

/* SIGINT to zcoll_run reaches every rank as SIGINT; zcoll_run exits 128+2. */
Test(zcoll_run, sigint_is_forwarded) {
  int rep[2];
  make_pipe(rep);
  const char *argv[] = {"zcoll_run", "-np", "3", PROG("run_sleep"), "300", PIDFD, "catch", NULL};
  pid_t pid = spawn(argv, NULL, rep[1], -1);
  int ranks[3], pids[3];
  read_reports(rep[0], 3, ranks, pids, 60);
  cr_assert_eq(kill(pid, SIGINT), 0);
  cr_assert_eq(wait_launcher(pid, 60, NULL), 128 + SIGINT);
  /* "<rank> sig <n>" parses as "<rank> <garbage>": read the lines raw instead. */
  char buf[256] = {0};
  size_t len = 0;
  for (int lines = 0; lines < 3;) {
    struct pollfd p = {.fd = rep[0], .events = POLLIN};
    cr_assert_gt(poll(&p, 1, 20000), 0, "signal reports: got '%s'", buf);
    ssize_t k = read(rep[0], buf + len, sizeof buf - 1 - len);
    cr_assert_gt(k, 0);
    for (ssize_t i = 0; i < k; i++) lines += buf[len + (size_t)i] == '\n';
    len += (size_t)k;
  }
  for (int k = 0; k < 3; k++) {
    char want[32];
    snprintf(want, sizeof want, "%d sig %d\n", k, SIGINT);
    cr_expect_not_null(strstr(buf, want), "rank %d did not report SIGINT: '%s'", k, buf);
    assert_gone(pids[k]);
  }
}

Test(zcoll_run, sigterm_is_forwarded) {
  int rep[2];
  make_pipe(rep);
  const char *argv[] = {"zcoll_run", "-np", "2", PROG("run_sleep"), "300", PIDFD, NULL};
  pid_t pid = spawn(argv, NULL, rep[1], -1);
  int ranks[2], pids[2];
  read_reports(rep[0], 2, ranks, pids, 60);
  cr_assert_eq(kill(pid, SIGTERM), 0);
  double elapsed;
  cr_assert_eq(wait_launcher(pid, 60, &elapsed), 128 + SIGTERM);
  cr_expect_lt(elapsed, 20);
  for (int k = 0; k < 2; k++) assert_gone(pids[k]);
}

/* Each "[r] " line must be one whole line of rank r, in that rank's order. */
static void check_tagged(const char *text, const char *tag, int np, int lines, bool tail) {
  int next[16] = {0}, tails[16] = {0};
  const char *p = text;
  while (*p) {
    const char *nl = strchr(p, '\n');
    cr_assert_not_null(nl, "unterminated output line");
    int r, r2, i, off = 0;
    char t[8];
    if (sscanf(p, "[%d] tail %d%n", &r, &r2, &off) == 2 && p + off == nl) {
      cr_assert(tail && r == r2 && r >= 0 && r < np && next[r] == lines, "bad tail line");
      tails[r]++;
    } else {
      cr_assert_eq(sscanf(p, "[%d] %7s %d %d%n", &r, t, &r2, &i, &off), 4, "bad line: %.60s", p);
      cr_assert_eq(p[off++], ' ', "bad line: %.60s", p);
      cr_assert(r == r2 && r >= 0 && r < np, "line of rank %d tagged [%d]", r2, r);
      cr_assert_str_eq(t, tag);
      cr_assert_eq(i, next[r], "rank %d: line %d came after line %d", r, i, next[r] - 1);
      size_t width = (size_t)(i % 6) * 25000;
      cr_assert_eq((size_t)(nl - (p + off)), width, "rank %d line %d: wrong length", r, i);
      for (const char *c = p + off; c < nl; c++)
        cr_assert_eq(*c, 'a' + i % 26, "rank %d line %d: mangled payload", r, i);
      next[r]++;
    }
    p = nl + 1;
  }
  for (int r = 0; r < np; r++) {
    cr_expect_eq(next[r], lines, "rank %d: %d of %d %s lines", r, next[r], lines, tag);
    cr_expect_eq(tails[r], tail ? 1 : 0, "rank %d: tail line", r);
  }
}

Test(zcoll_run, tag_output_keeps_lines_whole) {
  const char *argv[] = {"zcoll_run", "-np", "4", "--tag-output", PROG("run_print"), "30", NULL};
  cr_assert_eq(run(argv, NULL), 0);
  char *out = slurp(path_in_tmp("stdout")), *err = slurp(path_in_tmp("stderr"));
  check_tagged(out, "out", 4, 30, true);
  check_tagged(err, "err", 4, 30, false);
  free(out);
  free(err);
}

Test(zcoll_run, tag_output_short_option_and_exec_failure) {
  const char *argv[] = {"zcoll_run", "-np", "2", "-t", "/nonexistent/prog", NULL};
  cr_assert_eq(run(argv, NULL), 127);
  char *err = slurp(path_in_tmp("stderr"));
  cr_expect_not_null(strstr(err, "] zcoll_run: cannot execute /nonexistent/prog: "
                                 "No such file or directory\n"),
                     "stderr: %s", err);
  free(err);
}

Test(zcoll_run, default_output_is_untouched) {
  const char *argv[] = {"zcoll_run", "-np", "2", PROG("run_print"), "3", NULL};
  cr_assert_eq(run(argv, NULL), 0);
  char *out = slurp(path_in_tmp("stdout"));
  cr_expect_eq(strchr(out, '['), NULL, "untagged output has a tag");
  /* Both ranks write to the one inherited stdout, each line in several write() calls, so
   * the other rank's bytes may land inside a line: count, do not match whole lines. */
  cr_expect_not_null(strstr(out, "t 0 2 ")); /* "ou" went in a write of its own */
  cr_expect_not_null(strstr(out, "t 1 2 "));
  size_t cs = 0;
  for (const char *c = out; *c; c++) cs += *c == 'c';
  cr_expect_eq(cs, 2 * 2 * 25000, "line 2 of each rank: 50000 'c' each, got %zu in all", cs);
  cr_expect_not_null(strstr(out, "tail 0"));
  cr_expect_not_null(strstr(out, "tail 1"));
  free(out);
}

Test(zcoll_run, program_that_cannot_be_executed) {
  const char *argv[] = {"zcoll_run", "-np", "2", "/nonexistent/prog", NULL};
  cr_assert_eq(run(argv, NULL), 127);
  char *err = slurp(path_in_tmp("stderr"));
  cr_expect_not_null(strstr(err, "zcoll_run: cannot execute /nonexistent/prog: "
                                 "No such file or directory\n"),
                     "stderr: %s", err);
  free(err);
}

Test(zcoll_run, help) {
  const char *argv[] = {"zcoll_run", "--help", NULL};
  cr_assert_eq(run(argv, NULL), 0);
  char *out = slurp(path_in_tmp("stdout"));
  cr_expect_eq(strncmp(out, "usage: zcoll_run -np N", 22), 0, "stdout: %s", out);
  free(out);
}

Test(zcoll_run, bad_usage_exits_2) {
  static const char *const cases[][8] = {
      {NULL},
      {"-np", NULL},
      {"-np", "0", "true", NULL},
      {"-np", "4097", "true", NULL},
      {"-np", "-3", "true", NULL},
      {"-np", "abc", "true", NULL},
      {"-np", "2x", "true", NULL},
      {"-np", "", "true", NULL},
      {"-np", "99999999999999999999", "true", NULL},
      {"-np", "2", NULL},
      {"-np", "2", "--bogus", "true", NULL},
      {"--bogus", "-np", "2", "true", NULL},
      {"true", NULL},
      {"-np", "1", "--timeout", "-1", "true", NULL},
      {"-np", "1", "--timeout", "soon", "true", NULL},
      {"-np", "1", "-x", "=v", "true", NULL},
      {"-np", "1", "-x", NULL},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const char *argv[10] = {"zcoll_run"};
    char desc[256] = "zcoll_run";
    for (int k = 0; cases[c][k]; k++) {
      argv[k + 1] = cases[c][k];
      snprintf(desc + strlen(desc), sizeof desc - strlen(desc), " '%s'", cases[c][k]);
    }
    cr_expect_eq(run(argv, NULL), 2, "%s", desc);
    char *err = slurp(path_in_tmp("stderr"));
    cr_expect_eq(strncmp(err, "zcoll_run: ", 11), 0, "%s: stderr: %s", desc, err);
    cr_expect_not_null(strstr(err, "\nusage: zcoll_run"), "%s: stderr: %s", desc, err);
    free(err);
  }
}
