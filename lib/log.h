/*
 * log.h -- logging and error recording.
 *
 * An error is decided once, where it happens: zcoll__fail() records a detailed message
 * for the caller (zcoll_comm_last_error / zcoll_last_error), logs it once at error
 * level, and returns the status so that the call site can `return zcoll__fail(...)`.
 * The level is checked before the arguments are evaluated.
 */
#ifndef ZCOLL_LOG_H
#define ZCOLL_LOG_H

#include <stdarg.h>
#include "zcoll.h"

typedef enum {
  ZCOLL_LOG_NONE,
  ZCOLL_LOG_ERROR,
  ZCOLL_LOG_WARN,
  ZCOLL_LOG_INFO,
  ZCOLL_LOG_DEBUG,
  ZCOLL_LOG_TRACE
} zcoll__log_level_t;

/* Atomic: every communicator's configuration sets it, from whichever thread creates it. */
extern _Atomic zcoll__log_level_t zcoll__log_level;

/* Rank printed in each line; -1 before the communicator knows it. Per thread, so that
 * ranks running as threads of one process (tests) label their own lines. */
void zcoll__log_set_rank(int rank);
void zcoll__log_set_level(zcoll__log_level_t level);
/* Parses "none|error|warn|info|debug|trace"; returns -1 for anything else. */
int zcoll__log_parse_level(const char *s);

void zcoll__log_write(zcoll__log_level_t level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define zcoll__log(level, ...)                                                              \
  do {                                                                                      \
    if ((level) <= zcoll__log_level) zcoll__log_write((level), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define zcoll_log_error(...) zcoll__log(ZCOLL_LOG_ERROR, __VA_ARGS__)
#define zcoll_log_warn(...) zcoll__log(ZCOLL_LOG_WARN, __VA_ARGS__)
#define zcoll_log_info(...) zcoll__log(ZCOLL_LOG_INFO, __VA_ARGS__)
#define zcoll_log_debug(...) zcoll__log(ZCOLL_LOG_DEBUG, __VA_ARGS__)
#define zcoll_log_trace(...) zcoll__log(ZCOLL_LOG_TRACE, __VA_ARGS__)

/* Records the message of a failure (per thread) and logs it; returns st. */
zcoll_status_t zcoll__fail_at(zcoll_status_t st, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define zcoll__fail(st, ...) zcoll__fail_at((st), __FILE__, __LINE__, __VA_ARGS__)

/* While on, this thread's failures are recorded but not logged (probing). */
void zcoll__log_mute(int on);

/* Records a message without logging it (for repeats of an error already logged). */
zcoll_status_t zcoll__record_error(zcoll_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The message recorded by the last zcoll__fail on this thread ("" if none). */
const char *zcoll__last_error(void);
void zcoll__clear_error(void);

#endif
