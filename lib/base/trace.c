/* trace.c -- Chrome trace-event JSON, one file per rank. */
#include "trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static const char *const stage_names[ZCOLL_NSTAGES] = {"copy-in", "transfer", "reduce", "copy-out",
                                                       "allreduce"};

zcoll_status_t zcoll__trace_open(struct zcoll__trace *t, const char *prefix, int rank) {
  char path[600];
  snprintf(path, sizeof(path), "%s.%d.json", prefix, rank);
  memset(t, 0, sizeof(*t));
  /* A FIFO nobody reads is not waited for: the trace goes to stderr instead, as the log
   * does (a file that cannot be written at all fails init). One with a reader is written
   * blocking, as a pipe on stdout is: the trace is for somebody who reads it
   * (docs/configuration.md). */
  char why[256];
  int fifo = 0, fd = zcoll__open_output(path, O_TRUNC, &fifo, why, sizeof(why));
  if (fd < 0 && !strcmp(why, "a FIFO with no reader")) {
    zcoll_log_warn("ZCOLL_TRACE: %s is a FIFO with no reader; tracing to stderr", path);
    fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    fifo = 0;
    if (fd < 0) snprintf(why, sizeof(why), "and stderr cannot be duplicated: %s", strerror(errno));
  }
  if (fd < 0)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "ZCOLL_TRACE: cannot write %s: %s", path, why);
  int fl = fcntl(fd, F_GETFL);
  if (fifo && fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  if (!(t->f = fdopen(fd, "w"))) {
    close(fd);
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "ZCOLL_TRACE: cannot write %s: %s", path,
                       strerror(errno));
  }
  /* The trace is written as the pipeline runs: buffer generously, flush at the end. */
  setvbuf(t->f, NULL, _IOFBF, 1 << 20);
  t->rank = rank;
  /* Monotonic time is common to the processes of a host: ranks' lanes line up. */
  t->t0_ns = 0;
  fprintf(t->f, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  fprintf(t->f,
          "{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\",\"args\":{\"name\":\"rank %d\"}}",
          rank, rank);
  for (int s = 0; s < ZCOLL_NSTAGES; s++)
    fprintf(t->f,
            ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":"
            "\"%s\"}}",
            rank, s, stage_names[s]);
  zcoll_log_info("tracing the pipeline to %s", path);
  return ZCOLL_OK;
}

void zcoll__trace_event(struct zcoll__trace *t, int stage, int64_t start_ns, int64_t end_ns,
                        int peer, size_t bytes) {
  if (!t->f) return;
  fprintf(t->f,
          ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"name\":\"%s\",\"ts\":%.3f,\"dur\":%.3f,"
          "\"args\":{\"peer\":%d,\"bytes\":%zu}}",
          t->rank, stage, stage_names[stage], (double)(start_ns - t->t0_ns) / 1e3,
          (double)(end_ns - start_ns) / 1e3, peer, bytes);
  t->events++;
}

void zcoll__trace_close(struct zcoll__trace *t) {
  if (!t->f) return;
  fprintf(t->f, "\n]}\n");
  if (fclose(t->f)) zcoll_log_warn("ZCOLL_TRACE: writing the trace failed: %s", strerror(errno));
  t->f = NULL;
}
