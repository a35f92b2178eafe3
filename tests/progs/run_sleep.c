/* run_sleep SECONDS [PIDFD [catch|ignore]]: a long-running zcoll_run test rank.
 * Writes "<rank> <pid>\n" to PIDFD, then sleeps. "catch": on SIGINT/SIGTERM/SIGHUP
 * write "<rank> sig <n>\n" to PIDFD and exit 0. "ignore": ignore SIGTERM. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int report_fd = -1, rank = -1;

static void on_signal(int sig) {
  char line[64];
  int len = snprintf(line, sizeof line, "%d sig %d\n", rank, sig);
  _exit(write(report_fd, line, (size_t)len) == len ? 0 : 1);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: run_sleep SECONDS [PIDFD [catch|ignore]]\n");
    return 1;
  }
  const char *rs = getenv("ZCOLL_RANK");
  rank = rs ? atoi(rs) : -1;
  if (argc >= 4 && strcmp(argv[3], "catch") == 0) {
    report_fd = atoi(argv[2]);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
  } else if (argc >= 4 && strcmp(argv[3], "ignore") == 0) {
    signal(SIGTERM, SIG_IGN);
  }
  if (argc >= 3) {
    char line[64];
    int len = snprintf(line, sizeof line, "%d %d\n", rank, (int)getpid());
    if (write(atoi(argv[2]), line, (size_t)len) != len) return 1;
  }
  struct timespec left = {.tv_sec = atoi(argv[1])};
  while (nanosleep(&left, &left) < 0 && errno == EINTR)
    ;
  return 0;
}
