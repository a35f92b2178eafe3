/*
 * transport.h -- the one seam between the core and the networks.
 *
 * A transport is a const table of a dozen functions over typed opaque handles, like
 * NCCL's net plugin or UCT's iface ops, but one-sided: `put` writes into a peer's
 * registered region and the peer learns of it from a notification (the 32-bit
 * immediate) delivered only after the data is in place. Nothing here knows about
 * collectives; the executor (executor.c) drives every algorithm over these calls.
 *
 * Statuses, the same from every transport (each op below may add its own cases):
 *   ZCOLL_ERR_INVALID_ARG  the caller broke this contract: a put outside the key's region
 *                          or over 4 GiB, a source outside lmr where it must be
 *                          registered, an output buffer too short for an address or key,
 *                          a remote registration of memory the transport cannot expose, a
 *                          key asked of a source-only region, a rank that cannot be a peer.
 *                          Checked first: such a call fails alike on a broken instance.
 *   ZCOLL_ERR_NO_MEMORY    allocating or mapping local memory failed.
 *   ZCOLL_ERR_UNSUPPORTED  probe/open/connect: the transport cannot run here, or cannot
 *                          reach that peer (another host for shm).
 *   ZCOLL_ERR_TRANSPORT    the network or a peer's data said no: a malformed address or
 *                          key, a peer descriptor or region that is not what it claims, a
 *                          refused resource, an error completion that is not a lost peer,
 *                          a message that would write outside its region.
 *   ZCOLL_ERR_PEER_FAILED  a peer is lost (its process died, its connection broke): from
 *                          connect, put and poll, with the rank named in the message. A
 *                          transport that reaches other hosts may leave the death of a
 *                          peer on its own host to the bootstrap (UCX: peer error
 *                          handling would rule out its shared memory, see its ep.c), or
 *                          of any peer (verbs, connected out of band: it sees only a
 *                          queue pair that stopped answering, TRANSPORT naming the peer
 *                          once the retries run out; the core reports the bootstrap's
 *                          PEER_FAILED instead when that comes within a moment).
 *   ZCOLL_ERR_TIMEOUT      only where the transport itself waits (connection setup).
 * After poll has returned an error the instance is broken: put and poll keep failing,
 * (a transport with ZCOLL_TL_CAP_PEER_LOSS reports a lost peer as an event instead),
 * quiesce (if any) stops what still touches the caller's memory, and close releases
 * everything without waiting on the lost peer -- and never aborts the process.
 */
#ifndef ZCOLL_TRANSPORT_H
#define ZCOLL_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include "zcoll.h"

struct zcoll_tl;      /* one transport instance, owned by one communicator */
struct zcoll_ep;      /* a connection to one peer */
struct zcoll_tl_mr;   /* a registered local region */
struct zcoll_tl_rkey; /* a peer's region, unpacked for writing */

enum {
  /* put() may read from any memory, registered or not (the transport copies or
   * registers by itself); without it the executor stages sends through its own
   * registered buffers. */
  ZCOLL_TL_CAP_PUT_ANY = 1u << 0,
  /* mem_reg pins pages (an RDMA NIC): registrations of user buffers are worth keeping
   * between calls, and must follow the application's unmappings (lib/core/rcache.h). */
  ZCOLL_TL_CAP_PINS = 1u << 1,
  /* mem_reg(remote = 1) may register the application's own memory, peers then write
   * into it with put through its key (the writer places the data), and mem_dereg stops
   * any later write through that key: results can be delivered in place (lib/core/grant.c). */
  ZCOLL_TL_CAP_REMOTE_USER = 1u << 2,
  /* A lost peer breaks only what reaches it, not the instance: poll reports it once as a
   * PEER_LOST event, after every notification the peer made before it was lost; puts to
   * it fail with PEER_FAILED from then on; poll, and puts to the other peers, carry on.
   * So several communicators may share the instance (a split's children their parent's)
   * and a member lost to one of them breaks only the communicators it belongs to. Such a
   * transport has no quiesce: nothing of it outlives a failed call. Without this, poll
   * fails for good when a peer is lost (above). */
  ZCOLL_TL_CAP_PEER_LOSS = 1u << 3,
};

/* PEER_LOST: `peer` is lost; status is ZCOLL_ERR_PEER_FAILED (CAP_PEER_LOSS only). */
enum { ZCOLL_TL_EV_PUT_DONE, ZCOLL_TL_EV_ARRIVED, ZCOLL_TL_EV_PEER_LOST };

struct zcoll_tl_event {
  int kind;
  int peer;              /* the rank at the other end */
  uint32_t imm;          /* ARRIVED: the writer's notification value */
  uint32_t len;          /* ARRIVED: bytes written */
  uint8_t placed;        /* ARRIVED: the data went where the placement hook said */
  uint64_t cookie;       /* PUT_DONE: the put's cookie */
  zcoll_status_t status; /* PUT_DONE: ZCOLL_OK or why the put failed; PEER_LOST */
};

/* Where an arriving payload of len > 0 lands, decided by the receiver from the
 * notification alone (the writer's offset is not trusted): its slot, or (*final = 1) its
 * final place in the result. NULL: no such piece is expected -- a protocol violation; the
 * transport drops the data and fails. For transports whose receiver places the data. */
typedef void *(*zcoll_tl_place_fn)(void *arg, int peer, uint32_t imm, size_t len, int *final);

struct zcoll_tl_params {
  int rank, size;
  const zcoll_config_t *cfg;
  /* Ranks outnumber cores here: waiting ranks should sleep, so offer a descriptor even
   * if that costs per-message overhead. Otherwise waiting ranks poll. */
  int oversubscribed;
  /* For long waits inside the transport (connection setup): ZCOLL_OK while the job is
   * alive, else why not -- so that a rank failing elsewhere ends the wait. */
  zcoll_status_t (*alive)(void *arg);
  void *alive_arg;
};

struct zcoll_tl_ops {
  const char *name;
  unsigned caps;
  size_t default_chunk_bytes;
  /* Can this transport run here? ZCOLL_ERR_UNSUPPORTED with a reason if not. */
  zcoll_status_t (*probe)(const zcoll_config_t *cfg, char *why, size_t why_len);
  zcoll_status_t (*open)(const struct zcoll_tl_params *p, struct zcoll_tl **tl);
  /* Releases every endpoint, registration and rkey of the instance too. Bounded in time
   * (a flush to a lost peer is given up on) and safe on a broken instance. */
  void (*close)(struct zcoll_tl *tl);
  /* The blob peers need to reach us; the bootstrap exchanges it (at most *len bytes
   * on input). */
  zcoll_status_t (*address)(struct zcoll_tl *tl, void *buf, size_t *len);
  /* Optional: a part of the address for each peer alone (an RDMA queue pair's number),
   * for a transport that makes a peer's resources before it meets the peer. Called before
   * each connect with the n positions of the caller's peer list (ranks[i] < 0: no
   * endpoint of this instance there); fills n parts of *each bytes at buf (at most *each
   * on input). The exchange hands part i to ranks[i] alone, and connect gets each peer's
   * address with this rank's part of it appended. */
  zcoll_status_t (*peer_address)(struct zcoll_tl *tl, int n, const int *ranks, void *buf,
                                 size_t *each);
  /* Collective among the listed peers (every rank lists the ranks that list it):
   * fills eps[i] for ranks[i]. Every rank is checked before anything is made (INVALID_ARG
   * for our own, a negative one or one >= size); a malformed address (shorter than
   * `address` made it, say) is TRANSPORT. After any other failure the instance is fit
   * only for close. */
  zcoll_status_t (*connect)(struct zcoll_tl *tl, int n, const int *ranks, const void *const *addrs,
                            const size_t *lens, struct zcoll_ep **eps);
  /* Optional: len bytes of memory for a region peers will write into (receive slots),
   * for transports whose peers reach it through a shared mapping rather than a NIC.
   * NULL: the core maps anonymous memory. Either way the core registers it with
   * mem_reg(remote = 1) and, after close, releases it with munmap(addr, len). */
  zcoll_status_t (*mem_alloc)(struct zcoll_tl *tl, size_t len, void **addr);
  /* Optional, with mem_alloc: unmaps and forgets a region mem_alloc made (its
   * registrations released first) while the instance stays open -- one communicator of
   * several that share the instance leaving. NULL: only after close, as above. */
  void (*mem_free)(struct zcoll_tl *tl, void *addr, size_t len);
  /* Optional, with mem_alloc: forgets a region mem_alloc made, leaving it mapped -- memory
   * handed to the application (zcoll_mem_alloc) that outlives its communicator. */
  void (*mem_forget)(struct zcoll_tl *tl, void *addr);
  /* remote: peers may write into it (receive slots); otherwise it is only a source, and
   * no peer gets write access to it (staging, user buffers). */
  zcoll_status_t (*mem_reg)(struct zcoll_tl *tl, void *addr, size_t len, int remote,
                            struct zcoll_tl_mr **mr);
  void (*mem_dereg)(struct zcoll_tl_mr *mr);
  /* A blob (at most *len bytes on input) that lets a peer write into mr; INVALID_ARG for
   * a source-only region (remote = 0). */
  zcoll_status_t (*rkey_pack)(struct zcoll_tl_mr *mr, void *buf, size_t *len);
  /* TRANSPORT for a blob that is not a key, at least one shorter than rkey_pack made. */
  zcoll_status_t (*rkey_unpack)(struct zcoll_ep *ep, const void *buf, size_t len,
                                struct zcoll_tl_rkey **rkey);
  void (*rkey_release)(struct zcoll_tl_rkey *rkey);
  /* Writes len bytes from src (inside lmr; any memory with CAP_PUT_ANY, lmr NULL) to
   * rkey's region at roff. The peer gets ARRIVED(imm, len) once the data is in place;
   * we get PUT_DONE(cookie) once src may be reused. len 0 (src, lmr and rkey may be
   * NULL) sends the notification alone. Notifications from one peer arrive in the
   * order of the puts, whatever their sizes and protocols; PUT_DONEs in any order, and
   * one may wait for the peer's progress (a rendezvous). A caller keeps at most 256 puts
   * to one peer without their PUT_DONE (the executor's pipeline bound). INVALID_ARG for
   * a caller's mistake (above), PEER_FAILED if the peer is known lost, the instance's
   * error if it is broken. */
  zcoll_status_t (*put)(struct zcoll_ep *ep, const void *src, struct zcoll_tl_mr *lmr,
                        struct zcoll_tl_rkey *rkey, uint64_t roff, size_t len, uint32_t imm,
                        uint64_t cookie);
  /* Optional: a remote fetch-and-add that needs nothing of the peer's CPU. Atomically adds
   * `add` to the 64-bit word at roff in rkey's region (8-byte aligned) and gives its value
   * before, in *old, before it returns; adds from every peer and the owner's own atomic
   * adds on the word (__atomic, sequentially consistent) are one order. Adding 0 reads
   * the word. The partial allreduce's ticket counter (lib/coll/partial.c) lives on it.
   * INVALID_ARG outside the region or unaligned, PEER_FAILED if the peer is known lost.
   * NULL: the transport has none. */
  zcoll_status_t (*fetch_add)(struct zcoll_ep *ep, struct zcoll_tl_rkey *rkey, uint64_t roff,
                              uint64_t add, uint64_t *old);
  /* Where fetch_add is the device's (RDMA NICs), atomic only with that device's and not
   * with the CPU's: an endpoint to this rank itself, so that the owner of the words goes
   * through its device too. NULL where fetch_add is atomic with the CPU's (shared memory,
   * loopback, UCX here). Made on first call, after connect; closed with the instance. */
  zcoll_status_t (*self_ep)(struct zcoll_tl *tl, struct zcoll_ep **ep);
  /* Optional: the address, in this process, of [roff, roff + len) of the peer's region
   * behind rkey, for plain loads and stores (shared memory maps the peer's region); NULL
   * outside the region, or where nothing is mapped. Valid until rkey_release. The
   * one-host small allreduce (lib/core/onehost.c) reads the peers' mailboxes through it. */
  void *(*rkey_ptr)(struct zcoll_tl_rkey *rkey, uint64_t roff, size_t len);
  /* Optional, with rkey_ptr: we stored (with release) something the peer will find in its
   * memory rather than as an event -- wake it if it sleeps on its event_fd after arm(). A
   * full fence comes first, so that either the peer, between its arm() and its sleep, sees
   * our store, or we see that it sleeps. */
  void (*knock)(struct zcoll_ep *ep);
  /* Optional, with rkey_ptr: 1 once the peer's process has ended (checked now, without
   * waiting). A rank leaving a call on an error waits, through it, for the peers that
   * still write into its memory (lib/core/onehost_big.c). */
  int (*peer_gone)(struct zcoll_ep *ep);
  /* Non-blocking: makes progress and harvests up to max events into ev; *n events
   * were filled. An error status means the instance is broken: PEER_FAILED naming the
   * rank when a peer is lost, TRANSPORT for anything else. A failed put is also (or
   * instead) PUT_DONE with that put's status. */
  zcoll_status_t (*poll)(struct zcoll_tl *tl, struct zcoll_tl_event *ev, int max, int *n);
  /* Blocking support: a descriptor that turns readable when events arrive after a
   * successful arm(); -1 if the transport cannot block (the executor then yields). */
  int (*event_fd)(struct zcoll_tl *tl);
  /* ZCOLL_OK: armed, safe to sleep on event_fd. ZCOLL_IN_PROGRESS: events are
   * already pending, poll again instead of sleeping. */
  zcoll_status_t (*arm)(struct zcoll_tl *tl);
  /* Optional (NULL where the writer places the data, as with RDMA): installs a hook
   * that the transport asks where each arriving payload goes, so that a peer cannot
   * aim at another peer's slots and data the receiver only copies lands in its final
   * place directly. */
  void (*set_placement)(struct zcoll_tl *tl, zcoll_tl_place_fn fn, void *arg);
  /* Optional: after a failure, stops every operation still reading or writing memory
   * the transport does not own (the user's buffers), so that an error returned to the
   * application is the end of zcoll touching them. Bounded in time. */
  void (*quiesce)(struct zcoll_tl *tl);
  /* Optional: the device an open instance uses, for operators ("rxe0:1"); NULL where
   * there is none to name (shared memory). At most len bytes, NUL included. */
  void (*device)(struct zcoll_tl *tl, char *buf, size_t len);
  /* Optional: payload bytes put over each rail (port) of the instance so far, into
   * bytes[0..max); returns how many rails it has (zcoll_comm_stats' rail_bytes). */
  int (*rail_bytes)(struct zcoll_tl *tl, uint64_t *bytes, int max);
  /* Optional, for zcoll_info -d: what the transport finds or needs here, one entry per
   * device, port or prerequisite, each tried the way the transport itself does it. Fills
   * up to max entries and returns how many there are. */
  int (*describe)(const zcoll_config_t *cfg, zcoll_transport_detail_t *out, int max);
  /* Optional, for zcoll_info -b: what it runs on (a library's versions, built against and
   * loaded; the kernel), as text. */
  void (*version)(char *buf, size_t len);
};

/* Entries a communicator's table of transports may have: a bit each in a mask. */
#define ZCOLL_TL_MAX 8

#endif
