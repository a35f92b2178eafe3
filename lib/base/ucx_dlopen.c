/*
 * ucx_dlopen.c -- libucs's constructor, run when libucs is first loaded, installs
 * handlers for SIGSEGV, SIGBUS, SIGILL, SIGFPE (UCX_ERROR_SIGNALS, UCX_HANDLE_ERRORS)
 * and SIGHUP (UCX_DEBUG_SIGNO). A library must not change its host's signal
 * dispositions, and a rank must die of `kill -HUP` as the application expects, so zcoll
 * never links UCX: it loads it when a UCX transport or the registration cache is chosen.
 *
 * The constructor reads those three variables once, and UCX offers no call that runs
 * earlier: so each one the user has not set is set for the duration of the dlopen() (no
 * handlers, no debug signal) and removed again right after, leaving the environment as
 * the user had it. A user who sets them gets UCX's behaviour as asked; a process that
 * loaded UCX before us (an MPI over UCX) keeps whatever it already had.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "ucx_dlopen.h"

static const struct {
  const char *name, *value;
} quiet_env[] = {
    {"UCX_ERROR_SIGNALS", ""},
    {"UCX_HANDLE_ERRORS", "none"},
    {"UCX_DEBUG_SIGNO", "0"},
};

#define NQUIET (sizeof(quiet_env) / sizeof(quiet_env[0]))

/* The environment is the process's: two loads must not interleave their set/unset. */
static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;

void *zcoll__ucx_dlopen(const char *lib, char *err, unsigned long err_len) {
  pthread_mutex_lock(&env_lock);
  int set[NQUIET] = {0};
  for (size_t i = 0; i < NQUIET; i++)
    if (!getenv(quiet_env[i].name)) set[i] = setenv(quiet_env[i].name, quiet_env[i].value, 0) == 0;
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  for (size_t i = 0; i < NQUIET; i++)
    if (set[i]) unsetenv(quiet_env[i].name);
  if (!h) {
    const char *e = dlerror();
    snprintf(err, err_len, "cannot load %s: %s", lib, e ? e : "unknown");
  }
  pthread_mutex_unlock(&env_lock);
  return h;
}
