/* zcoll_run_output.c -- zcoll_run's --tag-output forwarding (see zcoll_run_output.h). */
#include "zcoll_run_output.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_CHUNK 65536

static _Noreturn void fail(const char *what) {
  fprintf(stderr, "zcoll_run: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void *grow(void *p, size_t n) {
  void *q = realloc(p, n);
  if (!q) fail("out of memory");
  return q;
}

static void write_out(struct zr_output *L, int fd, const char *p, size_t n) {
  while (n > 0 && !L->broken_out[fd]) {
    ssize_t w = write(fd, p, n);
    if (w >= 0) {
      p += w;
      n -= (size_t)w;
    } else if (errno == EAGAIN) { /* someone made our stdout non-blocking */
      struct pollfd pf = {.fd = fd, .events = POLLOUT};
      if (poll(&pf, 1, -1) < 0 && errno != EINTR) fail("poll");
    } else if (errno != EINTR) {
      int e = errno;
      L->broken_out[fd] = true;
      if (!L->broken_out[STDERR_FILENO])
        fprintf(stderr, "zcoll_run: writing rank output to fd %d: %s; discarding it\n", fd,
                strerror(e));
    }
  }
}

/* Write buf[0..n) (whole lines; the last may lack its '\n') with "[rank] " prefixes,
 * in one write, so lines of different ranks never mix. */
static void emit_lines(struct zr_output *L, struct stream *s, const char *buf, size_t n) {
  char prefix[16];
  int pl = snprintf(prefix, sizeof prefix, "[%d] ", s->rank);
  size_t lines = 0;
  for (const char *p = buf; p < buf + n; lines++) {
    const char *nl = memchr(p, '\n', (size_t)(buf + n - p));
    p = nl ? nl + 1 : buf + n;
  }
  size_t need = n + lines * ((size_t)pl + 1);
  if (need > L->scratch_cap) {
    L->scratch = grow(L->scratch, need);
    L->scratch_cap = need;
  }
  char *o = L->scratch;
  for (const char *p = buf; p < buf + n;) {
    const char *nl = memchr(p, '\n', (size_t)(buf + n - p));
    size_t len = nl ? (size_t)(nl - p) : (size_t)(buf + n - p);
    memcpy(o, prefix, (size_t)pl);
    memcpy(o + pl, p, len);
    o[pl + len] = '\n';
    o += (size_t)pl + len + 1;
    p += len + (nl ? 1 : 0);
  }
  write_out(L, s->out_fd, L->scratch, (size_t)(o - L->scratch));
}

void zr_close_stream(struct zr_output *L, struct stream *s) {
  if (s->len > 0) emit_lines(L, s, s->buf, s->len); /* a partial last line is still a line */
  close(s->fd);
  s->fd = -1;
  free(s->buf);
  s->buf = NULL;
  s->len = s->cap = 0;
}

int zr_read_stream(struct zr_output *L, struct stream *s) {
  if (s->cap - s->len < READ_CHUNK) { /* grow geometrically: lines can be long */
    s->cap = s->len + READ_CHUNK > 2 * s->cap ? s->len + READ_CHUNK : 2 * s->cap;
    s->buf = grow(s->buf, s->cap);
  }
  ssize_t n = read(s->fd, s->buf + s->len, s->cap - s->len);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
  if (n < 0) fprintf(stderr, "zcoll_run: read output of rank %d: %s\n", s->rank, strerror(errno));
  if (n <= 0) {
    zr_close_stream(L, s);
    return 1;
  }
  const char *nl = memrchr(s->buf + s->len, '\n', (size_t)n);
  s->len += (size_t)n;
  if (!nl) return 0;
  size_t whole = (size_t)(nl - s->buf) + 1;
  emit_lines(L, s, s->buf, whole);
  memmove(s->buf, s->buf + whole, s->len - whole);
  s->len -= whole;
  return 0;
}
