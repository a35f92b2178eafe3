/*
 * verbs.h -- the RDMA transport: RC queue pairs over libibverbs, one per peer, connected
 * out of band: each rank makes its peers' queue pairs before the address exchange and
 * puts their numbers in the parts of its address meant for each peer (transport.h's
 * peer_address), with its port's GID or LID and MTU; connect moves them to RTR and RTS
 * as rc_pingpong does. No IP address is needed (InfiniBand without IPoIB, IPv6-only
 * RoCE), and no connection manager.
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
#include <stdint.h>

#include "tl/evq.h"
#include "tl/transport.h"

#define ZCOLL_VERBS_SIGNAL_EVERY 16 /* unsignalled writes between two signalled ones */
#define ZCOLL_VERBS_RECV_BATCH 32   /* receives reposted at once */

/* What a GID is, for the two ends to agree on (port.c): an IPv4-mapped GID cannot talk
 * to an IPv6 one, nor RoCE v1 to v2. */
enum { ZCOLL_VERBS_GID_LOCAL = 1, ZCOLL_VERBS_GID_IPV6 = 2, ZCOLL_VERBS_GID_IPV4 = 3 };

struct zcoll__verbs_port { /* how peers reach a port (port.c) */
  uint8_t link_layer;      /* IBV_LINK_LAYER_* */
  uint16_t lid;
  enum ibv_mtu mtu; /* the port's active MTU */
  int gid_index;    /* -1: LID-routed InfiniBand, no GRH */
  union ibv_gid gid;
  int roce_v2;  /* the GID's type: RoCE v2 (UDP) rather than v1 or IB */
  int gid_kind; /* ZCOLL_VERBS_GID_* */
};

#define ZCOLL_VERBS_MAX_RAILS 4 /* ports a rank stripes its puts over */

#define ZCOLL_VERBS_ADDR_MAGIC 0x7a760003u /* "zv", version 3: out of band, with rails */

struct zcoll__verbs_addr { /* the address every peer gets: this head, then a port each rail */
  uint32_t magic;
  int32_t rank;
  uint32_t nrails;
  uint32_t reserved;
};

struct zcoll__verbs_addr_port {
  uint8_t gid[16];
  uint16_t lid;
  uint8_t link_layer, mtu, global, gid_kind, roce_v2;
  uint8_t listed; /* the rail's place among the ports ZCOLL_IB_HCA matches, up or not */
};

struct zcoll__verbs_part { /* the part for one peer, a rail each: its queue pair at our end */
  uint32_t qpn, psn;
};

/* One port a rank uses (a rail): its device's own context, protection domain and
 * completion queue -- a queue pair, a registration and a CQ belong to one device. */
struct zcoll__verbs_rail {
  char dev_name[64];
  uint8_t port;
  uint8_t listed;              /* its place among the ports the list matches, up or not */
  struct zcoll__verbs_port pa; /* the port's address */
  uint16_t pkey_index;         /* ZCOLL_IB_PKEY's entry in the port's table */
  struct ibv_context *ctx;
  struct ibv_device_attr dev; /* its limits (ibv_query_device): queues are sized within them */
  struct ibv_pd *pd;
  struct ibv_comp_channel *comp_ch;
  struct ibv_cq *cq;
  int cq_size;
  uint32_t max_inline;
  uint64_t bytes; /* payload put over it (zcoll_comm_stats' rail_bytes) */
};

struct zcoll_tl {
  int rank, size;
  const zcoll_config_t *cfg;
  zcoll_status_t (*alive)(void *arg);
  void *alive_arg;
  struct zcoll__verbs_rail rail[ZCOLL_VERBS_MAX_RAILS];
  int nrails;
  int epfd; /* epoll over every rail's completion channel and async events */
  int sq_depth, rq_depth;
  struct zcoll__evq evq; /* events raised by callbacks, harvested by poll */
  zcoll_status_t failed;
  struct zcoll_ep **eps;
  int neps;
  int polls;         /* poll() calls since async events were last read */
  int connected;     /* connect has run: the queue pairs are in RTS */
  int rails_shifted; /* a peer's rails were found out of line with ours (said once) */
  /* Remote atomics (amo.c), on rail 0: only for a communicator that asks (cfg->atomics)
   * on a device that has them; the reply buffer, registered on first use; the queue pair
   * to itself. */
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

struct zcoll__verbs_arrival { /* a notification held back for order (progress.c) */
  uint32_t imm, len;
};

struct zcoll__verbs_qp { /* an endpoint's queue pair on one rail */
  struct ibv_qp *qp;
  uint32_t psn; /* our first packet sequence number */
  /* send queue bookkeeping: a ring of posted writes, oldest at head */
  struct zcoll__verbs_wr *wrs;
  uint32_t wr_head, wr_count;
  uint32_t since_signal;   /* posted since the last signalled write */
  uint32_t signal_pending; /* signalled writes not yet completed */
  uint32_t recv_posted;
  /* notifications that arrived on this rail ahead of their turn (a ring of rq_depth) */
  struct zcoll__verbs_arrival *held;
  uint32_t held_head, held_count;
};

/* Puts to a peer take its rails in turn -- the next rail after each put that carries data,
 * so that credits and bare notifications do not pin the data to one -- and the peer hands
 * the notifications out by the same rule (it sees each one's length): each queue pair
 * delivers in order, so the merge restores the order of the puts across rails
 * (transport.h's promise). */
struct zcoll_ep {
  struct zcoll_tl *tl;
  int index; /* in tl->eps, carried in wr_id */
  int peer;
  int failed;
  int nrails; /* the rails both ends have: rail i meets the peer's rail i */
  struct zcoll__verbs_qp q[ZCOLL_VERBS_MAX_RAILS];
  int tx_rail, rx_rail; /* the rail of the next put, of the next notification */
};

struct zcoll_tl_mr {
  struct ibv_mr *mr[ZCOLL_VERBS_MAX_RAILS]; /* one registration per rail's device */
  int remote; /* peers may write into it: only such regions have a key */
};

struct zcoll_tl_rkey {
  uint64_t addr, len;
  uint32_t nrails;
  uint32_t rkey[ZCOLL_VERBS_MAX_RAILS];
};

zcoll_status_t zcoll__verbs_push(struct zcoll_tl *tl, const struct zcoll_tl_event *ev);
zcoll_status_t zcoll__verbs_post_recvs(struct zcoll_ep *ep, int rail, uint32_t n);
void zcoll__verbs_async_events(struct zcoll_tl *tl);
zcoll_status_t zcoll__verbs_wc_status(enum ibv_wc_status s);
/* Posts wr on ep's send queue of the rail (progress.c), signalled where selective
 * signalling wants it and always for anything but a put; report: ZCOLL_VERBS_WR_*. */
zcoll_status_t zcoll__verbs_post(struct zcoll_ep *ep, int rail, struct ibv_send_wr *wr,
                                 uint64_t cookie, int report);
/* Reaps every completion there is into events (progress.c). */
void zcoll__verbs_drain(struct zcoll_tl *tl);
/* amo.c: transport.h's fetch_add and self_ep; the reply buffer's release. */
zcoll_status_t zcoll__verbs_fetch_add(struct zcoll_ep *ep, struct zcoll_tl_rkey *rkey,
                                      uint64_t roff, uint64_t add, uint64_t *old);
zcoll_status_t zcoll__verbs_self_ep(struct zcoll_tl *tl, struct zcoll_ep **ep);
void zcoll__verbs_amo_close(struct zcoll_tl *tl);

/* The ops, one file each by concern (ep.c, mr.c, progress.c). */
zcoll_status_t zcoll__verbs_peer_address(struct zcoll_tl *tl, int n, const int *ranks, void *buf,
                                         size_t *each);
zcoll_status_t zcoll__verbs_connect(struct zcoll_tl *tl, int n, const int *ranks,
                                    const void *const *addrs, const size_t *lens,
                                    struct zcoll_ep **eps);
/* A queue pair's way on a rail from INIT to RTS, toward the queue pair qpn/psn at the
 * port pa (ep.c; amo.c's to itself too). */
zcoll_status_t zcoll__verbs_qp_init(struct zcoll_tl *tl, int rail, struct ibv_qp *qp, int peer);
zcoll_status_t zcoll__verbs_qp_ready(struct zcoll_tl *tl, int rail, struct ibv_qp *qp, int peer,
                                     const struct zcoll__verbs_port *pa, uint32_t qpn,
                                     uint32_t rpsn, uint32_t psn);
/* The endpoint's queue pairs' bookkeeping, and their release (ep.c). */
void zcoll__verbs_free_ep(struct zcoll_ep *ep);
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

/* Device choice (iface.c): the ports this rank uses, and how peers reach them -- every
 * port ZCOLL_IB_HCA lists (up to ZCOLL_VERBS_MAX_RAILS), else one of all, local ranks
 * spread over them. Fills rail[i].dev_name, port and pa; *n of them. */
zcoll_status_t zcoll__verbs_pick_rails(const zcoll_config_t *cfg, int rank,
                                       struct zcoll__verbs_rail *rail, int *n);

/* port.c: how peers reach port `port` of ctx (dev names it for messages): its GID, chosen
 * as NCCL does or at want_gid (>= 0), or its LID. 0, or -1 with why. */
int zcoll__verbs_port_addr(struct ibv_context *ctx, const char *dev, uint8_t port, int want_gid,
                           struct zcoll__verbs_port *pa, char *why, size_t why_len);
/* "GID index 1 (RoCE v2, fd77::1)" or "LID 0x1" */
void zcoll__verbs_port_str(const struct zcoll__verbs_port *pa, char *buf, size_t len);

#endif
