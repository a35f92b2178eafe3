/*
 * shm.h -- the shared-memory transport: every rank on one host.
 *
 * A put is one memcpy by the writer straight into the receiver's slot, which lives in
 * a memfd the receiver allocated (mem_alloc) and the writer mapped; then an 8-byte
 * notification (imm, len) goes into a single-producer/single-consumer ring in the
 * receiver's inbox -- another memfd, with one ring per sender. No syscall, no page
 * pinning and no rendezvous round trip on the data path, which is where UCX's
 * shared-memory rendezvous (a CMA pull per piece, requested by the receiver) spent the
 * time at 1-32 MiB. The cost of the design: the writer does the copy, so a put blocks
 * its caller for the copy (a 256 KiB piece: ~5 us).
 *
 * Peers reach each other's memfds with pidfd_getfd() (Linux >= 5.6; it needs the
 * ptrace "attach" right, which Yama may restrict) or else through /proc/<pid>/fd/<n>
 * (same host, same PID namespace, same user: the ptrace "read" check), so nothing is
 * named in /dev/shm and nothing is left behind when a rank dies. Either way a
 * descriptor is used only if it is a memfd named "zcoll-<token>-..." with the random
 * token the peer put in its address: a wrong or reused number, or any other file,
 * is refused. A pidfd per peer turns a peer's death into an event of our event_fd (an
 * epoll set of the wake-up pipe and the pidfds), so a rank blocked on a dead peer
 * fails within a moment even when nothing else happens.
 *
 * Waiting: a rank that wants to sleep sets `sleeping` in its inbox (arm) and sleeps on
 * a pipe; a writer that publishes a notification and then sees the flag writes a byte
 * into the pipe's write end, opened through /proc as well (an eventfd cannot be
 * reopened that way). Both sides order their store before their load, so one of them
 * always sees the other (Dekker); a spinning receiver costs writers nothing. Where the
 * kernel has membarrier(2)'s global expedited barriers, a writer's side is only its
 * compiler's and the sleeper has the kernel fence every CPU that runs a registered
 * process (progress.c); elsewhere both sides fence.
 */
#ifndef ZCOLL_TL_SHM_H
#define ZCOLL_TL_SHM_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "tl/evq.h"
#include "tl/transport.h"

#define ZCOLL_SHM_MAGIC 0x7a636f6c6c73686dull /* "zcollshm" */
/* Notifications in flight per sender: the executor's credits bound them to the
 * pipeline depth (at most 256) plus a couple of credit returns, so a ring of 512 never
 * fills under the executor. Should it (another user of the transport), the writer keeps
 * the overflow locally (backlog) and flushes it from put() and poll(). */
#define ZCOLL_SHM_RING 512u
#define ZCOLL_SHM_MAX_DEPTH 256 /* ZCOLL_PIPELINE_DEPTH's upper bound (config.c) */
_Static_assert(ZCOLL_SHM_RING >= 2 * ZCOLL_SHM_MAX_DEPTH, "the ring must hold a full pipeline");
/* Lock-free is what makes these atomics work between processes: a lock-based fallback
 * would lock in each process separately. */
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2,
               "the shm transport needs lock-free 32- and 64-bit atomics");

struct zcoll__shm_ring {
  _Alignas(64) _Atomic uint64_t tail;        /* next entry the sender writes */
  _Alignas(64) _Atomic uint64_t head;        /* next entry the receiver reads */
  _Alignas(64) uint64_t ent[ZCOLL_SHM_RING]; /* imm | (uint64_t)len << 32 */
};

struct zcoll__shm_inbox {
  uint64_t magic;
  uint32_t size;     /* ranks in the job: one ring per possible sender */
  uint32_t barriers; /* 1: the owner has membarrier(2) fence its writers before it sleeps */
  _Alignas(64) _Atomic uint32_t sleeping;     /* the owner is (about to be) asleep on its pipe */
  _Alignas(64) struct zcoll__shm_ring ring[]; /* indexed by the sender's rank */
};

#define ZCOLL_SHM_NODE_ID 64
/* memfd names: "zcoll-<16 hex digits of token>-<what>" */
#define ZCOLL_SHM_NAME_LEN 48

/* Dead peers are looked for every ZCOLL_SHM_DEATH_POLLS polls (and after every sleep): one
 * epoll_wait(0) for dead peers, a syscall the data path should not pay every time. */
#define ZCOLL_SHM_DEATH_POLLS 1024

/* What peers need to reach us (the transport address). */
struct zcoll__shm_addr {
  uint64_t magic;
  int32_t pid, rank;
  int32_t inbox_fd, wake_fd; /* descriptors in process pid */
  uint64_t inbox_bytes;
  uint64_t token; /* in the names of its memfds */
  char node[ZCOLL_SHM_NODE_ID];
};

struct zcoll__shm_pending { /* a notification the receiver's full ring could not take */
  uint64_t ent;
  struct zcoll__shm_pending *next;
};

struct zcoll__shm_alloc { /* a region mem_alloc made: its memfd stays open for peers */
  char *base;
  size_t len;
  int fd;
};

struct zcoll_tl {
  int rank, size;
  struct zcoll__shm_inbox *inbox;
  size_t inbox_bytes;
  int inbox_fd;
  int wake[2]; /* pipe: peers write into [1] */
  int epfd;    /* our event_fd: wake[0] and every peer's pidfd */
  uint64_t token;
  unsigned polls;         /* since the last check for dead peers */
  int ndead;              /* peers known dead, not yet reported (their rings may not be empty) */
  int armed;              /* we set inbox->sleeping; poll clears it and drains the pipe */
  int registered;         /* this process gets membarrier(2)'s global expedited barriers */
  atomic_uint fence_word; /* under ThreadSanitizer, what full_fence() (progress.c) updates */
  struct zcoll__evq evq;  /* PUT_DONE events (puts complete at once) */
  struct zcoll_ep **eps;  /* connected peers, in connect order */
  int neps, next_ep;      /* next_ep: where polling starts, for fairness */
  struct zcoll__shm_alloc *allocs;
  int nallocs;
  char node[ZCOLL_SHM_NODE_ID];
};

struct zcoll_ep {
  struct zcoll_tl *tl;
  int peer;
  pid_t pid;
  int pidfd; /* readable once the peer has died; -1 if the kernel has no pidfds */
  int dead;  /* 1: its pidfd fired (what it published before dying is still delivered);
              * 2: reported, PEER_LOST */
  uint64_t token;
  struct zcoll__shm_inbox *peer_inbox; /* mapped */
  size_t peer_inbox_bytes;
  struct zcoll__shm_ring *out; /* our ring in the peer's inbox */
  uint64_t out_tail, out_head; /* its tail (ours to move), its head when last read */
  struct zcoll__shm_ring *in;  /* the peer's ring in ours */
  int wake_fd;                 /* the peer's pipe, write end */
  int light;                   /* our knock needs no fence: we are registered, it barriers */
  struct zcoll__shm_pending *backlog, **backlog_tail;
};

struct zcoll_tl_mr {
  struct zcoll_tl *tl;
  char *base;
  size_t len;
  int fd;     /* the memfd behind a remote region (-1: a source only) */
  size_t off; /* base's offset in that memfd */
  int remote;
};

struct zcoll_tl_rkey {
  char *map; /* the peer's memfd, mapped from its start */
  size_t maplen;
  char *base; /* the region within it */
  size_t len;
};

struct zcoll__shm_rkey_blob {
  uint64_t magic;
  int32_t fd, pad;
  uint64_t off, len;
};

/* Makes a memfd named "zcoll-<token>-<what>" of len bytes into *fd, or fails with
 * ZCOLL_ERR_NO_MEMORY naming what: also, before trying, when len is past RLIMIT_FSIZE
 * (ftruncate would raise SIGXFSZ: fsize.h). */
zcoll_status_t zcoll__shm_memfd(uint64_t token, const char *what, size_t len, int *fd);
/* The largest receive region a peer may advertise: more than the host's memory is a
 * lie or a corruption, and would only fail later, as a fault on access. */
uint64_t zcoll__shm_max_region(void);
/* Gets ep's peer's descriptor fd ("what" names it in errors): a memfd of the peer's
 * (pidfd_getfd, else /proc), or with is_pipe its wake-up pipe (through /proc, O_RDWR:
 * see ep.c), checked for being what it should. */
zcoll_status_t zcoll__shm_open_peer_fd(struct zcoll_ep *ep, int fd, int is_pipe, const char *what,
                                       int *out);

zcoll_status_t zcoll__shm_connect(struct zcoll_tl *tl, int n, const int *ranks,
                                  const void *const *addrs, const size_t *lens,
                                  struct zcoll_ep **eps);
void zcoll__shm_ep_free(struct zcoll_ep *ep);
zcoll_status_t zcoll__shm_mem_alloc(struct zcoll_tl *tl, size_t len, void **addr);
void zcoll__shm_mem_free(struct zcoll_tl *tl, void *addr, size_t len);
void zcoll__shm_mem_forget(struct zcoll_tl *tl, void *addr);
zcoll_status_t zcoll__shm_mem_reg(struct zcoll_tl *tl, void *addr, size_t len, int remote,
                                  struct zcoll_tl_mr **mr);
void zcoll__shm_mem_dereg(struct zcoll_tl_mr *mr);
zcoll_status_t zcoll__shm_rkey_pack(struct zcoll_tl_mr *mr, void *buf, size_t *len);
zcoll_status_t zcoll__shm_rkey_unpack(struct zcoll_ep *ep, const void *buf, size_t len,
                                      struct zcoll_tl_rkey **rkey);
void zcoll__shm_rkey_release(struct zcoll_tl_rkey *rkey);
void *zcoll__shm_rkey_ptr(struct zcoll_tl_rkey *rkey, uint64_t roff, size_t len);
void zcoll__shm_knock(struct zcoll_ep *ep);
/* Registers this process for membarrier(2)'s global expedited barriers (progress.c); 1 if
 * it is, and then its knocks need no fence towards peers that barrier before sleeping. */
int zcoll__shm_barriers_register(void);
int zcoll__shm_peer_gone(struct zcoll_ep *ep);
zcoll_status_t zcoll__shm_put(struct zcoll_ep *ep, const void *src, struct zcoll_tl_mr *lmr,
                              struct zcoll_tl_rkey *rkey, uint64_t roff, size_t len, uint32_t imm,
                              uint64_t cookie);
zcoll_status_t zcoll__shm_fetch_add(struct zcoll_ep *ep, struct zcoll_tl_rkey *rkey, uint64_t roff,
                                    uint64_t add, uint64_t *old);
zcoll_status_t zcoll__shm_poll(struct zcoll_tl *tl, struct zcoll_tl_event *ev, int max, int *n);
int zcoll__shm_event_fd(struct zcoll_tl *tl);
zcoll_status_t zcoll__shm_arm(struct zcoll_tl *tl);

#endif
