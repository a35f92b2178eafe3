/*
 * unique_id.c -- a communicator from an id the application moves itself (NCCL's shape):
 * zcoll_get_unique_id in the process that will be rank 0, zcoll_comm_init_rank everywhere.
 *
 * The id holds rank 0's rendezvous address and a fresh secret key, so that a job started
 * this way is authenticated like any other (the key is the job key: every rank proves it
 * knows it). Making the id already listens, so that ranks may init in any order; the
 * listening socket waits here, in a process-wide table under the id's random nonce, for
 * rank 0's init to take it. Single use: rank 0's init takes the socket out of the table
 * (a second init with the id finds nothing there), and the rendezvous closes it once every
 * rank has joined or ZCOLL_TIMEOUT has passed; a rank that comes later is refused at once
 * (the socket listened before any rank could start: a refusal is final), one with a
 * forged key fails the rendezvous's authentication. Ids never taken close after
 * ZCOLL_TIMEOUT, when the next id is made.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/log.h"
#include "init.h"

#define UID_MAGIC "ZCID"
#define UID_VERSION 1
#define UID_PENDING_MAX 64

/* The id's bytes. Plain bytes and a string: the same on every architecture. */
struct uid_wire {
  char magic[4];
  uint8_t version, pad[3];
  uint8_t nonce[16]; /* this id's entry in its maker's table */
  uint8_t key[32];   /* the job key's bytes */
  char root[72];     /* "host:port", NUL-terminated */
};
_Static_assert(sizeof(struct uid_wire) == sizeof(zcoll_unique_id_t), "an id is 128 bytes");

struct pending {
  uint8_t nonce[16];
  int fd;             /* listening; -1: a free entry */
  int64_t expires_ns; /* 0: never */
};

static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;
static struct pending table[UID_PENDING_MAX];
static int table_ready;

static void table_init(void) {
  if (table_ready) return;
  for (int i = 0; i < UID_PENDING_MAX; i++) table[i].fd = -1;
  table_ready = 1;
}

/* Ids made here but never taken by a rank 0, past their time: their sockets close. */
static void table_expire(int64_t now) {
  for (int i = 0; i < UID_PENDING_MAX; i++)
    if (table[i].fd >= 0 && table[i].expires_ns && now > table[i].expires_ns) {
      close(table[i].fd);
      table[i].fd = -1;
    }
}

static zcoll_status_t random_bytes(void *buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t n = getrandom((char *)buf + got, len - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "getrandom: %s", strerror(errno));
    got += (size_t)n;
  }
  return ZCOLL_OK;
}

/* Makes an id listening on host (":0": any port), or where zcoll_get_unique_id says. */
static zcoll_status_t make(const char *host, double timeout, zcoll_unique_id_t *id) {
  struct uid_wire w;
  memset(&w, 0, sizeof(w));
  memcpy(w.magic, UID_MAGIC, 4);
  w.version = UID_VERSION;
  int fd = -1;
  zcoll_status_t st = random_bytes(w.nonce, sizeof(w.nonce));
  if (st == ZCOLL_OK) st = random_bytes(w.key, sizeof(w.key));
  /* Where the ranks reach it: the host given, else this host's first address others
   * reach, else (only loopback is up: nobody else could) 127.0.0.1; always a fresh port,
   * since an id serves one job. */
  if (st == ZCOLL_OK && host)
    st = zcoll__listen_at(host, w.root, sizeof(w.root), &fd);
  else if (st == ZCOLL_OK && zcoll__listen_reachable(0, w.root, sizeof(w.root), &fd) != ZCOLL_OK) {
    zcoll_log_debug("unique id: %s; listening on 127.0.0.1", zcoll__last_error());
    st = zcoll__listen_reachable(1, w.root, sizeof(w.root), &fd);
  }
  if (st != ZCOLL_OK) return st;
  int64_t expires = timeout > 0 ? zcoll__now_ns() + (int64_t)(timeout * 1e9) : 0;
  pthread_mutex_lock(&table_mu);
  table_init();
  table_expire(zcoll__now_ns());
  int slot = -1;
  for (int i = 0; i < UID_PENDING_MAX && slot < 0; i++)
    if (table[i].fd < 0) slot = i;
  if (slot >= 0) {
    memcpy(table[slot].nonce, w.nonce, sizeof(w.nonce));
    table[slot].fd = fd;
    table[slot].expires_ns = expires;
  }
  pthread_mutex_unlock(&table_mu);
  if (slot < 0) {
    close(fd);
    explicit_bzero(&w, sizeof(w));
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "zcoll_get_unique_id: %d ids made here wait for their rank 0's "
                       "zcoll_comm_init_rank: init with them (or let them expire) first",
                       UID_PENDING_MAX);
  }
  memcpy(id, &w, sizeof(w));
  explicit_bzero(&w, sizeof(w));
  zcoll_log_debug("unique id made: rendezvous at %s", ((const struct uid_wire *)id)->root);
  return ZCOLL_OK;
}

zcoll_status_t zcoll_get_unique_id(zcoll_unique_id_t *id) {
  zcoll__clear_error();
  if (!id) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_get_unique_id: id is NULL");
  zcoll_config_t *cfg;
  zcoll_status_t st = zcoll_config_create(&cfg); /* ZCOLL_ROOT and ZCOLL_TIMEOUT */
  if (st != ZCOLL_OK) return st;
  /* ZCOLL_ROOT's host, a fresh port (ZCOLL_ROOT's may be a launcher's own). */
  char host[sizeof(cfg->root) + 2], *colon = strrchr(cfg->root, ':');
  if (cfg->root[0] && colon)
    snprintf(host, sizeof(host), "%.*s:0", (int)(colon - cfg->root), cfg->root);
  st = make(cfg->root[0] && colon ? host : NULL, cfg->timeout, id);
  zcoll_config_free(cfg);
  return st;
}

zcoll_status_t zcoll__uid_make(int local_only, double timeout, zcoll_unique_id_t *id) {
  return make(local_only ? "127.0.0.1:0" : NULL, timeout, id);
}

/* Rank 0: the listening socket of the id made in this process, taken out of the table. */
static int table_take(const uint8_t nonce[16]) {
  int fd = -1;
  pthread_mutex_lock(&table_mu);
  table_init();
  for (int i = 0; i < UID_PENDING_MAX && fd < 0; i++)
    if (table[i].fd >= 0 && !memcmp(table[i].nonce, nonce, 16)) {
      fd = table[i].fd;
      table[i].fd = -1;
    }
  pthread_mutex_unlock(&table_mu);
  return fd;
}

zcoll_status_t zcoll__comm_init_uid(zcoll_comm_t **out, const zcoll_unique_id_t *id, int rank,
                                    int size, zcoll_config_t *c, const struct zcoll__share *share) {
  *out = NULL;
  struct uid_wire w;
  memcpy(&w, id, sizeof(w));
  zcoll_status_t st = ZCOLL_OK;
  if (memcmp(w.magic, UID_MAGIC, 4) != 0 || w.version != UID_VERSION ||
      !memchr(w.root, '\0', sizeof(w.root)) || !w.root[0])
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                     "zcoll_comm_init_rank: not a unique id (made by zcoll_get_unique_id of "
                     "this version, moved unchanged)");
  else if (size < 1 || rank < 0 || rank >= size)
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                     "zcoll_comm_init_rank: rank %d of size %d is not a valid rank", rank, size);
  if (st != ZCOLL_OK) {
    explicit_bzero(&w, sizeof(w));
    zcoll_config_free(c);
    return st;
  }
  /* The id says it all: the environment's (and cfg's) rank, size, root and key do not
   * apply, nor do a launcher's hints about local ranks. */
  c->rank = rank;
  c->size = size;
  c->local_rank = c->local_size = -1;
  c->root_fd = -1;
  snprintf(c->root, sizeof(c->root), "%s", w.root);
  for (size_t i = 0; i < sizeof(w.key); i++) snprintf(c->job_key + 2 * i, 3, "%02x", w.key[i]);
  c->require_key = 1;
  struct zcoll__launch given = {"unique id", 0, 0, 1};
  if (rank == 0 && (c->root_fd = table_take(w.nonce)) < 0) {
    explicit_bzero(&w, sizeof(w));
    zcoll_config_free(c);
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "zcoll_comm_init_rank: rank 0 inits in the process that made the id "
                       "(zcoll_get_unique_id), once: this id was not made here, was used "
                       "already, or expired (ZCOLL_TIMEOUT)");
  }
  given.close_root_fd = rank == 0;
  explicit_bzero(&w, sizeof(w));
  return zcoll__comm_init(out, c, &given, share);
}

zcoll_status_t zcoll_comm_init_rank(zcoll_comm_t **out, const zcoll_unique_id_t *id, int rank,
                                    int size, const zcoll_config_t *cfg) {
  zcoll__clear_error();
  if (!out || !id)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_comm_init_rank: %s is NULL",
                       out ? "id" : "comm");
  *out = NULL;
  zcoll_config_t *c;
  zcoll_status_t st = cfg ? zcoll__config_dup(cfg, &c) : zcoll_config_create(&c);
  return st == ZCOLL_OK ? zcoll__comm_init_uid(out, id, rank, size, c, NULL) : st;
}
