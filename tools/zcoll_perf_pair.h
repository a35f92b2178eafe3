/* zcoll_perf_pair.h -- zcoll_perf's -t sendrecv (nccl-tests' sendrecv_perf): each rank
 * receives from rank - 1 and sends to rank + 1 (mod p) at once. zcoll has no sendrecv
 * call, so one is two requests, a zcoll_irecv and a zcoll_isend posted together (its sends
 * complete when matched: every rank in a blocking zcoll_send first would wait for ever).
 * Posted (-z 0), the harness's window holds the receive; the send waits here, in a queue
 * as old as the window's, and ends when its receive has been waited for. */
#ifndef ZCOLL_PERF_PAIR_H
#define ZCOLL_PERF_PAIR_H

#include "zcoll.h"
#include "perf_backend.h"

struct perf_pairs {
  struct {
    zcoll_request_t *recv, *send;
  } q[PT_WINDOW]; /* posted and not yet ended, oldest first */
  int head, n;
};

/* One sendrecv of count elements of dt: req NULL, both ended before it returns; else
 * *req is its receive, for the window, and the send is queued in pairs. grouped (a group
 * is open, req NULL): a zcoll_recv and a zcoll_send, which the group queues. */
zcoll_status_t perf_pair_run(struct perf_pairs *pairs, zcoll_comm_t *comm, const void *sendbuf,
                             void *recvbuf, size_t count, zcoll_dtype_t dt, int grouped,
                             zcoll_request_t **req);

/* As the window ends request r: if r is the oldest queued pair's receive, waits for and
 * frees its send (before r is freed: a freed request's address says nothing). */
zcoll_status_t perf_pair_end(struct perf_pairs *pairs, const zcoll_request_t *r);

#endif /* ZCOLL_PERF_PAIR_H */
