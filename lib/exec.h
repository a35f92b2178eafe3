/*
 * exec.h -- the executor's state, shared by its two files: executor.c (moving pieces)
 * and exec_wait.c (waiting for them, and giving up). Private to those two.
 */
#ifndef ZCOLL_EXEC_H
#define ZCOLL_EXEC_H

#include <stdint.h>

#include "comm.h"

struct zcoll__exec_state {
  int cap_ops, cap_peers;
  size_t *pos;    /* per op: progressed up to this element (send: source released) */
  size_t *issued; /* per op, sends: next element to put */
  uint8_t *finished;
  struct zcoll_tl_mr **src_mr; /* per send op: the user registration it is put from */
  int *send_cur, *recv_cur, *chan; /* per schedule peer */
  int *peer_of_chan;               /* channel -> schedule peer, -1 if not in this schedule */
  uint8_t *hdr_sent, *hdr_seen;    /* per schedule peer: this collective's header */
  int64_t *awaited_ns;             /* per schedule peer: waiting on it since (0: not) */
  int cap_chans;
};

struct run {
  zcoll_comm_t *comm;
  const struct zcoll__sched *s;
  struct zcoll__exec_state *e;
  char *buf[2];
  size_t dsize, chunk;
  zcoll_dtype_t dtype;
  zcoll_op_t op;
  uint64_t ordinal;              /* this collective's number on the communicator */
  struct zcoll__coll_desc desc;  /* what it is, as the wire header states it */
  uint64_t fp;                   /* desc's fingerprint */
  int staged; /* the transport reads only registered memory: stage sends */
  int remaining;
  int local_cur;
};

struct idle {
  int64_t since_ns; /* 0: not idle */
  int64_t last_check_ns;
  unsigned calls;   /* reading the clock costs more than a poll in a VM: not every time */
};

/* Nothing moved: spin, yield or sleep, hear failure news and revokes, time out. */
zcoll_status_t zcoll__idle_wait(zcoll_comm_t *comm, struct run *r, struct idle *id);

#endif
