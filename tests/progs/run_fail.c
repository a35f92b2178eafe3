/* run_fail FAILRANK ACTION OTHERS [PIDFD GOFD]: a zcoll_run test rank.
 * Rank FAILRANK performs ACTION ("exit:N": exit with status N, "kill:N": send itself
 * signal N); the other ranks exit 0 (OTHERS "ok") or run for 300 s (OTHERS "sleep").
 * With PIDFD, every rank first writes "<rank> <pid>\n" there, and the failing rank
 * waits for a byte on GOFD before it acts. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
  const char *rs = getenv("ZCOLL_RANK");
  if (argc != 4 && argc != 6) {
    fprintf(stderr, "usage: run_fail FAILRANK exit:N|kill:N ok|sleep [PIDFD GOFD]\n");
    return 1;
  }
  int rank = rs ? atoi(rs) : -1, fail = atoi(argv[1]), n = atoi(argv[2] + 5);
  if (argc == 6) {
    char line[64];
    int len = snprintf(line, sizeof line, "%d %d\n", rank, (int)getpid());
    if (write(atoi(argv[4]), line, (size_t)len) != len) return 1;
  }
  if (rank == fail) {
    char c;
    if (argc == 6 && read(atoi(argv[5]), &c, 1) != 1) return 1;
    if (strncmp(argv[2], "kill:", 5) == 0) kill(getpid(), n);
    return n;
  }
  if (strcmp(argv[3], "sleep") == 0) sleep(300);
  return 0;
}
