/*
 * sock.h -- TCP plumbing for the bootstrap: framed messages with deadlines.
 *
 * Every message is a 16-byte header (magic, version, type, length) and a payload of at
 * most `max` bytes; a peer that sends anything else is cut off, not trusted.
 */
#ifndef ZCOLL_SOCK_H
#define ZCOLL_SOCK_H

#include <stddef.h>
#include <stdint.h>
#include "zcoll.h"

#define ZCOLL_BS_MAGIC 0x5a434c42u /* "ZCLB" */
#define ZCOLL_BS_VERSION 1u

struct zcoll__msg_hdr {
  uint32_t magic;
  uint16_t version;
  uint16_t type;
  uint32_t len;
  uint32_t reserved;
};

/* Monotonic milliseconds. */
int64_t zcoll__now_ms(void);
/* deadline in zcoll__now_ms() terms; INT64_MAX: none. */
int64_t zcoll__deadline(double seconds);

/* Splits "host:port" (or "[v6]:port"). */
zcoll_status_t zcoll__sock_parse_hostport(const char *s, char *host, size_t hostlen,
                                          char *port, size_t portlen);
/* Connects, retrying refused or unreachable attempts until the deadline, since rank 0
 * may not be listening yet. */
zcoll_status_t zcoll__sock_connect(const char *hostport, int64_t deadline, int *fd);
zcoll_status_t zcoll__sock_listen(const char *hostport, int *fd);
void zcoll__sock_tune(int fd);

zcoll_status_t zcoll__sock_send_msg(int fd, uint16_t type, const void *payload, uint32_t len,
                                    int64_t deadline);
/* Receives one message; *payload is malloc'ed (NULL when len is 0). Returns
 * ZCOLL_ERR_PEER_FAILED on EOF, ZCOLL_ERR_BOOTSTRAP on a malformed or oversized
 * message, ZCOLL_ERR_TIMEOUT at the deadline. Records no error message for EOF and
 * timeouts: the caller knows which peer it was and says so. */
zcoll_status_t zcoll__sock_recv_msg(int fd, uint32_t max, int64_t deadline, uint16_t *type,
                                    void **payload, uint32_t *len, uint16_t *version);

#endif
