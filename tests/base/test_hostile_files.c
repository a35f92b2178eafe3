/*
 * Files the environment names that are not what they should be (issue 20, case 6).
 * ZCOLL_TUNING_FILE as a FIFO, a device, a directory, a file whose read fails, too big,
 * with a line too long or a NUL byte: an init error naming the file. ZCOLL_LOG_FILE as a
 * FIFO nobody reads, nobody drains, or whose reader leaves: no hang, no SIGPIPE, the lines
 * on stderr or counted as dropped. ZCOLL_TRACE as a FIFO nobody reads: an init error.
 * /dev/null, /dev/stderr and a FIFO that is read keep working.
 * The old code hung on several of these: each test's .timeout is the watchdog that turns
 * such a hang into a failure, far above what the test takes (well under a second).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "algorithms/algorithms.h"
#include "algorithms/select.h"
#include "base/log.h"
#include "zcoll.h"

#define WATCHDOG 60 /* seconds: only a hang comes near it */

static char dir[64];

static void make_dir(void) {
  snprintf(dir, sizeof(dir), "/tmp/zcoll_test_hostile.XXXXXX");
  cr_assert_not_null(mkdtemp(dir), "%s", strerror(errno));
}

/* The directory and what the tests made in it: files, FIFOs and one level of directories. */
static void remove_dir(void) {
  DIR *d = opendir(dir);
  if (!d) return;
  for (struct dirent *e; (e = readdir(d));) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    if (unlink(path)) rmdir(path);
  }
  closedir(d);
  rmdir(dir);
}

static const char *in_dir(const char *name) {
  static char path[4][256];
  static int next;
  char *p = path[next++ % 4];
  snprintf(p, sizeof(path[0]), "%s/%s", dir, name);
  return p;
}

static const char *make_fifo(const char *name) {
  const char *path = in_dir(name);
  cr_assert_eq(mkfifo(path, 0600), 0, "%s: %s", path, strerror(errno));
  return path;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f, "%s: %s", path, strerror(errno));
  size_t len = 0, cap = 1 << 16;
  char *buf = malloc(cap);
  for (size_t n; (n = fread(buf + len, 1, cap - len - 1, f)) > 0;)
    if ((len += n) == cap - 1) buf = realloc(buf, cap *= 2);
  buf[len] = '\0';
  fclose(f);
  return buf;
}

/* stderr into a file, for the warnings the library writes there. */
static int saved_stderr = -1;

static void capture_stderr(const char *path) {
  fflush(stderr);
  saved_stderr = dup(STDERR_FILENO);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
  cr_assert(saved_stderr >= 0 && fd >= 0, "%s", strerror(errno));
  dup2(fd, STDERR_FILENO);
  close(fd);
}

static char *restore_stderr(const char *path) {
  dup2(saved_stderr, STDERR_FILENO);
  close(saved_stderr);
  return slurp(path);
}

static int count(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)); p++) n++;
  return n;
}

/* zcoll_comm_init of one rank, logging at `level`, with the variable `name` set. */
static zcoll_status_t init_with(const char *level, const char *name, const char *value,
                                zcoll_comm_t **comm) {
  zcoll_config_t *cfg;
  cr_assert_eq(zcoll_config_create(&cfg), ZCOLL_OK);
  cr_assert_eq(zcoll_config_set(cfg, "LOG", level), ZCOLL_OK);
  cr_assert_eq(zcoll_config_set(cfg, "RANK", "0"), ZCOLL_OK);
  cr_assert_eq(zcoll_config_set(cfg, "SIZE", "1"), ZCOLL_OK);
  cr_assert_eq(zcoll_config_set(cfg, name, value), ZCOLL_OK);
  zcoll_status_t st = zcoll_comm_init(comm, cfg);
  zcoll_config_free(cfg);
  return st;
}

/* ---- ZCOLL_TUNING_FILE ------------------------------------------------------------ */

static const char *write_tuning(const char *name, const char *text, size_t len) {
  const char *path = in_dir(name);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  cr_assert_eq(fwrite(text, 1, len, f), len);
  cr_assert_eq(fclose(f), 0);
  return path;
}

/* The selector refuses path with ZCOLL_ERR_INVALID_ARG, its message naming the variable,
 * the path and `what`. */
static void refused(const char *path, const char *what) {
  struct zcoll__selector sel;
  zcoll_status_t st = zcoll__selector_init(&sel, path);
  cr_assert_eq(st, ZCOLL_ERR_INVALID_ARG, "%s: %s, %s", path, zcoll_strerror(st),
               zcoll__last_error());
  const char *m = zcoll__last_error();
  cr_expect(strstr(m, "ZCOLL_TUNING_FILE") && strstr(m, path) && strstr(m, what),
            "'%s' lacks the variable, '%s' or '%s'", m, path, what);
}

Test(hostile_tuning, fifo_is_refused_not_waited_on, .init = make_dir, .fini = remove_dir,
     .timeout = WATCHDOG) {
  zcoll__log_set_level(ZCOLL_LOG_NONE);
  refused(make_fifo("fifo"), "is a FIFO, not a regular file");
}

/* Through zcoll_comm_init, as a job meets it. */
Test(hostile_tuning, fifo_fails_init, .init = make_dir, .fini = remove_dir, .timeout = WATCHDOG) {
  const char *fifo = make_fifo("fifo");
  zcoll_comm_t *comm = NULL;
  cr_assert_eq(init_with("none", "TUNING_FILE", fifo, &comm), ZCOLL_ERR_INVALID_ARG, "%s",
               zcoll_last_error());
  cr_expect_null(comm);
  cr_expect(strstr(zcoll_last_error(), fifo) && strstr(zcoll_last_error(), "FIFO"), "%s",
            zcoll_last_error());
}

Test(hostile_tuning, devices_and_directories_are_refused, .init = make_dir, .fini = remove_dir,
     .timeout = WATCHDOG) {
  zcoll__log_set_level(ZCOLL_LOG_NONE);
  refused("/dev/zero", "is a character device, not a regular file"); /* no end */
  refused("/dev/null", "is a character device, not a regular file");
  refused(dir, "is a directory, not a regular file"); /* was an empty table */
}

/* A read that fails is an error, not the end of the file (the old code took the table
 * read so far, here none). /proc/self/mem is a regular file whose offset 0 is unmapped:
 * read() says EIO, for root as for anybody. */
Test(hostile_tuning, read_error_is_reported, .timeout = WATCHDOG) {
  zcoll__log_set_level(ZCOLL_LOG_NONE);
  refused("/proc/self/mem", "Input/output error");
}

/* A comment longer than the line buffer: its tail was read as a line of its own, here a
 * rule. Now the line is refused by number. */
Test(hostile_tuning, long_line_is_refused_not_split, .init = make_dir, .fini = remove_dir,
     .timeout = WATCHDOG) {
  zcoll__log_set_level(ZCOLL_LOG_NONE);
  char text[1024] = "1 inf 1K ring\n#";
  size_t len = strlen(text);
  memset(text + len, 'x', 510);
  snprintf(text + len + 510, sizeof(text) - len - 510, " 1 inf 64K butterfly\n1 inf inf ring\n");
  refused(write_tuning("long", text, strlen(text)), "line 2 is longer than 510 characters");
  /* 510 characters and the newline are a line */
  snprintf(text, sizeof(text), "%-510s\n1 inf inf ring\n", "1 inf 4K butterfly #");
  struct zcoll__selector sel;
  cr_assert_eq(zcoll__selector_init(&sel, write_tuning("ok", text, strlen(text))), ZCOLL_OK, "%s",
               zcoll__last_error());
  char why[256];
  cr_expect_eq(zcoll__select(&sel, 2, 4096, why, sizeof(why)), zcoll__algo_find("butterfly"));
  cr_expect_eq(zcoll__select(&sel, 2, 4097, why, sizeof(why)), zcoll__algo_find("ring"));
  cr_expect(strstr(why, "line 2"), "%s", why);
  zcoll__selector_free(&sel);
  /* and so are 510 characters at the end of a file without a newline */
  text[510] = '\0';
  cr_assert_eq(zcoll__selector_init(&sel, write_tuning("ok2", text, 510)), ZCOLL_OK, "%s",
               zcoll__last_error());
  cr_expect_eq(zcoll__select(&sel, 2, 4096, NULL, 0), zcoll__algo_find("butterfly"));
  zcoll__selector_free(&sel);
}

/* A NUL byte: not a text file (the old code read the line up to it and went on). */
Test(hostile_tuning, nul_byte_is_refused, .init = make_dir, .fini = remove_dir,
     .timeout = WATCHDOG) {
  zcoll__log_set_level(ZCOLL_LOG_NONE);
  static const char text[] = "1 inf inf ring\n1 inf 4K butterfly\0tail\n";
  refused(write_tuning("nul", text, sizeof(text) - 1), "line 2 has a NUL byte");
}

/* At most 1 MiB (docs/configuration.md): a sparse file of 1 MiB and a byte is refused without being
 * read, one of 1 MiB of comments and a rule is a table. */
Test(hostile_tuning, size_is_bounded, .init = make_dir, .fini = remove_dir, .timeout = WATCHDOG) {
  zcoll__log_set_level(ZCOLL_LOG_NONE);
  const char *big = in_dir("big");
  int fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  cr_assert(fd >= 0 && ftruncate(fd, (1 << 20) + 1) == 0, "%s", strerror(errno));
  close(fd);
  refused(big, "1048577 bytes, more than 1 MiB");
  const size_t max = 1 << 20;
  char *text = malloc(max);
  static const char rule[] = "1 inf inf chain\n";
  for (size_t i = 0; i < max; i += 64) {
    memset(text + i, ' ', 63);
    text[i] = '#';
    text[i + 63] = '\n';
  }
  size_t len = max - (sizeof(rule) - 1);
  text[len - 1] = '\n';
  memcpy(text + len, rule, sizeof(rule) - 1);
  struct zcoll__selector sel;
  cr_assert_eq(zcoll__selector_init(&sel, write_tuning("max", text, max)), ZCOLL_OK, "%s",
               zcoll__last_error());
  cr_expect_eq(sel.nrules, 1);
  cr_expect_eq(zcoll__select(&sel, 3, 1, NULL, 0), zcoll__algo_find("chain"));
  zcoll__selector_free(&sel);
  free(text);
}

/* ---- ZCOLL_LOG_FILE ------------------------------------------------------------ */

/* A FIFO nobody reads: init does not wait for a reader; the warning and then the lines
 * go to stderr, as for a file that cannot be opened. */
Test(hostile_log, fifo_without_reader_falls_back_to_stderr, .init = make_dir, .fini = remove_dir,
     .timeout = WATCHDOG) {
  const char *fifo = make_fifo("log");
  const char *err = in_dir("stderr");
  capture_stderr(err);
  zcoll_comm_t *comm;
  zcoll_status_t st = init_with("info", "LOG_FILE", fifo, &comm);
  if (st == ZCOLL_OK) st = zcoll_comm_destroy(comm);
  zcoll__log_set_file("");
  char *text = restore_stderr(err);
  cr_assert_eq(st, ZCOLL_OK, "%s\n%s", zcoll_last_error(), text);
  char want[512];
  snprintf(want, sizeof(want),
           "cannot open ZCOLL_LOG_FILE %s: a FIFO with no reader; "
           "logging to stderr\n",
           fifo);
  cr_expect_eq(count(text, want), 1, "once, in:\n%s", text);
  cr_expect(strstr(text, " rank 0 of 1 ready:"), "%s", text);
  free(text);
}

static void log_lines(int n, const char *tag) {
  char pad[901];
  memset(pad, '.', 900);
  pad[900] = '\0';
  for (int i = 0; i < n; i++)
    zcoll__log_write(ZCOLL_LOG_WARN, "lib/comm/comm.c", 1, "%s %d %s", tag, i, pad);
}

/* Everything the non-blocking descriptor rd has now. */
static char *drain(int rd) {
  size_t len = 0, cap = 1 << 16;
  char *buf = malloc(cap);
  for (ssize_t n; (n = read(rd, buf + len, cap - len - 1)) > 0;)
    if ((len += (size_t)n) == cap - 1) buf = realloc(buf, cap *= 2);
  buf[len] = '\0';
  return buf;
}

/* A reader that keeps the FIFO open but does not read: lines past what the pipe holds
 * are dropped after a short wait, not waited for forever; every line that got through
 * is whole, and the next line that fits says how many were dropped. */
Test(hostile_log, fifo_not_drained_drops_lines, .init = make_dir, .fini = remove_dir,
     .timeout = WATCHDOG) {
  const char *fifo = make_fifo("log");
  int rd = open(fifo, O_RDONLY | O_NONBLOCK);
  cr_assert(rd >= 0, "%s", strerror(errno));
  zcoll__log_set_rank(0);
  zcoll__log_set_file(fifo);
  const int n = 400; /* 400 lines of ~1 KiB: several times a pipe's 64 KiB */
  log_lines(n, "first");
  char *got = drain(rd);
  int through = count(got, "] warn init comm/comm.c:1 first ");
  cr_expect(through > 0 && through < n, "%d of %d lines went through", through, n);
  cr_expect_eq(count(got, "\n"), through, "only whole lines: %d of %d", count(got, "\n"), through);
  free(got);
  log_lines(1, "after");
  got = drain(rd);
  char want[160];
  snprintf(want, sizeof(want), "] warn init base/log.c:");
  const char *note = strstr(got, want);
  cr_assert_not_null(note, "%s", got);
  unsigned long dropped = 0;
  cr_expect(sscanf(strchr(note, ':') + 1, "%*d %lu lines dropped", &dropped) == 1, "%s", got);
  cr_expect_eq(dropped, (unsigned long)(n - through), "%s", got);
  cr_expect(strstr(note, "ZCOLL_LOG_FILE") && strstr(note, fifo), "%s", got);
  cr_expect_eq(count(got, "] warn init comm/comm.c:1 after 0 "), 1, "%s", got);
  zcoll__log_set_file("");
  free(got);
  close(rd);
}

/* The reader goes away: the process is not killed by SIGPIPE (its disposition is the
 * application's: default here), the lines go to stderr after a warning. */
Test(hostile_log, fifo_reader_leaving_is_not_fatal, .init = make_dir, .fini = remove_dir,
     .timeout = WATCHDOG) {
  const char *fifo = make_fifo("log");
  const char *err = in_dir("stderr");
  int rd = open(fifo, O_RDONLY | O_NONBLOCK);
  cr_assert(rd >= 0, "%s", strerror(errno));
  zcoll__log_set_rank(0);
  zcoll__log_set_file(fifo);
  log_lines(1, "read");
  char *got = drain(rd);
  cr_expect_eq(count(got, " read 0 "), 1, "%s", got);
  free(got);
  close(rd);
  capture_stderr(err);
  log_lines(2, "later");
  zcoll__log_set_file("");
  char *text = restore_stderr(err);
  sigset_t pending;
  sigpending(&pending);
  cr_expect(!sigismember(&pending, SIGPIPE), "a SIGPIPE left pending");
  cr_expect_eq(count(text, "ZCOLL_LOG_FILE"), 1, "%s", text);
  cr_expect(strstr(text, fifo) && strstr(text, "its reader went away; logging to stderr"), "%s",
            text);
  cr_expect(strstr(text, " later 0 ") && strstr(text, " later 1 "), "%s", text);
  free(text);
}

/* What is not a FIFO nobody reads keeps working: /dev/null, and /dev/stderr whether it
 * is a file or a pipe (the pipe is a FIFO with a reader). */
Test(hostile_log, dev_null_and_dev_stderr_still_work, .init = make_dir, .fini = remove_dir,
     .timeout = WATCHDOG) {
  const char *err = in_dir("stderr");
  zcoll__log_set_rank(0);
  capture_stderr(err);
  zcoll__log_set_file("/dev/null");
  log_lines(3, "null");
  zcoll__log_set_file("/dev/stderr");
  log_lines(3, "file");
  zcoll__log_set_file("");
  char *text = restore_stderr(err);
  cr_expect_eq(count(text, "\n"), 3, "%s", text);
  cr_expect_eq(count(text, " file "), 3, "%s", text);
  free(text);

  int p[2];
  cr_assert_eq(pipe2(p, O_NONBLOCK), 0);
  fflush(stderr);
  int saved = dup(STDERR_FILENO);
  dup2(p[1], STDERR_FILENO);
  close(p[1]);
  zcoll__log_set_file("/dev/stderr");
  log_lines(3, "pipe");
  zcoll__log_set_file("");
  dup2(saved, STDERR_FILENO);
  close(saved);
  text = drain(p[0]);
  close(p[0]);
  cr_expect_eq(count(text, "\n"), 3, "%s", text);
  cr_expect_eq(count(text, " pipe "), 3, "%s", text);
  free(text);
}

/* ---- ZCOLL_TRACE ------------------------------------------------------------------ */

/* A FIFO nobody reads: the trace goes to stderr, with a warning, as the log does. */
Test(hostile_trace, fifo_without_reader_falls_back_to_stderr, .init = make_dir, .fini = remove_dir,
     .timeout = WATCHDOG) {
  const char *fifo = make_fifo("t.0.json");
  const char *err_path = in_dir("stderr");
  int saved = dup(STDERR_FILENO), err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  cr_assert(saved >= 0 && err >= 0);
  fflush(stderr);
  dup2(err, STDERR_FILENO);
  zcoll_comm_t *comm = NULL;
  zcoll_status_t st = init_with("warn", "TRACE", in_dir("t"), &comm);
  float x[16] = {0};
  zcoll_status_t ast = st == ZCOLL_OK
                           ? zcoll_allreduce(comm, ZCOLL_IN_PLACE, x, 16, ZCOLL_FLOAT32, ZCOLL_SUM)
                           : st;
  zcoll_status_t dst = st == ZCOLL_OK ? zcoll_comm_destroy(comm) : st;
  dup2(saved, STDERR_FILENO);
  close(saved), close(err);
  cr_assert_eq(st, ZCOLL_OK, "%s", zcoll_last_error());
  cr_expect_eq(ast, ZCOLL_OK);
  cr_expect_eq(dst, ZCOLL_OK);
  FILE *f = fopen(err_path, "r");
  cr_assert_not_null(f);
  static char text[1 << 16];
  size_t n = fread(text, 1, sizeof(text) - 1, f);
  fclose(f);
  text[n] = '\0';
  char want[512];
  snprintf(want, sizeof(want), "ZCOLL_TRACE: %s is a FIFO with no reader; tracing to stderr", fifo);
  cr_expect(strstr(text, want), "stderr lacks '%s':\n%s", want, text);
  cr_expect(strstr(text, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":["), "%s", text);
  cr_expect(strstr(text, "\n]}\n"), "%s", text);
}

struct reader {
  int fd; /* the FIFO, opened to read before anybody writes, non-blocking */
  atomic_int writer_done;
  char *text;
};

/* Everything written to the FIFO until the writer is done: before the writer opens it
 * and after it closes it, a read finds no writer and returns 0. */
static void *read_all(void *arg) {
  struct reader *r = arg;
  size_t len = 0, cap = 1 << 16;
  r->text = malloc(cap);
  for (;;) {
    int done = r->writer_done; /* read before: then a 0 that follows is the end */
    ssize_t n = read(r->fd, r->text + len, cap - len - 1);
    if (n > 0 && (len += (size_t)n) == cap - 1) r->text = realloc(r->text, cap *= 2);
    if (n == 0 && done) break;
    if (n <= 0) {
      struct pollfd p = {r->fd, POLLIN, 0};
      if (poll(&p, 1, 10) != 1 || !(p.revents & POLLIN)) usleep(1000);
    }
  }
  r->text[len] = '\0';
  return NULL;
}

/* A FIFO with a reader that reads is a trace file like any other. */
Test(hostile_trace, fifo_with_reader_gets_the_trace, .init = make_dir, .fini = remove_dir,
     .timeout = WATCHDOG) {
  const char *fifo = make_fifo("t.0.json");
  struct reader r = {open(fifo, O_RDONLY | O_NONBLOCK), 0, NULL};
  cr_assert(r.fd >= 0, "%s", strerror(errno));
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, read_all, &r), 0);
  zcoll_comm_t *comm;
  cr_assert_eq(init_with("none", "TRACE", in_dir("t"), &comm), ZCOLL_OK, "%s", zcoll_last_error());
  float x[1024];
  for (int i = 0; i < 1024; i++) x[i] = (float)i;
  for (int i = 0; i < 50; i++)
    cr_assert_eq(zcoll_allreduce(comm, ZCOLL_IN_PLACE, x, 1024, ZCOLL_FLOAT32, ZCOLL_SUM),
                 ZCOLL_OK);
  cr_assert_eq(zcoll_comm_destroy(comm), ZCOLL_OK);
  r.writer_done = 1;
  pthread_join(t, NULL);
  close(r.fd);
  cr_expect(!strncmp(r.text, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", 40), "%.200s",
            r.text);
  size_t len = strlen(r.text);
  cr_expect(len > 4 && !strcmp(r.text + len - 4, "\n]}\n"), "...%s", r.text + len - 20);
  cr_expect_geq(count(r.text, "\"name\":\"allreduce\""), 51, "%.4000s", r.text);
  free(r.text);
}
