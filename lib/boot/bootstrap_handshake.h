/*
 * bootstrap_handshake.h -- admitting ranks to the rendezvous (the exchange itself is
 * laid out in bootstrap_wire.h).
 *
 * Rank 0 reads every pending connection without blocking, each against its own short
 * deadline, so that silent, slow or hostile connections cost a slot and a few seconds
 * at most and never keep the real ranks out. Anything that does not authenticate is
 * dropped and logged with the peer's address; only an authenticated rank that
 * contradicts the job (a rank twice, another size) is an error of the job.
 */
#ifndef ZCOLL_BOOTSTRAP_HANDSHAKE_H
#define ZCOLL_BOOTSTRAP_HANDSHAKE_H

#include <stdint.h>

#include "bootstrap_wire.h"
#include "zcoll.h"

struct zcoll__bs_who {
  int rank, size;
  const char *key; /* "" for none */
  uint8_t jobid[ZCOLL_BS_JOBID_BYTES];
  const char *job_id_text; /* for messages */
  double timeout;          /* seconds; 0: wait forever */
};

/* Seconds a connection may take from accept to a verified proof; independent of
 * ZCOLL_TIMEOUT, since a real rank answers at once. */
#define ZCOLL_BS_HANDSHAKE_S 5.0
/* Connections being admitted at once; past it, the oldest is dropped. */
#define ZCOLL_BS_MAX_PENDING 128

/* Rank 0: accepts on lfd until every rank has joined. fds has who->size entries, all
 * -1 on entry; on success fds[r] is rank r's socket for r >= 1. On failure the ranks
 * that joined are told why, and their sockets are left in fds for the caller to close. */
zcoll_status_t zcoll__bs_accept_all(const struct zcoll__bs_who *who, int lfd, int *fds);

/* Any other rank: runs the handshake on a socket connected to rank 0 (`root` names it
 * in messages). */
zcoll_status_t zcoll__bs_join(const struct zcoll__bs_who *who, int fd, const char *root,
                              int64_t deadline);

#endif
