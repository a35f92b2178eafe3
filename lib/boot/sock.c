/* sock.c -- TCP plumbing for the bootstrap. */
#include "sock.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/hostport.h"
#include "base/log.h"

static int ms_left(int64_t deadline) {
  if (deadline == INT64_MAX) return -1;
  int64_t left = deadline - zcoll__now_ms();
  if (left < 0) return 0;
  return left > 1000000 ? 1000000 : (int)left;
}

zcoll_status_t zcoll__sock_parse_hostport(const char *s, char *host, size_t hostlen, char *port,
                                          size_t portlen) {
  char why[160];
  if (zcoll__hostport_split(s, 1, host, hostlen, port, portlen, why, sizeof(why)))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "ZCOLL_ROOT '%s': %s", s, why);
  return ZCOLL_OK;
}

void zcoll__sock_tune(int fd, double timeout) {
  int one = 1;
  /* Barriers and allgathers are tiny request/response exchanges: no Nagle delay. */
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  /* A host that loses power never closes its sockets: without probes an idle star
   * socket would look alive forever. Probe after a third of the timeout, three times,
   * so that the peer is declared dead well within it. */
  int idle = 60, intvl = 10, cnt = 6;
  if (timeout > 0) {
    idle = timeout >= 9 ? (int)(timeout / 3) : 1;
    intvl = timeout >= 27 ? (int)(timeout / 9) : 1;
    cnt = 3;
  }
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
  /* Data unacknowledged for the whole timeout: the peer's host is gone. */
  unsigned int user_ms = timeout > 0 && timeout < 4e6 ? (unsigned int)(timeout * 1000) : 0;
  if (user_ms) setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_ms, sizeof(user_ms));
}

void zcoll__sock_peer_name(int fd, char *buf, size_t len) {
  struct sockaddr_storage a = {0}; /* AF_UNSPEC if getpeername fails: read below */
  socklen_t al = sizeof(a);
  char host[INET6_ADDRSTRLEN] = "?";
  unsigned port = 0;
  if (getpeername(fd, (struct sockaddr *)&a, &al) == 0) {
    if (a.ss_family == AF_INET) {
      inet_ntop(AF_INET, &((struct sockaddr_in *)&a)->sin_addr, host, sizeof(host));
      port = ntohs(((struct sockaddr_in *)&a)->sin_port);
    } else if (a.ss_family == AF_INET6) {
      inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&a)->sin6_addr, host, sizeof(host));
      port = ntohs(((struct sockaddr_in6 *)&a)->sin6_port);
    }
  }
  snprintf(buf, len, a.ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", host, port);
}

zcoll_status_t zcoll__sock_reserve_fds(long need, const char *why) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl))
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "getrlimit(RLIMIT_NOFILE): %s", strerror(errno));
  if (rl.rlim_cur == RLIM_INFINITY || (long)rl.rlim_cur >= need) return ZCOLL_OK;
  if (rl.rlim_max != RLIM_INFINITY && (long)rl.rlim_max < need)
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP,
                       "%s needs about %ld open files, but the hard limit (ulimit -Hn) is %ld: "
                       "raise it, or run fewer ranks",
                       why, need, (long)rl.rlim_max);
  rlim_t old = rl.rlim_cur;
  rl.rlim_cur = rl.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &rl))
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP,
                       "%s needs about %ld open files (limit %ld): "
                       "setrlimit(RLIMIT_NOFILE): %s",
                       why, need, (long)old, strerror(errno));
  zcoll_log_info("%s needs about %ld open files: raised the soft limit from %ld to %ld", why, need,
                 (long)old, (long)rl.rlim_cur);
  return ZCOLL_OK;
}

/* "*", "0.0.0.0" and "::" ask for every interface: only ever by name. */
static int is_wildcard(const char *host) {
  return !strcmp(host, "*") || !strcmp(host, "0.0.0.0") || !strcmp(host, "::");
}

static zcoll_status_t resolve(const char *hostport, int passive, struct addrinfo **res) {
  char host[256], port[16];
  zcoll_status_t st = zcoll__sock_parse_hostport(hostport, host, sizeof(host), port, sizeof(port));
  if (st != ZCOLL_OK) return st;
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
  const char *node = host;
  if (passive && is_wildcard(host)) {
    hints.ai_flags = AI_PASSIVE;
    if (!strcmp(host, "*")) node = NULL;
  }
  if (!passive && !strcmp(host, "*"))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "ZCOLL_ROOT '%s': '*' is for rank 0 only; the other ranks need rank 0's "
                       "host name or address",
                       hostport);
  int rc = getaddrinfo(node, port, &hints, res);
  if (rc)
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "cannot resolve ZCOLL_ROOT host '%s': %s", host,
                       gai_strerror(rc));
  return ZCOLL_OK;
}

/* connect(2) bounded by the deadline (a blocking one waits minutes on a silent host). */
static int connect_within(int fd, const struct sockaddr *a, socklen_t len, int64_t deadline) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK)) return -1;
  int rc = connect(fd, a, len);
  if (rc && errno == EINPROGRESS) {
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int64_t left = deadline == INT64_MAX ? 5000 : deadline - zcoll__now_ms();
    if (left < 0) left = 0;
    rc = poll(&p, 1, left > 5000 ? 5000 : (int)left);
    if (rc == 0) {
      errno = ETIMEDOUT;
      return -1;
    }
    int err = 0;
    socklen_t el = sizeof(err);
    if (rc < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el)) return -1;
    if (err) {
      errno = err;
      return -1;
    }
    rc = 0;
  }
  if (rc == 0 && fcntl(fd, F_SETFL, fl)) return -1;
  return rc;
}

zcoll_status_t zcoll__sock_connect(const char *hostport, int64_t deadline, int refused_is_final,
                                   int *out) {
  struct addrinfo *res;
  zcoll_status_t st = resolve(hostport, 0, &res);
  if (st != ZCOLL_OK) return st;
  int delay_ms = 10, last_errno = 0;
  for (;;) {
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
      int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
      if (fd < 0) {
        last_errno = errno;
        continue;
      }
      if (connect_within(fd, ai->ai_addr, ai->ai_addrlen, deadline) == 0) {
        freeaddrinfo(res);
        *out = fd;
        return ZCOLL_OK;
      }
      last_errno = errno;
      close(fd);
    }
    if (refused_is_final && last_errno == ECONNREFUSED) {
      freeaddrinfo(res);
      return zcoll__fail(ZCOLL_ERR_BOOTSTRAP,
                         "cannot connect to rank 0 at %s: nobody listens there any more (the "
                         "unique id's rendezvous closes once its ranks have joined, or after "
                         "ZCOLL_TIMEOUT: a late, reused or foreign id?)",
                         hostport);
    }
    if (last_errno != ECONNREFUSED && last_errno != ENETUNREACH && last_errno != EHOSTUNREACH &&
        last_errno != ETIMEDOUT && last_errno != ECONNRESET && last_errno != EAGAIN)
      break;
    if (ms_left(deadline) == 0) break;
    /* Rank 0 may still be starting; retry with a capped backoff. */
    struct timespec ts = {0, (long)delay_ms * 1000000L};
    nanosleep(&ts, NULL);
    if (delay_ms < 200) delay_ms *= 2;
  }
  freeaddrinfo(res);
  return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "cannot connect to rank 0 at %s: %s", hostport,
                     strerror(last_errno));
}

static int is_loopback(const struct sockaddr *a) {
  if (a->sa_family == AF_INET)
    return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
  return a->sa_family == AF_INET6 &&
         IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

zcoll_status_t zcoll__sock_listen(const char *hostport, int *out) {
  struct addrinfo *res;
  zcoll_status_t st = resolve(hostport, 1, &res);
  if (st != ZCOLL_OK) return st;
  int last_errno = 0;
  for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    /* Only the address named: a job told 127.0.0.1 must not be reachable from the
     * network. Every interface is an explicit choice ("*:port", "0.0.0.0:port"). */
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0) {
      char host[256], port[16];
      if (is_loopback(ai->ai_addr) &&
          zcoll__sock_parse_hostport(hostport, host, sizeof(host), port, sizeof(port)) ==
              ZCOLL_OK &&
          strcmp(host, "localhost") != 0 && strncmp(host, "127.", 4) != 0 &&
          strcmp(host, "::1") != 0)
        zcoll_log_warn("ZCOLL_ROOT host '%s' is a loopback address here: ranks on other hosts "
                       "cannot reach rank 0 (name an address, or '*:%s' for every interface)",
                       host, port);
      freeaddrinfo(res);
      *out = fd;
      return ZCOLL_OK;
    }
    last_errno = errno;
    close(fd);
  }
  freeaddrinfo(res);
  return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "cannot listen on ZCOLL_ROOT %s: %s", hostport,
                     strerror(last_errno));
}

/* 1: ready, 0: deadline passed, -1: poll failed. */
static int wait_fd(int fd, short events, int64_t deadline) {
  struct pollfd p = {.fd = fd, .events = events};
  for (;;) {
    int rc = poll(&p, 1, ms_left(deadline));
    if (rc > 0) return 1;
    if (rc == 0) return 0;
    if (errno != EINTR) return -1;
  }
}

static zcoll_status_t send_all(int fd, const void *buf, size_t len, int64_t deadline) {
  const char *p = buf;
  while (len) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      int rc = wait_fd(fd, POLLOUT, deadline);
      if (rc == 0) return ZCOLL_ERR_TIMEOUT;
      if (rc > 0) continue;
    }
    if (errno == EPIPE || errno == ECONNRESET) return ZCOLL_ERR_PEER_FAILED;
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "bootstrap send failed: %s", strerror(errno));
  }
  return ZCOLL_OK;
}

static zcoll_status_t recv_all(int fd, void *buf, size_t len, int64_t deadline) {
  char *p = buf;
  while (len) {
    ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= (size_t)n;
      continue;
    }
    if (n == 0) return ZCOLL_ERR_PEER_FAILED;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      int rc = wait_fd(fd, POLLIN, deadline);
      if (rc == 0) return ZCOLL_ERR_TIMEOUT;
      if (rc > 0) continue;
    }
    if (errno == ECONNRESET) return ZCOLL_ERR_PEER_FAILED;
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "bootstrap receive failed: %s", strerror(errno));
  }
  return ZCOLL_OK;
}

zcoll_status_t zcoll__sock_send_msg(int fd, uint16_t type, const void *payload, uint32_t len,
                                    int64_t deadline) {
  uint8_t h[ZCOLL_BS_HDR_BYTES];
  zcoll__bs_put_hdr(h, type, len);
  zcoll_status_t st = send_all(fd, h, sizeof(h), deadline);
  if (st == ZCOLL_OK && len) st = send_all(fd, payload, len, deadline);
  return st;
}

zcoll_status_t zcoll__sock_recv_msg(int fd, uint32_t max, int64_t deadline, uint16_t *type,
                                    void **payload, uint32_t *len) {
  uint8_t raw[ZCOLL_BS_HDR_BYTES];
  struct zcoll__bs_hdr h;
  const char *why = "";
  zcoll_status_t st = recv_all(fd, raw, sizeof(raw), deadline);
  if (st != ZCOLL_OK) return st;
  if (zcoll__bs_parse_hdr(raw, sizeof(raw), max, &h, &why))
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "bootstrap: bad message (%s)", why);
  void *buf = NULL;
  if (h.len) {
    if (!(buf = malloc(h.len)))
      return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "bootstrap: out of memory for %u bytes", h.len);
    st = recv_all(fd, buf, h.len, deadline);
    if (st != ZCOLL_OK) {
      free(buf);
      return st;
    }
  }
  *type = h.type;
  *payload = buf;
  *len = h.len;
  return ZCOLL_OK;
}
