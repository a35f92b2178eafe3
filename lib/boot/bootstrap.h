/*
 * bootstrap.h -- the TCP rendezvous served by rank 0.
 *
 * Every rank connects to rank 0 (ZCOLL_ROOT) and stays connected for the life of the
 * communicator: the star carries the address exchange (allgather), barriers, and
 * failure news. A rank that dies closes its socket; rank 0 relays that, and any
 * explicit abort, to every other rank, so that a collective stuck on a dead peer
 * turns into ZCOLL_ERR_PEER_FAILED instead of a hang, on any transport.
 */
#ifndef ZCOLL_BOOTSTRAP_H
#define ZCOLL_BOOTSTRAP_H

#include <poll.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include "zcoll.h"

struct zcoll__bootstrap;

struct zcoll__bootstrap_params {
  int rank, size;
  const char *root;    /* host:port */
  int root_fd;         /* rank 0: an already listening socket, or -1 */
  const char *job_key; /* "" for none */
  double timeout;      /* seconds; 0: wait forever */
  int require_key;     /* no key is an error, not a warning */
  const char *job_id;  /* public; "" : the launcher's job id, if any */
  int close_root_fd;   /* rank 0: root_fd is ours to close once every rank joined (PMIx) */
  int root_listens;    /* rank 0 listened before this rank started (a unique id): a
                        * refused connection is final */
};

/* Largest contribution of one rank to an allgather. */
#define ZCOLL_BS_MAX_CONTRIB (1u << 20)

zcoll_status_t zcoll__bootstrap_create(const struct zcoll__bootstrap_params *p,
                                       struct zcoll__bootstrap **out);
/* A rendezvous already made: fds are connected stream sockets, rank 0's fds[r] to rank r
 * (fds[0] unused), another rank's fds[0] to rank 0; the bootstrap takes them (closes them
 * on every path). A split's child on one host makes them without a listening socket. */
zcoll_status_t zcoll__bootstrap_attach(int rank, int size, double timeout, const int *fds,
                                       struct zcoll__bootstrap **out);
/* Every rank contributes len bytes (the same len everywhere); all receives size*len
 * bytes, rank r's at all + r*len. */
zcoll_status_t zcoll__bootstrap_allgather(struct zcoll__bootstrap *bs, const void *mine, size_t len,
                                          void *all);
/* Rank 0's answer to rank `rank` in a gather-reply round, from every rank's contribution
 * (blobs[r], lens[r] bytes): a malloc'ed *reply of *len bytes, or an error that ends the
 * round on every rank. */
typedef zcoll_status_t (*zcoll__bs_reply_fn)(void *arg, int rank, const void *const *blobs,
                                             const uint32_t *lens, void **reply, size_t *len);
/* Every rank sends rank 0 its contribution (any length up to ZCOLL_BS_MAX_CONTRIB); rank 0
 * calls fn (only there) for each rank and sends it the answer, which each rank gets in
 * *out (malloc'ed, the caller frees it). Unlike an allgather, what a rank gets back is
 * what it needs -- its peers' addresses, not every rank's -- so that the rendezvous grows
 * with p * peers, not p^2. */
zcoll_status_t zcoll__bootstrap_gather_reply(struct zcoll__bootstrap *bs, const void *mine,
                                             size_t len, zcoll__bs_reply_fn fn, void *arg,
                                             void **out, size_t *out_len);
zcoll_status_t zcoll__bootstrap_barrier(struct zcoll__bootstrap *bs);
/* The descriptors to watch while waiting for something else; POLLIN on any of them
 * means zcoll__bootstrap_check has news. Returns how many were filled. */
int zcoll__bootstrap_pollfds(struct zcoll__bootstrap *bs, struct pollfd *fds, int max);
/* Non-blocking: reads pending control messages. ZCOLL_OK while every peer is alive
 * and nobody aborted; otherwise the (sticky) failure, with a message naming the rank. */
zcoll_status_t zcoll__bootstrap_check(struct zcoll__bootstrap *bs);
/* Control messages of a layer above (the vector interface's sequencer, tasks.c), along
 * the star: a rank other than 0 sends to rank 0 only (to is ignored), rank 0 to any
 * other rank. At most ZCOLL_BS_MAX_CTL bytes. Received ones are kept, in arrival order,
 * by zcoll__bootstrap_check (and every wait that reads the sockets) until taken. */
#define ZCOLL_BS_MAX_CTL 4096u
zcoll_status_t zcoll__bootstrap_ctl_send(struct zcoll__bootstrap *bs, int to, const void *msg,
                                         uint32_t len);
/* The oldest received: 1 and *msg (malloc'ed, the caller frees it), or 0 if none. */
int zcoll__bootstrap_ctl_take(struct zcoll__bootstrap *bs, int *from, void **msg, uint32_t *len);
/* Tells every rank to give up with `reason`; local, does not wait. */
void zcoll__bootstrap_abort(struct zcoll__bootstrap *bs, zcoll_status_t reason, const char *why);
/* The final barrier, so that no rank leaves while others still talk to it. ncolls, the
 * collectives this rank made, must be the same on every rank (else MISMATCH, everywhere),
 * and is what a rank still in a later collective hears (zcoll__bootstrap_departed). */
zcoll_status_t zcoll__bootstrap_leave(struct zcoll__bootstrap *bs, uint64_t ncolls);
/* Closes and frees; returns the sticky failure, if any. */
zcoll_status_t zcoll__bootstrap_destroy(struct zcoll__bootstrap *bs);
/* A rank that has left (is in zcoll_comm_destroy) after *ncolls collectives: 1, the one
 * with the fewest; 0 if none is known. Heard by zcoll__bootstrap_check. */
int zcoll__bootstrap_departed(const struct zcoll__bootstrap *bs, int *rank, uint64_t *ncolls);
/* From now on (destroy's final barrier) a wait ends when *flag is set, which an event on
 * fd announces: the rank gives up with ZCOLL_ERR_PEER_FAILED and tells the others. */
void zcoll__bootstrap_set_cancel(struct zcoll__bootstrap *bs, int fd, atomic_int *flag);

#endif
