/*
 * sock.h -- TCP plumbing for the bootstrap: framed messages with deadlines.
 *
 * Every message is a frame of bootstrap_wire.h: a 16-byte header (magic, version, type,
 * length) and a payload of at most `max` bytes; a peer that sends anything else is cut
 * off, not trusted.
 */
#ifndef ZCOLL_SOCK_H
#define ZCOLL_SOCK_H

#include <stddef.h>
#include <stdint.h>
#include "base/clock.h"
#include "bootstrap_wire.h"
#include "zcoll.h"

/* The same as an error for ZCOLL_ROOT's value s, with port 0 allowed. */
zcoll_status_t zcoll__sock_parse_hostport(const char *s, char *host, size_t hostlen, char *port,
                                          size_t portlen);
/* Connects, retrying refused or unreachable attempts until the deadline, since rank 0
 * may not be listening yet -- unless it is known to listen already (a unique id's
 * rendezvous): then a refusal is final, the listener gone. */
zcoll_status_t zcoll__sock_connect(const char *hostport, int64_t deadline, int refused_is_final,
                                   int *fd);
/* Listens on the address ZCOLL_ROOT names (127.0.0.1: loopback only); on every
 * interface only when asked for by name: "*:port", "0.0.0.0:port" or "[::]:port". */
zcoll_status_t zcoll__sock_listen(const char *hostport, int *fd);
/* No Nagle; keepalive and TCP_USER_TIMEOUT so that a dead host (which never closes its
 * end) is noticed within `timeout` seconds even on an idle socket (0: minutes). */
void zcoll__sock_tune(int fd, double timeout);
/* "address:port" of the other end, for messages about strangers. */
void zcoll__sock_peer_name(int fd, char *buf, size_t len);
/* Makes room for `need` descriptors: raises the soft RLIMIT_NOFILE toward the hard
 * limit if needed; an error naming both limits if even that is not enough. */
zcoll_status_t zcoll__sock_reserve_fds(long need, const char *why);

zcoll_status_t zcoll__sock_send_msg(int fd, uint16_t type, const void *payload, uint32_t len,
                                    int64_t deadline);
/* Receives one message; *payload is malloc'ed (NULL when len is 0). Returns
 * ZCOLL_ERR_PEER_FAILED on EOF, ZCOLL_ERR_BOOTSTRAP on a malformed or oversized
 * message, ZCOLL_ERR_TIMEOUT at the deadline. Records no error message for EOF and
 * timeouts: the caller knows which peer it was and says so. */
zcoll_status_t zcoll__sock_recv_msg(int fd, uint32_t max, int64_t deadline, uint16_t *type,
                                    void **payload, uint32_t *len);

#endif
