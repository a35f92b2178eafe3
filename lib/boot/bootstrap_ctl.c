/* bootstrap_ctl.c -- the rendezvous's control messages for the layers above (the task
 * interface's sequencer, tasks.c): they ride the bootstrap sockets and are filed in an
 * inbox when they arrive among the rendezvous's own messages. */
#include "bootstrap.h"
#include "bootstrap_impl.h"

#include <stdint.h>
#include <stdlib.h>

#include "base/log.h"
#include "sock.h"

zcoll_status_t zcoll__bs_file_ctl(struct zcoll__bootstrap *bs, int from, void *msg, uint32_t len) {
  struct ctl *c = malloc(sizeof(*c));
  if (!c || len > ZCOLL_BS_MAX_CTL) {
    free(c), free(msg);
    return zcoll__bs_fail_sticky(bs, c ? ZCOLL_ERR_BOOTSTRAP : ZCOLL_ERR_NO_MEMORY,
                                 "bootstrap: a control message of %u bytes from rank %d", len,
                                 from);
  }
  *c = (struct ctl){NULL, from, len, msg};
  if (!bs->inbox_tail) bs->inbox_tail = &bs->inbox;
  *bs->inbox_tail = c;
  bs->inbox_tail = &c->next;
  return ZCOLL_OK;
}

int zcoll__bootstrap_ctl_take(struct zcoll__bootstrap *bs, int *from, void **msg, uint32_t *len) {
  struct ctl *c = bs->inbox;
  if (!c) return 0;
  if (!(bs->inbox = c->next)) bs->inbox_tail = &bs->inbox;
  *from = c->from;
  *msg = c->msg;
  *len = c->len;
  free(c);
  return 1;
}

zcoll_status_t zcoll__bootstrap_ctl_send(struct zcoll__bootstrap *bs, int to, const void *msg,
                                         uint32_t len) {
  if (bs->failed) return bs->failed;
  int fd = bs->rank == 0 ? (to > 0 && to < bs->size ? bs->kid[to].fd : -1) : bs->fd;
  if (fd < 0 || len > ZCOLL_BS_MAX_CTL)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "bootstrap: no control channel to rank %d", to);
  zcoll_status_t st = zcoll__sock_send_msg(fd, ZCOLL_BS_CTL, msg, len,
                                           zcoll__deadline(bs->timeout));
  if (st != ZCOLL_OK)
    return zcoll__bs_fail_sticky(bs, ZCOLL_ERR_PEER_FAILED, "bootstrap: lost rank %d sending to it",
                                 bs->rank == 0 ? to : 0);
  return ZCOLL_OK;
}
