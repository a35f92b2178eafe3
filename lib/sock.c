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
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

int64_t zcoll__now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t zcoll__deadline(double seconds) {
  if (seconds <= 0) return INT64_MAX;
  return zcoll__now_ms() + (int64_t)(seconds * 1000.0);
}

static int ms_left(int64_t deadline) {
  if (deadline == INT64_MAX) return -1;
  int64_t left = deadline - zcoll__now_ms();
  if (left < 0) return 0;
  return left > 1000000 ? 1000000 : (int)left;
}

zcoll_status_t zcoll__sock_parse_hostport(const char *s, char *host, size_t hostlen, char *port,
                                          size_t portlen) {
  const char *colon;
  const char *h = s;
  size_t hl;
  if (s[0] == '[') {
    const char *close = strchr(s, ']');
    if (!close || close[1] != ':') goto bad;
    h = s + 1;
    hl = (size_t)(close - h);
    colon = close + 1;
  } else {
    colon = strrchr(s, ':');
    if (!colon) goto bad;
    hl = (size_t)(colon - s);
  }
  if (hl == 0 || hl >= hostlen || strlen(colon + 1) == 0 || strlen(colon + 1) >= portlen) goto bad;
  for (const char *p = colon + 1; *p; p++)
    if (*p < '0' || *p > '9') goto bad;
  memcpy(host, h, hl);
  host[hl] = '\0';
  strcpy(port, colon + 1);
  return ZCOLL_OK;
bad:
  return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "ZCOLL_ROOT '%s' is not host:port", s);
}

void zcoll__sock_tune(int fd) {
  int one = 1;
  /* Barriers and allgathers are tiny request/response exchanges: no Nagle delay. */
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static zcoll_status_t resolve(const char *hostport, int passive, struct addrinfo **res) {
  char host[256], port[16];
  zcoll_status_t st = zcoll__sock_parse_hostport(hostport, host, sizeof(host), port, sizeof(port));
  if (st != ZCOLL_OK) return st;
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
  if (passive) hints.ai_flags = AI_PASSIVE;
  int rc = getaddrinfo(host, port, &hints, res);
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

zcoll_status_t zcoll__sock_connect(const char *hostport, int64_t deadline, int *out) {
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
        zcoll__sock_tune(fd);
        freeaddrinfo(res);
        *out = fd;
        return ZCOLL_OK;
      }
      last_errno = errno;
      close(fd);
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
    /* Listen on every address of this host at the given port: the host part names
     * rank 0's machine for the others, which may reach it through any interface. */
    struct sockaddr_storage any;
    memset(&any, 0, sizeof(any));
    memcpy(&any, ai->ai_addr, ai->ai_addrlen);
    if (any.ss_family == AF_INET)
      ((struct sockaddr_in *)&any)->sin_addr.s_addr = htonl(INADDR_ANY);
    else if (any.ss_family == AF_INET6)
      ((struct sockaddr_in6 *)&any)->sin6_addr = in6addr_any;
    if (bind(fd, (struct sockaddr *)&any, ai->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0) {
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
  struct zcoll__msg_hdr h = {ZCOLL_BS_MAGIC, ZCOLL_BS_VERSION, type, len, 0};
  zcoll_status_t st = send_all(fd, &h, sizeof(h), deadline);
  if (st == ZCOLL_OK && len) st = send_all(fd, payload, len, deadline);
  return st;
}

zcoll_status_t zcoll__sock_recv_msg(int fd, uint32_t max, int64_t deadline, uint16_t *type,
                                    void **payload, uint32_t *len, uint16_t *version) {
  struct zcoll__msg_hdr h;
  zcoll_status_t st = recv_all(fd, &h, sizeof(h), deadline);
  if (st != ZCOLL_OK) return st;
  if (h.magic != ZCOLL_BS_MAGIC)
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "bootstrap: message with a bad magic number 0x%08x",
                       h.magic);
  if (version) *version = h.version;
  if (h.len > max)
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP,
                       "bootstrap: message of %u bytes exceeds the limit of %u bytes", h.len, max);
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
