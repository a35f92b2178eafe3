/* comm_registry.c -- the communicators of this process, and who may free them. */
#include "comm_registry.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"

enum { ALIVE, DESTROYING, ABORTING };

struct live {
  struct zcoll_comm *comm;
  int state;
};

struct creation {
  int token; /* 0: a free entry */
  int rank, size;
  char root[256], job_id[128];
};

/* Everything under one lock: a few communicators per process, touched at init, destroy
 * and abort only -- never on a collective's path. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gone; /* a communicator left the live set, or is alive again */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct live *lives;
static int nlives, cap_lives;
static struct creation *creations;
static int ncreations, next_token;

/* fork(): the child must find the lock free (another thread may have held it), and no
 * creation in progress (the threads making them are not in the child). Communicators
 * stay alive there: the child may destroy its copies (comm.c). */
static void before_fork(void) { pthread_mutex_lock(&mu); }
static void after_fork_parent(void) { pthread_mutex_unlock(&mu); }
static void after_fork_child(void) {
  pthread_mutex_init(&mu, NULL);
  ncreations = 0;
}

static void setup(void) {
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC); /* a watchdog's wait must not jump */
  pthread_cond_init(&gone, &a);
  pthread_condattr_destroy(&a);
  pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

static void lock(void) {
  pthread_once(&once, setup);
  pthread_mutex_lock(&mu);
}

static struct live *find(const struct zcoll_comm *comm) {
  for (int i = 0; i < nlives; i++)
    if (lives[i].comm == comm) return &lives[i];
  return NULL;
}

zcoll_status_t zcoll__registry_creating(int rank, int size, const char *root_given, int root_fd,
                                        const char *job_id, int *token) {
  /* A rank 0 given only its listening socket is told apart by it: two such jobs are two
   * jobs, however alike their settings. */
  char root[sizeof(creations->root)];
  if (root_given[0] || root_fd < 0)
    snprintf(root, sizeof(root), "%s", root_given);
  else
    snprintf(root, sizeof(root), "the socket ZCOLL_ROOT_FD=%d", root_fd);
  lock();
  for (int i = 0; i < ncreations; i++) {
    const struct creation *c = &creations[i];
    if (c->rank == rank && c->size == size && !strcmp(c->root, root) &&
        !strcmp(c->job_id, job_id)) {
      pthread_mutex_unlock(&mu);
      return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                         "zcoll_comm_init: another thread of this process is creating a "
                         "communicator (as rank %d of %d, rendezvous %s); create them one at a "
                         "time, in the same order on every rank",
                         rank, size, root[0] ? root : "from the launcher");
    }
  }
  struct creation *grown = realloc(creations, sizeof(*creations) * (size_t)(ncreations + 1));
  if (!grown) {
    pthread_mutex_unlock(&mu);
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory allocating a communicator");
  }
  creations = grown;
  struct creation *c = &creations[ncreations++];
  if (++next_token <= 0) next_token = 1;
  *c = (struct creation){.token = next_token, .rank = rank, .size = size};
  snprintf(c->root, sizeof(c->root), "%s", root);
  snprintf(c->job_id, sizeof(c->job_id), "%s", job_id);
  *token = next_token;
  pthread_mutex_unlock(&mu);
  return ZCOLL_OK;
}

void zcoll__registry_created(int token, struct zcoll_comm *comm) {
  lock();
  for (int i = 0; i < ncreations; i++)
    if (creations[i].token == token) {
      creations[i] = creations[--ncreations];
      break;
    }
  if (comm && nlives == cap_lives) {
    int cap = cap_lives ? 2 * cap_lives : 8;
    struct live *grown = realloc(lives, sizeof(*lives) * (size_t)cap);
    /* Out of memory here only costs abort's protection for this communicator: abort
     * then refuses it as unknown, and destroy frees it as usual. */
    if (grown) lives = grown, cap_lives = cap;
  }
  if (comm && nlives < cap_lives) lives[nlives++] = (struct live){comm, ALIVE};
  pthread_mutex_unlock(&mu);
}

/* Not alive: never created, or freed by destroy or abort. Nothing of it may be read. */
static zcoll_status_t unknown(const char *fn) {
  return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                     "%s: not a live communicator (already destroyed or aborted, or never "
                     "created)",
                     fn);
}

zcoll_status_t zcoll__registry_destroy_begin(struct zcoll_comm *comm) {
  lock();
  struct live *l = find(comm);
  zcoll_status_t st = ZCOLL_OK;
  if (!l)
    st = unknown("zcoll_comm_destroy");
  else if (l->state != ALIVE)
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                     "zcoll_comm_destroy: another thread is %s this communicator",
                     l->state == ABORTING ? "aborting" : "destroying");
  else
    l->state = DESTROYING;
  pthread_mutex_unlock(&mu);
  return st;
}

static void set_state(struct zcoll_comm *comm, int from, int to) {
  lock();
  struct live *l = find(comm);
  if (l && l->state == from) {
    l->state = to;
    pthread_cond_broadcast(&gone); /* an abort waiting for the call that gave up takes over */
  }
  pthread_mutex_unlock(&mu);
}

void zcoll__registry_destroy_cancel(struct zcoll_comm *comm) { set_state(comm, DESTROYING, ALIVE); }

void zcoll__registry_abort_cancel(struct zcoll_comm *comm) { set_state(comm, ABORTING, ALIVE); }

void zcoll__registry_remove(struct zcoll_comm *comm) {
  lock();
  struct live *l = find(comm);
  if (l) {
    *l = lives[--nlives];
    pthread_cond_broadcast(&gone);
  }
  pthread_mutex_unlock(&mu);
}

zcoll_status_t zcoll__registry_abort_begin(struct zcoll_comm *comm, double seconds) {
  lock();
  struct live *l = find(comm);
  if (!l) {
    pthread_mutex_unlock(&mu);
    return unknown("zcoll_comm_abort");
  }
  if (l->state == ALIVE) {
    l->state = ABORTING;
    pthread_mutex_unlock(&mu);
    return ZCOLL_OK;
  }
  /* Destroy (or another abort) owns the freeing. A revoke makes a destroy end at its
   * next look (every wait in it watches the revoke's eventfd) with PEER_FAILED, telling
   * the peers; then wait until it has freed the communicator, so that when abort returns
   * the communicator is gone, whoever freed it. Under the lock: destroy frees only after
   * taking comm out of the live set, under the same lock. */
  zcoll_comm_revoke(comm);
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += (time_t)seconds;
  int rc = 0;
  while ((l = find(comm)) && rc != ETIMEDOUT) {
    /* The destroy (or the other abort) gave up before freeing -- a request in flight, a
     * call running: nobody else will free comm now, so this abort does. */
    if (l->state == ALIVE) {
      l->state = ABORTING;
      pthread_mutex_unlock(&mu);
      return ZCOLL_OK;
    }
    rc = pthread_cond_timedwait(&gone, &mu, &until);
  }
  int still = l != NULL;
  pthread_mutex_unlock(&mu);
  if (still)
    return zcoll__fail(ZCOLL_ERR_TIMEOUT,
                       "zcoll_comm_abort: the communicator is being destroyed or aborted on "
                       "another thread, which has not ended within %.0f s; it is revoked",
                       seconds);
  return ZCOLL_IN_PROGRESS;
}

zcoll_status_t zcoll__registry_hold(struct zcoll_comm *comm, const char *fn) {
  lock();
  if (find(comm)) return ZCOLL_OK;
  pthread_mutex_unlock(&mu);
  return unknown(fn);
}

void zcoll__registry_unhold(void) { pthread_mutex_unlock(&mu); }
