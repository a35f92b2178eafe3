/*
 * spawn.h -- run a command (usually zcoll_run ...) as a child process, capture its
 * combined output, and give up after a deadline, killing it. For tests that check
 * real multi-process jobs.
 */
#ifndef ZCOLL_TEST_SPAWN_H
#define ZCOLL_TEST_SPAWN_H

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

extern char **environ;

struct sp_result {
  int status; /* exit code, 128+signal if killed, -1 if it had to be killed at the deadline */
  double seconds;
  char *out; /* stdout and stderr, interleaved; malloc'ed */
};

static inline double sp_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct sp_async {
  pid_t pid;
  int fd; /* read end of the output pipe; -1 if the spawn failed */
  double t0;
  char *err;
};

/* env: extra NAME=VALUE entries (NULL-terminated) on top of this environment. */
static inline struct sp_async sp_start(const char *const *argv, const char *const *env) {
  struct sp_async a = {-1, -1, sp_now(), NULL};
  int p[2];
  if (pipe2(p, O_CLOEXEC)) {
    a.err = strdup(strerror(errno));
    return a;
  }
  size_t n = 0, m = 0;
  while (environ[n]) n++;
  while (env && env[m]) m++;
  char **envp = calloc(n + m + 1, sizeof(char *));
  for (size_t i = 0; i < m; i++) envp[i] = (char *)env[i];
  for (size_t i = 0; i < n; i++) envp[m + i] = environ[i]; /* earlier entries win */
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], 1);
  posix_spawn_file_actions_adddup2(&fa, p[1], 2);
  int rc = posix_spawn(&a.pid, argv[0], &fa, NULL, (char *const *)argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  free(envp);
  close(p[1]);
  if (rc) {
    close(p[0]);
    a.err = strdup(strerror(rc));
    return a;
  }
  a.fd = p[0];
  return a;
}

/* Collects the output until the child closes it, killing it at t0 + timeout. */
static inline struct sp_result sp_finish(struct sp_async *a, double timeout) {
  struct sp_result r = {-1, 0, a->err};
  if (a->fd < 0) return r;
  size_t len = 0, cap = 4096;
  r.out = malloc(cap);
  int killed = 0;
  for (;;) {
    double left = a->t0 + timeout - sp_now();
    if (left <= 0 && !killed) {
      kill(a->pid, SIGKILL);
      killed = 1;
    }
    struct pollfd pf = {a->fd, POLLIN, 0};
    int k = poll(&pf, 1, killed ? 1000 : (int)(left * 1000) + 1);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      if (killed) break;
      continue;
    }
    if (len + 4097 > cap) r.out = realloc(r.out, cap *= 2);
    ssize_t got = read(a->fd, r.out + len, 4096);
    if (got <= 0) break;
    len += (size_t)got;
  }
  r.out[len] = '\0';
  close(a->fd);
  int ws;
  while (waitpid(a->pid, &ws, 0) < 0 && errno == EINTR) {
  }
  r.seconds = sp_now() - a->t0;
  if (killed)
    r.status = -1;
  else
    r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
  return r;
}

static inline struct sp_result sp_run(const char *const *argv, const char *const *env,
                                      double timeout) {
  struct sp_async a = sp_start(argv, env);
  return sp_finish(&a, timeout);
}

#define SP_BIN(name) ZCOLL_TEST_BIN_DIR "/" name
#define SP_PROG(name) ZCOLL_TEST_PROGS_DIR "/" name

#endif
