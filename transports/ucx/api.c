/*
 * api.c -- UCX, loaded only when the UCX transport is chosen (lib/base/ucx_dlopen.c says why
 * and how libucs is kept from touching the process's signal handlers): libucp.so.0 is
 * dlopen()ed the first time the transport is probed, and the dozen functions the
 * transport calls are looked up into one table. libuct.so.0 likewise, only when
 * zcoll_info lists UCX's transports and devices (iface.c). Its statuses become zcoll's
 * here too (zcoll__ucx_status), for every file of the transport.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/ucx_dlopen.h"
#include "ucx.h"

struct zcoll__ucp_api zcoll__ucp;
struct zcoll__uct_api zcoll__uct;

struct sym {
  const char *sym;
  void **slot;
};

/* A library's functions into a table; the library once loaded stays (its constructor
 * ran, unloading would undo nothing). */
static int load_syms(const char *lib, const struct sym *syms, size_t n, char *err, size_t err_len) {
  void *h = zcoll__ucx_dlopen(lib, err, err_len);
  if (!h) return -1;
  for (size_t i = 0; i < n; i++) {
    if (!(*syms[i].slot = dlsym(h, syms[i].sym))) {
      snprintf(err, err_len, "%s has no %s (UCX too old?)", lib, syms[i].sym);
      return -1;
    }
  }
  return 0;
}

/* Function names and table slots, in one list each so that they cannot disagree. */
#define ZCOLL_UCP_SYM(field, sym) {#sym, (void **)&zcoll__ucp.field},
static const struct sym ucp_syms[] = {ZCOLL_UCP_SYMS(ZCOLL_UCP_SYM)};
#undef ZCOLL_UCP_SYM
#define ZCOLL_UCT_SYM(field, sym) {#sym, (void **)&zcoll__uct.field},
static const struct sym uct_syms[] = {ZCOLL_UCT_SYMS(ZCOLL_UCT_SYM)};
#undef ZCOLL_UCT_SYM

/* One library's loading state: tried once per process, its error kept for every asker. */
struct once {
  const char *lib;
  const struct sym *syms;
  size_t n;
  pthread_mutex_t lock;
  int loaded; /* 1: the table is complete */
  char error[256];
};

static struct once ucp_once = {"libucp.so.0",
                               ucp_syms,
                               sizeof(ucp_syms) / sizeof(ucp_syms[0]),
                               PTHREAD_MUTEX_INITIALIZER,
                               0,
                               ""};
static struct once uct_once = {"libuct.so.0",
                               uct_syms,
                               sizeof(uct_syms) / sizeof(uct_syms[0]),
                               PTHREAD_MUTEX_INITIALIZER,
                               0,
                               ""};

static zcoll_status_t load(struct once *o, char *why, size_t why_len) {
  pthread_mutex_lock(&o->lock);
  if (!o->loaded && !o->error[0])
    o->loaded = load_syms(o->lib, o->syms, o->n, o->error, sizeof(o->error)) == 0;
  int ok = o->loaded;
  pthread_mutex_unlock(&o->lock);
  if (ok) return ZCOLL_OK;
  if (why) snprintf(why, why_len, "%s", o->error);
  return ZCOLL_ERR_UNSUPPORTED;
}

zcoll_status_t zcoll__ucx_load(char *why, size_t why_len) { return load(&ucp_once, why, why_len); }

zcoll_status_t zcoll__uct_load(char *why, size_t why_len) { return load(&uct_once, why, why_len); }

void zcoll__ucx_version(char *buf, size_t len) {
  char why[256];
  if (zcoll__ucx_load(why, sizeof(why)) == ZCOLL_OK)
    snprintf(buf, len, "UCX %s (built against %d.%d)", zcoll__ucp.get_version_string(),
             UCP_API_MAJOR, UCP_API_MINOR);
  else
    snprintf(buf, len, "UCX cannot be loaded: %s (built against %d.%d)", why, UCP_API_MAJOR,
             UCP_API_MINOR);
}

/* UCX's status as the transport interface's (lib/tl/transport.h): decided here, at the
 * boundary, for every file of the transport. */
zcoll_status_t zcoll__ucx_status(ucs_status_t s) {
  switch (s) {
  case UCS_OK: return ZCOLL_OK;
  case UCS_ERR_NO_MEMORY: return ZCOLL_ERR_NO_MEMORY;
  case UCS_ERR_UNSUPPORTED:
  case UCS_ERR_NO_DEVICE: return ZCOLL_ERR_UNSUPPORTED;
  case UCS_ERR_TIMED_OUT: return ZCOLL_ERR_TIMEOUT;
  /* UCX's keepalive gave up on the peer: it is lost, as with a reset (transport.h keeps
     * TIMEOUT for our own waits). Over TCP a killed peer shows either way, by timing. */
  case UCS_ERR_ENDPOINT_TIMEOUT:
  case UCS_ERR_CONNECTION_RESET:
  case UCS_ERR_UNREACHABLE:
  case UCS_ERR_REJECTED:
  case UCS_ERR_NOT_CONNECTED: return ZCOLL_ERR_PEER_FAILED;
  default: return ZCOLL_ERR_TRANSPORT;
  }
}
