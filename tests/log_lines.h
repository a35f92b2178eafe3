/*
 * log_lines.h -- reading a job's ZCOLL_LOG=info output: the init line each rank logs
 * (lib/comm/comm_summary.c), "rank 1 of 4 ready: shm to 0,2; ucx to 3 on mlx5_0:1; chunk ...",
 * answers which transport a rank uses to reach a peer.
 */
#ifndef ZCOLL_TEST_LOG_LINES_H
#define ZCOLL_TEST_LOG_LINES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Is rank b in a list like "0-2,5" (which ends at ';', ' ' or the end of the line)? */
static inline int ll_in_list(const char *s, int b) {
  for (;;) {
    char *end;
    long lo = strtol(s, &end, 10), hi = lo;
    if (end == s) return 0;
    if (*end == '-') hi = strtol(end + 1, &end, 10);
    if (lo <= b && b <= hi) return 1;
    if (*end != ',') return 0;
    s = end + 1;
  }
}

/* The transport (into tl) that rank a's init line names for peer b: 1 if found, 0 if
 * rank a logged no init line or b is not among its peers. */
static inline int ll_pair_transport(const char *out, int a, int b, char *tl, size_t len) {
  char head[48];
  snprintf(head, sizeof(head), " rank %d of ", a);
  for (const char *p = strstr(out, head); p; p = strstr(p + 1, head)) {
    const char *eol = strchr(p, '\n');
    if (!eol) eol = p + strlen(p);
    const char *seg = strchr(p + strlen(head), ':'); /* after "rank a of n ready" */
    while (seg && seg < eol) {
      seg++;
      while (*seg == ' ') seg++;
      const char *to = strstr(seg, " to ");
      const char *next = strchr(seg, ';');
      if (!next || next > eol) next = eol;
      if (to && to < next && ll_in_list(to + 4, b)) {
        snprintf(tl, len, "%.*s", (int)(to - seg), seg);
        return 1;
      }
      seg = next < eol ? next : NULL;
    }
  }
  return 0;
}

#endif
