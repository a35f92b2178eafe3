/* bootstrap_leave.c -- leaving the rendezvous: destroy's final barrier, the news that a
 * rank has left (and after how many collectives), and a revoke that ends the wait. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bootstrap_impl.h"
#include "base/log.h"
#include "sock.h"

/* Rank r is in zcoll_comm_destroy after ncolls collectives. A rank already in a later
 * one waits for it in vain: it must hear of it (zcoll__bootstrap_departed), at once
 * rather than at its timeout. Rank 0 tells the others -- only of a departure earlier
 * than any told before: ranks that leave together after the same collectives cost one
 * notice, not p. */
void zcoll__bs_departed(struct zcoll__bootstrap *bs, int r, uint64_t ncolls) {
  if (bs->left_rank >= 0 && bs->left_ncolls <= ncolls) return;
  bs->left_rank = r;
  bs->left_ncolls = ncolls;
  if (bs->rank != 0) return;
  uint8_t wire[ZCOLL_BS_LEFT_BYTES];
  zcoll__bs_put_left(wire, (uint32_t)r, ncolls);
  for (int k = 1; k < bs->size; k++)
    if (k != r && bs->kid[k].fd >= 0 && !bs->kid[k].gone && bs->kid[k].type != ZCOLL_BS_BYE)
      zcoll__sock_send_msg(bs->kid[k].fd, ZCOLL_BS_LEFT, wire, sizeof(wire), zcoll__deadline(1.0));
}

int zcoll__bootstrap_departed(const struct zcoll__bootstrap *bs, int *rank, uint64_t *ncolls) {
  if (bs->left_rank < 0) return 0;
  *rank = bs->left_rank;
  *ncolls = bs->left_ncolls;
  return 1;
}

/* A wait in destroy: has the communicator been revoked? Drains the eventfd (other wakeups
 * land there too). */
int zcoll__bs_cancelled(struct zcoll__bootstrap *bs) {
  if (bs->cancel_fd >= 0) {
    uint64_t n;
    ssize_t got = read(bs->cancel_fd, &n, sizeof(n));
    (void)got;
  }
  return bs->cancel && atomic_load(bs->cancel);
}

zcoll_status_t zcoll__bs_fail_cancelled(struct zcoll__bootstrap *bs) {
  const char *why = "zcoll_comm_revoke or zcoll_comm_abort was called during zcoll_comm_destroy";
  if (bs->rank == 0)
    zcoll__bs_relay_abort(bs, -1, 0, ZCOLL_ERR_PEER_FAILED, why);
  else
    zcoll__bs_send_abort(bs->fd, (uint32_t)bs->rank, ZCOLL_ERR_PEER_FAILED, why);
  return zcoll__bs_fail_sticky(
      bs, ZCOLL_ERR_PEER_FAILED,
      "rank %d's communicator was revoked (zcoll_comm_revoke or zcoll_comm_abort) "
      "while zcoll_comm_destroy waited for the other ranks",
      bs->rank);
}

void zcoll__bootstrap_set_cancel(struct zcoll__bootstrap *bs, int fd, atomic_int *flag) {
  bs->cancel_fd = fd;
  bs->cancel = flag;
}

/* A rank other than 0 waits for rank 0's answer to its goodbye, or for a revoke. */
static zcoll_status_t leaf_await_ack(struct zcoll__bootstrap *bs, int64_t deadline) {
  for (;;) {
    struct pollfd p[2] = {{.fd = bs->fd, .events = POLLIN},
                          {.fd = bs->cancel_fd, .events = POLLIN}};
    int np = bs->cancel_fd >= 0 ? 2 : 1;
    if (bs->cancel && atomic_load(bs->cancel)) return zcoll__bs_fail_cancelled(bs);
    int64_t left = deadline - zcoll__now_ms();
    int rc = poll(p, (nfds_t)np, left <= 0 ? 0 : left > 1000000 ? 1000000 : (int)left);
    if (rc < 0 && errno == EINTR) continue;
    if (np == 2 && p[1].revents && zcoll__bs_cancelled(bs)) return zcoll__bs_fail_cancelled(bs);
    if (rc == 0 && zcoll__now_ms() >= deadline)
      return zcoll__bs_fail_sticky(
          bs, ZCOLL_ERR_TIMEOUT, "rank 0 did not confirm the final barrier in %.0f s", bs->timeout);
    if (rc <= 0 || !p[0].revents) continue;
    uint16_t type;
    void *payload;
    uint32_t len;
    zcoll_status_t st = zcoll__sock_recv_msg(bs->fd, ZCOLL_BS_MAX_MSG, deadline, &type, &payload,
                                             &len);
    if (st != ZCOLL_OK)
      return zcoll__bs_fail_sticky(bs, st == ZCOLL_ERR_TIMEOUT ? st : ZCOLL_ERR_PEER_FAILED,
                                   "rank 0 did not confirm the final barrier");
    /* Control messages and departures still on the way are of no use now. */
    if (type == ZCOLL_BS_CTL || type == ZCOLL_BS_LEFT) {
      free(payload);
      continue;
    }
    if (type == ZCOLL_BS_ABORT)
      st = zcoll__bs_take_abort(bs, 0, payload, len);
    else if (type != ZCOLL_BS_BYE_ACK)
      st = zcoll__bs_fail_sticky(bs, ZCOLL_ERR_BOOTSTRAP,
                                 "bootstrap: unexpected message %u from rank 0", type);
    free(payload);
    return st;
  }
}

static zcoll_status_t graceful_leave(struct zcoll__bootstrap *bs, uint64_t ncolls) {
  int64_t deadline = zcoll__deadline(bs->timeout);
  uint8_t bye[ZCOLL_BS_BYE_BYTES];
  zcoll__bs_put_bye(bye, ncolls);
  if (bs->rank != 0) {
    /* News already here first (an abort of a rank that gave up while this one was
     * busy): it is the reason to report, not a goodbye lost on a closed socket. */
    for (struct pollfd p = {.fd = bs->fd, .events = POLLIN}; poll(&p, 1, 0) > 0;) {
      zcoll_status_t st = zcoll__bootstrap_check(bs);
      if (st != ZCOLL_OK) return st;
    }
    /* Rank 0 answers once everyone has said goodbye: a final barrier. */
    /* A refused goodbye: rank 0 may have given up on another rank and closed since the
     * look above; its abort, still to be read, names that rank. */
    if (zcoll__sock_send_msg(bs->fd, ZCOLL_BS_BYE, bye, sizeof(bye), deadline) != ZCOLL_OK)
      return zcoll__bs_lost_root(bs, "lost rank 0 while leaving");
    return leaf_await_ack(bs, deadline);
  }
  /* The others hear that rank 0 is leaving: one still in a collective rank 0 did not
   * make fails now instead of keeping the barrier waiting until its timeout. */
  bs->leaving = 1;
  zcoll__bs_departed(bs, 0, ncolls);
  zcoll_status_t st = zcoll__bs_root_pump(bs, ZCOLL_BS_BYE, deadline);
  if (st != ZCOLL_OK) return st;
  for (int r = 1; r < bs->size; r++)
    if (bs->kid[r].ncolls != ncolls) {
      char text[200];
      snprintf(text, sizeof(text),
               "rank %d made %" PRIu64 " collectives on the communicator and rank 0 made %" PRIu64
               " before zcoll_comm_destroy: every rank must make the same collectives",
               r, bs->kid[r].ncolls, ncolls);
      zcoll__bs_relay_abort(bs, -1, 0, ZCOLL_ERR_MISMATCH, text);
      return zcoll__bs_fail_sticky(bs, ZCOLL_ERR_MISMATCH, "%s", text);
    }
  for (int r = 1; r < bs->size; r++) {
    zcoll__sock_send_msg(bs->kid[r].fd, ZCOLL_BS_BYE_ACK, NULL, 0, deadline);
    bs->kid[r].gone = 1;
  }
  return ZCOLL_OK;
}

zcoll_status_t zcoll__bootstrap_leave(struct zcoll__bootstrap *bs, uint64_t ncolls) {
  if (bs->failed) return zcoll__fail(bs->failed, "%s", bs->why);
  return bs->size > 1 ? graceful_leave(bs, ncolls) : ZCOLL_OK;
}
