/*
 * comm_summary.c -- the one info line per rank that a new communicator logs: which
 * transport reaches which peers, on which device, the pipeline geometry, and what the
 * transports' probes said about those that cannot run here. An operator who asks "why
 * not verbs" finds the answer in a job's output alone, without zcoll_info on each node.
 *
 *   rank 1 of 4 ready: shm to 0,2; ucx to 3; chunk 256 KiB, depth 8; not usable here:
 *   verbs: no RDMA device with an active port and an address (devices here: none)
 *
 * It is logged once the communicator is ready (every rank connected), so that it also
 * marks a rank that joined.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "base/log.h"
#include "wire.h"

/* Appends to buf at *off, never past len (a long line is cut, not overrun). */
__attribute__((format(printf, 4, 5))) static void put(char *buf, size_t len, size_t *off,
                                                      const char *fmt, ...) {
  if (*off >= len) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *off, len - *off, fmt, ap);
  va_end(ap);
  if (n > 0) *off += (size_t)n;
}

/* "256 KiB" where a whole number of KiB or MiB, else bytes. */
static void put_bytes(char *buf, size_t len, size_t *off, size_t b) {
  if (b && b % ((size_t)1 << 20) == 0)
    put(buf, len, off, "%zu MiB", b >> 20);
  else if (b && b % 1024 == 0)
    put(buf, len, off, "%zu KiB", b >> 10);
  else
    put(buf, len, off, "%zu B", b);
}

/* The ranks r with tl_of[r] == idx, in order, runs folded: "0-2,5". */
static void put_ranks(char *buf, size_t len, size_t *off, const signed char *tl_of, int size,
                      int idx) {
  const char *sep = "";
  for (int r = 0; r < size; r++) {
    if (tl_of[r] != idx) continue;
    int end = r;
    while (end + 1 < size && tl_of[end + 1] == idx) end++;
    if (end > r)
      put(buf, len, off, "%s%d-%d", sep, r, end);
    else
      put(buf, len, off, "%s%d", sep, r);
    sep = ",";
    r = end;
  }
}

void zcoll__comm_log_summary(const zcoll_comm_t *comm) {
  if (zcoll__log_level < ZCOLL_LOG_INFO) return;
  signed char *tl_of = malloc((size_t)comm->size);
  if (!tl_of) return; /* a log line is not worth failing the communicator for */
  memset(tl_of, -1, (size_t)comm->size);
  for (int i = 0; i < comm->nchans; i++)
    tl_of[comm->chans[i].peer] = (signed char)comm->chans[i].t->idx;
  char line[1024];
  size_t off = 0;
  put(line, sizeof(line), &off, "rank %d of %d ready:", comm->rank, comm->size);
  if (!comm->nchans) put(line, sizeof(line), &off, " no peers (%s open)", comm->wiring.tl_names);
  const char *sep = " ";
  for (int k = 0; k < comm->ntlis; k++) {
    const struct zcoll__tli *t = &comm->tlis[k];
    if (!t->nchans) continue;
    put(line, sizeof(line), &off, "%s%s to ", sep, t->ops->name);
    put_ranks(line, sizeof(line), &off, tl_of, comm->size, t->idx);
    if (t->ops->device) {
      char dev[sizeof(comm->wiring.tl_devices)] = "";
      t->ops->device(t->tl, dev, sizeof(dev));
      put(line, sizeof(line), &off, " on %s", dev);
    }
    sep = "; ";
  }
  put(line, sizeof(line), &off, "; chunk ");
  put_bytes(line, sizeof(line), &off, comm->slot_bytes);
  put(line, sizeof(line), &off, ", depth %d", comm->depth);
  if (comm->wiring.tl_why[0])
    put(line, sizeof(line), &off, "; not usable here: %s", comm->wiring.tl_why);
  /* Between ranks of one host the networks are not even loaded: say so, or an operator
   * wonders why verbs went unmentioned. */
  if (!comm->wiring.net_probed && comm->cfg->transport == ZCOLL_TL_AUTO)
    put(line, sizeof(line), &off, "; networks not probed: every peer is on this host");
  free(tl_of);
  zcoll_log_info("%s", line);
}
