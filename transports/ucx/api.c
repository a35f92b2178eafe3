/*
 * api.c -- UCX, loaded only when the UCX transport is chosen (lib/ucx_dlopen.c says why
 * and how libucs is kept from touching the process's signal handlers): libucp.so.0 is
 * dlopen()ed the first time the transport is probed, and the dozen functions the
 * transport calls are looked up into one table.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "ucx_dlopen.h"
#include "ucx.h"

struct zcoll__ucp_api zcoll__ucp;

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static int loaded;      /* 1: the table is complete */
static char load_error[256];

static int load_locked(void) {
  void *h = zcoll__ucx_dlopen("libucp.so.0", load_error, sizeof(load_error));
  if (!h) return -1;
  /* Function names and table slots, in one list so that they cannot disagree. */
#define ZCOLL_UCP_SYM(field, sym) {#sym, (void **)&zcoll__ucp.field},
  static const struct {
    const char *sym;
    void **slot;
  } syms[] = {ZCOLL_UCP_SYMS(ZCOLL_UCP_SYM)};
#undef ZCOLL_UCP_SYM
  for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
    if (!(*syms[i].slot = dlsym(h, syms[i].sym))) {
      snprintf(load_error, sizeof(load_error), "libucp.so.0 has no %s (UCX too old?)",
               syms[i].sym);
      /* Keep the library loaded: its constructor ran, unloading would undo nothing. */
      return -1;
    }
  }
  return 0;
}

zcoll_status_t zcoll__ucx_load(char *why, size_t why_len) {
  pthread_mutex_lock(&load_lock);
  if (!loaded && !load_error[0]) loaded = load_locked() == 0;
  int ok = loaded;
  pthread_mutex_unlock(&load_lock);
  if (ok) return ZCOLL_OK;
  if (why) snprintf(why, why_len, "%s", load_error);
  return ZCOLL_ERR_UNSUPPORTED;
}
