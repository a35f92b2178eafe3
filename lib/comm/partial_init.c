/* partial_init.c -- zcoll_allreduce_partial_init: the request's own communicator (a split
 * with a channel to every rank, for rounds that may pair any two), then the request on it
 * (lib/coll/partial.c). */
#include "base/log.h"
#include "coll/partial.h"
#include "init.h"

zcoll_status_t zcoll_allreduce_partial_init(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                            size_t count, zcoll_dtype_t dtype, zcoll_op_t op,
                                            int quorum, zcoll_request_t **req) {
  if (req) *req = NULL;
  if (!comm || !req)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_allreduce_partial_init: %s is NULL",
                       comm ? "req" : "comm");
  zcoll_comm_t *pc = NULL;
  zcoll_status_t st = zcoll__comm_split(comm, 0, zcoll_comm_rank(comm), 1, &pc);
  if (st != ZCOLL_OK) return st;
  if ((st = zcoll__partial_make(pc, sendbuf, recvbuf, count, dtype, op, quorum, zcoll_comm_destroy,
                                req)) != ZCOLL_OK) {
    char msg[512];
    snprintf(msg, sizeof(msg), "%s", zcoll__last_error());
    zcoll_comm_destroy(pc);
    zcoll__record_error(st, "%s", msg);
    return st;
  }
  zcoll__partial_adopt(comm, *req); /* comm's destroy frees it if the application does not */
  return st;
}
