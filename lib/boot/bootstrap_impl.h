/*
 * bootstrap_impl.h -- the rendezvous's own state, shared by its two files: bootstrap.c
 * (joining, rounds through rank 0, failure news) and bootstrap_leave.c (the final
 * barrier, departures, a revoke during destroy). Nothing outside lib/boot/bootstrap*.c
 * includes it.
 */
#ifndef ZCOLL_BOOTSTRAP_IMPL_H
#define ZCOLL_BOOTSTRAP_IMPL_H

#include <stdatomic.h>
#include <stdint.h>

#include "bootstrap.h"
#include "bootstrap_wire.h"

/* The largest message a rank accepts from another (a guard against a bad length). */
#define ZCOLL_BS_MAX_MSG (64u << 20)

struct kid { /* rank 0's view of one other rank */
  int fd;
  uint16_t type; /* a message received ahead of time (GATHER or BYE), 0: none */
  void *payload;
  uint32_t len;
  int gone;        /* said BYE and was answered */
  uint64_t ncolls; /* with its BYE: the collectives it made */
};

struct ctl { /* a received control message, waiting to be taken */
  struct ctl *next;
  int from;
  uint32_t len;
  void *msg;
};

struct zcoll__bootstrap {
  int rank, size;
  struct ctl *inbox, **inbox_tail; /* oldest first */
  double timeout;
  int fd;          /* rank != 0: the socket to rank 0 */
  struct kid *kid; /* rank 0: one per rank, kid[0] unused */
  zcoll_status_t failed;
  char why[256];
  /* While destroy waits for the others: an eventfd whose events may mean the flag was
   * set (zcoll_comm_revoke), which ends the wait at once. -1: none. */
  int cancel_fd;
  atomic_int *cancel;
  int leaving; /* rank 0 is in its final barrier: departures are not news any more */
  /* The first departure heard of that matters: left_rank is in zcoll_comm_destroy
   * after left_ncolls collectives (-1: none). */
  int left_rank;
  uint64_t left_ncolls;
};

/* Records the first failure (later ones report it again) and returns it. */
zcoll_status_t zcoll__bs_fail_sticky(struct zcoll__bootstrap *bs, zcoll_status_t st,
                                     const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Best effort, 1 s: tells the rank at the other end of fd that origin gave up. */
void zcoll__bs_send_abort(int fd, uint32_t origin, zcoll_status_t st, const char *text);
/* Rank 0 tells everyone but `except`. */
void zcoll__bs_relay_abort(struct zcoll__bootstrap *bs, int except, uint32_t origin,
                           zcoll_status_t st, const char *text);
/* An abort received from `from`: relayed (rank 0), and the sticky failure. */
zcoll_status_t zcoll__bs_take_abort(struct zcoll__bootstrap *bs, int from, const void *payload,
                                    uint32_t len);
/* A rank other than 0 whose send to rank 0 failed: rank 0's abort, if it sent one before
 * it went (it names the rank that failed), else PEER_FAILED with `what`. */
zcoll_status_t zcoll__bs_lost_root(struct zcoll__bootstrap *bs, const char *what);
/* Files a control message (msg, malloc'd, now the inbox's) from rank `from` (bootstrap_ctl.c). */
zcoll_status_t zcoll__bs_file_ctl(struct zcoll__bootstrap *bs, int from, void *msg, uint32_t len);
/* Rank 0: reads what has arrived until every rank has a message of `want` filed (0: do
 * not wait), or the deadline, or a revoke (bootstrap_leave.c's cancel). */
zcoll_status_t zcoll__bs_root_pump(struct zcoll__bootstrap *bs, uint16_t want, int64_t deadline);
/* Rank r is in zcoll_comm_destroy after ncolls collectives (rank 0 tells the others). */
void zcoll__bs_departed(struct zcoll__bootstrap *bs, int r, uint64_t ncolls);
/* A wait in destroy: has the communicator been revoked? (drains the eventfd) */
int zcoll__bs_cancelled(struct zcoll__bootstrap *bs);
/* Gives up on a revoke: tells the others, the sticky PEER_FAILED. */
zcoll_status_t zcoll__bs_fail_cancelled(struct zcoll__bootstrap *bs);

#endif
