/* zcoll_run: start N local ranks of a program, like `mpirun -np N` on one machine.
 *
 * Every rank gets ZCOLL_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE/ROOT/JOB_KEY.  The rendezvous
 * socket behind ZCOLL_ROOT is created here, before any fork, and handed to rank 0 only
 * (ZCOLL_ROOT_FD), so no rank ever races another for a free port.
 *
 * One poll loop waits on a signalfd (SIGCHLD, SIGINT, SIGTERM, SIGHUP) and, with
 * --tag-output, on the ranks' stdout/stderr pipes.  Exited ranks are observed with
 * waitid(WNOWAIT) and only reaped at the very end: a zombie leader keeps its process
 * group id reserved, so kill(-pgid, ...) can never hit an unrelated, recycled group.
 * Only libc is used. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include "zcoll_run_output.h"

#define MAX_RANKS 4096
#define GRACE_NS (2 * 1000000000LL) /* SIGTERM -> SIGKILL; also the output drain limit */
struct rank {
  pid_t pid; /* also the process group id */
  bool exited;
};

struct launcher {
  int np;
  bool tag;
  double timeout_s; /* 0: none */
  char **argv;      /* the program and its arguments */
  pid_t self;
  int listen_fd;
  int sig_fd;
  sigset_t old_mask;
  struct sigaction old_pipe;
  struct rlimit old_nofile;
  bool raised_nofile;
  struct rank *ranks;
  int started, alive;
  struct stream *streams; /* 2 per rank */
  int open_streams;
  struct pollfd *pfds;
  struct stream **pfd_stream;
  struct zr_output out; /* --tag-output: line assembly and broken output fds */
  bool terminating, killed, swept;
  int exit_code;
  int64_t job_deadline, kill_deadline, drain_deadline; /* 0: not armed */
};

static const char usage_text[] =
    "usage: zcoll_run -np N [-x VAR[=VALUE]]... [--tag-output] [--timeout SECONDS] prog [args...]\n"
    "  -np, -n N            start N ranks (1..4096)\n"
    "  -x VAR=VALUE         set VAR in every rank; -x VAR exports the launcher's value\n"
    "  -t, --tag-output     prefix each output line with [rank]\n"
    "  --timeout SECONDS    terminate the job after SECONDS (exit status 124; 0: never)\n"
    "  -h, --help           show this help\n";

static _Noreturn void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static _Noreturn void usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("zcoll_run: ", stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fputs(usage_text, stderr);
  exit(2);
}

static _Noreturn void die(const char *what) {
  fprintf(stderr, "zcoll_run: %s: %s\n", what, strerror(errno));
  exit(1);
}

static int64_t now_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0) die("clock_gettime");
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) die("out of memory");
  return p;
}

/* Option value: "--opt VALUE", or "--opt=VALUE" for long options. */
static const char *opt_value(int argc, char **argv, int *i, const char *name) {
  size_t n = strlen(name);
  if (strncmp(argv[*i], name, n) == 0 && argv[*i][n] == '=' && name[1] == '-')
    return argv[*i] + n + 1;
  if (*i + 1 >= argc) usage_error("option %s needs a value", name);
  return argv[++*i];
}

static bool is_opt(const char *arg, const char *name) {
  size_t n = strlen(name);
  return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || (arg[n] == '=' && name[1] == '-'));
}

static void export_var(const char *spec) {
  const char *eq = strchr(spec, '=');
  size_t n = eq ? (size_t)(eq - spec) : strlen(spec);
  if (n == 0) usage_error("-x '%s': empty variable name", spec);
  if (!eq) {
    if (!getenv(spec)) usage_error("-x %s: %s is not set in the environment", spec, spec);
    return; /* already in the environment every rank inherits */
  }
  char *name = strndup(spec, n);
  if (!name) die("out of memory");
  if (setenv(name, eq + 1, 1) < 0) usage_error("-x %s: %s", spec, strerror(errno));
  free(name);
}

static void parse_args(struct launcher *L, int argc, char **argv) {
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    if (a[0] != '-' || a[1] == '\0') break; /* the program: everything from here on is its own */
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      fputs(usage_text, stdout);
      exit(0);
    } else if (is_opt(a, "-np") || is_opt(a, "-n") || is_opt(a, "--np")) {
      const char *v = opt_value(argc, argv, &i,
                                strncmp(a, "--np", 4) == 0 ? "--np"
                                : strcmp(a, "-n") == 0     ? "-n"
                                                           : "-np");
      char *end;
      errno = 0;
      long n = strtol(v, &end, 10);
      if (end == v || *end != '\0' || errno == ERANGE) usage_error("-np: '%s' is not a number", v);
      if (n < 1 || n > MAX_RANKS)
        usage_error("-np: %ld ranks requested, must be between 1 and %d", n, MAX_RANKS);
      L->np = (int)n;
    } else if (strcmp(a, "-x") == 0) {
      export_var(opt_value(argc, argv, &i, "-x"));
    } else if (strcmp(a, "-t") == 0 || strcmp(a, "--tag-output") == 0) {
      L->tag = true;
    } else if (is_opt(a, "--timeout")) {
      const char *v = opt_value(argc, argv, &i, "--timeout");
      char *end;
      errno = 0;
      double t = strtod(v, &end);
      if (end == v || *end != '\0' || errno == ERANGE || !(t >= 0 && t <= 1e9))
        usage_error("--timeout: '%s' is not a number of seconds between 0 and 1e9", v);
      L->timeout_s = t;
    } else {
      usage_error("unknown option '%s'", a);
    }
  }
  if (L->np == 0) usage_error("missing -np N");
  if (i >= argc) usage_error("no program to run");
  L->argv = argv + i;
}

static void make_job_env(struct launcher *L) {
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t sl = sizeof sa;
  L->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (L->listen_fd < 0) die("socket");
  if (bind(L->listen_fd, (struct sockaddr *)&sa, sizeof sa) < 0) die("bind 127.0.0.1:0");
  if (listen(L->listen_fd, SOMAXCONN) < 0) die("listen");
  if (getsockname(L->listen_fd, (struct sockaddr *)&sa, &sl) < 0) die("getsockname");

  unsigned char key[16];
  for (size_t got = 0; got < sizeof key;) {
    ssize_t r = getrandom(key + got, sizeof key - got, 0);
    if (r < 0 && errno != EINTR) die("getrandom");
    got += r > 0 ? (size_t)r : 0;
  }
  char hex[2 * sizeof key + 1], buf[32];
  for (size_t k = 0; k < sizeof key; k++) snprintf(hex + 2 * k, 3, "%02x", key[k]);

  snprintf(buf, sizeof buf, "127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
  if (setenv("ZCOLL_ROOT", buf, 1) < 0 || setenv("ZCOLL_JOB_KEY", hex, 1) < 0) die("setenv");
  snprintf(buf, sizeof buf, "%d", L->np);
  if (setenv("ZCOLL_SIZE", buf, 1) < 0 || setenv("ZCOLL_LOCAL_SIZE", buf, 1) < 0) die("setenv");
  if (unsetenv("ZCOLL_ROOT_FD") < 0) die("unsetenv");
}

/* Block the signals we wait for, so that only the signalfd sees them. Signals the
 * launcher was started with ignored (nohup, `cmd &` in a script) stay ignored. */
static void setup_signals(struct launcher *L) {
  static const int fwd[] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction dfl = {.sa_handler = SIG_DFL}, ign = {.sa_handler = SIG_IGN}, cur;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  for (size_t k = 0; k < sizeof fwd / sizeof fwd[0]; k++) {
    if (sigaction(fwd[k], NULL, &cur) < 0) die("sigaction");
    if (cur.sa_handler != SIG_IGN) sigaddset(&set, fwd[k]);
  }
  /* An inherited SIG_IGN for SIGCHLD would make the kernel reap the ranks for us. */
  if (sigaction(SIGCHLD, &dfl, NULL) < 0 || sigaction(SIGPIPE, &ign, &L->old_pipe) < 0)
    die("sigaction");
  if (sigprocmask(SIG_BLOCK, &set, &L->old_mask) < 0) die("sigprocmask");
  L->sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (L->sig_fd < 0) die("signalfd");
}

static void child_fail(int rank, const char *what) {
  fprintf(stderr, "zcoll_run: rank %d: %s: %s\n", rank, what, strerror(errno));
  _exit(127);
}

/* In the forked child: undo the launcher's signal setup, become a process group,
 * die with the launcher, wire up output and environment, exec. */
static _Noreturn void child_exec(struct launcher *L, int rank, int out_w, int err_w) {
  char buf[16];
  if (sigaction(SIGPIPE, &L->old_pipe, NULL) < 0) child_fail(rank, "sigaction");
  if (sigprocmask(SIG_SETMASK, &L->old_mask, NULL) < 0) child_fail(rank, "sigprocmask");
  if (L->raised_nofile && setrlimit(RLIMIT_NOFILE, &L->old_nofile) < 0)
    child_fail(rank, "setrlimit");
  if (setpgid(0, 0) < 0) child_fail(rank, "setpgid");
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) child_fail(rank, "prctl(PR_SET_PDEATHSIG)");
  if (getppid() != L->self) _exit(127); /* the launcher died before prctl took effect */
  if (L->tag && (dup2(out_w, STDOUT_FILENO) < 0 || dup2(err_w, STDERR_FILENO) < 0))
    child_fail(rank, "dup2");
  snprintf(buf, sizeof buf, "%d", rank);
  if (setenv("ZCOLL_RANK", buf, 1) < 0 || setenv("ZCOLL_LOCAL_RANK", buf, 1) < 0)
    child_fail(rank, "setenv");
  if (rank == 0) {
    snprintf(buf, sizeof buf, "%d", L->listen_fd);
    if (fcntl(L->listen_fd, F_SETFD, 0) < 0) child_fail(rank, "fcntl(ZCOLL_ROOT_FD)");
    if (setenv("ZCOLL_ROOT_FD", buf, 1) < 0) child_fail(rank, "setenv");
  }
  execvp(L->argv[0], L->argv);
  fprintf(stderr, "zcoll_run: cannot execute %s: %s\n", L->argv[0], strerror(errno));
  _exit(127);
}

/* Signal every started rank's process group. Leaders are not reaped before the end,
 * so each group id stays reserved even after its leader exited. */
static void signal_ranks(struct launcher *L, int sig) {
  for (int r = 0; r < L->started; r++) {
    pid_t pid = L->ranks[r].pid;
    if (kill(-pid, sig) < 0 && (errno != ESRCH || kill(pid, sig) < 0) && errno != ESRCH)
      fprintf(stderr, "zcoll_run: kill rank %d (pid %d): %s\n", r, (int)pid, strerror(errno));
  }
}

static void begin_terminate(struct launcher *L, int code, int sig) {
  if (L->terminating) return;
  L->terminating = true;
  L->exit_code = code;
  signal_ranks(L, sig);
  signal_ranks(L, SIGCONT); /* a stopped rank must be able to act on it */
  L->kill_deadline = now_ns() + GRACE_NS;
}

static void kill_all(struct launcher *L) {
  if (!L->killed) signal_ranks(L, SIGKILL);
  L->killed = true;
}

static void launch(struct launcher *L) {
  if (L->tag) {
    struct rlimit rl;
    rlim_t need = 2 * (rlim_t)L->np + 64;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0) die("getrlimit");
    L->old_nofile = rl;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
      rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need : rl.rlim_max;
      if (setrlimit(RLIMIT_NOFILE, &rl) < 0) die("setrlimit(RLIMIT_NOFILE)");
      L->raised_nofile = true;
    }
  }
  for (int r = 0; r < L->np; r++) {
    int out[2] = {-1, -1}, err[2] = {-1, -1};
    if (L->tag && (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)) {
      fprintf(stderr, "zcoll_run: pipe for rank %d: %s\n", r, strerror(errno));
      if (out[0] >= 0) {
        close(out[0]);
        close(out[1]);
      }
      begin_terminate(L, 1, SIGTERM);
      break;
    }
    pid_t pid = fork();
    if (pid == 0) child_exec(L, r, out[1], err[1]);
    if (pid < 0) {
      fprintf(stderr, "zcoll_run: fork for rank %d: %s\n", r, strerror(errno));
      if (L->tag) {
        close(out[0]), close(out[1]), close(err[0]), close(err[1]);
      }
      begin_terminate(L, 1, SIGTERM);
      break;
    }
    /* Also from this side, so the group exists before we might signal it. EACCES:
     * the child already exec'd (and so did it itself). */
    if (setpgid(pid, pid) < 0 && errno != EACCES && errno != ESRCH)
      fprintf(stderr, "zcoll_run: setpgid rank %d: %s\n", r, strerror(errno));
    L->ranks[r] = (struct rank){.pid = pid};
    L->started++;
    L->alive++;
    if (L->tag) {
      close(out[1]);
      close(err[1]);
      L->streams[2 * r] = (struct stream){.fd = out[0], .out_fd = STDOUT_FILENO, .rank = r};
      L->streams[2 * r + 1] = (struct stream){.fd = err[0], .out_fd = STDERR_FILENO, .rank = r};
      L->open_streams += 2;
    }
  }
  if (close(L->listen_fd) < 0) die("close(listen socket)");
  L->listen_fd = -1;
}

static void check_ranks(struct launcher *L) {
  for (int r = 0; r < L->started; r++) {
    struct rank *rk = &L->ranks[r];
    if (rk->exited) continue;
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)rk->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0) die("waitid");
    if (si.si_pid == 0) continue;
    rk->exited = true;
    L->alive--;
    bool sig = si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED;
    if ((!sig && si.si_status == 0) || L->terminating) continue;
    /* One line, one write: the ranks write to the same stderr, and a line of theirs
     * must not land inside this one. */
    char what[160];
    if (sig)
      snprintf(what, sizeof what, "was killed by signal %d (%s)", si.si_status,
               strsignal(si.si_status));
    else
      snprintf(what, sizeof what, "exited with status %d", si.si_status);
    fprintf(stderr, "zcoll_run: rank %d (pid %d) %s%s\n", r, (int)rk->pid, what,
            L->alive > 0 ? "; terminating the other ranks" : "");
    begin_terminate(L, sig ? 128 + si.si_status : si.si_status, SIGTERM);
  }
}

static void handle_signals(struct launcher *L) {
  struct signalfd_siginfo si;
  ssize_t n;
  bool child = false;
  while ((n = read(L->sig_fd, &si, sizeof si)) == (ssize_t)sizeof si) {
    int sig = (int)si.ssi_signo;
    if (sig == SIGCHLD) {
      child = true;
    } else if (L->terminating) {
      kill_all(L); /* asked twice: no more grace */
    } else {
      fprintf(stderr, "zcoll_run: got signal %d (%s); forwarding it to the ranks\n", sig,
              strsignal(sig));
      begin_terminate(L, 128 + sig, sig);
    }
  }
  if (n < 0 && errno != EAGAIN && errno != EINTR) die("read(signalfd)");
  if (child) check_ranks(L);
}

static int poll_timeout(const struct launcher *L, int64_t now) {
  int64_t next = INT64_MAX;
  if (L->job_deadline && !L->terminating) next = L->job_deadline;
  if (L->terminating && !L->killed && L->kill_deadline < next) next = L->kill_deadline;
  if (L->drain_deadline && L->drain_deadline < next) next = L->drain_deadline;
  if (next == INT64_MAX) return -1;
  if (next <= now) return 0;
  int64_t ms = (next - now + 999999) / 1000000;
  return ms > INT_MAX ? INT_MAX : (int)ms;
}

static void run_loop(struct launcher *L) {
  if (L->timeout_s > 0) L->job_deadline = now_ns() + (int64_t)(L->timeout_s * 1e9);
  check_ranks(L); /* a rank may have exited while we were still forking */
  for (;;) {
    int64_t now = now_ns();
    if (L->alive == 0 && !L->swept) {
      /* Whatever the ranks left behind in their groups goes with them. */
      signal_ranks(L, SIGKILL);
      L->swept = true;
      L->drain_deadline = now + GRACE_NS;
    }
    if (L->alive == 0 && (L->open_streams == 0 || now >= L->drain_deadline)) break;
    if (L->job_deadline && !L->terminating && now >= L->job_deadline) {
      fprintf(stderr, "zcoll_run: timeout after %g s; terminating ranks\n", L->timeout_s);
      begin_terminate(L, 124, SIGTERM);
    }
    if (L->terminating && !L->killed && now >= L->kill_deadline) kill_all(L);

    nfds_t n = 0;
    L->pfds[n++] = (struct pollfd){.fd = L->sig_fd, .events = POLLIN};
    for (int k = 0; L->tag && k < 2 * L->started; k++) {
      if (L->streams[k].fd < 0) continue;
      L->pfd_stream[n] = &L->streams[k];
      L->pfds[n++] = (struct pollfd){.fd = L->streams[k].fd, .events = POLLIN};
    }
    int ready = poll(L->pfds, n, poll_timeout(L, now));
    if (ready < 0 && errno != EINTR) die("poll");
    for (nfds_t k = 1; ready > 0 && k < n; k++)
      if (L->pfds[k].revents) L->open_streams -= zr_read_stream(&L->out, L->pfd_stream[k]);
    if (ready > 0 && L->pfds[0].revents) handle_signals(L);
  }
  for (int k = 0; L->tag && k < 2 * L->started; k++)
    if (L->streams[k].fd >= 0) { /* held open by an escaped descendant */
      zr_close_stream(&L->out, &L->streams[k]);
      L->open_streams--;
    }
  for (int r = 0; r < L->started; r++)
    while (waitpid(L->ranks[r].pid, NULL, 0) < 0)
      if (errno != EINTR) die("waitpid");
}

/* Make sure fds 0-2 are open, so that neither the listening socket nor a pipe can
 * land on them and be clobbered by the ranks' dup2(). */
static void ensure_std_fds(void) {
  for (int fd = 0; fd <= 2; fd++)
    if (fcntl(fd, F_GETFD) < 0 && errno == EBADF && open("/dev/null", O_RDWR) < 0)
      die("open /dev/null");
}

int main(int argc, char **argv) {
  struct launcher L = {.listen_fd = -1, .sig_fd = -1, .self = getpid()};
  ensure_std_fds();
  parse_args(&L, argc, argv);
  L.ranks = xcalloc((size_t)L.np, sizeof *L.ranks);
  if (L.tag) {
    L.streams = xcalloc(2 * (size_t)L.np, sizeof *L.streams);
    for (int k = 0; k < 2 * L.np; k++) L.streams[k] = (struct stream){.fd = -1};
  }
  L.pfds = xcalloc(2 * (size_t)L.np + 1, sizeof *L.pfds);
  L.pfd_stream = xcalloc(2 * (size_t)L.np + 1, sizeof *L.pfd_stream);
  make_job_env(&L);
  setup_signals(&L);
  launch(&L);
  run_loop(&L);
  free(L.ranks);
  free(L.streams);
  free(L.pfds);
  free(L.pfd_stream);
  free(L.out.scratch);
  close(L.sig_fd);
  return L.exit_code;
}
