/* run_print LINES: a zcoll_run test rank that writes LINES lines to stdout
 * ("out <rank> <i> <payload>") and to stderr ("err <rank> <i> <payload>"), each in
 * four write() calls that split it mid-line, with payloads of up to 125000 bytes
 * (line i: (i % 6) * 25000 copies of 'a' + i % 26), then "tail <rank>" on stdout
 * without a newline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) exit(1);
    p += w;
    n -= (size_t)w;
  }
}

static void put_line(int fd, const char *tag, int rank, int i) {
  size_t width = (size_t)(i % 6) * 25000;
  char head[64];
  int hl = snprintf(head, sizeof head, "%s %d %d ", tag, rank, i);
  char *payload = malloc(width + 1);
  if (!payload) exit(1);
  memset(payload, 'a' + i % 26, width);
  payload[width] = '\n';
  write_all(fd, head, 2); /* split inside the header ... */
  write_all(fd, head + 2, (size_t)hl - 2);
  write_all(fd, payload, width / 2); /* ... and inside the payload */
  write_all(fd, payload + width / 2, width - width / 2 + 1);
  free(payload);
}

int main(int argc, char **argv) {
  const char *rs = getenv("ZCOLL_RANK");
  int rank = rs ? atoi(rs) : -1, lines = argc > 1 ? atoi(argv[1]) : 10;
  for (int i = 0; i < lines; i++) {
    put_line(STDOUT_FILENO, "out", rank, i);
    put_line(STDERR_FILENO, "err", rank, i);
  }
  char tail[32];
  int tl = snprintf(tail, sizeof tail, "tail %d", rank);
  write_all(STDOUT_FILENO, tail, (size_t)tl);
  return 0;
}
