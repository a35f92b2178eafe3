/* stats.c -- zcoll_comm_stats: a communicator's counters, read under the entry guard
 * (the executor and the progress thread write them). */
#include <string.h>

#include "core/comm.h"
#include "core/guard.h"
#include "base/log.h"
#include "core/report.h"

zcoll_status_t zcoll_comm_stats(zcoll_comm_t *comm, zcoll_comm_stats_t *stats, size_t size) {
  if (!comm || !stats || !size)
    return zcoll__report(comm, zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_comm_stats: %s",
                                           !comm    ? "comm is NULL"
                                           : !stats ? "stats is NULL"
                                                    : "size is 0"));
  zcoll_status_t st = zcoll__enter(comm, "zcoll_comm_stats");
  if (st != ZCOLL_OK) return st;
  zcoll_comm_stats_t s = {.collectives = comm->ordinal,
                          .result_pieces_placed = comm->pieces_placed,
                          .result_pieces_copied = comm->pieces_copied,
                          .mapped_collectives = comm->mapped_collectives,
                          .message_bytes_placed = comm->msg_bytes_placed,
                          .message_bytes_copied = comm->msg_bytes_copied};
  for (int i = 0; i < comm->nchans; i++)
    *(comm->chans[i].same_host ? &s.bytes_sent_same_host
                               : &s.bytes_sent_other_hosts) += comm->chans[i].bytes_out;
  for (int k = 0; k < comm->ntlis; k++)
    if (comm->tlis[k].ops->rail_bytes)
      comm->tlis[k].ops->rail_bytes(comm->tlis[k].tl, s.rail_bytes, 4);
  if (comm->rcache) {
    struct zcoll__rcache_stats rc;
    zcoll__rcache_stats(comm->rcache, &rc);
    s.rcache_hits = rc.hits;
    s.rcache_misses = rc.misses;
    s.rcache_evictions = rc.evictions;
    s.rcache_invalidations = rc.invalidations;
    s.rcache_reg_ns = rc.reg_ns;
    s.rcache_bytes = rc.bytes;
  }
  zcoll__leave(comm);
  /* An older caller's struct is a prefix of ours; a newer one's tail stays zero. */
  memset(stats, 0, size);
  memcpy(stats, &s, size < sizeof(s) ? size : sizeof(s));
  return ZCOLL_OK;
}
