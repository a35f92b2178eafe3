/* hostport.c -- "host:port" as ZCOLL_ROOT and the sockets take it. */
#include "hostport.h"

#include <stdio.h>
#include <string.h>

int zcoll__hostport_split(const char *s, int port0_ok, char *host, size_t hostlen, char *port,
                          size_t portlen, char *why, size_t why_len) {
  const char *colon;
  const char *h = s;
  size_t hl;
  if (s[0] == '[') {
    const char *close = strchr(s, ']');
    if (!close || close[1] != ':') goto bad;
    h = s + 1;
    hl = (size_t)(close - h);
    colon = close + 1;
  } else {
    colon = strrchr(s, ':');
    if (!colon) goto bad;
    hl = (size_t)(colon - s);
  }
  if (hl == 0 || hl >= hostlen) goto bad;
  const char *p = colon + 1;
  size_t pl = strspn(p, "0123456789");
  if (pl == 0 || p[pl]) {
    if (*p)
      snprintf(why, why_len, "the port '%s' is not a number", p);
    else
      snprintf(why, why_len, "no port after the ':'");
    return -1;
  }
  /* getaddrinfo() takes the service modulo 65536: 65536 would become 0, 70000 4464. */
  unsigned long v = 0;
  for (size_t i = 0; i < pl && v <= 65535; i++) v = v * 10 + (unsigned long)(p[i] - '0');
  if (v > 65535 || (v == 0 && !port0_ok)) {
    snprintf(why, why_len, "the port %s is not in 1..65535%s", p,
             v ? "" : " (0 would be a port of rank 0's choosing, which no other rank knows)");
    return -1;
  }
  memcpy(host, h, hl);
  host[hl] = '\0';
  snprintf(port, portlen, "%lu", v);
  return 0;
bad:
  snprintf(why, why_len, "not host:port (or [IPv6 address]:port)");
  return -1;
}
