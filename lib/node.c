/* node.c -- this process's host identity (see node.h). */
#include "node.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void zcoll__node_id(char *buf, size_t len, int rank) {
  char boot[64] = "";
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f) {
    if (!fgets(boot, sizeof(boot), f)) boot[0] = '\0';
    fclose(f);
    boot[strcspn(boot, "\n")] = '\0';
  }
  if (!boot[0]) gethostname(boot, sizeof(boot) - 1); /* no /proc: the host name will do */
  struct stat st;
  unsigned long long ns = stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0;
  const char *split = getenv("ZCOLL_TEST_SPLIT_NODES");
  /* The user too: ranks of different users cannot open each other's /proc/<pid>/fd. */
  unsigned uid = (unsigned)geteuid();
  if (split && strcmp(split, "1") == 0)
    snprintf(buf, len, "%.36s/%llx/%u/r%d", boot, ns, uid, rank);
  else
    snprintf(buf, len, "%.36s/%llx/%u", boot, ns, uid);
}
