/*
 * ucx.h -- the UCX transport: put-with-notification as UCP active messages.
 *
 * A put is one active message whose header names the target region, offset and
 * immediate. Small payloads travel eagerly and the handler copies them into place;
 * large ones use UCX's rendezvous, where the handler posts ucp_am_recv_data_nbx
 * straight into the target slot (zero-copy over CMA or RDMA). Either way the
 * notification is raised only once the data is in place, and it arrives as a worker
 * event, so a waiting rank can sleep on the worker's descriptor instead of polling a
 * flag in memory -- which is what an oversubscribed node needs.
 */
#ifndef ZCOLL_TL_UCX_H
#define ZCOLL_TL_UCX_H

#include <stdint.h>
#include <ucp/api/ucp.h>
#include <uct/api/uct.h>

#include "tl/evq.h"
#include "tl/transport.h"

#define ZCOLL_UCX_AM_ID 0x2c

/* Every UCX function the transport calls, reached through zcoll__ucp once
 * zcoll__ucx_load() succeeded (api.c says why UCX is not linked). X(field, symbol). */
#define ZCOLL_UCP_SYMS(X)                                       \
  X(config_read, ucp_config_read)                               \
  X(config_release, ucp_config_release)                         \
  X(init_version, ucp_init_version)                             \
  X(cleanup, ucp_cleanup)                                       \
  X(worker_create, ucp_worker_create)                           \
  X(worker_destroy, ucp_worker_destroy)                         \
  X(worker_set_am_recv_handler, ucp_worker_set_am_recv_handler) \
  X(worker_get_efd, ucp_worker_get_efd)                         \
  X(worker_arm, ucp_worker_arm)                                 \
  X(worker_get_address, ucp_worker_get_address)                 \
  X(worker_release_address, ucp_worker_release_address)         \
  X(worker_progress, ucp_worker_progress)                       \
  X(ep_create, ucp_ep_create)                                   \
  X(ep_close_nbx, ucp_ep_close_nbx)                             \
  X(am_send_nbx, ucp_am_send_nbx)                               \
  X(am_recv_data_nbx, ucp_am_recv_data_nbx)                     \
  X(request_check_status, ucp_request_check_status)             \
  X(request_cancel, ucp_request_cancel)                         \
  X(request_free, ucp_request_free)                             \
  X(mem_map, ucp_mem_map)                                       \
  X(mem_unmap, ucp_mem_unmap)                                   \
  X(rkey_pack, ucp_rkey_pack)                                   \
  X(rkey_buffer_release, ucp_rkey_buffer_release)               \
  X(ep_rkey_unpack, ucp_ep_rkey_unpack)                         \
  X(rkey_destroy, ucp_rkey_destroy)                             \
  X(atomic_op_nbx, ucp_atomic_op_nbx)                           \
  X(status_string, ucs_status_string)                           \
  X(get_version_string, ucp_get_version_string)

/* field is a declarator, not an expression: it cannot take parentheses. */
#define ZCOLL_UCP_FIELD(field, sym) __typeof__(sym) *field; /* NOLINT(bugprone-macro-parentheses) */
struct zcoll__ucp_api {
  ZCOLL_UCP_SYMS(ZCOLL_UCP_FIELD)
};
#undef ZCOLL_UCP_FIELD
extern struct zcoll__ucp_api zcoll__ucp;

/* Loads libucp.so.0 (once per process) and fills zcoll__ucp; ZCOLL_ERR_UNSUPPORTED with
 * the reason in why otherwise. */
zcoll_status_t zcoll__ucx_load(char *why, size_t why_len);

/* The UCT functions that list UCX's transports and devices, as ucx_info -d does, for
 * zcoll_info (ucx_describe), and read the sizes of UCX's shared-memory segments for the
 * RLIMIT_FSIZE check (iface.c): reached through zcoll__uct once zcoll__uct_load()
 * succeeded. */
#define ZCOLL_UCT_SYMS(X)                                   \
  X(query_components, uct_query_components)                 \
  X(release_component_list, uct_release_component_list)     \
  X(component_query, uct_component_query)                   \
  X(md_config_read, uct_md_config_read)                     \
  X(config_release, uct_config_release)                     \
  X(md_open, uct_md_open)                                   \
  X(md_close, uct_md_close)                                 \
  X(md_query_tl_resources, uct_md_query_tl_resources)       \
  X(release_tl_resource_list, uct_release_tl_resource_list) \
  X(md_iface_config_read, uct_md_iface_config_read)         \
  X(config_get, uct_config_get)

#define ZCOLL_UCT_FIELD(field, sym) __typeof__(sym) *field; /* NOLINT(bugprone-macro-parentheses) */
struct zcoll__uct_api {
  ZCOLL_UCT_SYMS(ZCOLL_UCT_FIELD)
};
#undef ZCOLL_UCT_FIELD
extern struct zcoll__uct_api zcoll__uct;
zcoll_status_t zcoll__uct_load(char *why, size_t why_len);
/* The version loaded (loading libucp if need be) and the one built against. */
void zcoll__ucx_version(char *buf, size_t len);

#define ZCOLL_UCX_ADDR_MAGIC 0x7a636f6c6c756378ull /* "zcollucx" */
#define ZCOLL_UCX_NODE_ID 64

/* Our transport address: which host we are on (node.h), then UCX's worker address.
 * Peers on another host get endpoints with peer error handling; see ep.c. */
struct zcoll__ucx_addr_hdr {
  uint64_t magic;
  uint64_t len; /* of the worker address that follows: UCX parses it without a length */
  char node[ZCOLL_UCX_NODE_ID];
};

struct zcoll__ucx_hdr {
  uint64_t off;
  uint32_t region;
  uint32_t imm;
  int32_t src; /* the writer's rank */
  uint32_t reserved;
};

/* An arrival not reported yet: a rendezvous still receiving, or one queued behind it.
 * Notifications from one peer go out in the order of its puts (transport.h), and UCX
 * completes a rendezvous after eager messages that the peer sent later. */
struct zcoll__ucx_arrival {
  struct zcoll_tl_event ev;
  int done; /* the data is in place */
  struct zcoll__ucx_arrival *next;
};

struct zcoll__ucx_held { /* per sending rank, oldest first */
  struct zcoll__ucx_arrival *head, *tail;
};

struct zcoll__ucx_op {       /* one put or rendezvous receive in flight */
  struct zcoll__ucx_hdr hdr; /* UCX may read the header until the send completes */
  struct zcoll_tl *tl;
  uint64_t cookie;
  int peer;
  uint32_t len;
  uint8_t placed;
  uint8_t active;      /* a UCX request is in flight for it */
  uint8_t writes;      /* a rendezvous receive: UCX writes into our memory until it ends */
  struct zcoll_ep *ep; /* a put: its endpoint */
  struct zcoll__ucx_arrival *arrival; /* a rendezvous receive: its place in the order */
  void *req;
  struct zcoll__ucx_op *next;     /* free list */
  struct zcoll__ucx_op *all_next; /* every op ever made, freed at close even if a peer's
                                     failure left it in flight */
};

struct zcoll_tl {
  int rank, size;
  ucp_context_h ctx;
  ucp_worker_h worker;
  int efd;
  struct zcoll__evq evq; /* events raised by callbacks, harvested by poll */
  zcoll_status_t failed;
  struct zcoll_ep **eps;
  int neps;
  struct zcoll_tl_mr **regions; /* by id: where a header's region number points */
  uint32_t nregions;
  struct zcoll__ucx_op *free_ops, *all_ops;
  struct zcoll__ucx_held *held; /* by sending rank */
  zcoll_tl_place_fn place;
  void *place_arg;
  int quiesced; /* after an error: endpoints force-closed, nothing more goes out */
  /* An atomic's reply lands here (amo.c): memory that outlives a request given up on. */
  uint64_t amo_reply;
  int atomics; /* the context has UCP's atomics (asked for: cfg->atomics); regions are mapped */
  zcoll_status_t (*alive)(void *arg); /* the job's news, for waits on a peer (amo.c) */
  void *alive_arg;
  double timeout;
  char node[ZCOLL_UCX_NODE_ID];
};

struct zcoll_ep {
  struct zcoll_tl *tl;
  ucp_ep_h ep; /* NULL once closed */
  int peer;
  int failed;      /* UCX reported the connection broken: only a forced close remains */
  int local;       /* on our host: no peer error handling (see ep.c) */
  int wired;       /* a put on it completed: UCX's wireup with the peer is done */
  void *close_req; /* a close UCX has not finished */
};

struct zcoll_tl_mr {
  struct zcoll_tl *tl;
  uint32_t id;
  char *base;
  size_t len;
  int remote;     /* peers may write into it */
  ucp_mem_h memh; /* remote: mapped for UCP's atomics (amo.c); NULL where UCX would not */
};

/* A region key on the wire: the region's id and extent, then (ulen bytes) a UCP key for
 * atomics on it, if its owner could make one. */
struct zcoll__ucx_key {
  uint32_t id, ulen;
  uint64_t len, addr;
};

struct zcoll_tl_rkey {
  uint32_t id;
  uint64_t len;
  uint64_t addr;    /* where the region starts in its owner's memory, for atomics */
  ucp_rkey_h urkey; /* NULL: no atomics on it */
};

zcoll_status_t zcoll__ucx_push(struct zcoll_tl *tl, const struct zcoll_tl_event *ev);
void zcoll__ucx_free_held(struct zcoll_tl *tl);
struct zcoll__ucx_op *zcoll__ucx_op_get(struct zcoll_tl *tl);
void zcoll__ucx_op_put(struct zcoll_tl *tl, struct zcoll__ucx_op *op);
/* api.c: UCX's status as transport.h's. */
zcoll_status_t zcoll__ucx_status(ucs_status_t s);
ucs_status_t zcoll__ucx_am_handler(void *arg, const void *header, size_t header_length, void *data,
                                   size_t length, const ucp_am_recv_param_t *param);
void zcoll__ucx_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status);

/* The ops, one file each by concern (ep.c, mr.c, progress.c). */
zcoll_status_t zcoll__ucx_connect(struct zcoll_tl *tl, int n, const int *ranks,
                                  const void *const *addrs, const size_t *lens,
                                  struct zcoll_ep **eps);
/* Closes every endpoint (force: without flushing, which completes their requests as
 * cancelled; a failed one always), progressing until done or the deadline (ms, see
 * sock.h). UCX forces no endpoint on this host shut (ep.c): those stay open until the
 * worker is destroyed. Returns how many closes UCX has not finished. */
int zcoll__ucx_close_eps(struct zcoll_tl *tl, int force, int64_t deadline);
/* Frees the endpoint structures (after close_eps). */
void zcoll__ucx_free_eps(struct zcoll_tl *tl);
/* Cancels every request in flight and progresses until their callbacks ran or the
 * deadline -- if urgent, only rendezvous receives and puts on endpoints not yet wired
 * (progress.c's quiesce says why); returns how many of those are still in flight. */
int zcoll__ucx_cancel_all(struct zcoll_tl *tl, int64_t deadline, int urgent);
/* Hands back to UCX every request still in flight (no callback will name it again). */
void zcoll__ucx_release_stuck(struct zcoll_tl *tl);
zcoll_status_t zcoll__ucx_mem_reg(struct zcoll_tl *tl, void *addr, size_t len, int remote,
                                  struct zcoll_tl_mr **mr);
void zcoll__ucx_mem_dereg(struct zcoll_tl_mr *mr);
zcoll_status_t zcoll__ucx_rkey_pack(struct zcoll_tl_mr *mr, void *buf, size_t *len);
zcoll_status_t zcoll__ucx_rkey_unpack(struct zcoll_ep *ep, const void *buf, size_t len,
                                      struct zcoll_tl_rkey **rkey);
void zcoll__ucx_rkey_release(struct zcoll_tl_rkey *rkey);
zcoll_status_t zcoll__ucx_put(struct zcoll_ep *ep, const void *src, struct zcoll_tl_mr *lmr,
                              struct zcoll_tl_rkey *rkey, uint64_t roff, size_t len, uint32_t imm,
                              uint64_t cookie);
zcoll_status_t zcoll__ucx_fetch_add(struct zcoll_ep *ep, struct zcoll_tl_rkey *rkey, uint64_t roff,
                                    uint64_t add, uint64_t *old);
zcoll_status_t zcoll__ucx_poll(struct zcoll_tl *tl, struct zcoll_tl_event *ev, int max, int *n);
int zcoll__ucx_event_fd(struct zcoll_tl *tl);
void zcoll__ucx_set_placement(struct zcoll_tl *tl, zcoll_tl_place_fn fn, void *arg);
void zcoll__ucx_quiesce(struct zcoll_tl *tl);
zcoll_status_t zcoll__ucx_arm(struct zcoll_tl *tl);

#endif
