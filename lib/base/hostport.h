/* hostport.h -- "host:port" as ZCOLL_ROOT and the bootstrap's sockets take it. */
#ifndef ZCOLL_HOSTPORT_H
#define ZCOLL_HOSTPORT_H

#include <stddef.h>

/* Splits "host:port" (or "[v6]:port") into host and port, the port a number in 1..65535
 * (0 too with port0_ok: a listener that asks for any free port); 0, or -1 with the
 * reason in why. */
int zcoll__hostport_split(const char *s, int port0_ok, char *host, size_t hostlen, char *port,
                          size_t portlen, char *why, size_t why_len);

#endif
