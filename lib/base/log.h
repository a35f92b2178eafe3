/*
 * log.h -- logging and error recording.
 *
 * An error is decided once, where it happens: zcoll__fail() records a detailed message
 * for the caller (zcoll_comm_last_error / zcoll_last_error), logs it once at error
 * level, and returns the status so that the call site can `return zcoll__fail(...)`.
 * The level is checked before the arguments are evaluated.
 *
 * Each line reads "[zcoll HOST:PID rRANK] LEVEL SUBSYS DIR/FILE:LINE message" (rank "-"
 * before the communicator knows it), on stderr or in ZCOLL_LOG_FILE. The subsystem is
 * not passed by the call sites: it follows from the file that logs (its __FILE__), by
 * one table in log.c, so that an operator can keep or drop whole layers
 * (ZCOLL_LOG_SUBSYS=^net) without every call naming one:
 *   boot  lib/boot/                                   (rendezvous, launchers)
 *   net   transports/, lib/tl/, lib/comm/transports.c, base/ucx_dlopen*
 *   coll  algorithms/ but select*, lib/kernels/, lib/core/ but mr*, rcache*, guard*,
 *         comm_registry*; lib/coll/, comm/stats*, base/trace*  (running collectives)
 *   tune  algorithms/select*, lib/comm/diag*              (which algorithm, chunk)
 *   mem   lib/core/mr*, lib/core/rcache*, lib/base/fsize* (registration, its cache)
 *   init  the rest of lib/base/ and lib/comm/, core/guard*, core/comm_registry*
 *         (communicator lifecycle)
 * A file no rule names logs as init; tests/base/test_log.c checks that every source file is
 * named.
 */
#ifndef ZCOLL_LOG_H
#define ZCOLL_LOG_H

#include <stdarg.h>
#include <stddef.h>
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

/* The subsystems, a bit each in a ZCOLL_LOG_SUBSYS mask. */
typedef enum {
  ZCOLL_LOG_SUBSYS_INIT,
  ZCOLL_LOG_SUBSYS_BOOT,
  ZCOLL_LOG_SUBSYS_NET,
  ZCOLL_LOG_SUBSYS_COLL,
  ZCOLL_LOG_SUBSYS_TUNE,
  ZCOLL_LOG_SUBSYS_MEM,
  ZCOLL_LOG_NSUBSYS
} zcoll__log_subsys_t;
#define ZCOLL_LOG_SUBSYS_ALL ((1u << ZCOLL_LOG_NSUBSYS) - 1)
/* The subsystem's name ("net"). */
const char *zcoll__log_subsys_name(int subsys);
/* The subsystem of a source file by the table above; -1 if no rule names it. */
int zcoll__log_subsys_of(const char *file);
/* "all", or names separated by commas ("net,coll"); a leading '^' keeps every subsystem
 * but the names ("^net,mem"). 0 and *mask set, or -1 with the reason in why. */
int zcoll__log_parse_subsys(const char *s, unsigned *mask, char *why, size_t why_len);
void zcoll__log_set_subsys(unsigned mask);
/* Where lines go: "" for stderr, else a path in which %h, %p and %r become the host, the
 * pid and the writing thread's rank, and %% a '%'. Checks the escapes only: 0, or -1
 * with the reason in why. */
int zcoll__log_check_file(const char *pattern, char *why, size_t why_len);
/* Takes effect from the next line; files opened for an earlier pattern are closed. */
void zcoll__log_set_file(const char *pattern);
/* Opens a file the user named to write to (flags: O_APPEND or O_TRUNC) without waiting
 * for a FIFO's reader (one with none is refused, "a FIFO with no reader" in why), never
 * as the controlling terminal, not inherited by exec. A FIFO is left non-blocking, *fifo
 * set, for the caller to decide; anything else blocks as usual. -1 with the reason in
 * why if it cannot be opened. */
int zcoll__open_output(const char *path, int flags, int *fifo, char *why, size_t why_len);
/* The same for a file that must be a regular one (the flight recorder's): a symbolic
 * link is not followed ("a symbolic link (not followed)" in why), and a FIFO, device or
 * socket is refused ("not a regular file but a FIFO"), all without blocking. The file
 * descriptor blocks as usual, or -1 with the reason in why. */
int zcoll__open_regular(const char *path, int flags, char *why, size_t why_len);

void zcoll__log_write(zcoll__log_level_t level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define zcoll__log(level, ...)                                                                   \
  do {                                                                                           \
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
#ifndef __clang_analyzer__
#define zcoll__fail(st, ...) zcoll__fail_at((st), __FILE__, __LINE__, __VA_ARGS__)
#else
/* clang-tidy's analyzer sees one file at a time: shown that the result is st (never OK),
 * it stops following error paths as if they went on (ci/tidy.sh). Not compiled otherwise. */
static inline zcoll_status_t zcoll__failed(zcoll_status_t st, zcoll_status_t logged) {
  (void)logged;
  return st;
}
#define zcoll__fail(st, ...) \
  zcoll__failed((st), zcoll__fail_at((st), __FILE__, __LINE__, __VA_ARGS__))
#endif

/* While on, this thread's failures are recorded but not logged (probing). */
void zcoll__log_mute(int on);

/* Records a message without logging it (for repeats of an error already logged). */
zcoll_status_t zcoll__record_error(zcoll_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The message recorded by the last zcoll__fail on this thread ("" if none). */
const char *zcoll__last_error(void);
void zcoll__clear_error(void);

#endif
