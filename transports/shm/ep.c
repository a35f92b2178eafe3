/* ep.c -- shared-memory transport: reaching a peer's inbox and wake-up pipe. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "shm.h"

zcoll_status_t zcoll__shm_open_peer_fd(pid_t pid, int fd, int flags, int is_pipe, int peer,
                                       const char *what, int *out) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
  /* O_NOFOLLOW does not apply to /proc's magic links; what the descriptor is gets
   * checked below, so that a wrong or reused number cannot make us write into a file. */
  int f = open(path, flags | O_CLOEXEC);
  if (f < 0) {
    zcoll_status_t st = errno == ENOENT || errno == ESRCH ? ZCOLL_ERR_PEER_FAILED
                                                          : ZCOLL_ERR_TRANSPORT;
    return zcoll__fail(st,
                       "shm: cannot open rank %d's %s through %s: %m (the shm transport needs "
                       "every rank on one host, in one PID namespace, as one user; "
                       "ZCOLL_TRANSPORT=ucx works across them)",
                       peer, what, path);
  }
  /* A pipe for waking, a memfd (which has seals; other files do not) for memory. */
  struct stat sb;
  int ok = fstat(f, &sb) == 0 && (is_pipe ? S_ISFIFO(sb.st_mode) : fcntl(f, F_GET_SEALS) >= 0);
  if (!ok) {
    close(f);
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "shm: rank %d's %s (%s) is not what it should be", peer,
                       what, path);
  }
  *out = f;
  return ZCOLL_OK;
}

void zcoll__shm_ep_free(struct zcoll_ep *ep) {
  if (!ep) return;
  if (ep->peer_inbox) munmap(ep->peer_inbox, ep->peer_inbox_bytes);
  if (ep->wake_fd >= 0) close(ep->wake_fd);
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
  if (a.inbox_bytes != sizeof(struct zcoll__shm_inbox) +
                           (size_t)tl->size * sizeof(struct zcoll__shm_ring))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "shm: rank %d's inbox has an unexpected size", rank);

  struct zcoll_ep *ep = calloc(1, sizeof(*ep));
  if (!ep) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "shm: out of memory");
  ep->tl = tl;
  ep->peer = rank;
  ep->pid = a.pid;
  ep->wake_fd = -1;
  ep->backlog_tail = &ep->backlog;
  int fd = -1;
  zcoll_status_t st = zcoll__shm_open_peer_fd(a.pid, a.inbox_fd, O_RDWR, 0, rank, "inbox", &fd);
  if (st != ZCOLL_OK) goto fail;
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
  /* Read-write although we only write: while we hold a reading end, writing never
   * raises SIGPIPE -- which would kill this process when the peer dies, since a library
   * must not change the application's signal dispositions. (A pipe opened through /proc
   * behaves as a FIFO, where Linux allows O_RDWR.) */
  if ((st = zcoll__shm_open_peer_fd(a.pid, a.wake_fd, O_RDWR | O_NONBLOCK, 1, rank, "wake-up pipe",
                                    &ep->wake_fd)) != ZCOLL_OK)
    goto fail;
  ep->out = &ep->peer_inbox->ring[tl->rank];
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
  struct zcoll_ep **all = realloc(tl->eps, sizeof(*all) * (size_t)(tl->neps + n + 1));
  if (!all) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "shm: out of memory");
  tl->eps = all;
  for (int i = 0; i < n; i++) {
    if (ranks[i] < 0 || ranks[i] >= tl->size || ranks[i] == tl->rank)
      return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "shm: cannot connect to rank %d", ranks[i]);
    zcoll_status_t st = connect_one(tl, ranks[i], addrs[i], lens[i], &eps[i]);
    if (st != ZCOLL_OK) return st; /* the ones made so far are in tl->eps: close frees them */
    tl->eps[tl->neps++] = eps[i];
  }
  return ZCOLL_OK;
}
