/*
 * p2p.h -- point-to-point messages (zcoll_send, zcoll_recv, zcoll_isend, zcoll_irecv): the
 * protocol, written down once.
 *
 * Channels. Every peer a communicator has a channel to has a second one beside it, on the
 * communicator's message set (lib/core/channel.h: sets in pairs), with p2p_depth slots of
 * slot_bytes each way, its own credits and piece numbers: a message never takes a
 * collective's piece number, ordinal or slot, and a rank that sends none disturbs no
 * collective. Wired with the others at init (lib/comm/comm_setup.c), so only to the
 * peers the algorithms connect (every rank at p <= 4, and on one host over shm); a message
 * to another rank is ZCOLL_ERR_UNSUPPORTED (a channel made on first use, agreed through
 * the rendezvous, is still to come). The core books
 * arrivals, credits and PUT_DONEs on these channels (lib/core/executor.c); this layer reads
 * and writes their pieces (p2p_wire.c).
 *
 * Pieces. Every piece starts with a struct zcoll__p2p_hdr (ZCOLL_P2P_HDR_BYTES) and its
 * immediate carries only the piece number and the set. Six types:
 *   EAGER  a whole message that fits one slot: header, then its payload;
 *   RTS    the header of a longer one, alone (a rendezvous: its data waits for the match);
 *   NOTE   a receive was posted and nothing that came first matched it: its tag, count
 *          and dtype, and in `msg` how many of the sender's messages (EAGER and RTS
 *          headers) the receiver had taken when it was posted (Matching, below);
 *   CTS    the receiver matched an RTS: send the data (status 0), or not (MISMATCH);
 *   ACK    the receiver matched an EAGER message that came before its receive (status 0)
 *          or refused it (MISMATCH);
 *   DATA   `off` bytes into message `msg`, a slot's worth after the header; or, with
 *          status ZCOLL_P2P_DIRECT_START and no payload, "the rest of `msg` from `off`
 *          comes as DIRECT pieces" (below).
 * `msg` is the sender's number for the message on that channel, counted from 0; CTS and
 * ACK echo it, and carry the receiver's count and dtype so that the sender can say what
 * differed.
 *
 * Matching. Headers go out in the order the sends were posted, and a receiver takes them
 * in that order: each (EAGER or RTS) goes to the oldest posted receive from that peer with
 * its tag; with none, it is copied out of its slot into the unexpected list (the slot's
 * credit goes back), where a later receive finds it before anything newer. So messages
 * from one sender on one tag are received in the order sent (MPI's non-overtaking rule),
 * while a receive for one tag takes its message past unexpected ones of others.
 *
 * Notes. A receive that finds nothing unexpected is announced to its sender by a NOTE,
 * and the sender works out the match itself: message k (its number) meets the oldest
 * announced receive with its tag that no earlier message met and whose NOTE counted at
 * most k messages taken -- which is the receive the receiver's own rule gives it. (The
 * NOTEs arrive in posting order; a receive posted before k was taken, with k's tag and
 * not met by an earlier message, is one the receiver's rule would give k. One posted
 * after k was taken counted more than k, and whatever k met then -- an older receive,
 * or none, so that it waits as unexpected and gets an ACK -- no later NOTE changes.)
 * An eager send then completes at its receive's NOTE, which left when the receive was
 * posted, not an ACK after its own header came: a send and receive posted together on
 * both ranks finish in one crossing, not two. The receiver sends no ACK for a message
 * that met an announced receive, and both sides judge its count and dtype alike.
 * Bounds. The unexpected copies of a communicator hold at most ZCOLL_P2P_UNEXPECTED_BYTES
 * (payload and bookkeeping); past that an unmatched piece stays in its slot, its credit
 * is not returned, and the sender waits: a flood never grows memory without bound. An
 * RTS costs a header there, never its data.
 *
 * Zero-copy rendezvous. Where the writer places the data (RDMA: the transport that reads
 * only registered memory, with no placement hook) and the receive buffer lies in an
 * explicit registration of the receiver (zcoll_mem_register, zcoll_mem_alloc) that peers
 * may write into, the CTS carries that region's key as its payload and, in `off`, where
 * the buffer starts in it. The sender then puts a DIRECT_START and writes the data
 * straight into the receive buffer as DIRECT pieces (lib/core/channel.h: a piece number
 * and a credit each, a slot's worth at most, no header; the receiver counts their bytes
 * and copies nothing), from its own buffer if that lies in an explicit registration
 * (then the send completes at the last piece's PUT_DONE), else staged through its slots.
 * One message's DIRECT pieces at a time per channel and direction, so that the
 * receiver knows whose they are. A sender that cannot use the key (it does not unpack)
 * sends DATA pieces as without one; the receiver takes either. Neither side registers
 * anything per message: registering (pinning) costs more than the copy it would save
 * unless the buffer is used again, which is what an explicit registration says.
 *
 * Completion. A receive completes when its data is in the buffer; an eager send when its
 * header is out and its receive is known (a NOTE, or the ACK), a rendezvous one when its
 * last piece is put (its CTS said the match was good), so a count or dtype that differs
 * is ZCOLL_ERR_MISMATCH on both sides. zcoll_send
 * is therefore synchronous (MPI allows it): it returns once the peer took the message.
 * To oneself a message is matched in memory, never copied twice; a blocking send to
 * oneself needs the receive posted first (zcoll_irecv), else it is refused rather than
 * left to wait forever.
 *
 * Failure. A communicator broken by any call (a peer lost, an abort, a revoke, a
 * ZCOLL_TIMEOUT with nothing moving) fails every message in flight with its status; no
 * buffer is written after that.
 */
#ifndef ZCOLL_P2P_H
#define ZCOLL_P2P_H

#include <stdint.h>

#include "core/comm.h"

enum {
  ZCOLL_P2P_EAGER = 1,
  ZCOLL_P2P_RTS,
  ZCOLL_P2P_CTS,
  ZCOLL_P2P_ACK,
  ZCOLL_P2P_DATA,
  ZCOLL_P2P_NOTE
};
/* The header's status: CTS and ACK 0 or MISMATCH; DATA 0 or DIRECT_START. */
enum { ZCOLL_P2P_ST_OK, ZCOLL_P2P_ST_MISMATCH, ZCOLL_P2P_DIRECT_START };

struct zcoll__p2p_hdr {
  uint32_t magic; /* ZCOLL_P2P_MAGIC */
  uint8_t type, dtype;
  uint8_t status; /* ZCOLL_P2P_ST_* / ZCOLL_P2P_DIRECT_START */
  uint8_t zero;
  int32_t tag;
  uint32_t zero2;
  uint64_t count; /* EAGER, RTS: the sender's; CTS, ACK, NOTE: the receiver's */
  uint64_t msg;   /* NOTE: the sender's messages the receiver had taken */
  uint64_t off;   /* DATA: where its payload goes in the message, in bytes; CTS with a key:
                 * where the receive buffer starts in the key's region */
};
#define ZCOLL_P2P_HDR_BYTES 40u
_Static_assert(sizeof(struct zcoll__p2p_hdr) == ZCOLL_P2P_HDR_BYTES, "no padding in the header");
#define ZCOLL_P2P_MAGIC 0x7a703270u /* "zp2p" */

/* What the unexpected copies of one communicator may hold, in bytes. */
#define ZCOLL_P2P_UNEXPECTED_BYTES ((size_t)1 << 20)

/* Frees the messages' state and the handles of their requests (destroy, abort). */
void zcoll__p2p_release(zcoll_comm_t *comm);

#endif
