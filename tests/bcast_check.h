/*
 * bcast_check.h -- broadcasts checked element by element, shared by the thread tests
 * (test_broadcast.c) and the process program (progs/bcast_check.c): from every root,
 * every dtype, blocking, non-blocking and persistent. The root's vector is a function
 * of (root, index, round); every other rank starts from a sentinel, and the bytes past
 * the vector must stay untouched.
 */
#ifndef ZCOLL_BCAST_CHECK_H
#define ZCOLL_BCAST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_common.h"
#include "zcoll.h"

static inline double bc_value(zcoll_dtype_t dt, int root, size_t k, int round) {
  int v = (int)((k * 7 + (size_t)root * 3 + (size_t)round * 11) % 50);
  return chk_is_unsigned(dt) ? v : v - 20;
}

enum { BC_BLOCKING, BC_NONBLOCKING, BC_PERSISTENT, BC_MODES };

/* One broadcast of n elements of dt from root (mode: how it is called); 0 when every
 * element arrived and nothing past the vector changed, else a message in why. */
static inline int bc_check(zcoll_comm_t *comm, zcoll_dtype_t dt, size_t n, int root, int mode,
                           char *why, size_t why_len) {
  int rank = zcoll_comm_rank(comm);
  size_t ds = zcoll_dtype_size(dt), guard = 16;
  unsigned char *buf = malloc(n * ds + guard), *want = malloc(ds);
  int rounds = mode == BC_PERSISTENT ? 3 : 1, bad = 0;
  zcoll_request_t *req = NULL;
  zcoll_status_t st = ZCOLL_OK;
  if (mode == BC_PERSISTENT) st = zcoll_broadcast_init(comm, buf, n, dt, root, &req);
  for (int round = 0; round < rounds && st == ZCOLL_OK && !bad; round++) {
    memset(buf, 0xa5, n * ds + guard);
    if (rank == root)
      for (size_t k = 0; k < n; k++) chk_store(dt, buf, k, bc_value(dt, root, k, round));
    if (mode == BC_BLOCKING) {
      st = zcoll_broadcast(comm, buf, n, dt, root);
    } else if (mode == BC_NONBLOCKING) {
      if ((st = zcoll_ibroadcast(comm, buf, n, dt, root, &req)) == ZCOLL_OK) {
        while ((st = zcoll_test(req)) == ZCOLL_IN_PROGRESS) {
        }
        zcoll_request_free(req);
        req = NULL;
      }
    } else if ((st = zcoll_start(req)) == ZCOLL_OK) {
      st = zcoll_wait(req);
    }
    for (size_t k = 0; st == ZCOLL_OK && k < n; k++) {
      chk_store(dt, want, 0, bc_value(dt, root, k, round));
      if (memcmp(buf + k * ds, want, ds)) {
        snprintf(why, why_len, "element %zu of %zu is wrong (round %d)", k, n, round);
        bad = 1;
        break;
      }
    }
    for (size_t g = 0; st == ZCOLL_OK && !bad && g < guard; g++)
      if (buf[n * ds + g] != 0xa5) {
        snprintf(why, why_len, "a byte past the vector was written");
        bad = 1;
      }
  }
  if (req) zcoll_request_free(req);
  if (st != ZCOLL_OK) {
    snprintf(why, why_len, "%s: %s", zcoll_strerror(st), zcoll_comm_last_error(comm));
    bad = 1;
  }
  free(buf), free(want);
  return bad;
}

#endif
