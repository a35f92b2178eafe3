/* log.c -- one line per message on stderr, prefixed with host, pid and rank. */
#include "log.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

_Atomic zcoll__log_level_t zcoll__log_level = ZCOLL_LOG_WARN;

static _Thread_local int log_rank = -1;
static _Thread_local char last_error[512];
static _Thread_local int muted;

void zcoll__log_mute(int on) { muted = on; }

static const char *const level_names[] = {"none", "error", "warn", "info", "debug", "trace"};

void zcoll__log_set_rank(int rank) { log_rank = rank; }

void zcoll__log_set_level(zcoll__log_level_t level) { zcoll__log_level = level; }

int zcoll__log_parse_level(const char *s) {
  for (int i = 0; i < (int)(sizeof(level_names) / sizeof(level_names[0])); i++)
    if (strcasecmp(s, level_names[i]) == 0) return i;
  return -1;
}

static void vwrite_line(zcoll__log_level_t level, const char *file, int line, const char *fmt,
                        va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof(msg), fmt, ap);
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  /* One write per line so that lines of ranks sharing a terminal do not interleave. */
  char out[1280];
  int n;
  if (log_rank >= 0)
    n = snprintf(out, sizeof(out), "[zcoll %d r%d] %s %s:%d %s\n", (int)getpid(), log_rank,
                 level_names[level], base, line, msg);
  else
    n = snprintf(out, sizeof(out), "[zcoll %d] %s %s:%d %s\n", (int)getpid(), level_names[level],
                 base, line, msg);
  if (n > (int)sizeof(out)) n = (int)sizeof(out);
  if (n > 0) {
    ssize_t w = write(STDERR_FILENO, out, (size_t)n);
    (void)w; /* nowhere left to report a failed log write */
  }
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
  zcoll__log_level_t level =
      st == ZCOLL_ERR_INVALID_ARG || st == ZCOLL_ERR_UNSUPPORTED ? ZCOLL_LOG_INFO : ZCOLL_LOG_ERROR;
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
