/* iface.c -- shared-memory transport: instance lifecycle and the ops table. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "base/config.h"
#include "base/fsize.h"
#include "base/log.h"
#include "base/node.h"
#include "shm.h"

zcoll_status_t zcoll__shm_memfd(uint64_t token, const char *what, size_t len, int *out) {
  char who[64];
  snprintf(who, sizeof(who), "the shm transport (its %s)", what);
  zcoll_status_t st = zcoll__fsize_check(len, who, "");
  if (st != ZCOLL_OK) return st;
  char name[ZCOLL_SHM_NAME_LEN];
  snprintf(name, sizeof(name), "zcoll-%016llx-%s", (unsigned long long)token, what);
  int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, (off_t)len) != 0) {
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "shm: cannot make %zu bytes of %s: %m", len, what);
    if (fd >= 0) close(fd);
    return st;
  }
  *out = fd;
  return ZCOLL_OK;
}

uint64_t zcoll__shm_max_region(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : (uint64_t)1 << 40;
}

static uint64_t random_token(void) {
  uint64_t t;
  if (getrandom(&t, sizeof(t), GRND_NONBLOCK) == (ssize_t)sizeof(t)) return t;
  struct timespec ts; /* no entropy yet: unique enough to tell memfds apart */
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20);
}

static void set(zcoll_transport_detail_t *d, const char *what, int ok, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void set(zcoll_transport_detail_t *d, const char *what, int ok, const char *fmt, ...) {
  snprintf(d->what, sizeof(d->what), "%s", what);
  d->ok = ok;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->detail, sizeof(d->detail), fmt, ap);
  va_end(ap);
}

/* pidfd_getfd on ourselves, as a peer will do it (ep.c): optional, /proc is the other way. */
static void check_pidfd(zcoll_transport_detail_t *d) {
  int fd = memfd_create("zcoll-probe", MFD_CLOEXEC), pidfd = -1, got = -1, err = 0;
  if (fd >= 0 && (pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0)) >= 0)
    got = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
  err = errno;
  char yama[8];
  zcoll__read_line("/proc/sys/kernel/yama/ptrace_scope", yama, sizeof(yama));
  if (got >= 0)
    set(d, "pidfd_getfd", 1, "works: peers take each other's memfds directly");
  else
    set(d, "pidfd_getfd", -1, "%s (%s%s%s): peers reopen memfds through /proc instead",
        fd < 0      ? "no memfd to try it on"
        : pidfd < 0 ? "pidfd_open failed"
                    : "refused",
        strerror(err), yama[0] ? ", Yama ptrace_scope " : "", yama);
  if (got >= 0) close(got);
  if (pidfd >= 0) close(pidfd);
  if (fd >= 0) close(fd);
}

/* Each prerequisite, tried on ourselves the way peers will use it: the probe is the first
 * one not met; zcoll_info -d lists them all. */
static int shm_describe(const zcoll_config_t *cfg, zcoll_transport_detail_t *out, int max) {
  zcoll_transport_detail_t d[5];
  int n = 0;
  /* A process that is not dumpable (setuid, or prctl) keeps its /proc/<pid>/fd from
   * everyone else: peers could not reach our memory. */
  if (prctl(PR_GET_DUMPABLE) == 1)
    set(&d[n++], "dumpable", 1, "yes: peers may open this process's descriptors");
  else
    set(&d[n++], "dumpable", 0, "this process is not dumpable, so peers cannot open its memfds");
  int fd = memfd_create("zcoll-probe", MFD_CLOEXEC), err = errno;
  if (fd < 0) {
    set(&d[n++], "memfd_create", 0, "%s", strerror(err));
  } else {
    set(&d[n++], "memfd_create", 1, "works");
    /* A memfd reopened through /proc is exactly how peers will reach our memory. */
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)getpid(), fd);
    int again = open(path, O_RDWR | O_CLOEXEC);
    err = errno;
    close(fd);
    if (again < 0) {
      set(&d[n++], "/proc/<pid>/fd", 0, "cannot reopen a memfd through %s: %s", path,
          strerror(err));
    } else {
      close(again);
      set(&d[n++], "/proc/<pid>/fd", 1, "a memfd reopens through %s", path);
    }
  }
  check_pidfd(&d[n++]);
  char node[128];
  zcoll__node_id(node, sizeof(node), cfg->rank);
  set(&d[n++], "host id", -1,
      "%s (boot id/PID namespace/user): ranks with the same id share "
      "memory",
      node);
  for (int i = 0; i < n && i < max; i++) out[i] = d[i];
  return n;
}

/* The kernel: pidfd_getfd needs Linux 5.6, memfd_create 3.17. */
static void shm_version(char *buf, size_t len) {
  struct utsname u;
  if (uname(&u) == 0)
    snprintf(buf, len, "%s %s (pidfd_getfd needs Linux 5.6, else /proc is used)", u.sysname,
             u.release);
}

static zcoll_status_t shm_probe(const zcoll_config_t *cfg, char *why, size_t why_len) {
  zcoll_transport_detail_t d[8];
  int n = shm_describe(cfg, d, 8);
  for (int i = 0; i < n; i++) {
    if (d[i].ok) continue;
    snprintf(why, why_len, "%s: %s", d[i].what, d[i].detail);
    return ZCOLL_ERR_UNSUPPORTED;
  }
  return ZCOLL_OK;
}

static void shm_close(struct zcoll_tl *tl) {
  if (!tl) return;
  for (int i = 0; i < tl->neps; i++) zcoll__shm_ep_free(tl->eps[i]);
  free(tl->eps);
  /* The regions themselves are the core's to unmap; their memfds are ours. */
  for (int i = 0; i < tl->nallocs; i++) close(tl->allocs[i].fd);
  free(tl->allocs);
  if (tl->inbox) munmap(tl->inbox, tl->inbox_bytes);
  if (tl->inbox_fd >= 0) close(tl->inbox_fd);
  if (tl->wake[0] >= 0) close(tl->wake[0]);
  if (tl->wake[1] >= 0) close(tl->wake[1]);
  if (tl->epfd >= 0) close(tl->epfd);
  zcoll__evq_free(&tl->evq);
  free(tl);
}

static zcoll_status_t shm_open_tl(const struct zcoll_tl_params *p, struct zcoll_tl **out) {
  struct zcoll_tl *tl = calloc(1, sizeof(*tl));
  if (!tl) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "shm: out of memory");
  tl->rank = p->rank;
  tl->size = p->size;
  tl->inbox_fd = tl->wake[0] = tl->wake[1] = tl->epfd = -1;
  tl->token = random_token();
  zcoll__node_id(tl->node, sizeof(tl->node), p->rank);
  zcoll_status_t st;
  if (pipe2(tl->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
    st = zcoll__fail(ZCOLL_ERR_TRANSPORT, "shm: pipe: %m");
    goto fail;
  }
  /* The event_fd: the wake-up pipe now, the peers' pidfds as they connect. */
  struct epoll_event e = {.events = EPOLLIN, .data.u32 = 0};
  if ((tl->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
      epoll_ctl(tl->epfd, EPOLL_CTL_ADD, tl->wake[0], &e) != 0) {
    st = zcoll__fail(ZCOLL_ERR_TRANSPORT, "shm: epoll: %m");
    goto fail;
  }
  /* The inbox: a ring for every rank that might write to us. Pages of rings nobody
   * uses are never touched, so a large job costs address space, not memory. */
  tl->inbox_bytes = sizeof(struct zcoll__shm_inbox) +
                    (size_t)p->size * sizeof(struct zcoll__shm_ring);
  if ((st = zcoll__shm_memfd(tl->token, "inbox", tl->inbox_bytes, &tl->inbox_fd)) != ZCOLL_OK)
    goto fail;
  void *m = mmap(NULL, tl->inbox_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, tl->inbox_fd, 0);
  if (m == MAP_FAILED) {
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "shm: cannot map a %zu-byte inbox: %m", tl->inbox_bytes);
    goto fail;
  }
  tl->inbox = m;
  tl->inbox->magic = ZCOLL_SHM_MAGIC;
  tl->inbox->size = (uint32_t)p->size;
  tl->registered = zcoll__shm_barriers_register();
  tl->inbox->barriers = (uint32_t)tl->registered; /* before any peer maps it */
  *out = tl;
  return ZCOLL_OK;
fail:
  shm_close(tl);
  return st;
}

static zcoll_status_t shm_address(struct zcoll_tl *tl, void *buf, size_t *len) {
  struct zcoll__shm_addr a = {.magic = ZCOLL_SHM_MAGIC,
                              .pid = (int32_t)getpid(),
                              .rank = tl->rank,
                              .inbox_fd = tl->inbox_fd,
                              .wake_fd = tl->wake[1],
                              .inbox_bytes = tl->inbox_bytes,
                              .token = tl->token};
  memcpy(a.node, tl->node, sizeof(a.node));
  if (*len < sizeof(a)) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "shm: address buffer short");
  memcpy(buf, &a, sizeof(a));
  *len = sizeof(a);
  return ZCOLL_OK;
}

const struct zcoll_tl_ops zcoll__tl_shm = {
    .name = "shm",
    .caps = ZCOLL_TL_CAP_PUT_ANY | ZCOLL_TL_CAP_PEER_LOSS,
    .default_chunk_bytes = (size_t)128 * 1024,
    .probe = shm_probe,
    .open = shm_open_tl,
    .close = shm_close,
    .address = shm_address,
    .connect = zcoll__shm_connect,
    .mem_alloc = zcoll__shm_mem_alloc,
    .mem_free = zcoll__shm_mem_free,
    .mem_forget = zcoll__shm_mem_forget,
    .mem_reg = zcoll__shm_mem_reg,
    .mem_dereg = zcoll__shm_mem_dereg,
    .rkey_pack = zcoll__shm_rkey_pack,
    .rkey_unpack = zcoll__shm_rkey_unpack,
    .rkey_release = zcoll__shm_rkey_release,
    .rkey_ptr = zcoll__shm_rkey_ptr,
    .knock = zcoll__shm_knock,
    .peer_gone = zcoll__shm_peer_gone,
    .put = zcoll__shm_put,
    .fetch_add = zcoll__shm_fetch_add,
    .poll = zcoll__shm_poll,
    .event_fd = zcoll__shm_event_fd,
    .arm = zcoll__shm_arm,
    .describe = shm_describe,
    .version = shm_version,
};
