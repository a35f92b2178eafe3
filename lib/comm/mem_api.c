/* mem_api.c -- zcoll_mem_alloc and zcoll_mem_free: the arguments, the entry guard and the
 * report around core/mem.c (here, above the executor, so that the core's memory code
 * calls nothing that calls back into it). */
#include "core/comm.h"
#include "core/guard.h"
#include "core/mem.h"
#include "core/report.h"
#include "base/log.h"

zcoll_status_t zcoll_mem_alloc(zcoll_comm_t *comm, size_t len, void **ptr) {
  if (!comm || !ptr || !len)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_mem_alloc: %s",
                       !comm  ? "comm is NULL"
                       : !ptr ? "ptr is NULL"
                              : "len is 0");
  zcoll_status_t st = zcoll__enter(comm, "zcoll_mem_alloc");
  if (st != ZCOLL_OK) return st;
  st = zcoll__report(comm, zcoll__mem_alloc(comm, len, ptr));
  zcoll__leave(comm);
  return st;
}

zcoll_status_t zcoll_mem_free(zcoll_comm_t *comm, void *ptr) {
  if (!comm || !ptr)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_mem_free: %s",
                       !comm ? "comm is NULL" : "ptr is NULL");
  zcoll_status_t st = zcoll__enter(comm, "zcoll_mem_free");
  if (st != ZCOLL_OK) return st;
  st = zcoll__report(comm, zcoll__mem_free(comm, ptr));
  zcoll__leave(comm);
  return st;
}
