/* ep.c -- shared-memory transport: reaching a peer's inbox and wake-up pipe. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/log.h"
#include "shm.h"

static int pidfd_open_(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }
static int pidfd_getfd_(int pidfd, int fd) { return (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0); }

/* A memfd of the peer's making: its link reads "/memfd:zcoll-<token>-..." (a memfd
 * carries its name; no other file has a name of that form and seals). */
static int is_peer_memfd(int f, uint64_t token) {
  char link[64], path[ZCOLL_SHM_NAME_LEN + 16], want[ZCOLL_SHM_NAME_LEN];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", f);
  ssize_t n = readlink(link, path, sizeof(path) - 1);
  if (n < 0) return 0;
  path[n] = '\0';
  int w = snprintf(want, sizeof(want), "/memfd:zcoll-%016llx-", (unsigned long long)token);
  return strncmp(path, want, (size_t)w) == 0 && fcntl(f, F_GET_SEALS) >= 0;
}

zcoll_status_t zcoll__shm_open_peer_fd(struct zcoll_ep *ep, int fd, int is_pipe, const char *what,
                                       int *out) {
  int f = -1;
  const char *how = "pidfd_getfd";
  /* The peer's own descriptor, through its pidfd: no name lookup, no race with a pid
   * reused by another process. Refused (EPERM: ptrace attach is restricted; ENOSYS:
   * Linux < 5.6), /proc is the way. The wake-up pipe always goes through /proc: it
   * must be reopened read-write (below), and pidfd_getfd would hand us the peer's
   * write-only end. */
  if (!is_pipe && ep->pidfd >= 0) {
    f = pidfd_getfd_(ep->pidfd, fd);
    if (f < 0 && errno != EPERM && errno != EACCES && errno != ENOSYS) {
      zcoll_status_t st = errno == ESRCH ? ZCOLL_ERR_PEER_FAILED : ZCOLL_ERR_TRANSPORT;
      return zcoll__fail(st, "shm: cannot get rank %d's %s (descriptor %d of pid %d): %m", ep->peer,
                         what, fd, (int)ep->pid);
    }
  }
  char path[64];
  if (f < 0) {
    how = "/proc";
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)ep->pid, fd);
    /* Read-write for the pipe too: while we hold a reading end, writing never raises
     * SIGPIPE -- which would kill this process when the peer dies, since a library must
     * not change the application's signal dispositions. (A pipe opened through /proc
     * behaves as a FIFO, where Linux allows O_RDWR.) O_NOFOLLOW does not apply to
     * /proc's magic links; what the descriptor is gets checked below. */
    f = open(path, O_RDWR | O_CLOEXEC | (is_pipe ? O_NONBLOCK : 0));
    if (f < 0) {
      zcoll_status_t st = errno == ENOENT || errno == ESRCH ? ZCOLL_ERR_PEER_FAILED
                                                            : ZCOLL_ERR_TRANSPORT;
      return zcoll__fail(st,
                         "shm: cannot open rank %d's %s through %s: %m (the shm transport needs "
                         "every rank on one host, in one PID namespace, as one user; "
                         "ZCOLL_TRANSPORT=ucx works across them)",
                         ep->peer, what, path);
    }
  }
  struct stat sb;
  int ok = fstat(f, &sb) == 0 && (is_pipe ? S_ISFIFO(sb.st_mode) : is_peer_memfd(f, ep->token));
  if (!ok) {
    close(f);
    return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                       "shm: rank %d's %s (descriptor %d of pid %d, by %s) is not what it "
                       "should be",
                       ep->peer, what, fd, (int)ep->pid, how);
  }
  zcoll_log_debug("shm: rank %d's %s by %s", ep->peer, what, how);
  *out = f;
  return ZCOLL_OK;
}

void zcoll__shm_ep_free(struct zcoll_ep *ep) {
  if (!ep) return;
  if (ep->peer_inbox) munmap(ep->peer_inbox, ep->peer_inbox_bytes);
  if (ep->wake_fd >= 0) close(ep->wake_fd);
  if (ep->pidfd >= 0) close(ep->pidfd);
  for (struct zcoll__shm_pending *p = ep->backlog, *next; p; p = next) {
    next = p->next;
    free(p);
  }
  free(ep);
}

static zcoll_status_t connect_one(struct zcoll_tl *tl, int rank, const void *blob, size_t len,
                                  struct zcoll_ep **out) {
  struct zcoll__shm_addr a;
  if (len < sizeof(a))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "shm: rank %d's address is %zu bytes, not %zu", rank,
                       len, sizeof(a));
  memcpy(&a, blob, sizeof(a));
  if (a.magic != ZCOLL_SHM_MAGIC || a.rank != rank)
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "shm: rank %d sent a malformed address", rank);
  a.node[sizeof(a.node) - 1] = '\0';
  if (strncmp(a.node, tl->node, sizeof(a.node)) != 0)
    return zcoll__fail(ZCOLL_ERR_UNSUPPORTED,
                       "shm: rank %d is on another host or PID namespace (%s, here %s); the "
                       "shm transport needs every rank on one host",
                       rank, a.node, tl->node);
  if (a.inbox_bytes !=
      sizeof(struct zcoll__shm_inbox) + (size_t)tl->size * sizeof(struct zcoll__shm_ring))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "shm: rank %d's inbox has an unexpected size", rank);

  struct zcoll_ep *ep = calloc(1, sizeof(*ep));
  if (!ep) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "shm: out of memory");
  ep->tl = tl;
  ep->peer = rank;
  ep->pid = a.pid;
  ep->token = a.token;
  ep->wake_fd = ep->pidfd = -1;
  ep->backlog_tail = &ep->backlog;
  /* First the pidfd: the process it names is the one whose descriptors we take, and
   * its death wakes our event_fd. ENOSYS (Linux < 5.3): the rendezvous reports deaths. */
  zcoll_status_t st;
  ep->pidfd = pidfd_open_(a.pid);
  if (ep->pidfd < 0 && errno != ENOSYS) {
    st = zcoll__fail(errno == ESRCH ? ZCOLL_ERR_PEER_FAILED : ZCOLL_ERR_TRANSPORT,
                     "shm: pidfd_open of rank %d (pid %d): %m", rank, (int)a.pid);
    goto fail;
  }
  if (ep->pidfd >= 0 && tl->epfd >= 0) {
    struct epoll_event e = {.events = EPOLLIN, .data.u32 = (uint32_t)rank + 1};
    if (epoll_ctl(tl->epfd, EPOLL_CTL_ADD, ep->pidfd, &e) != 0) {
      st = zcoll__fail(ZCOLL_ERR_TRANSPORT, "shm: epoll_ctl: %m");
      goto fail;
    }
  }
  int fd = -1;
  if ((st = zcoll__shm_open_peer_fd(ep, a.inbox_fd, 0, "inbox", &fd)) != ZCOLL_OK) goto fail;
  struct stat sb;
  if (fstat(fd, &sb) != 0 || (uint64_t)sb.st_size != a.inbox_bytes) {
    close(fd);
    st = zcoll__fail(ZCOLL_ERR_TRANSPORT, "shm: rank %d's inbox is not the size it said", rank);
    goto fail;
  }
  void *m = mmap(NULL, a.inbox_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED) {
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "shm: cannot map rank %d's inbox: %m", rank);
    goto fail;
  }
  ep->peer_inbox = m;
  ep->peer_inbox_bytes = a.inbox_bytes;
  if (ep->peer_inbox->magic != ZCOLL_SHM_MAGIC || ep->peer_inbox->size != (uint32_t)tl->size) {
    st = zcoll__fail(ZCOLL_ERR_TRANSPORT, "shm: rank %d's inbox is not a zcoll inbox", rank);
    goto fail;
  }
  if ((st = zcoll__shm_open_peer_fd(ep, a.wake_fd, 1, "wake-up pipe", &ep->wake_fd)) != ZCOLL_OK)
    goto fail;
  ep->out = &ep->peer_inbox->ring[tl->rank];
  ep->out_tail = atomic_load_explicit(&ep->out->tail, memory_order_relaxed);
  ep->out_head = atomic_load_explicit(&ep->out->head, memory_order_acquire);
  ep->light = tl->registered && ep->peer_inbox->barriers;
  ep->in = &tl->inbox->ring[rank];
  *out = ep;
  return ZCOLL_OK;
fail:
  zcoll__shm_ep_free(ep);
  return st;
}

zcoll_status_t zcoll__shm_connect(struct zcoll_tl *tl, int n, const int *ranks,
                                  const void *const *addrs, const size_t *lens,
                                  struct zcoll_ep **eps) {
  /* The caller's mistake first, before any peer is reached (transport.h). */
  for (int i = 0; i < n; i++)
    if (ranks[i] < 0 || ranks[i] >= tl->size || ranks[i] == tl->rank)
      return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "shm: cannot connect to rank %d", ranks[i]);
  struct zcoll_ep **all = realloc(tl->eps, sizeof(struct zcoll_ep *) * (size_t)(tl->neps + n + 1));
  if (!all) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "shm: out of memory");
  tl->eps = all;
  for (int i = 0; i < n; i++) {
    zcoll_status_t st = connect_one(tl, ranks[i], addrs[i], lens[i], &eps[i]);
    if (st != ZCOLL_OK) return st; /* the ones made so far are in tl->eps: close frees them */
    tl->eps[tl->neps++] = eps[i];
  }
  return ZCOLL_OK;
}
