/*
 * api.c -- UCX, loaded only when the UCX transport is chosen.
 *
 * libzcoll does not link libucp: linking it would run libucs's constructor in every
 * process that links zcoll, and that constructor installs handlers for SIGSEGV,
 * SIGBUS, SIGILL, SIGFPE (UCX_ERROR_SIGNALS, UCX_HANDLE_ERRORS) and SIGHUP
 * (UCX_DEBUG_SIGNO) -- a library must not change its host's signal dispositions, and a
 * rank must die of `kill -HUP` as the application expects. So libucp.so.0 is dlopen()ed
 * the first time the transport is probed, and the dozen functions the transport calls
 * are looked up into one table.
 *
 * The constructor reads those three variables once, when libucs is loaded, and UCX
 * offers no call that runs earlier: so each one the user has not set is set for the
 * duration of the dlopen() (no handlers, no debug signal) and removed again right
 * after, leaving the environment as the user had it. A user who sets them gets UCX's
 * behaviour as asked; a process that loaded UCX before us (an MPI over UCX) keeps
 * whatever it already had.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "ucx.h"

struct zcoll__ucp_api zcoll__ucp;

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static int loaded;      /* 1: the table is complete */
static char load_error[256];

/* What libucs's constructor would otherwise do to the process. */
static const struct {
  const char *name, *value;
} quiet_env[] = {
    {"UCX_ERROR_SIGNALS", ""},
    {"UCX_HANDLE_ERRORS", "none"},
    {"UCX_DEBUG_SIGNO", "0"},
};

#define NQUIET (sizeof(quiet_env) / sizeof(quiet_env[0]))

static int load_locked(void) {
  int set[NQUIET] = {0};
  for (size_t i = 0; i < NQUIET; i++)
    if (!getenv(quiet_env[i].name)) set[i] = setenv(quiet_env[i].name, quiet_env[i].value, 0) == 0;
  void *h = dlopen("libucp.so.0", RTLD_NOW | RTLD_LOCAL);
  for (size_t i = 0; i < NQUIET; i++)
    if (set[i]) unsetenv(quiet_env[i].name);
  if (!h) {
    const char *e = dlerror();
    snprintf(load_error, sizeof(load_error), "cannot load libucp.so.0: %s", e ? e : "unknown");
    return -1;
  }
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
