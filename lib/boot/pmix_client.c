/*
 * pmix_client.c -- the PMIx client, loaded at run time.
 *
 * Why dlopen() and not a link dependency: most processes that load libzcoll (tools,
 * Python, zcoll_run's ranks) never run under a PMIx server, and a library that pulls in
 * libpmix (and, through its plugins, hwloc and libevent) for them all would make them
 * pay for its constructors and its presence on every machine. So PMIx is loaded only
 * when the environment names a server, and a machine without libpmix2 runs as before.
 * The headers (libpmix-dev) are needed at build time only, as UCX's are.
 *
 * Why the connection is kept until exit: PMIx 4.2.2 cannot be connected to again after
 * the last PMIx_Finalize (measured: a second PMIx_Init loses the job's node-level keys,
 * and an MPI_Init after it fails), and mpirun counts a process that connected and
 * exits without PMIx_Finalize as a failed job. So the first communicator that needs
 * PMIx connects, and an exit handler of this library finalizes, once, in the process
 * that connected (never in a forked child, which shares the socket). PMIx itself
 * counts PMIx_Init and PMIx_Finalize, so an MPI in the same process keeps its own.
 */
#include "pmix_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

int zcoll__pmix_present(void) {
  const char *ns = getenv("PMIX_NAMESPACE"), *rank = getenv("PMIX_RANK");
  return ns && ns[0] && rank && rank[0];
}

#ifndef ZCOLL_HAVE_PMIX

zcoll_status_t zcoll__pmix_job(struct zcoll__pmix_job *out) {
  (void)out;
  zcoll_log_info("a PMIx server started this process, but this zcoll was built without "
                 "PMIx (libpmix-dev): rank and size from the launcher's variables");
  return ZCOLL_ERR_UNSUPPORTED;
}

zcoll_status_t zcoll__pmix_share(const char *value, double timeout, char *out, size_t outlen) {
  (void)value, (void)timeout, (void)out, (void)outlen;
  return zcoll__fail(ZCOLL_ERR_UNSUPPORTED, "this zcoll was built without PMIx");
}

#else

#include <dlfcn.h>
#include <errno.h>
#include <pmix.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#define PMIX_LIB "libpmix.so.2"

static struct {
  pmix_status_t (*init)(pmix_proc_t *, pmix_info_t *, size_t);
  pmix_status_t (*finalize)(const pmix_info_t *, size_t);
  pmix_status_t (*get)(const pmix_proc_t *, const pmix_key_t, const pmix_info_t *, size_t,
                       pmix_value_t **);
  pmix_status_t (*put)(pmix_scope_t, const pmix_key_t, pmix_value_t *);
  pmix_status_t (*commit)(void);
  pmix_status_t (*fence_nb)(const pmix_proc_t *, size_t, const pmix_info_t *, size_t,
                            pmix_op_cbfunc_t, void *);
  const char *(*error_string)(pmix_status_t);
  void (*value_destruct)(pmix_value_t *);
} px;

static const struct {
  const char *name;
  void **slot;
} syms[] = {
    {"PMIx_Init", (void **)&px.init},
    {"PMIx_Finalize", (void **)&px.finalize},
    {"PMIx_Get", (void **)&px.get},
    {"PMIx_Put", (void **)&px.put},
    {"PMIx_Commit", (void **)&px.commit},
    {"PMIx_Fence_nb", (void **)&px.fence_nb},
    {"PMIx_Error_string", (void **)&px.error_string},
    {"PMIx_Value_destruct", (void **)&px.value_destruct},
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int connected; /* PMIx_Init succeeded; finalized at exit */
static pid_t connected_pid;
static pmix_proc_t me;
static struct zcoll__pmix_job job; /* read once: a later Get may not find them again */
static unsigned shares;            /* zcoll__pmix_share calls so far: the key's number */

static void finalize_at_exit(void) {
  if (connected && getpid() == connected_pid) px.finalize(NULL, 0);
  connected = 0;
}

static zcoll_status_t load(void) {
  if (px.init) return ZCOLL_OK;
  /* RTLD_LOCAL: an MPI that linked libpmix already gets the same copy by its soname. */
  void *h = dlopen(PMIX_LIB, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    zcoll_log_info("a PMIx server started this process, but %s cannot be loaded (%s): rank "
                   "and size from the launcher's variables",
                   PMIX_LIB, e ? e : "?");
    return ZCOLL_ERR_UNSUPPORTED;
  }
  for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
    if (!(*syms[i].slot = dlsym(h, syms[i].name))) {
      zcoll_log_info("%s has no %s: rank and size from the launcher's variables", PMIX_LIB,
                     syms[i].name);
      px.init = NULL;
      return ZCOLL_ERR_UNSUPPORTED;
    }
  return ZCOLL_OK; /* never dlclose()d: its threads and exit handler outlive any comm */
}

static zcoll_status_t get_value(const pmix_proc_t *who, const char *key, const pmix_info_t *info,
                                size_t ninfo, pmix_value_t **v) {
  pmix_status_t rc = px.get(who, key, info, ninfo, v);
  if (rc == PMIX_SUCCESS) return ZCOLL_OK;
  zcoll_log_debug("PMIx_Get(%s, rank %u): %s", key, who->rank, px.error_string(rc));
  return rc == PMIX_ERR_TIMEOUT ? ZCOLL_ERR_TIMEOUT : ZCOLL_ERR_BOOTSTRAP;
}

static void free_value(pmix_value_t *v) {
  px.value_destruct(v);
  free(v); /* libpmix allocates with the process's malloc */
}

/* An integer key of the job (who: me or the wildcard); -1 when the server has none. */
static int get_int(const pmix_proc_t *who, const char *key) {
  pmix_value_t *v;
  if (get_value(who, key, NULL, 0, &v) != ZCOLL_OK) return -1;
  long x = -1;
  switch (v->type) {
  case PMIX_UINT16: x = v->data.uint16; break;
  case PMIX_UINT32: x = v->data.uint32; break;
  case PMIX_INT: x = v->data.integer; break;
  case PMIX_PROC_RANK: x = v->data.rank; break;
  default: break;
  }
  free_value(v);
  return x >= 0 && x <= 1 << 30 ? (int)x : -1;
}

static zcoll_status_t connect_once(void) {
  static int unreachable; /* said once; the next communicator does not ask again */
  if (connected) return ZCOLL_OK;
  if (unreachable) return ZCOLL_ERR_UNSUPPORTED;
  zcoll_status_t st = load();
  if (st != ZCOLL_OK) return st;
  pmix_proc_t self;
  pmix_status_t rc = px.init(&self, NULL, 0);
  if (rc != PMIX_SUCCESS) {
    /* Variables left behind by a launcher that is gone (a shell started from a job):
     * the process is not one of a PMIx job, but say so, the job may need ZCOLL_ROOT. */
    zcoll_log_warn("PMIX_NAMESPACE is set but PMIx_Init says %s (a launcher's leftover "
                   "variables?): rank and size from the launcher's variables",
                   px.error_string(rc));
    unreachable = 1;
    return ZCOLL_ERR_UNSUPPORTED;
  }
  pmix_proc_t wild = self;
  wild.rank = PMIX_RANK_WILDCARD;
  struct zcoll__pmix_job j = {(int)self.rank, get_int(&wild, PMIX_JOB_SIZE),
                              get_int(&self, PMIX_LOCAL_RANK), get_int(&wild, PMIX_LOCAL_SIZE), ""};
  snprintf(j.nspace, sizeof(j.nspace), "%s", self.nspace);
  if (j.size < 1 || j.rank >= j.size) {
    px.finalize(NULL, 0);
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP,
                       "PMIx: the server gave rank %u but job size %d "
                       "(namespace %s)",
                       self.rank, j.size, self.nspace);
  }
  me = self;
  job = j;
  connected = 1;
  connected_pid = getpid();
  static int registered;
  if (!registered) registered = atexit(finalize_at_exit) == 0;
  return ZCOLL_OK;
}

zcoll_status_t zcoll__pmix_job(struct zcoll__pmix_job *out) {
  pthread_mutex_lock(&lock);
  zcoll_status_t st = connect_once();
  if (st == ZCOLL_OK) *out = job;
  pthread_mutex_unlock(&lock);
  return st;
}

/* The fence's completion may come after we gave up waiting (timeout): whichever of the
 * waiter and the callback is last frees it. */
struct fence {
  pthread_mutex_t m;
  pthread_cond_t c;
  int done, refs;
  pmix_status_t status;
  pmix_proc_t procs[1];
  pmix_info_t info[2];
};

static void fence_unref(struct fence *f) {
  pthread_mutex_lock(&f->m);
  int last = --f->refs == 0;
  pthread_mutex_unlock(&f->m);
  if (!last) return;
  pthread_cond_destroy(&f->c);
  pthread_mutex_destroy(&f->m);
  free(f);
}

static void fence_done(pmix_status_t status, void *arg) {
  struct fence *f = arg;
  pthread_mutex_lock(&f->m);
  f->status = status;
  f->done = 1;
  pthread_cond_signal(&f->c);
  pthread_mutex_unlock(&f->m);
  fence_unref(f);
}

static void set_info(pmix_info_t *i, const char *key, pmix_data_type_t type) {
  memset(i, 0, sizeof(*i));
  snprintf(i->key, sizeof(i->key), "%s", key);
  i->value.type = type;
}

/* PMIx_Fence with data collection, bounded by the timeout on our side too: a server
 * that ignores PMIX_TIMEOUT must not hang the caller. */
static zcoll_status_t fence(double timeout) {
  struct fence *f = calloc(1, sizeof(*f));
  if (!f) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "PMIx: out of memory");
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&f->m, NULL);
  pthread_cond_init(&f->c, &ca);
  pthread_condattr_destroy(&ca);
  f->refs = 2;
  f->procs[0] = me;
  f->procs[0].rank = PMIX_RANK_WILDCARD;
  size_t ninfo = 1;
  set_info(&f->info[0], PMIX_COLLECT_DATA, PMIX_BOOL);
  f->info[0].value.data.flag = true;
  if (timeout > 0) {
    set_info(&f->info[1], PMIX_TIMEOUT, PMIX_INT);
    f->info[1].value.data.integer = timeout < 1 ? 1 : timeout > 1e6 ? 1000000 : (int)timeout;
    ninfo = 2;
  }
  pmix_status_t rc = px.fence_nb(f->procs, 1, f->info, ninfo, fence_done, f);
  if (rc != PMIX_SUCCESS) {
    f->refs = 1;
    fence_unref(f);
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "PMIx_Fence: %s", px.error_string(rc));
  }
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  /* A little beyond the server's own timeout, so that its answer (which names the
   * cause) comes first when it keeps it. */
  double wait = timeout + 2;
  until.tv_sec += (time_t)wait;
  pthread_mutex_lock(&f->m);
  int err = 0;
  while (!f->done && err != ETIMEDOUT)
    err = timeout > 0 ? pthread_cond_timedwait(&f->c, &f->m, &until)
                      : pthread_cond_wait(&f->c, &f->m);
  int done = f->done;
  rc = f->status;
  pthread_mutex_unlock(&f->m);
  fence_unref(f);
  if (!done || rc == PMIX_ERR_TIMEOUT)
    return zcoll__fail(ZCOLL_ERR_TIMEOUT,
                       "PMIx_Fence: not every rank of namespace %s reached zcoll_comm_init "
                       "within %g s (ZCOLL_TIMEOUT)",
                       me.nspace, timeout);
  if (rc != PMIX_SUCCESS)
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "PMIx_Fence (namespace %s): %s", me.nspace,
                       px.error_string(rc));
  return ZCOLL_OK;
}

static zcoll_status_t share_locked(const char *value, double timeout, char *out, size_t outlen) {
  if (!connected) return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "PMIx: not connected to a server");
  char key[64];
  snprintf(key, sizeof(key), "zcoll.rendezvous.%u", shares++);
  if (me.rank == 0) {
    pmix_value_t v = {.type = PMIX_STRING};
    v.data.string = (char *)value;
    pmix_status_t rc = px.put(PMIX_GLOBAL, key, &v);
    if (rc == PMIX_SUCCESS) rc = px.commit();
    if (rc != PMIX_SUCCESS)
      return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "PMIx_Put/Commit of %s: %s", key,
                         px.error_string(rc));
  }
  zcoll_status_t st = fence(timeout);
  if (st != ZCOLL_OK) return st;
  pmix_proc_t root = me;
  root.rank = 0;
  pmix_info_t info;
  set_info(&info, PMIX_TIMEOUT, PMIX_INT);
  info.value.data.integer = timeout >= 1 && timeout < 1e6 ? (int)timeout : timeout > 0;
  pmix_value_t *v;
  st = get_value(&root, key, &info, timeout > 0, &v);
  if (st != ZCOLL_OK)
    return zcoll__fail(st, "PMIx_Get of rank 0's %s (namespace %s) failed after the fence", key,
                       me.nspace);
  int ok = v->type == PMIX_STRING && v->data.string && strlen(v->data.string) < outlen;
  if (ok) snprintf(out, outlen, "%s", v->data.string);
  free_value(v);
  if (!ok) return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "PMIx: rank 0's %s is not a short string", key);
  return ZCOLL_OK;
}

zcoll_status_t zcoll__pmix_share(const char *value, double timeout, char *out, size_t outlen) {
  pthread_mutex_lock(&lock);
  zcoll_status_t st = share_locked(value, timeout, out, outlen);
  pthread_mutex_unlock(&lock);
  return st;
}

#endif
