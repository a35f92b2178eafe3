/* run_env DIR [args...]: a zcoll_run test rank that records what it was started with
 * in DIR/rank.<ZCOLL_RANK>: its pid, every ZCOLL_* and ZRTEST_* variable, its
 * arguments, and checks on the rendezvous socket it may have been handed. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

static int root_port(void) {
  const char *root = getenv("ZCOLL_ROOT");
  const char *colon = root ? strrchr(root, ':') : NULL;
  return colon ? atoi(colon + 1) : -1;
}

/* Is fd an IPv4 socket bound to 127.0.0.1:port? */
static int is_root_socket(int fd, int port) {
  struct stat st;
  struct sockaddr_in sa;
  socklen_t sl = sizeof sa;
  if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode)) return 0;
  if (getsockname(fd, (struct sockaddr *)&sa, &sl) < 0 || sa.sin_family != AF_INET) return 0;
  return ntohs(sa.sin_port) == port && sa.sin_addr.s_addr == htonl(INADDR_LOOPBACK);
}

/* The number of open fds that are the rendezvous socket. */
static int count_root_sockets(int port) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d)) continue;
    n += is_root_socket(atoi(e->d_name), port);
  }
  closedir(d);
  return n;
}

/* ZCOLL_ROOT_FD must be a listening socket on the ZCOLL_ROOT port that accepts. */
static const char *check_root_fd(const char *fdstr, int port) {
  int fd = atoi(fdstr), on = 0;
  socklen_t ol = sizeof on;
  if (!is_root_socket(fd, port)) return "not-a-socket-on-the-root-port";
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &ol) < 0 || !on) return "not-listening";
  int c = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (c < 0 || connect(c, (struct sockaddr *)&sa, sizeof sa) < 0) return "connect-failed";
  int a = accept(fd, NULL, NULL);
  if (a < 0) return "accept-failed";
  close(a);
  close(c);
  return "ok";
}

int main(int argc, char **argv) {
  const char *rank = getenv("ZCOLL_RANK");
  if (argc < 2 || !rank) {
    fprintf(stderr, "usage: run_env DIR [args...] (under zcoll_run)\n");
    return 1;
  }
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/rank.%s", argv[1], rank);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    perror(tmp);
    return 1;
  }
  int port = root_port();
  fprintf(f, "PID=%d\n", (int)getpid());
  for (char **e = environ; *e; e++)
    if (strncmp(*e, "ZCOLL_", 6) == 0 || strncmp(*e, "ZRTEST_", 7) == 0) fprintf(f, "%s\n", *e);
  fprintf(f, "ARGC=%d\n", argc - 2);
  for (int i = 2; i < argc; i++) fprintf(f, "ARG%d=%s\n", i - 1, argv[i]);
  const char *fd = getenv("ZCOLL_ROOT_FD");
  if (fd) fprintf(f, "ROOT_FD_CHECK=%s\n", check_root_fd(fd, port));
  fprintf(f, "ROOT_SOCKETS=%d\n", count_root_sockets(port));
  if (fclose(f) != 0 || rename(tmp, path) < 0) {
    perror(path);
    return 1;
  }
  return 0;
}
