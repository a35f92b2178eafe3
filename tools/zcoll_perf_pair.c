/* zcoll_perf_pair.c -- -t sendrecv's two requests per call (zcoll_perf_pair.h). */
#include "zcoll_perf_pair.h"

static zcoll_status_t end(zcoll_request_t *r) {
  zcoll_status_t st = zcoll_wait(r), fst = zcoll_request_free(r);
  return st != ZCOLL_OK ? st : fst;
}

zcoll_status_t perf_pair_run(struct perf_pairs *pairs, zcoll_comm_t *comm, const void *sendbuf,
                             void *recvbuf, size_t count, zcoll_dtype_t dt, int grouped,
                             zcoll_request_t **req) {
  const int p = zcoll_comm_size(comm), r = zcoll_comm_rank(comm);
  zcoll_request_t *rr = NULL, *sr = NULL;
  if (grouped) { /* both queued: the group's end posts them together */
    zcoll_status_t st = zcoll_recv(comm, recvbuf, count, dt, (r - 1 + p) % p, 0);
    return st == ZCOLL_OK ? zcoll_send(comm, sendbuf, count, dt, (r + 1) % p, 0) : st;
  }
  zcoll_status_t st = zcoll_irecv(comm, recvbuf, count, dt, (r - 1 + p) % p, 0, &rr);
  if (st == ZCOLL_OK) st = zcoll_isend(comm, sendbuf, count, dt, (r + 1) % p, 0, &sr);
  if (st != ZCOLL_OK) return st; /* the run ends, and the job with it */
  if (!req) {
    st = end(rr);
    zcoll_status_t sst = end(sr);
    return st != ZCOLL_OK ? st : sst;
  }
  const int at = (pairs->head + pairs->n++) % PT_WINDOW;
  pairs->q[at].recv = *req = rr;
  pairs->q[at].send = sr;
  return ZCOLL_OK;
}

zcoll_status_t perf_pair_end(struct perf_pairs *pairs, const zcoll_request_t *r) {
  if (!pairs->n || pairs->q[pairs->head].recv != r) return ZCOLL_OK;
  zcoll_request_t *s = pairs->q[pairs->head].send;
  pairs->head = (pairs->head + 1) % PT_WINDOW;
  pairs->n--;
  return end(s);
}
