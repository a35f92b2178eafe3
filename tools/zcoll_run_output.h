/* zcoll_run_output.h -- zcoll_run's --tag-output: the ranks' stdout/stderr pipes read
 * and forwarded line by line with a "[rank] " prefix, each batch of whole lines in one
 * write so that lines of different ranks never mix. */
#ifndef ZCOLL_RUN_OUTPUT_H
#define ZCOLL_RUN_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

struct stream { /* one rank's stdout or stderr pipe */
  int fd;       /* read end; -1 once closed */
  int out_fd;   /* where its lines go: 1 or 2 */
  int rank;
  char *buf; /* the partial line carried over between reads */
  size_t len, cap;
};

struct zr_output {
  char *scratch; /* output assembly buffer */
  size_t scratch_cap;
  bool broken_out[3]; /* output fd failed: discard what would go there */
};

/* Reads what the pipe has and forwards its whole lines; at end of file (or a read
 * error) closes the stream and returns 1, else 0. */
int zr_read_stream(struct zr_output *o, struct stream *s);
/* Forwards a partial last line, if any, and closes the stream. */
void zr_close_stream(struct zr_output *o, struct stream *s);

#endif
