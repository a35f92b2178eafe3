/* node.c -- this process's host identity (see node.h). */
#include "node.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The host a test plays this rank is on, -1 for the real one. ZCOLL_TEST_SPLIT_NODES=1:
 * a host per rank; =2,3,1: the first 2 ranks on one host, the next 3 on another, ... (ranks
 * past the list: a host each). */
static int test_host(int rank) {
  const char *v = getenv("ZCOLL_TEST_SPLIT_NODES");
  if (!v || !*v) return -1;
  if (!strcmp(v, "1")) return rank;
  int host = 0, first = 0;
  for (const char *p = v; *p;) {
    char *end;
    long n = strtol(p, &end, 10);
    if (end == p || n < 1) return rank; /* malformed: a host per rank, still a split */
    if (rank < first + n) return host;
    first += (int)n;
    host++;
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') return rank;
  }
  return host + (rank - first);
}

void zcoll__read_line(const char *path, char *buf, size_t len) {
  buf[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) return;
  if (!fgets(buf, (int)len, f)) buf[0] = '\0';
  fclose(f);
  buf[strcspn(buf, "\n")] = '\0';
}

void zcoll__node_id(char *buf, size_t len, int rank) {
  char boot[64];
  zcoll__read_line("/proc/sys/kernel/random/boot_id", boot, sizeof(boot));
  if (!boot[0]) gethostname(boot, sizeof(boot) - 1); /* no /proc: the host name will do */
  struct stat st;
  unsigned long long ns = stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0;
  /* The user too: ranks of different users cannot open each other's /proc/<pid>/fd. */
  unsigned uid = (unsigned)geteuid();
  int host = test_host(rank);
  if (host >= 0)
    snprintf(buf, len, "%.36s/%llx/%u/h%d", boot, ns, uid, host);
  else
    snprintf(buf, len, "%.36s/%llx/%u", boot, ns, uid);
}
