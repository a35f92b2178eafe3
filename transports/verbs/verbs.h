/*
 * verbs.h -- the RDMA transport: RC queue pairs over libibverbs, connected with
 * librdmacm, one per peer.
 *
 * put() is one IBV_WR_RDMA_WRITE_WITH_IMM straight into the peer's registered slot;
 * the 32-bit immediate is the notification, delivered by the receiver's completion
 * queue only after the data is in place -- never by polling memory, never by a copy.
 * Writes are signalled selectively: one signalled completion retires every earlier
 * write on its queue pair, and a zero-length plain write (invisible to the peer)
 * flushes the tail when nothing else would.
 */
#ifndef ZCOLL_TL_VERBS_H
#define ZCOLL_TL_VERBS_H

#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>

#include "tl/evq.h"
#include "tl/transport.h"

#define ZCOLL_VERBS_SIGNAL_EVERY 16 /* unsignalled writes between two signalled ones */
#define ZCOLL_VERBS_RECV_BATCH 32   /* receives reposted at once */

struct zcoll__verbs_addr { /* what the bootstrap carries for us */
  struct sockaddr_in sin;  /* the listener: device IP and port */
  uint64_t nonce;          /* this instance; echoed by connecting peers */
  int32_t rank;
  uint32_t reserved;
};

struct zcoll__verbs_conn { /* private data of a connection request */
  int32_t rank;
  uint32_t reserved;
  uint64_t nonce; /* the listener's, proving the request is for this instance */
};

struct zcoll_tl {
  int rank, size;
  const zcoll_config_t *cfg;
  zcoll_status_t (*alive)(void *arg);
  void *alive_arg;
  char dev_name[64];
  uint8_t port;
  struct sockaddr_in ip; /* the device's IPv4 address */
  uint64_t nonce;
  struct rdma_event_channel *cm_ch;
  struct rdma_cm_id *listen_id;
  struct ibv_context *ctx;    /* the listener's device */
  struct ibv_device_attr dev; /* its limits (ibv_query_device): queues are sized within them */
  struct ibv_pd *pd;
  struct ibv_comp_channel *comp_ch;
  struct ibv_cq *cq;
  int cq_size;
  int epfd; /* epoll over the completion channel, async events and CM events */
  uint32_t max_inline;
  int sq_depth, rq_depth;
  struct zcoll__evq evq; /* events raised by callbacks, harvested by poll */
  zcoll_status_t failed;
  struct zcoll_ep **eps;
  int neps;
  int polls; /* poll() calls since async and CM events were last read */
  /* Remote atomics (amo.c): only for a communicator that asks (cfg->atomics) on a device
   * that has them; the reply buffer, registered on first use; the queue pair to itself. */
  int atomics;
  uint64_t *amo_buf;
  struct ibv_mr *amo_mr;
  volatile int amo_done; /* the atomic in flight has completed */
  struct zcoll_ep *self;
};

/* What a posted send's completion means (struct zcoll__verbs_wr.report). */
#define ZCOLL_VERBS_WR_QUIET 0 /* a zero-length flush write of our own: nothing */
#define ZCOLL_VERBS_WR_PUT 1   /* a put: PUT_DONE */
#define ZCOLL_VERBS_WR_AMO 2   /* the atomic fetch_add waits for (amo.c) */

struct zcoll__verbs_wr { /* one posted send, until its completion is known */
  uint64_t cookie;
  uint8_t report; /* ZCOLL_VERBS_WR_* */
};

struct zcoll_ep {
  struct zcoll_tl *tl;
  int index; /* in tl->eps, carried in wr_id */
  int peer;
  struct rdma_cm_id *id;
  struct ibv_qp *qp;
  int established;
  int failed;
  /* send queue bookkeeping: a ring of posted writes, oldest at head */
  struct zcoll__verbs_wr *wrs;
  uint32_t wr_head, wr_count;
  uint32_t since_signal;   /* posted since the last signalled write */
  uint32_t signal_pending; /* signalled writes not yet completed */
  uint32_t recv_posted;
};

struct zcoll_tl_mr {
  struct ibv_mr *mr;
  int remote; /* peers may write into it: only such regions have a key */
};

struct zcoll_tl_rkey {
  uint64_t addr, len;
  uint32_t rkey;
};

zcoll_status_t zcoll__verbs_push(struct zcoll_tl *tl, const struct zcoll_tl_event *ev);
zcoll_status_t zcoll__verbs_post_recvs(struct zcoll_ep *ep, uint32_t n);
zcoll_status_t zcoll__verbs_cm_events(struct zcoll_tl *tl);
void zcoll__verbs_async_events(struct zcoll_tl *tl);
zcoll_status_t zcoll__verbs_wc_status(enum ibv_wc_status s);
/* Posts wr on ep's send queue (progress.c), signalled where selective signalling wants
 * it and always for anything but a put; report: ZCOLL_VERBS_WR_*. */
zcoll_status_t zcoll__verbs_post(struct zcoll_ep *ep, struct ibv_send_wr *wr, uint64_t cookie,
                                 int report);
/* Reaps every completion there is into events (progress.c). */
void zcoll__verbs_drain(struct zcoll_tl *tl);
/* amo.c: transport.h's fetch_add and self_ep; the reply buffer's release. */
zcoll_status_t zcoll__verbs_fetch_add(struct zcoll_ep *ep, struct zcoll_tl_rkey *rkey,
                                      uint64_t roff, uint64_t add, uint64_t *old);
zcoll_status_t zcoll__verbs_self_ep(struct zcoll_tl *tl, struct zcoll_ep **ep);
void zcoll__verbs_amo_close(struct zcoll_tl *tl);

/* The ops, one file each by concern (ep.c, mr.c, progress.c). */
zcoll_status_t zcoll__verbs_connect(struct zcoll_tl *tl, int n, const int *ranks,
                                    const void *const *addrs, const size_t *lens,
                                    struct zcoll_ep **eps);
void zcoll__verbs_close_eps(struct zcoll_tl *tl);
zcoll_status_t zcoll__verbs_mem_reg(struct zcoll_tl *tl, void *addr, size_t len, int remote,
                                    struct zcoll_tl_mr **mr);
void zcoll__verbs_mem_dereg(struct zcoll_tl_mr *mr);
zcoll_status_t zcoll__verbs_rkey_pack(struct zcoll_tl_mr *mr, void *buf, size_t *len);
zcoll_status_t zcoll__verbs_rkey_unpack(struct zcoll_ep *ep, const void *buf, size_t len,
                                        struct zcoll_tl_rkey **rkey);
void zcoll__verbs_rkey_release(struct zcoll_tl_rkey *rkey);
zcoll_status_t zcoll__verbs_put(struct zcoll_ep *ep, const void *src, struct zcoll_tl_mr *lmr,
                                struct zcoll_tl_rkey *rkey, uint64_t roff, size_t len, uint32_t imm,
                                uint64_t cookie);
zcoll_status_t zcoll__verbs_poll(struct zcoll_tl *tl, struct zcoll_tl_event *ev, int max, int *n);
int zcoll__verbs_event_fd(struct zcoll_tl *tl);
void zcoll__verbs_quiesce(struct zcoll_tl *tl);
zcoll_status_t zcoll__verbs_arm(struct zcoll_tl *tl);

/* ZCOLL_IB_TC on a connection (or the listener, whose requests inherit it): before its
 * route is resolved. */
zcoll_status_t zcoll__verbs_set_tos(struct zcoll_tl *tl, struct rdma_cm_id *id);

/* Device choice (iface.c): the RDMA device and port to use, and its IPv4 address. */
zcoll_status_t zcoll__verbs_pick_device(const zcoll_config_t *cfg, int rank, char *name,
                                        size_t name_len, uint8_t *port, struct sockaddr_in *ip);

#endif
