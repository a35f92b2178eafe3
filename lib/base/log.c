/* log.c -- one line per message, prefixed with host, pid, rank, level and subsystem, on
 * stderr or in a file per rank (ZCOLL_LOG_FILE). */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

_Atomic zcoll__log_level_t zcoll__log_level = ZCOLL_LOG_WARN;
static _Atomic unsigned log_subsys = ZCOLL_LOG_SUBSYS_ALL;

static _Thread_local int log_rank = -1;
static _Thread_local char last_error[512];
static _Thread_local int muted;

void zcoll__log_mute(int on) { muted = on; }

static const char *const level_names[] = {"none", "error", "warn", "info", "debug", "trace"};
static const char *const subsys_names[ZCOLL_LOG_NSUBSYS] = {"init", "boot", "net",
                                                            "coll", "tune", "mem"};

void zcoll__log_set_rank(int rank) { log_rank = rank; }

void zcoll__log_set_level(zcoll__log_level_t level) { zcoll__log_level = level; }

int zcoll__log_parse_level(const char *s) {
  for (int i = 0; i < (int)(sizeof(level_names) / sizeof(level_names[0])); i++)
    if (strcasecmp(s, level_names[i]) == 0) return i;
  return -1;
}

/* ---- subsystems ------------------------------------------------------------------ */

const char *zcoll__log_subsys_name(int subsys) {
  return subsys >= 0 && subsys < ZCOLL_LOG_NSUBSYS ? subsys_names[subsys] : "?";
}

/* The one table of which file belongs to which subsystem (log.h lists it for readers):
 * the folder a file is in, and the start of its name (NULL: any). First match wins. */
static const struct {
  const char *dir;
  const char *prefix;
  zcoll__log_subsys_t subsys;
} subsys_rules[] = {
    {"boot", NULL, ZCOLL_LOG_SUBSYS_BOOT}, /* bootstrap, launchers, sockets */
    {"core", "rcache", ZCOLL_LOG_SUBSYS_MEM},
    {"tl", NULL, ZCOLL_LOG_SUBSYS_NET},
    {"transports", NULL, ZCOLL_LOG_SUBSYS_NET}, /* transports/<name>/<file> */
    {"base", "ucx_dlopen", ZCOLL_LOG_SUBSYS_NET},
    {"base", "trace", ZCOLL_LOG_SUBSYS_COLL},
    {"base", "fsize", ZCOLL_LOG_SUBSYS_MEM},
    {"base", NULL, ZCOLL_LOG_SUBSYS_INIT},    /* log, config, clock, node, status */
    {"kernels", NULL, ZCOLL_LOG_SUBSYS_COLL}, /* reduction kernels, ops, copies */
    {"core", "mr", ZCOLL_LOG_SUBSYS_MEM},
    {"core", "guard", ZCOLL_LOG_SUBSYS_INIT},
    {"core", "comm_registry", ZCOLL_LOG_SUBSYS_INIT},
    {"core", NULL, ZCOLL_LOG_SUBSYS_COLL}, /* the executor, channels, grants, flight */
    {"coll", NULL, ZCOLL_LOG_SUBSYS_COLL},
    {"p2p", NULL, ZCOLL_LOG_SUBSYS_COLL}, /* point-to-point messages */
    {"comm", "transports", ZCOLL_LOG_SUBSYS_NET},
    {"comm", "diag", ZCOLL_LOG_SUBSYS_TUNE}, /* what zcoll_info asks: selection, devices */
    {"comm", "stats", ZCOLL_LOG_SUBSYS_COLL},
    {"comm", NULL, ZCOLL_LOG_SUBSYS_INIT},
    {"algorithms", "select", ZCOLL_LOG_SUBSYS_TUNE},
    {"algorithms", NULL, ZCOLL_LOG_SUBSYS_COLL},
};

/* The path's last components: base name, parent folder and the one above (each "" if
 * absent), as lengths into the path. */
struct path_tail {
  const char *base, *p1, *p2;
  size_t p1_len, p2_len;
};

static struct path_tail split_tail(const char *file) {
  struct path_tail t = {file, "", "", 0, 0};
  const char *s1 = strrchr(file, '/');
  if (!s1) return t;
  t.base = s1 + 1;
  const char *s2 = s1;
  while (s2 > file && s2[-1] != '/') s2--;
  t.p1 = s2, t.p1_len = (size_t)(s1 - s2);
  if (s2 == file) return t;
  const char *s3 = s2 - 1;
  while (s3 > file && s3[-1] != '/') s3--;
  t.p2 = s3, t.p2_len = (size_t)(s2 - 1 - s3);
  return t;
}

static int dir_is(const char *p, size_t len, const char *name) {
  return len == strlen(name) && strncmp(p, name, len) == 0;
}

int zcoll__log_subsys_of(const char *file) {
  struct path_tail t = split_tail(file);
  for (size_t i = 0; i < sizeof(subsys_rules) / sizeof(subsys_rules[0]); i++) {
    const char *dir = subsys_rules[i].dir, *pre = subsys_rules[i].prefix;
    int in = dir_is(t.p1, t.p1_len, dir) ||
             (!strcmp(dir, "transports") && dir_is(t.p2, t.p2_len, dir));
    if (in && (!pre || strncmp(t.base, pre, strlen(pre)) == 0)) return subsys_rules[i].subsys;
  }
  return -1;
}

int zcoll__log_parse_subsys(const char *s, unsigned *mask, char *why, size_t why_len) {
  int invert = s[0] == '^';
  if (invert) s++;
  if (!invert && strcasecmp(s, "all") == 0) {
    *mask = ZCOLL_LOG_SUBSYS_ALL;
    return 0;
  }
  unsigned m = 0;
  for (;;) { /* every name must be one: "", "net," and "^" are mistakes, not "none" */
    size_t n = strcspn(s, ",");
    int found = -1;
    for (int i = 0; i < ZCOLL_LOG_NSUBSYS; i++)
      if (n == strlen(subsys_names[i]) && strncasecmp(s, subsys_names[i], n) == 0) found = i;
    if (found < 0) {
      snprintf(why, why_len,
               "'%.*s' is not a subsystem: all, or a list of "
               "init,boot,net,coll,tune,mem (^ in front: all but those)",
               (int)n, s);
      return -1;
    }
    m |= 1u << found;
    if (!s[n]) break;
    s += n + 1;
  }
  *mask = invert ? ZCOLL_LOG_SUBSYS_ALL & ~m : m;
  return 0;
}

void zcoll__log_set_subsys(unsigned mask) { log_subsys = mask; }

/* ---- where lines go -------------------------------------------------------------- */

/* A process usually has one rank, hence one file; ranks run as threads (tests) have one
 * each, so the files opened are kept by expanded path. All of it under one lock, held
 * across the write too, so that changing the pattern can close files nobody is writing
 * to. The lock is only taken when a pattern is set: stderr needs none. */
#define LOG_FILES_MAX 16
static pthread_mutex_t files_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int to_file;
static char file_pattern[512];
static struct log_file {
  char path[512];
  int fd;                /* -1: not opened, or its reader left (warned once): stderr */
  int fifo;              /* a FIFO with a reader: fifo_write */
  unsigned long dropped; /* lines the FIFO had no room for, not said yet */
} files[LOG_FILES_MAX];
static int nfiles;
static int full_warned; /* the table is full: said once, stderr from then on */

static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static char host[64];

static void host_init(void) {
  if (gethostname(host, sizeof(host) - 1) != 0 || !host[0]) snprintf(host, sizeof(host), "?");
}

static const char *host_name(void) {
  pthread_once(&host_once, host_init);
  return host;
}

int zcoll__log_check_file(const char *pattern, char *why, size_t why_len) {
  for (const char *p = strchr(pattern, '%'); p; p = strchr(p + 2, '%'))
    if (!p[1] || !strchr("hpr%", p[1])) {
      snprintf(why, why_len, "'%%%.1s' is not one of %%h (host), %%p (pid), %%r (rank), %%%%",
               p + 1);
      return -1;
    }
  return 0;
}

void zcoll__log_set_file(const char *pattern) {
  pthread_mutex_lock(&files_lock);
  if (strcmp(pattern, file_pattern) != 0) {
    for (int i = 0; i < nfiles; i++)
      if (files[i].fd >= 0) close(files[i].fd);
    nfiles = 0;
    full_warned = 0;
    snprintf(file_pattern, sizeof(file_pattern), "%s", pattern);
    to_file = pattern[0] != '\0';
  }
  pthread_mutex_unlock(&files_lock);
}

/* The pattern with this thread's host, pid and rank; 0 if the pattern needs a rank
 * this thread does not have yet (its lines go to stderr: configuration errors). */
static int expand(char *out, size_t len) {
  size_t o = 0;
  for (const char *p = file_pattern; *p && o < len; p++) {
    if (*p != '%') {
      out[o++] = *p;
      continue;
    }
    p++;
    if (!*p) break; /* a trailing '%': zcoll__log_check_file refuses it, stay safe anyway */
    if (*p == 'r' && log_rank < 0) return 0;
    if (*p == 'h')
      o += (size_t)snprintf(out + o, len - o, "%s", host_name());
    else if (*p == 'p')
      o += (size_t)snprintf(out + o, len - o, "%d", (int)getpid());
    else if (*p == 'r')
      o += (size_t)snprintf(out + o, len - o, "%d", log_rank);
    else
      out[o++] = '%';
  }
  if (o >= len) return 0;
  out[o] = '\0';
  return 1;
}

static void write_all(int fd, const char *s, size_t n) {
  ssize_t w = write(fd, s, n);
  (void)w; /* nowhere left to report a failed log write */
}

int zcoll__open_output(const char *path, int flags, int *fifo, char *why, size_t why_len) {
  int fd = open(path, O_WRONLY | O_CREAT | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | flags, 0666);
  struct stat sb;
  if (fd < 0) {
    int err = errno;
    if (err == ENXIO && stat(path, &sb) == 0 && S_ISFIFO(sb.st_mode)) {
      snprintf(why, why_len, "a FIFO with no reader");
    } else if (err == ELOOP && (flags & O_NOFOLLOW) && lstat(path, &sb) == 0 &&
               S_ISLNK(sb.st_mode)) {
      snprintf(why, why_len, "a symbolic link (not followed)");
    } else {
      errno = err; /* for %m: strerror is not thread-safe */
      snprintf(why, why_len, "%m");
    }
    return -1;
  }
  *fifo = fstat(fd, &sb) != 0 || S_ISFIFO(sb.st_mode);
  /* A file or a device (a terminal, /dev/null) is written as stderr is: blocking, or a
   * terminal stopped by ^S would fail the write. */
  int fl = fcntl(fd, F_GETFL);
  if (!*fifo && fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}

int zcoll__open_regular(const char *path, int flags, char *why, size_t why_len) {
  int fifo, fd = zcoll__open_output(path, flags | O_NOFOLLOW, &fifo, why, why_len);
  if (fd < 0) return -1;
  struct stat sb;
  int ok = fstat(fd, &sb) == 0;
  if (ok && S_ISREG(sb.st_mode)) return fd;
  if (!ok) /* %m: strerror is not thread-safe */
    snprintf(why, why_len, "%m");
  else
    snprintf(why, why_len, "not a regular file but a %s",
             S_ISFIFO(sb.st_mode)   ? "FIFO"
             : S_ISCHR(sb.st_mode)  ? "character device"
             : S_ISSOCK(sb.st_mode) ? "socket"
                                    : "special file");
  close(fd);
  return -1;
}

/* A line of this file's own about the log file, with the prefix of every line. */
__attribute__((format(printf, 5, 6))) static size_t
own_line(char *out, size_t len, const char *rank, int line, const char *fmt, ...) {
  int n = snprintf(out, len, "[zcoll %s:%d r%s] warn init base/log.c:%d ", host_name(),
                   (int)getpid(), rank, line);
  if (n < 0 || (size_t)n >= len) return 0;
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(out + n, len - (size_t)n, fmt, ap);
  va_end(ap);
  if (m < 0) return 0;
  size_t end = (size_t)n + (size_t)m < len - 1 ? (size_t)n + (size_t)m : len - 2;
  out[end] = '\n';
  out[end + 1] = '\0';
  return end + 1;
}

/* A write to a FIFO whose reader has left raises SIGPIPE, which by default ends the
 * process; its disposition is the application's, so the signal is only blocked in this
 * thread for the write, and taken back if the write raised it. */
static ssize_t write_nosigpipe(int fd, const char *s, size_t n) {
  sigset_t pipe_set, old, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  int was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
  ssize_t w = write(fd, s, n);
  int err = errno;
  if (w < 0 && err == EPIPE && !was_pending) {
    static const struct timespec now = {0, 0};
    sigtimedwait(&pipe_set, NULL, &now);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  errno = err;
  return w;
}

/* How long a line waits for room in a FIFO whose reader is behind (docs/configuration.md). */
#define FIFO_WAIT_MS 100

/* 1 if s went into lf's FIFO, 0 if there was no room within wait_ms, -1 if the reader
 * has left: the file is closed, said on stderr, and its lines go there from now on. */
static int fifo_put(struct log_file *lf, const char *rank, const char *s, size_t n, int wait_ms) {
  ssize_t w = write_nosigpipe(lf->fd, s, n);
  int err = errno;
  if (w < 0 && err == EAGAIN && wait_ms > 0) {
    struct pollfd p = {lf->fd, POLLOUT, 0};
    if (poll(&p, 1, wait_ms) > 0) { /* room, or the reader left: POLLERR */
      w = write_nosigpipe(lf->fd, s, n);
      err = errno;
    }
  }
  if (w >= 0) return 1;
  if (err != EPIPE) return 0;
  close(lf->fd);
  lf->fd = -1;
  char msg[768], lost[64] = "";
  if (lf->dropped) snprintf(lost, sizeof(lost), " (%lu lines dropped before)", lf->dropped);
  size_t m = own_line(msg, sizeof(msg), rank, __LINE__,
                      "ZCOLL_LOG_FILE %s: its reader went away%s; logging to stderr", lf->path,
                      lost);
  write_all(STDERR_FILENO, msg, m);
  return -1;
}

/* A FIFO's reader may stop reading yet keep it open, and a log write must not hold up
 * the library (under files_lock, at that) for long: a line waits at most FIFO_WAIT_MS
 * for room; from then on lines that do not fit are dropped at once and counted, until
 * one fits again, in one write with a line saying how many were lost. A write of at most
 * PIPE_BUF bytes goes in whole or not at all. */
static void fifo_write(struct log_file *lf, const char *rank, const char *s, size_t n) {
  char both[2304];
  _Static_assert(sizeof(both) <= PIPE_BUF, "a FIFO write must be atomic");
  const char *w = s;
  size_t wn = n;
  if (lf->dropped && n <= sizeof(both) - 768) {
    wn = own_line(both, 768, rank, __LINE__,
                  "%lu lines dropped: the reader of ZCOLL_LOG_FILE %s was not keeping up",
                  lf->dropped, lf->path);
    memcpy(both + wn, s, n);
    w = both;
    wn += n;
  }
  int put = fifo_put(lf, rank, w, wn, lf->dropped ? 0 : FIFO_WAIT_MS);
  if (put == 1) lf->dropped = 0;
  if (put == 0) lf->dropped++;
  if (put < 0) write_all(STDERR_FILENO, s, n);
}

/* The file for this thread's lines, under files_lock; NULL for stderr. */
static struct log_file *file_of(const char *rank) {
  char path[512];
  if (!expand(path, sizeof(path))) return NULL;
  for (int i = 0; i < nfiles; i++)
    if (!strcmp(files[i].path, path)) return files[i].fd >= 0 ? &files[i] : NULL;
  if (nfiles == LOG_FILES_MAX && full_warned++) return NULL;
  char why[256];
  if (nfiles < LOG_FILES_MAX) {
    struct log_file *lf = &files[nfiles++];
    snprintf(lf->path, sizeof(lf->path), "%s", path);
    lf->dropped = 0;
    lf->fd = zcoll__open_output(path, O_APPEND, &lf->fifo, why, sizeof(why));
    if (lf->fd >= 0) return lf;
  } else {
    errno = EMFILE; /* for %m: strerror is not thread-safe */
    snprintf(why, sizeof(why), "%m");
  }
  /* Once per path: the lines that follow still reach somebody. */
  char msg[1024];
  size_t m = own_line(msg, sizeof(msg), rank, __LINE__,
                      "cannot open ZCOLL_LOG_FILE %s: %s; logging to stderr", path, why);
  write_all(STDERR_FILENO, msg, m);
  return NULL;
}

static void vwrite_line(zcoll__log_level_t level, const char *file, int line, const char *fmt,
                        va_list ap) {
  int subsys = zcoll__log_subsys_of(file);
  if (subsys < 0) subsys = ZCOLL_LOG_SUBSYS_INIT;
  if (!(log_subsys >> subsys & 1u)) return;
  char msg[1024];
  vsnprintf(msg, sizeof(msg), fmt, ap);
  struct path_tail t = split_tail(file);
  char rank[16] = "-";
  if (log_rank >= 0) snprintf(rank, sizeof(rank), "%d", log_rank);
  /* One write per line so that lines of ranks sharing a terminal or file do not
   * interleave. */
  char out[1400];
  int n = snprintf(out, sizeof(out), "[zcoll %s:%d r%s] %s %s %.*s%s%s:%d %s\n", host_name(),
                   (int)getpid(), rank, level_names[level], subsys_names[subsys], (int)t.p1_len,
                   t.p1, t.p1_len ? "/" : "", t.base, line, msg);
  if (n <= 0) return;
  if (n >= (int)sizeof(out)) {
    n = (int)sizeof(out) - 1;
    out[n - 1] = '\n';
  }
  if (!to_file) {
    write_all(STDERR_FILENO, out, (size_t)n);
    return;
  }
  pthread_mutex_lock(&files_lock);
  struct log_file *lf = file_of(rank);
  if (lf && lf->fifo)
    fifo_write(lf, rank, out, (size_t)n);
  else
    write_all(lf ? lf->fd : STDERR_FILENO, out, (size_t)n);
  pthread_mutex_unlock(&files_lock);
}

void zcoll__log_write(zcoll__log_level_t level, const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vwrite_line(level, file, line, fmt, ap);
  va_end(ap);
}

zcoll_status_t zcoll__fail_at(zcoll_status_t st, const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof(last_error), fmt, ap);
  va_end(ap);
  /* Bad arguments and missing features are the caller's to handle with the status
   * and message; printing them by default would be noise in a program that copes. */
  zcoll__log_level_t level = st == ZCOLL_ERR_INVALID_ARG || st == ZCOLL_ERR_UNSUPPORTED
                                 ? ZCOLL_LOG_INFO
                                 : ZCOLL_LOG_ERROR;
  if (level <= zcoll__log_level && !muted)
    zcoll__log_write(level, file, line, "%s (%s)", last_error, zcoll_strerror(st));
  return st;
}

zcoll_status_t zcoll__record_error(zcoll_status_t st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof(last_error), fmt, ap);
  va_end(ap);
  return st;
}

const char *zcoll__last_error(void) { return last_error; }

void zcoll__clear_error(void) { last_error[0] = '\0'; }

const char *zcoll_last_error(void) { return last_error; }
