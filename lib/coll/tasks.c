/*
 * tasks.c -- the task-based vector interface (zcoll.h): keys, the local fold of the tasks'
 * commits, and the pump that orders and runs the keys' allreduces (protocol: tasks.h).
 *
 * Threads. zcoll_vec_commit runs on any thread and takes only the key's lock: it folds
 * the vector in and, at the round's last commit, moves whatever can move if the
 * communicator is free (zcoll__try_enter), else leaves it to the thread inside (a
 * zcoll_vec_get) or to the progress thread, which it wakes. The pump runs on the
 * communicator (entered, or under the progress thread's lock): it sends READYs, takes
 * rank 0's GOs in order, and starts and ends each key's persistent allreduce, which
 * reduces the local fold in place.
 */
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/comm.h"
#include "core/guard.h"
#include "base/clock.h"
#include "base/log.h"
#include "kernels/op.h"
#include "kernels/reduce.h"
#include "tasks.h"
#include "progress_thread.h"
#include "request.h"
#include "core/exec.h"
#include "core/report.h"

/* The round being collected (commits go in) moves COLLECTING -> FULL (every local task
 * committed) -> REDUCING (rank 0 said go) -> done, and the next round is collected.
 * Rounds alternate between two buffers, so that the next round's commits may come in
 * while the last round's result waits for its zcoll_vec_get. */
enum { COLLECTING, FULL, REDUCING, FAILED };

struct zcoll_vec {
  zcoll_comm_t *comm;
  struct zcoll_vec *next; /* in the communicator's list */
  char key[ZCOLL_VEC_KEY_MAX];
  int tasks;
  size_t count, bytes;
  zcoll_dtype_t dtype;
  zcoll_op_t op;                   /* as given: AVG divides by the global tasks at the end */
  const struct zcoll__op_def *uop; /* a created op, referenced; NULL */
  zcoll_request_t *req[2];         /* the persistent allreduce of each buffer, in place */
  char *buf[2];                    /* round n's fold, then its result: buf[n % 2] */
  pthread_mutex_t mu;
  /* under mu */
  int commits;
  uint32_t round;    /* being collected; every earlier round is done */
  uint32_t gotten;   /* rounds delivered by zcoll_vec_get: the next get returns this one */
  int state;         /* of `round` */
  uint64_t total[2]; /* per buffer: the global number of tasks of its round */
  zcoll_status_t error;
  char why[400];
  /* on the communicator only */
  int ready_sent;
};

struct go {
  struct go *next;
  char key[ZCOLL_VEC_KEY_MAX];
  uint32_t round;
  uint64_t total;
};

struct zcoll__vecs {
  struct zcoll_vec *list;
  struct go *gos, **gos_tail; /* rank 0's GOs not yet started here, in order */
  struct zcoll__vec_seq *seq; /* rank 0 */
  int pumped;                 /* registered with the progress thread (vecs_pass) */
};

static struct zcoll_vec *find(const zcoll_comm_t *comm, const char *key) {
  for (struct zcoll_vec *v = comm->coll.vecs ? comm->coll.vecs->list : NULL; v; v = v->next)
    if (strcmp(v->key, key) == 0) return v;
  return NULL;
}

static void fail_vec(struct zcoll_vec *v, zcoll_status_t st, const char *why) {
  pthread_mutex_lock(&v->mu);
  if (v->state != FAILED) {
    v->state = FAILED;
    v->error = st;
    snprintf(v->why, sizeof(v->why), "%s", why);
  }
  pthread_mutex_unlock(&v->mu);
}

/* ---- messages ---- */

static zcoll_status_t enqueue_go(zcoll_comm_t *comm, const struct zcoll__vec_msg *m) {
  struct go *g = malloc(sizeof(*g));
  if (!g) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for the vector interface");
  *g = (struct go){NULL, "", m->round, m->total};
  memcpy(g->key, m->key, sizeof(g->key));
  struct zcoll__vecs *vs = comm->coll.vecs;
  if (!vs->gos_tail) vs->gos_tail = &vs->gos;
  *vs->gos_tail = g;
  vs->gos_tail = &g->next;
  return ZCOLL_OK;
}

/* What rank 0 decides reaches rank `to`; its own, at once. */
static zcoll_status_t deliver(zcoll_comm_t *comm, const struct zcoll__vec_msg *m) {
  if (m->kind == ZCOLL_VM_GO) return enqueue_go(comm, m);
  struct zcoll_vec *v = find(comm, m->key); /* REFUSE */
  if (v) fail_vec(v, ZCOLL_ERR_MISMATCH, m->why);
  return ZCOLL_OK;
}

static zcoll_status_t seq_send(void *arg, int to, const struct zcoll__vec_msg *m) {
  zcoll_comm_t *comm = arg;
  if (to == 0) return deliver(comm, m);
  uint8_t wire[ZCOLL_VM_BYTES];
  zcoll__vm_pack(m, wire);
  return zcoll__bootstrap_ctl_send(comm->bs, to, wire, sizeof(wire));
}

/* To rank 0's sequencer: through the rendezvous connection, or straight in on rank 0. */
static zcoll_status_t tell_root(zcoll_comm_t *comm, const struct zcoll__vec_msg *m) {
  if (comm->rank == 0)
    return zcoll__vec_seq_take(&comm->coll.vecs->seq, comm->size, 0, m, seq_send, comm);
  uint8_t wire[ZCOLL_VM_BYTES];
  zcoll__vm_pack(m, wire);
  return zcoll__bootstrap_ctl_send(comm->bs, 0, wire, sizeof(wire));
}

static zcoll_status_t take_messages(zcoll_comm_t *comm, int *progress) {
  zcoll_status_t st = zcoll__bootstrap_check(comm->bs);
  int from;
  void *raw;
  uint32_t len;
  while (st == ZCOLL_OK && zcoll__bootstrap_ctl_take(comm->bs, &from, &raw, &len)) {
    struct zcoll__vec_msg m;
    *progress = 1;
    if (zcoll__vm_unpack(raw, len, &m))
      st = zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "vector protocol: a malformed message from rank %d",
                       from);
    else if (comm->rank == 0)
      st = zcoll__vec_seq_take(&comm->coll.vecs->seq, comm->size, from, &m, seq_send, comm);
    else
      st = deliver(comm, &m);
    free(raw);
  }
  return st;
}

/* ---- the pump ---- */

static zcoll_status_t start_gos(zcoll_comm_t *comm, int *progress) {
  struct zcoll__vecs *vs = comm->coll.vecs;
  while (vs->gos) {
    struct go *g = vs->gos;
    struct zcoll_vec *v = find(comm, g->key);
    int ok = 0;
    if (v) {
      pthread_mutex_lock(&v->mu);
      if ((ok = v->state == FULL && v->round == g->round)) v->state = REDUCING;
      pthread_mutex_unlock(&v->mu);
    }
    if (!ok)
      return zcoll__fail(ZCOLL_ERR_BOOTSTRAP,
                         "vector protocol: rank 0 started round %u of key '%s', which this rank "
                         "is not ready for",
                         g->round, g->key);
    v->total[g->round % 2] = g->total;
    v->ready_sent = 0;
    if (!(vs->gos = g->next)) vs->gos_tail = &vs->gos;
    free(g);
    *progress = 1;
    zcoll_status_t st = zcoll__request_start(v->req[v->round % 2]);
    if (st != ZCOLL_OK) return st;
  }
  return ZCOLL_OK;
}

zcoll_status_t zcoll__vecs_pump(zcoll_comm_t *comm, int *progress) {
  zcoll_status_t st = take_messages(comm, progress);
  for (struct zcoll_vec *v = comm->coll.vecs->list; v && st == ZCOLL_OK; v = v->next) {
    pthread_mutex_lock(&v->mu);
    int ready = v->state == FULL && !v->ready_sent;
    uint32_t round = v->round;
    pthread_mutex_unlock(&v->mu);
    if (!ready) continue;
    v->ready_sent = 1;
    *progress = 1;
    struct zcoll__vec_msg m = {.kind = ZCOLL_VM_READY, .round = round};
    memcpy(m.key, v->key, sizeof(m.key));
    st = tell_root(comm, &m);
  }
  if (st == ZCOLL_OK) st = start_gos(comm, progress);
  for (struct zcoll_vec *v = comm->coll.vecs->list; v && st == ZCOLL_OK; v = v->next) {
    pthread_mutex_lock(&v->mu);
    int reducing = v->state == REDUCING; /* only the pump moves a key out of REDUCING */
    uint32_t round = v->round;
    pthread_mutex_unlock(&v->mu);
    if (!reducing) continue;
    zcoll_status_t rs = zcoll__request_test(v->req[round % 2]);
    if (rs == ZCOLL_IN_PROGRESS) continue;
    *progress = 1;
    if (rs != ZCOLL_OK) {
      fail_vec(v, rs, zcoll__last_error());
      continue;
    }
    pthread_mutex_lock(&v->mu); /* done: the next round is collected in the other buffer */
    v->round++;
    v->commits = 0;
    v->state = COLLECTING;
    pthread_mutex_unlock(&v->mu);
  }
  if (st != ZCOLL_OK) /* the communicator is gone for the keys too */
    for (struct zcoll_vec *v = comm->coll.vecs->list; v; v = v->next)
      fail_vec(v, st, zcoll__last_error());
  return st;
}

/* The progress thread's pump (progress_thread.h), registered with the first key. */
static zcoll_status_t vecs_pass(void *arg, int *progress) {
  zcoll_comm_t *comm = arg;
  return comm->coll.vecs ? zcoll__vecs_pump(comm, progress) : ZCOLL_OK;
}

/* ---- the calls ---- */

/* 31 bits of FNV-1a: in each round's description, so that rounds pair only with
 * rounds of the same key. */
static int32_t key_tag(const char *key) {
  uint32_t h = 2166136261u;
  for (const unsigned char *p = (const unsigned char *)key; *p; p++) h = (h ^ *p) * 16777619u;
  return (int32_t)(h & 0x7fffffff);
}

static zcoll_status_t check_op(zcoll_vec_t *v) {
  if ((unsigned)v->op < ZCOLL_OP_COUNT) return ZCOLL_OK;
  if (!(v->uop = zcoll__op_get(v->op, "zcoll_vec_init"))) return ZCOLL_ERR_INVALID_ARG;
  if (!v->uop->commutative)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "zcoll_vec_init: key '%s': tasks commit in any order, so the op must be "
                       "commutative",
                       v->key);
  return ZCOLL_OK;
}

static void vec_destroy(zcoll_vec_t *v) {
  for (int i = 0; i < 2; i++) {
    if (v->req[i] && zcoll__request_free(v->req[i]) != ZCOLL_OK)
      v->buf[i] = NULL; /* still in flight (not reachable: callers check): leak, not crash */
    free(v->buf[i]);
  }
  zcoll__op_put(v->uop);
  pthread_mutex_destroy(&v->mu);
  free(v);
}

zcoll_status_t zcoll_vec_init(zcoll_comm_t *comm, const char *key, int local_tasks, size_t count,
                              zcoll_dtype_t dtype, zcoll_op_t op, zcoll_vec_t **vec) {
  if (!comm || !key || !vec)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_vec_init: comm, key or vec is NULL");
  if (!key[0] || strlen(key) >= ZCOLL_VEC_KEY_MAX)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_vec_init: a key has 1 to %d bytes",
                       ZCOLL_VEC_KEY_MAX - 1);
  if (local_tasks < 1)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "zcoll_vec_init: key '%s': %d local tasks (at least 1)", key, local_tasks);
  if ((unsigned)dtype >= ZCOLL_DTYPE_COUNT)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_vec_init: unknown dtype %d", (int)dtype);
  if (count > (size_t)PTRDIFF_MAX / zcoll__dsize(dtype))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_vec_init: count %zu overflows", count);
  zcoll_status_t st = zcoll__enter(comm, "zcoll_vec_init");
  if (st != ZCOLL_OK) return st;
  zcoll_vec_t *v = calloc(1, sizeof(*v));
  if ((st = zcoll__check_usable(comm)) != ZCOLL_OK) goto out;
  if (!v || (!comm->coll.vecs && !(comm->coll.vecs = calloc(1, sizeof(*comm->coll.vecs))))) {
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for key '%s'", key);
    goto out;
  }
  if (!comm->coll.vecs->pumped) { /* the progress thread moves the keys from now on */
    if ((st = zcoll__pump_add(comm, vecs_pass, NULL, comm)) != ZCOLL_OK) goto out;
    comm->coll.vecs->pumped = 1;
  }
  if (find(comm, key)) {
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_vec_init: key '%s' is in use on this rank", key);
    goto out;
  }
  v->comm = comm;
  snprintf(v->key, sizeof(v->key), "%s", key);
  v->tasks = local_tasks;
  v->count = count;
  v->dtype = dtype;
  v->op = op;
  v->bytes = count * zcoll__dsize(dtype);
  pthread_mutex_init(&v->mu, NULL);
  if ((st = check_op(v)) != ZCOLL_OK) goto out;
  for (int i = 0; i < 2; i++) {
    if (!(v->buf[i] = malloc(v->bytes ? v->bytes : 1))) {
      st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for key '%s' (2 x %zu bytes)", key,
                       v->bytes);
      goto out;
    }
    if ((st = zcoll__request_prepare(comm, ZCOLL_IN_PLACE, v->buf[i], count, dtype,
                                     op == ZCOLL_AVG ? ZCOLL_SUM : op, key_tag(key), &v->req[i])) !=
        ZCOLL_OK)
      goto out;
  }
  struct zcoll__vec_msg m = {.kind = ZCOLL_VM_INIT,
                             .tasks = (uint32_t)local_tasks,
                             .dtype = (uint32_t)dtype,
                             .op = (uint32_t)op,
                             .op_tag = v->uop ? zcoll__op_tag(v->uop) : 0,
                             .count = count};
  memcpy(m.key, v->key, sizeof(m.key));
  v->next = comm->coll.vecs->list;
  comm->coll.vecs->list = v;
  if ((st = tell_root(comm, &m)) != ZCOLL_OK) {
    comm->coll.vecs->list = v->next;
    goto out;
  }
  *vec = v;
  v = NULL;
out:
  if (v && v->comm)
    vec_destroy(v);
  else
    free(v);
  st = zcoll__report(comm, st);
  zcoll__leave(comm);
  return st;
}

/* Folds buf into the round (under v->mu): the first commit copies, the others reduce;
 * an error if the op's function failed (then the round's fold is lost). */
static zcoll_status_t fold(zcoll_vec_t *v, const void *buf) {
  char *acc = v->buf[v->round % 2];
  if (!v->commits) {
    if (buf && v->bytes) memcpy(acc, buf, v->bytes); /* buf may be NULL for 0 bytes */
  } else if (!v->uop) {
    zcoll_op_t op = v->op == ZCOLL_AVG ? ZCOLL_SUM : v->op;
    zcoll__reduce(v->dtype, op, acc, acc, buf, v->count, 0);
  } else if (v->uop->kind == ZCOLL_OPK_PREMUL) { /* the rank's sum, scaled once, globally */
    zcoll__reduce(v->dtype, ZCOLL_SUM, acc, acc, buf, v->count, 0);
  } else {
    return zcoll__op_call(v->uop, buf, acc, v->count, v->dtype, v->comm->rank);
  }
  return ZCOLL_OK;
}

zcoll_status_t zcoll_vec_commit(zcoll_vec_t *v, const void *buf) {
  if (!v) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_vec_commit: vec is NULL");
  if (!buf && v->bytes)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_vec_commit: key '%s': buf is NULL", v->key);
  pthread_mutex_lock(&v->mu);
  zcoll_status_t st = ZCOLL_OK;
  if (v->state == FAILED)
    st = zcoll__fail(v->error, "zcoll_vec_commit: key '%s' failed: %s", v->key, v->why);
  else if (v->state != COLLECTING)
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                     "zcoll_vec_commit: key '%s': more commits than tasks (all %d of this "
                     "rank's are in for round %u, which is not done yet)",
                     v->key, v->tasks, v->round);
  else if (v->round > v->gotten + 1) /* its buffer still holds a result not yet taken */
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                     "zcoll_vec_commit: key '%s': more commits than tasks (rounds %u and %u are "
                     "done and round %u has not been taken by zcoll_vec_get yet)",
                     v->key, v->round - 2, v->round - 1, v->gotten);
  if (st == ZCOLL_OK && (st = fold(v, buf)) != ZCOLL_OK) { /* the key cannot go on */
    v->state = FAILED;
    v->error = st;
    snprintf(v->why, sizeof(v->why), "%s", zcoll__last_error());
  } else if (st == ZCOLL_OK && ++v->commits == v->tasks) {
    v->state = FULL;
  }
  int full = st == ZCOLL_OK && v->state == FULL;
  /* Read before unlocking: once the lock is let go, another thread may take the round to
   * its end, get it and free the key. */
  zcoll_comm_t *comm = v->comm;
  pthread_mutex_unlock(&v->mu);
  if (!full) return st;
  /* The round's last commit: move it now if the communicator is free. */
  if (comm->progress.on) {
    zcoll__progress_thread_wake(comm);
  } else if (zcoll__try_enter(comm)) {
    int progress = 0;
    if (zcoll__check_usable(comm) == ZCOLL_OK) zcoll__vecs_pump(comm, &progress);
    zcoll__leave(comm);
  }
  return ZCOLL_OK;
}

/* The round's result to out (under v->mu): AVG divides by the number of tasks, once. */
static void deliver_result(zcoll_vec_t *v, uint32_t round, void *out) {
  const char *res = v->buf[round % 2];
  uint64_t total = v->total[round % 2];
  if (v->op == ZCOLL_AVG && total > 1)
    zcoll__reduce_scale(v->dtype, out, res, v->count, (int)total);
  else if (out && v->bytes)
    memcpy(out, res, v->bytes);
}

/* Why the round is not done after the timeout, in words that say what to fix. */
static zcoll_status_t timed_out(zcoll_vec_t *v, double timeout) {
  zcoll_comm_t *comm = v->comm;
  pthread_mutex_lock(&v->mu);
  int state = v->state, commits = v->commits;
  uint32_t round = v->round;
  pthread_mutex_unlock(&v->mu);
  if (state == COLLECTING)
    return zcoll__fail(ZCOLL_ERR_TIMEOUT,
                       "zcoll_vec_get: key '%s' round %u: only %d of this rank's %d tasks "
                       "committed within %.0f s (ZCOLL_TIMEOUT)",
                       v->key, round, commits, v->tasks, timeout);
  char why[300] = "";
  if (comm->rank == 0 && comm->coll.vecs)
    zcoll__vec_seq_why(comm->coll.vecs->seq, comm->size, v->key, round, why, sizeof(why));
  return zcoll__fail(ZCOLL_ERR_TIMEOUT,
                     "zcoll_vec_get: key '%s' round %u not started within %.0f s (ZCOLL_TIMEOUT): "
                     "%s",
                     v->key, round, timeout,
                     why[0] ? why
                            : "a rank has not initialized the key or not committed all its "
                              "tasks (rank 0's error names it)");
}

/* On the communicator: pump until v's round ends, waiting cheaply in between. */
static zcoll_status_t drive(zcoll_vec_t *v, double deadline, double timeout) {
  zcoll_comm_t *comm = v->comm;
  for (;;) {
    zcoll_status_t st = zcoll__check_usable(comm);
    int progress = 0;
    if (st == ZCOLL_OK && (st = zcoll__vecs_pump(comm, &progress)) != ZCOLL_OK)
      return zcoll__comm_break(comm, st); /* as the progress thread does: tell the peers */
    if (st != ZCOLL_OK) return st;
    pthread_mutex_lock(&v->mu);
    int state = v->state, done = v->round > v->gotten;
    uint32_t round = v->round;
    pthread_mutex_unlock(&v->mu);
    if (done || state == FAILED) return ZCOLL_OK;
    if (state == REDUCING) {
      /* Its collective ends whatever else happens (every rank has started it), and the
       * executor waits well; messages for other keys wait meanwhile. */
      if ((st = zcoll__request_wait(v->req[round % 2])) != ZCOLL_OK) return st;
      continue;
    }
    if (progress) continue;
    if (timeout > 0 && ((double)zcoll__now_ns() * 1e-9) > deadline) return timed_out(v, timeout);
    /* Waiting for commits (other threads) or for rank 0's go: sleep on the rendezvous
     * sockets and the wake-up descriptor, 1 ms at most. */
    struct pollfd *fds = comm->pollfds;
    int n = zcoll__bootstrap_pollfds(comm->bs, fds, comm->size);
    fds[n++] = (struct pollfd){.fd = comm->wake_fd, .events = POLLIN};
    if (poll(fds, (nfds_t)n, 1) > 0 && fds[n - 1].revents) {
      uint64_t drained;
      ssize_t got = read(comm->wake_fd, &drained, sizeof(drained));
      (void)got;
    }
  }
}

static zcoll_status_t get(zcoll_vec_t *v, void *out);

zcoll_status_t zcoll_vec_get(zcoll_vec_t *v, void *out) {
  if (!v) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_vec_get: vec is NULL");
  if (!out && v->bytes)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_vec_get: key '%s': out is NULL", v->key);
  /* Counted, so that zcoll_comm_abort from a watchdog frees nothing under it. */
  zcoll_comm_t *comm = v->comm;
  atomic_fetch_add(&comm->vec_waiters, 1);
  zcoll_status_t st = get(v, out);
  atomic_fetch_sub(&comm->vec_waiters, 1);
  return st;
}

static zcoll_status_t get(zcoll_vec_t *v, void *out) {
  zcoll_comm_t *comm = v->comm;
  double timeout = comm->cfg->timeout, deadline = ((double)zcoll__now_ns() * 1e-9) + timeout;
  for (;;) {
    if (atomic_load(&comm->revoked))
      return zcoll__fail(ZCOLL_ERR_PEER_FAILED,
                         "zcoll_vec_get: key '%s': rank %d's communicator was revoked (or "
                         "aborted)",
                         v->key, comm->rank);
    pthread_mutex_lock(&v->mu);
    if (v->round > v->gotten) { /* a round done and not yet taken: this get's */
      deliver_result(v, v->gotten++, out);
      pthread_mutex_unlock(&v->mu);
      return ZCOLL_OK;
    }
    if (v->state == FAILED) {
      zcoll_status_t st = strstr(v->why, v->key)
                              ? zcoll__fail(v->error, "zcoll_vec_get: %s", v->why)
                              : zcoll__fail(v->error, "zcoll_vec_get: key '%s': %s", v->key,
                                            v->why);
      pthread_mutex_unlock(&v->mu);
      return st;
    }
    pthread_mutex_unlock(&v->mu);
    if (zcoll__try_enter(comm)) { /* this thread moves everything meanwhile */
      zcoll_status_t st = drive(v, deadline, timeout);
      /* A timeout harms nothing (the round may still end later); anything else is the
       * communicator's end, and the key's. */
      if (st != ZCOLL_OK && st != ZCOLL_ERR_TIMEOUT) fail_vec(v, st, zcoll__last_error());
      zcoll__report(comm, st);
      zcoll__leave(comm);
      if (st == ZCOLL_ERR_TIMEOUT) return st;
      continue;
    }
    if (timeout > 0 && ((double)zcoll__now_ns() * 1e-9) > deadline) return timed_out(v, timeout);
    struct timespec nap = {0, 100000}; /* another thread (or the progress thread) moves it */
    nanosleep(&nap, NULL);
  }
}

zcoll_status_t zcoll_vec_free(zcoll_vec_t *v) {
  if (!v) return ZCOLL_OK;
  zcoll_comm_t *comm = v->comm;
  zcoll_status_t st = zcoll__enter(comm, "zcoll_vec_free");
  if (st != ZCOLL_OK) return st;
  pthread_mutex_lock(&v->mu);
  int busy = v->state == REDUCING || v->state == FULL;
  pthread_mutex_unlock(&v->mu);
  for (int i = 0; i < 2; i++) /* a failed key's allreduce may not have ended yet */
    busy |= v->req[i] && zcoll__request_test(v->req[i]) == ZCOLL_IN_PROGRESS;
  if (busy) {
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                     "zcoll_vec_free: key '%s' round %u is on its way (zcoll_vec_get it first)",
                     v->key, v->round);
  } else {
    struct zcoll_vec **pp = &comm->coll.vecs->list;
    while (*pp != v) pp = &(*pp)->next;
    *pp = v->next;
    struct zcoll__vec_msg m = {.kind = ZCOLL_VM_FREE};
    memcpy(m.key, v->key, sizeof(m.key));
    if (zcoll__check_usable(comm) == ZCOLL_OK) st = tell_root(comm, &m);
    vec_destroy(v);
  }
  st = zcoll__report(comm, st);
  zcoll__leave(comm);
  return st;
}

void zcoll__vecs_release(zcoll_comm_t *comm) {
  struct zcoll__vecs *vs = comm->coll.vecs;
  if (!vs) return;
  if (vs->pumped) zcoll__pump_remove(comm, vecs_pass, comm);
  while (vs->list) {
    struct zcoll_vec *v = vs->list;
    vs->list = v->next;
    v->req[0] = v->req[1] = NULL; /* the communicator's requests go with it */
    vec_destroy(v);
  }
  while (vs->gos) {
    struct go *g = vs->gos;
    vs->gos = g->next;
    free(g);
  }
  zcoll__vec_seq_free(vs->seq);
  free(vs);
  comm->coll.vecs = NULL;
}
