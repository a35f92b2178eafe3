/* zcoll_perf's command line: what it rejects (exit 2, a message on stderr) and -h.
 * None of these reach a collective: the arguments are checked before zcoll_comm_init,
 * so the program runs here as a plain process, with no launcher. The accepted forms of
 * -A run as a job of one rank (no launcher variables: zcoll's default). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PERF ZCOLL_TEST_BIN_DIR "/zcoll_perf"
#define RUN_TIMEOUT_MS 30000
#define OUT_MAX 65536

extern char **environ;

struct result {
  int status; /* exit status, or 128 + signal */
  char out[OUT_MAX], err[OUT_MAX];
};

/* Appends what is readable on fd; returns 0 at end of file. */
static int drain(int fd, char *buf, size_t *len) {
  char tmp[4096];
  ssize_t n = read(fd, tmp, sizeof tmp);
  if (n < 0 && errno == EINTR) return 1;
  if (n <= 0) return 0;
  size_t room = OUT_MAX - 1 - *len;
  size_t k = (size_t)n < room ? (size_t)n : room;
  memcpy(buf + *len, tmp, k);
  *len += k;
  buf[*len] = '\0';
  return 1;
}

/* Runs zcoll_perf with args (NULL-terminated) and no ZCOLL_* launcher variables. */
static void run_perf(struct result *r, const char *const *args) {
  char *argv[32];
  int argc = 0;
  argv[argc++] = (char *)PERF;
  for (; args[argc - 1] != NULL && argc < 31; argc++) argv[argc] = (char *)args[argc - 1];
  argv[argc] = NULL;

  /* a clean environment: no launcher variables, so nothing can try to connect */
  char *envp[256];
  int envc = 0;
  for (char **e = environ; *e && envc < 255; e++)
    if (strncmp(*e, "ZCOLL_", 6) != 0) envp[envc++] = *e;
  envp[envc] = NULL;

  int out[2], err[2];
  cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
  cr_assert_eq(pipe2(err, O_CLOEXEC), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  pid_t pid;
  int rc = posix_spawn(&pid, PERF, &fa, NULL, argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  cr_assert_eq(rc, 0, "cannot start %s: %s", PERF, strerror(rc));
  close(out[1]);
  close(err[1]);

  size_t olen = 0, elen = 0;
  r->out[0] = r->err[0] = '\0';
  struct pollfd pfd[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2, waited = 0;
  while (open_fds > 0 && waited < RUN_TIMEOUT_MS) {
    int n = poll(pfd, 2, 100);
    if (n == 0) waited += 100;
    for (int i = 0; i < 2 && n > 0; i++) {
      if (pfd[i].fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      if (!drain(pfd[i].fd, i ? r->err : r->out, i ? &elen : &olen)) {
        close(pfd[i].fd);
        pfd[i].fd = -1;
        open_fds--;
      }
    }
  }
  if (open_fds > 0) kill(pid, SIGKILL);
  for (int i = 0; i < 2; i++)
    if (pfd[i].fd >= 0) close(pfd[i].fd);
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  cr_assert(open_fds == 0, "zcoll_perf did not finish within %d ms", RUN_TIMEOUT_MS);
}

/* Whether some line of text starts with prefix (the library may log lines of its own). */
static int has_line(const char *text, const char *prefix) {
  for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
    if (strncmp(l, prefix, strlen(prefix)) == 0) return 1;
  return 0;
}

/* Exit 2, a "zcoll_perf: ..." line on stderr that mentions `what`, and no table. */
static void expect_usage_error(const char *const *args, const char *what) {
  static struct result r;
  run_perf(&r, args);
  cr_expect_eq(r.status, 2, "exit status %d, want 2; stderr: %s", r.status, r.err);
  cr_expect(has_line(r.err, "zcoll_perf: "), "stderr: '%s'", r.err);
  cr_expect(strstr(r.err, what) != NULL, "stderr '%s' does not mention '%s'", r.err, what);
  cr_expect(strstr(r.out, "out-of-place") == NULL, "a table was printed: %s", r.out);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* Exit 0, the usage on stdout, nothing on stderr; returns the usage. */
static const char *expect_usage_ok(const char *const *args) {
  static struct result r;
  run_perf(&r, args);
  cr_expect_eq(r.status, 0, "stderr: %s", r.err);
  cr_expect(strstr(r.out, "usage: zcoll_perf") != NULL, "stdout: %s", r.out);
  cr_expect_str_empty(r.err);
  return r.out;
}

Test(perf_cli, help_prints_usage) {
  const char *out = expect_usage_ok(ARGS("-h"));
  /* nccl-tests' short and long forms, and zcoll_perf's own */
  const char *flags[] = {"-b, --minbytes",
                         "-e, --maxbytes",
                         "-f, --stepfactor",
                         "-i, --stepbytes",
                         "-n, --iters",
                         "-w, --warmup_iters",
                         "-m, --agg_iters",
                         "-N, --run_cycles",
                         "-c, --check",
                         "-d, --datatype",
                         "-o, --op",
                         "-z, --blocking",
                         "--group 0|1",
                         "-a, --average",
                         "-C, --report_cputime",
                         "-R, --local_register",
                         "-T, --timeout",
                         "-A, --algo, --algorithm",
                         "--overlap",
                         "--overlap=idle",
                         "-t, --coll",
                         "--nthreads",
                         "-r, --root",
                         "-F, --output_file",
                         "-g, --ngpus",
                         "-p, --parallel_init",
                         "-G, --cudagraph",
                         "-v, --verbose",
                         "-h, --help"};
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
    cr_expect(strstr(out, flags[i]) != NULL, "usage does not mention %s", flags[i]);
  /* the defaults that changed with nccl-tests' meanings, and what -C counts */
  cr_expect(strstr(out, "0 (default): the timed collectives are posted non-blocking") != NULL, "%s",
            out);
  cr_expect(strstr(out, "1 the mean over ranks (default)") != NULL, "%s", out);
  cr_expect(strstr(out, "process's CPU time") != NULL, "%s", out);
  /* the broadcast's bus factor, and what its out-of-place columns hold */
  cr_expect(strstr(out, "busbw = algbw (factor 1) for a broadcast") != NULL, "%s", out);
  cr_expect(strstr(out, "out-of-place columns say N/A") != NULL, "%s", out);
  /* the exchanges, how their sizes count, and alltoallv's documented pattern */
  cr_expect(strstr(out, "-t alltoall, -t alltoallv, -t allgatherv, -t gather, -t scatter") != NULL,
            "%s", out);
  cr_expect(strstr(out, "rank, count one block") != NULL, "%s", out);
  cr_expect(strstr(out, "alltoallv: rank i sends itself count - ceil(count/2)") != NULL, "%s", out);
  /* the sendrecv: nccl-tests' pattern, its size and bus factor */
  cr_expect(strstr(out, "-t sendrecv             time point to point instead (nccl-tests' "
                        "sendrecv_perf") != NULL,
            "%s", out);
  cr_expect(strstr(out, "each rank sends to rank+1 and receives from rank-1") != NULL, "%s", out);
}

Test(perf_cli, long_help) { expect_usage_ok(ARGS("--help")); }

Test(perf_cli, unknown_dtype) { expect_usage_error(ARGS("-d", "float128"), "float128"); }

Test(perf_cli, unknown_op) { expect_usage_error(ARGS("-o", "xor"), "xor"); }

Test(perf_cli, min_larger_than_max) { expect_usage_error(ARGS("-b", "1M", "-e", "64K"), "-b"); }

Test(perf_cli, factor_below_two_without_increment) {
  expect_usage_error(ARGS("-f", "1", "-i", "0"), "-f");
  expect_usage_error(ARGS("-f", "0"), "-f");
}

Test(perf_cli, malformed_sizes) {
  expect_usage_error(ARGS("-b", "12Q"), "12Q");
  expect_usage_error(ARGS("-e", "abc"), "abc");
  expect_usage_error(ARGS("-b", "-8"), "-8");
  expect_usage_error(ARGS("-e", "1MM"), "1MM");
  expect_usage_error(ARGS("-e", ""), "-e");
  expect_usage_error(ARGS("-e", "99999999999999999999G"), "-e");
  expect_usage_error(ARGS("-i", "1.5K"), "1.5K");
}

Test(perf_cli, bad_counts) {
  expect_usage_error(ARGS("-n", "0"), "-n");
  expect_usage_error(ARGS("-n", "ten"), "ten");
  expect_usage_error(ARGS("-w", "-1"), "-w");
  expect_usage_error(ARGS("-c", "2"), "-c");
}

Test(perf_cli, unknown_option) {
  expect_usage_error(ARGS("-q"), "-q");
  expect_usage_error(ARGS("--no-such-option"), "--no-such-option");
}

/* nccl-tests' options, in both forms, each with a value it refuses and what its message
 * must mention. */
static const struct {
  const char *const *args;
  const char *what;
} bad_values[] = {
    {ARGS("--minbytes", "12Q"), "12Q"},
    {ARGS("--iters=0"), "-n"},
    {ARGS("--maxbytes"), "--maxbytes"},
    {ARGS("--datatype", "float128"), "float128"},
    /* -a is nccl-tests' averaging now; the old habit -a ALGO gets a pointer to -A */
    {ARGS("-a", "ring"), "-a now takes 0..3 as in nccl-tests"},
    {ARGS("-a", "ring"), "-A/--algo"},
    {ARGS("-a", "4"), "-a"},
    {ARGS("--average", "-1"), "0..3"},
    {ARGS("-z", "2"), "-z"},
    {ARGS("--blocking", "yes"), "yes"},
    {ARGS("-z"), "-z"},
    {ARGS("-C", "2"), "-C"},
    {ARGS("-R", "on"), "-R"},
    {ARGS("-m", "0"), "-m"},
    {ARGS("--agg_iters", "-3"), "-m"},
    {ARGS("-N", "-1"), "-N"},
    {ARGS("-T", "1.5"), "-T"},
    /* --overlap times one non-blocking collective at a time */
    {ARGS("--overlap", "-m", "2"), "--overlap"},
    {ARGS("--overlap", "-z", "1"), "--overlap"},
    {ARGS("--overlap=sleepy"), "--overlap=sleepy: busy or idle"},
    {ARGS("--group", "2"), "--group: '2' is not 0 or 1"},
    {ARGS("--group", "1", "--overlap"), "--group 1: --overlap times one"},
    {ARGS("--group", "1", "-z", "0"), "-z 0 does not apply"},
    {ARGS("--coll"), "--coll"},
    {ARGS("-t", "broadcast", "--overlap"), "--overlap measures the allreduce only"},
    {ARGS("-t", "barrier", "--overlap"), "--overlap measures the allreduce only, not -t barrier"},
    /* what needs GPUs or threads per process: refused, naming the flag */
    {ARGS("-g", "2"), "-g 2: zcoll_perf runs one rank per process on host memory"},
    {ARGS("--ngpus", "8"), "-g 8: "},
    {ARGS("-g", "0"), "(ngpus) can only be 1"},
    {ARGS("-g", "two"), "-g: 'two' is not a count"},
    {ARGS("-G", "1"), "-G 1: zcoll_perf uses no GPUs"},
    {ARGS("--cudagraph=4"), "only -G 0 is accepted"},
    {ARGS("-p", "2"), "-p: '2' is not 0 or 1"},
    {ARGS("--parallel_init", "yes"), "-p"},
    {ARGS("-F", ""), "-F: empty file name"},
    {ARGS("--output_file"), "--output_file"},
    {ARGS("-F", "x.csv", "--overlap"), "-F x.csv: the CSV file holds the table of times"},
    {ARGS("-v", "--overlap"), "-v: per-rank times"},
    /* -h prints the usage only for a line that would run */
    {ARGS("--overlap", "-F", "x.csv", "-h"), "-F x.csv: the CSV file holds the table of times"},
    {ARGS("-h", "-t", "broadcast", "--overlap"), "--overlap measures the allreduce only"},
};

/* The collective and its root: an option, a value it refuses, what the message says. -t
 * takes a collective or nccl-tests' nthreads (only 1), --coll a collective, --nthreads a
 * count; -r a rank number (whether it names a rank is known after init: root_not_a_rank). */
static const char *const bad_coll[][3] = {
    {"-t", "2", "-t 2: zcoll_perf runs one thread per rank"},
    {"-t", "0", "one thread per rank"},
    {"--nthreads", "4", "one thread per rank"},
    {"--nthreads", "broadcast", "not a thread count"},
    {"-t", "alltoallw",
     "'alltoallw': not a collective (allreduce, broadcast, barrier, allgather, reduce_scatter, "
     "reduce, alltoall, alltoallv, allgatherv, gather, scatter, sendrecv)"},
    {"--coll", "1", "--coll '1': not a collective"},
    {"-r", "-1", "-r: '-1' is not a rank number"},
    {"--root", "one", "'one' is not a rank number"},
};

Test(perf_cli, nccl_tests_flags_bad_values) {
  for (size_t i = 0; i < sizeof bad_values / sizeof bad_values[0]; i++)
    expect_usage_error(bad_values[i].args, bad_values[i].what);
  for (size_t i = 0; i < sizeof bad_coll / sizeof bad_coll[0]; i++)
    expect_usage_error(ARGS(bad_coll[i][0], bad_coll[i][1]), bad_coll[i][2]);
}

/* -A goes through zcoll_config_set, which validates the name: still no collective. */
Test(perf_cli, unknown_algorithm) {
  const char *const *forms[] = {ARGS("-A", "no-such-algorithm"),
                                ARGS("--algo", "no-such-algorithm"),
                                ARGS("--algorithm=no-such-algorithm")};
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
    static struct result r;
    run_perf(&r, forms[i]);
    cr_expect_eq(r.status, 2, "%s: exit status %d, want 2; stderr: %s", forms[i][0], r.status,
                 r.err);
    cr_expect(has_line(r.err, "zcoll_perf: -A no-such-algorithm: "), "stderr: '%s'", r.err);
  }
  expect_usage_error(ARGS("--algo"), "--algo");
  expect_usage_error(ARGS("-A", ""), "-A");
}

#define ONE_SIZE "-b", "8", "-e", "8", "-n", "1", "-w", "0"

/* Each form runs as a job of one rank: exit 0, every element right, and every string of
 * want (NULL-terminated) somewhere in stdout. */
static void expect_forms_ok(const char *const *const *forms, size_t n, const char *const *want) {
  for (size_t i = 0; i < n; i++) {
    static struct result r;
    run_perf(&r, forms[i]);
    cr_expect_eq(r.status, 0, "%s %s: exit %d; stderr: %s", forms[i][0], forms[i][1], r.status,
                 r.err);
    cr_expect(strstr(r.out, "Out of bounds values : 0 OK") != NULL, "stdout: %s", r.out);
    for (const char *const *w = want; *w; w++)
      cr_expect(strstr(r.out, *w) != NULL, "%s %s: no '%s' in stdout: %s", forms[i][0], forms[i][1],
                *w, r.out);
  }
}

#define FORMS(...) ((const char *const *const[]){__VA_ARGS__})
#define NFORMS(...) (sizeof FORMS(__VA_ARGS__) / sizeof(const char *const *))
#define EXPECT_FORMS_OK(want, ...) expect_forms_ok(FORMS(__VA_ARGS__), NFORMS(__VA_ARGS__), want)

/* Every form of -A reaches the ALGO field: a job of one rank says which algorithm ran. */
Test(perf_cli, algorithm_forms_accepted) {
  EXPECT_FORMS_OK(ARGS(", algorithm ring, ranks 1,"), ARGS("-A", "ring", ONE_SIZE),
                  ARGS("-Aring", ONE_SIZE), ARGS("--algo", "ring", ONE_SIZE),
                  ARGS("--algo=ring", ONE_SIZE), ARGS("--algorithm", "ring", ONE_SIZE));
}

/* nccl-tests' GPU flags at the values that mean "no GPU, one thread": a normal run. */
Test(perf_cli, gpu_flags_at_their_host_values) {
  EXPECT_FORMS_OK(ARGS("# zcoll_perf: allreduce, blocking", "  float     sum      -1  "),
                  ARGS("-g", "1", "-p", "1", "-G", "0", ONE_SIZE),
                  ARGS("--ngpus=1", "--parallel_init=0", "--cudagraph", "0", ONE_SIZE),
                  ARGS("-t", "1", "-g", "1", "-p", "0", ONE_SIZE));
}

/* -F names a file rank 0 cannot create: exit 2 before anything is timed, naming -F. */
Test(perf_cli, output_file_not_writable) {
  static struct result r;
  run_perf(&r, ARGS("-F", "/nonexistent-dir/out.csv", ONE_SIZE));
  cr_expect_eq(r.status, 2, "exit %d; stderr: %s", r.status, r.err);
  cr_expect(strstr(r.err, "zcoll_perf: -F /nonexistent-dir/out.csv: cannot create the CSV "
                          "file: No such file or directory") != NULL,
            "stderr: %s", r.err);
  cr_expect(strstr(r.out, "out-of-place") == NULL, "a table was printed: %s", r.out);
}

/* A write error on -F's file ends the run with exit 1, naming the file and the error. */
Test(perf_cli, output_file_write_error) {
  static struct result r;
  run_perf(&r, ARGS("-F", "/dev/full", ONE_SIZE));
  cr_expect_eq(r.status, 1, "exit %d; stderr: %s", r.status, r.err);
  cr_expect(strstr(r.err, "zcoll_perf: -F /dev/full: No space left on device") != NULL,
            "stderr: %s", r.err);
}

/* -t 1 (nccl-tests' nthreads) and -t allreduce change nothing: the allreduce table. */
Test(perf_cli, one_thread_is_the_allreduce) {
  EXPECT_FORMS_OK(ARGS("# zcoll_perf: allreduce, blocking", "  float     sum      -1  "),
                  ARGS("-t", "1", ONE_SIZE), ARGS("--nthreads=1", ONE_SIZE),
                  ARGS("-t", "allreduce", ONE_SIZE), ARGS("--coll", "allreduce", ONE_SIZE));
}

/* -t broadcast and --coll broadcast, in a job of one rank: the root is 0 (-r 0 or the
 * default), -o is ignored (-o all: still one table), -A goes to BCAST_ALGO. */
Test(perf_cli, broadcast_forms_accepted) {
  EXPECT_FORMS_OK(
      ARGS("# zcoll_perf: broadcast from root 0 (-r),", "  float    none       0      N/A"),
      ARGS("-t", "broadcast", ONE_SIZE), ARGS("--coll", "broadcast", "-r", "0", ONE_SIZE),
      ARGS("--coll=broadcast", "--root=0", "-o", "prod", ONE_SIZE));
  EXPECT_FORMS_OK(ARGS(", algorithm chain, ranks 1,", "      0  chain\n"),
                  ARGS("-tbroadcast", "-A", "chain", ONE_SIZE));
  static struct result r;
  run_perf(&r, ARGS("-t", "broadcast", "-o", "all", ONE_SIZE));
  const char *first = strstr(r.out, "#       size");
  cr_expect(first && strstr(first + 1, "#       size") == NULL, "not one table: %s", r.out);
}

/* -t barrier and --coll barrier: one table of one 0-byte row, in place, whatever -b, -e,
 * -d and -o say; blocking and not; the algorithm column names the butterfly. */
Test(perf_cli, barrier_forms_accepted) {
  EXPECT_FORMS_OK(
      ARGS("# zcoll_perf: barrier, blocking", "# note: a barrier moves no data",
           "           0             0     float    none      -1      N/A     N/A     N/A    N/A",
           "  butterfly\n"),
      ARGS("-t", "barrier", ONE_SIZE), ARGS("--coll", "barrier", "-z", "1", ONE_SIZE),
      ARGS("--coll=barrier", "-b", "1K", "-e", "1M", "-n", "3", "-w", "1"));
  static struct result r;
  run_perf(&r, ARGS("-t", "barrier", "-d", "all", "-o", "all", "-b", "8", "-e", "64K"));
  const char *first = strstr(r.out, "#       size");
  cr_expect(first && strstr(first + 1, "#       size") == NULL, "not one table: %s", r.out);
  cr_expect(strstr(r.out, "\n           8 ") == NULL, "a sized row: %s", r.out);
}

/* A root that is no rank of the job: exit 2 once the job's size is known, before any
 * collective and any table. -A with a broadcast checks BCAST_ALGO's names. */
Test(perf_cli, root_not_a_rank) {
  expect_usage_error(ARGS("-t", "broadcast", "-r", "1", ONE_SIZE),
                     "-r 1: the root must be a rank of the job, 0..0");
  expect_usage_error(ARGS("-t", "broadcast", "-A", "ring", ONE_SIZE), "ZCOLL_BCAST_ALGO");
}
