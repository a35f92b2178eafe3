/*
 * p2p_impl.h -- the messages' state, shared by p2p.c (the calls, requests, waits) and
 * p2p_wire.c (pieces in and out of the channels). The protocol is in p2p.h.
 */
#ifndef ZCOLL_P2P_IMPL_H
#define ZCOLL_P2P_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "core/channel.h" /* ZCOLL_GRANT_KEY_MAX */
#include "p2p.h"

struct zcoll__grant_src; /* core/exec.h */

/* A send's or a receive's state. */
enum {
  P2P_QUEUED,  /* send: its header not yet out */
  P2P_ACK,     /* send: eager, out, the ACK awaited */
  P2P_CTS,     /* send: its RTS out, the CTS awaited */
  P2P_DATA,    /* send: streaming; receive: matched an RTS, its DATA coming */
  P2P_POSTED,  /* receive: not matched yet */
  P2P_SELF,    /* send to oneself: waiting for its receive */
  P2P_FLUSH,   /* send: written straight from its buffer, the last PUT_DONE awaited */
  P2P_FINISHED /* status is final */
};

struct zcoll__p2p_req {
  struct zcoll__p2p_req *next;                /* in the list its state keeps it in */
  struct zcoll__p2p_req *all_prev, *all_next; /* every request not yet freed */
  zcoll_request_t *handle;                    /* NULL: a blocking call's */
  zcoll_comm_t *comm;
  int is_send, peer, tag, state;
  zcoll_dtype_t dtype;
  size_t count, bytes;
  char *buf;
  zcoll_status_t status; /* ZCOLL_IN_PROGRESS until finished */
  uint64_t msg;          /* its number on the channel (sends: given at post; recvs: matched) */
  size_t done;           /* bytes put (sends) or received (receives) */
  /* Zero-copy rendezvous (p2p.h). The explicit registration the message goes through
   * (zcoll__mr_hold's number, 0: none): a receive's, granted to the sender; a send's,
   * which it is put from (else it is staged). A send's key to the receive buffer (NULL:
   * no grant, its data goes through the slots) and where that buffer lies behind it. */
  uint64_t mr_hold;
  const struct zcoll__grant_src *grant; /* a receive's: its region's key for peers */
  uint64_t gbase;                       /* where the buffer starts in that region */
  int granted;                          /* a receive's CTS carried the key */
  struct zcoll_tl_mr *lmr;
  struct zcoll_tl_rkey *rkey;
  uint64_t rbase;
  uint64_t last_seq; /* P2P_FLUSH: the channel's piece number after its last piece */
  /* A receive: announced by a NOTE (the message that meets it gets no ACK). A send: met
   * by an announced receive (p2p.h: notes), whose count and dtype are these. */
  int noted;
  uint64_t rcount;
  uint8_t rdtype;
  char why[320]; /* the error's message, recorded when the status is returned */
};

/* A message that came before its receive: its header and (EAGER) payload. Also a NOTE
 * that came, not yet met by a send (no payload). */
struct zcoll__p2p_unexp {
  struct zcoll__p2p_unexp *next;
  struct zcoll__p2p_hdr h;
  size_t len; /* payload bytes */
  char data[];
};

/* A CTS or ACK to go. */
struct zcoll__p2p_ctl {
  struct zcoll__p2p_ctl *next;
  struct zcoll__p2p_hdr h;
  uint32_t keylen; /* a CTS's grant: the receive buffer's key (p2p.h), after the header */
  uint8_t key[ZCOLL_GRANT_KEY_MAX];
};

/* A FIFO of any of the three, by their `next`. */
#define ZCOLL_P2P_LIST(type) \
  struct {                   \
    type *head, **tail;      \
  }

struct zcoll__p2p_peer { /* per channel: what goes to and comes from its peer */
  ZCOLL_P2P_LIST(struct zcoll__p2p_req) sends; /* posted, not finished, in posting order */
  ZCOLL_P2P_LIST(struct zcoll__p2p_req) recvs; /* posted, not matched, in posting order */
  ZCOLL_P2P_LIST(struct zcoll__p2p_req) rdv;   /* matched an RTS, their data coming */
  ZCOLL_P2P_LIST(struct zcoll__p2p_unexp) unexp;
  ZCOLL_P2P_LIST(struct zcoll__p2p_ctl) ctl;
  ZCOLL_P2P_LIST(struct zcoll__p2p_unexp) notes; /* the peer's receives announced to us */
  uint64_t next_msg;
  uint64_t taken; /* the peer's messages (EAGER, RTS) taken: matched or unexpected */
  /* Zero-copy rendezvous: the send whose DIRECT pieces are going out, one at a time on a
   * channel; the receive the pieces coming in are for (named by a DIRECT_START). */
  struct zcoll__p2p_req *direct_out, *direct_in;
};

#define P2P_SPARES 32

struct zcoll__p2p {
  zcoll_comm_t *comm;
  struct zcoll__p2p_peer *peers; /* by channel */
  ZCOLL_P2P_LIST(struct zcoll__p2p_req) self_sends, self_recvs;
  struct zcoll__p2p_req *all;
  int active;         /* requests not finished */
  int nctl;           /* answers waiting to go, over every peer */
  size_t unexp_bytes; /* held by the unexpected lists */
  int pumped;         /* registered with the progress thread */
  /* Requests and handles freed, kept for the next messages (P2P_SPARES each): a message of
   * 8 bytes cost a calloc of the request and one of a handle the size of a collective's. */
  struct zcoll__p2p_req *spare;
  int nspare, nhspare;
  zcoll_request_t *hspare[P2P_SPARES];
};

#define ZCOLL_P2P_INIT(l) ((l).head = NULL, (l).tail = &(l).head)
#define ZCOLL_P2P_PUSH(l, x) (*(l).tail = (x), (x)->next = NULL, (l).tail = &(x)->next)

/* Unlinks x, found at *at in list l. */
#define ZCOLL_P2P_UNLINK(l, at, x)               \
  do {                                           \
    *(at) = (x)->next;                           \
    if ((l).tail == &(x)->next) (l).tail = (at); \
  } while (0)

/* p2p_wire.c: one pass over every channel (pieces in, pieces out); an error is the
 * communicator's (the caller breaks it). */
zcoll_status_t zcoll__p2p_step(struct zcoll__p2p *P, int *progress);
/* A rendezvous-sized receive just posted to a peer with a channel (ci): holds the explicit
 * registration its buffer lies in, if peers may write into it (p2p.h: zero-copy), so that
 * it stays registered until the receive ends. */
void zcoll__p2p_hold(struct zcoll__p2p *P, int ci, struct zcoll__p2p_req *q);
/* A receive just posted to a peer with a channel: matched against what came first. */
zcoll_status_t zcoll__p2p_match_posted(struct zcoll__p2p *P, int ci, struct zcoll__p2p_req *q);
/* A send just posted to a peer with a channel: met by a receive announced already, if one
 * is its match (p2p.h: notes). */
void zcoll__p2p_meet_noted(struct zcoll__p2p *P, int ci, struct zcoll__p2p_req *q);
/* p2p.c: finishes q with st (the message formatted into q->why when st is an error). */
void zcoll__p2p_finish(struct zcoll__p2p_req *q, zcoll_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
