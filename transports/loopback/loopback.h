/*
 * loopback.h -- an in-process transport: ranks are threads of one process and a put
 * is a memcpy into the peer's registered region.
 *
 * It exists for fast, deterministic tests of the executor and every algorithm with
 * no network (Gloo's tests do the same), and it deliberately keeps the verbs rules:
 * sources must be registered (no ZCOLL_TL_CAP_PUT_ANY, so the executor's staging path
 * runs) and writes are bounds-checked against the target region.
 */
#ifndef ZCOLL_TL_LOOPBACK_H
#define ZCOLL_TL_LOOPBACK_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "tl/evq.h"
#include "tl/transport.h"

struct zcoll_tl {
  int rank, size;
  int efd;
  pthread_mutex_t lock;  /* guards the event queue: peers push into it */
  struct zcoll__evq evq; /* events raised by callbacks, harvested by poll */
  zcoll_status_t failed;
  struct zcoll_ep **eps;
  int neps;
  /* A rank may tear down while peers still write to it (after an error): peers check
   * `closed` under `lock` around every write, and the struct itself lives until the
   * last endpoint pointing at it is gone. */
  int closed;
  int refs;
};

struct zcoll_ep {
  struct zcoll_tl *tl, *peer_tl;
  int peer;
};

struct zcoll_tl_mr {
  char *base;
  size_t len;
  int remote;  /* peers may write into it: only such regions have a key */
  uint64_t id; /* remote: its number in the registry of live regions (mr.c) */
};

struct zcoll_tl_rkey {
  char *base;
  size_t len;
  uint64_t id;
};

/* Runs fn(arg) while rkey's region is still registered, so that a write through a key
 * whose region was deregistered fails as it does on a NIC (ZCOLL_ERR_TRANSPORT). */
zcoll_status_t zcoll__lb_with_region(const struct zcoll_tl_rkey *rkey, void (*fn)(void *),
                                     void *arg);

struct zcoll__lb_addr {
  pid_t pid;
  struct zcoll_tl *tl;
};

/* Appends an event to tl's queue and wakes its owner; the caller holds tl->lock. */
zcoll_status_t zcoll__lb_push_locked(struct zcoll_tl *tl, const struct zcoll_tl_event *ev);
void zcoll__lb_ref(struct zcoll_tl *tl);
/* Drops one reference; frees tl with the last. */
void zcoll__lb_unref(struct zcoll_tl *tl);

/* The ops, one file each by concern (ep.c, mr.c, progress.c). */
zcoll_status_t zcoll__lb_connect(struct zcoll_tl *tl, int n, const int *ranks,
                                 const void *const *addrs, const size_t *lens,
                                 struct zcoll_ep **eps);
zcoll_status_t zcoll__lb_mem_reg(struct zcoll_tl *tl, void *addr, size_t len, int remote,
                                 struct zcoll_tl_mr **mr);
void zcoll__lb_mem_dereg(struct zcoll_tl_mr *mr);
zcoll_status_t zcoll__lb_rkey_pack(struct zcoll_tl_mr *mr, void *buf, size_t *len);
zcoll_status_t zcoll__lb_rkey_unpack(struct zcoll_ep *ep, const void *buf, size_t len,
                                     struct zcoll_tl_rkey **rkey);
void zcoll__lb_rkey_release(struct zcoll_tl_rkey *rkey);
zcoll_status_t zcoll__lb_put(struct zcoll_ep *ep, const void *src, struct zcoll_tl_mr *lmr,
                             struct zcoll_tl_rkey *rkey, uint64_t roff, size_t len, uint32_t imm,
                             uint64_t cookie);
zcoll_status_t zcoll__lb_fetch_add(struct zcoll_ep *ep, struct zcoll_tl_rkey *rkey, uint64_t roff,
                                   uint64_t add, uint64_t *old);
zcoll_status_t zcoll__lb_poll(struct zcoll_tl *tl, struct zcoll_tl_event *ev, int max, int *n);
int zcoll__lb_event_fd(struct zcoll_tl *tl);
zcoll_status_t zcoll__lb_arm(struct zcoll_tl *tl);

#endif
