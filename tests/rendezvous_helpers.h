/*
 * rendezvous_helpers.h -- sockets on 127.0.0.1, jobs of rank threads and single ranks
 * through the public API, for the rendezvous tests.
 */
#ifndef ZCOLL_RENDEZVOUS_HELPERS_H
#define ZCOLL_RENDEZVOUS_HELPERS_H

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>

#include "boot/bootstrap_auth.h"
#include "boot/bootstrap_handshake.h"
#include "rank_threads.h"
#include "boot/sock.h"
#include "spawn.h"

static int listen_local(int *port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof(a);
  cr_assert(fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) && !listen(fd, 128) &&
            !getsockname(fd, (struct sockaddr *)&a, &alen));
  *port = ntohs(a.sin_port);
  return fd;
}

__attribute__((unused)) static int free_port(void) {
  int port, fd = listen_local(&port);
  close(fd);
  return port;
}

__attribute__((unused)) static int connect_to(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  cr_assert(fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
  return fd;
}

static void sum_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  int v = rank + 1, out = 0, p = zcoll_comm_size(comm);
  if (zcoll_allreduce(comm, &v, &out, 1, ZCOLL_INT32, ZCOLL_SUM) != ZCOLL_OK ||
      out != p * (p + 1) / 2)
    rt_fail(job, rank, "wrong sum");
}

static void job_init(struct rt_job *job, int size, const char *key) {
  memset(job, 0, sizeof(*job));
  job->size = size;
  job->body = sum_body;
  int i = 0;
  if (key) {
    job->settings[i][0] = "JOB_KEY";
    job->settings[i++][1] = key;
  }
  job->settings[i][0] = "LOG";
  job->settings[i++][1] = "none";
  job->lfd = listen_local(&job->port);
}

/* 1 if the peer closed fd within `seconds`. */
__attribute__((unused)) static int closed_within(int fd, double seconds) {
  double end = sp_now() + seconds;
  char buf[256];
  while (sp_now() < end) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return 1;
  }
  return 0;
}

/* One rank of a job through the public API; returns its zcoll_comm_init status with the
 * message in err. A communicator that does form is used once and destroyed. */
__attribute__((unused)) static zcoll_status_t
one_rank(int rank, int size, int port, int lfd, const char *const *set, char *err, size_t errlen) {
  zcoll_config_t *cfg;
  cr_assert_eq(zcoll_config_create(&cfg), ZCOLL_OK);
  char buf[64];
  snprintf(buf, sizeof(buf), "%d", rank);
  cr_assert_eq(zcoll_config_set(cfg, "RANK", buf), ZCOLL_OK);
  snprintf(buf, sizeof(buf), "%d", size);
  cr_assert_eq(zcoll_config_set(cfg, "SIZE", buf), ZCOLL_OK);
  snprintf(buf, sizeof(buf), "127.0.0.1:%d", port);
  cr_assert_eq(zcoll_config_set(cfg, "ROOT", buf), ZCOLL_OK);
  if (lfd >= 0) {
    snprintf(buf, sizeof(buf), "%d", lfd);
    cr_assert_eq(zcoll_config_set(cfg, "ROOT_FD", buf), ZCOLL_OK);
  }
  cr_assert_eq(zcoll_config_set(cfg, "TRANSPORT", "loopback"), ZCOLL_OK);
  cr_assert_eq(zcoll_config_set(cfg, "TIMEOUT", "10"), ZCOLL_OK);
  cr_assert_eq(zcoll_config_set(cfg, "LOG", "none"), ZCOLL_OK);
  for (int i = 0; set && set[i]; i += 2)
    cr_assert_eq(zcoll_config_set(cfg, set[i], set[i + 1]), ZCOLL_OK, "%s", zcoll_last_error());
  zcoll_comm_t *comm = NULL;
  zcoll_status_t st = zcoll_comm_init(&comm, cfg);
  snprintf(err, errlen, "%s", st == ZCOLL_OK ? "" : zcoll_last_error());
  zcoll_config_free(cfg);
  if (st == ZCOLL_OK) zcoll_comm_destroy(comm);
  return st;
}

#endif
