/*
 * The transport contract (lib/transport.h), held against every row of the one table of
 * transports (zcoll__transports[], lib/transport.c): a transport added to the table is
 * covered here without a line changed.
 *
 * Each case is a tiny job of two or three ranks: forked processes, since that is what a
 * job is; a transport whose connect says the ranks cannot be separate processes
 * (ZCOLL_ERR_UNSUPPORTED, as loopback's does) gets the same job again as threads of
 * this process. Ranks meet through a shared mapping of our own (a barrier and slots for
 * the address and key blobs), never through the library's bootstrap, so that nothing but
 * the ops table is under test. A rank records its first broken rule in that mapping and
 * gives up; the test process reports every rank's message.
 *
 * ZCOLL_TEST_TRANSPORTS=a,b limits the cases to those rows (ci/test.sh runs the verbs
 * row inside the soft-RoCE guest). A transport that cannot run here is a skip with the
 * probe's reason -- except under ZCOLL_TEST_REQUIRE_RDMA=1 (the rxe harness), where it
 * is a failure, so that CI cannot pass by skipping.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "transport.h"

#define MAXR 3
#define BLOB 8192      /* an address or key: UCX worker addresses run to a few KiB */
#define WAIT_S 30.0    /* the longest any rank waits for anything (TCG guests are slow) */
#define CANARY 0xcb    /* every byte of a receive region no put was aimed at */
#define SCRIBBLE 0xee  /* a source after its PUT_DONE: the transport must be done with it */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the job: ranks, their meeting place, their failures ------------------------------ */

struct shared { /* MAP_SHARED: the same for thread and process ranks */
  _Atomic unsigned arrived, gen; /* the barrier */
  _Atomic int nfail;
  _Atomic int unsupported; /* a connect said: not across processes */
  _Atomic int flag;        /* a step one rank waits for another to take */
  _Atomic int victim_ready, victim_dead;
  char fail[MAXR][1024];
  double seconds[MAXR][2]; /* per rank, case-specific timings for the log */
  size_t addr_len[MAXR], key_len[MAXR];
  unsigned char addr[MAXR][BLOB], key[MAXR][BLOB];
};

struct rank {
  struct shared *sh;
  const struct zcoll_tl_ops *ops;
  int tl_index;
  int rank, size, live; /* live: ranks the barrier waits for */
  int threads;          /* ranks are threads of one process */
  int oversubscribed;
  zcoll_config_t *cfg;
  struct zcoll_tl *tl;
  struct zcoll_ep *ep[MAXR];
  struct zcoll_tl_rkey *rk[MAXR];
  char *region; /* receive region: from mem_alloc if the transport has it */
  size_t region_len;
  struct zcoll_tl_mr *mr;
  char *src; /* source region, registered as a source only */
  size_t src_len;
  struct zcoll_tl_mr *smr;
};

static int fail_(struct rank *r, int line, const char *fmt, ...) {
  char *slot = r->sh->fail[r->rank];
  if (!slot[0]) {
    int k = snprintf(slot, sizeof(r->sh->fail[0]), "line %d: ", line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(slot + k, sizeof(r->sh->fail[0]) - (size_t)k, fmt, ap);
    va_end(ap);
  }
  atomic_fetch_add(&r->sh->nfail, 1);
  return -1;
}
#define CHECK(r, cond, ...)                              \
  do {                                                   \
    if (!(cond)) return fail_((r), __LINE__, __VA_ARGS__); \
  } while (0)
/* A status the contract fixes; the message carries the transport's own words. */
#define CHECK_ST(r, got, want, what)                                                      \
  do {                                                                                    \
    zcoll_status_t got_ = (got);                                                          \
    if (got_ != (want))                                                                   \
      return fail_((r), __LINE__, "%s: %s, the contract says %s (last error: %s)", what,  \
                   zcoll_strerror(got_), zcoll_strerror(want), zcoll_last_error());      \
  } while (0)

static int aborted(struct rank *r) {
  return atomic_load(&r->sh->nfail) || atomic_load(&r->sh->unsupported);
}

/* A barrier among r->live ranks that gives up when another rank has failed. progress:
 * keep polling the transport meanwhile (events are dropped: the body has counted what it
 * expected), because a peer's puts may need this rank's progress to complete -- over UCX
 * the sender's completion waits for the receiver's acknowledgement of a rendezvous, which
 * the receiver sends from its poll. */
static int sync_ranks_progress(struct rank *r, int progress) {
  struct shared *sh = r->sh;
  unsigned g = atomic_load(&sh->gen);
  if (atomic_fetch_add(&sh->arrived, 1) + 1 == (unsigned)r->live) {
    atomic_store(&sh->arrived, 0);
    atomic_fetch_add(&sh->gen, 1);
    return 0;
  }
  double t0 = now();
  while (atomic_load(&sh->gen) == g) {
    if (aborted(r)) return -1;
    CHECK(r, now() - t0 < WAIT_S, "the other ranks did not meet in %.0f s", WAIT_S);
    if (progress && r->tl) {
      struct zcoll_tl_event ev[16];
      int n;
      (void)r->ops->poll(r->tl, ev, 16, &n); /* a failed instance's status: not this wait's */
    }
    usleep(200);
  }
  return 0;
}

static int sync_ranks(struct rank *r) { return sync_ranks_progress(r, 0); }

static int wait_flag(struct rank *r, _Atomic int *f, int value) {
  double t0 = now();
  while (atomic_load(f) < value) {
    if (aborted(r)) return -1;
    CHECK(r, now() - t0 < WAIT_S, "waited %.0f s for another rank's step", WAIT_S);
    usleep(200);
  }
  return 0;
}

/* ---- setup and teardown ------------------------------------------------------------- */

/* The caller's mistakes the contract says are checked first, tried on a fresh instance
 * before and around the real connect: each must fail with the documented status and
 * leave the instance fit for the real thing. */
static int bad_setup_calls(struct rank *r) {
  char buf[BLOB];
  size_t n = 1;
  CHECK_ST(r, r->ops->address(r->tl, buf, &n), ZCOLL_ERR_INVALID_ARG,
           "address() into a 1-byte buffer");
  int peer = (r->rank + 1) % r->size;
  const void *a[1] = {r->sh->addr[peer]};
  size_t len[1] = {r->sh->addr_len[peer]};
  int bad[3] = {r->rank, r->size, -1};
  for (int i = 0; i < 3; i++) {
    struct zcoll_ep *ep = (void *)&n; /* outputs are set only on success */
    CHECK_ST(r, r->ops->connect(r->tl, 1, &bad[i], a, len, &ep), ZCOLL_ERR_INVALID_ARG,
             bad[i] == r->rank ? "connect() to its own rank"
                               : bad[i] < 0 ? "connect() to rank -1" : "connect() to rank size");
    CHECK(r, ep == (void *)&n, "a failed connect() wrote its output");
  }
  return 0;
}

static int open_tl(struct rank *r, struct zcoll_tl **tl) {
  struct zcoll_tl_params p = {.rank = r->rank, .size = r->size, .cfg = r->cfg,
                              .oversubscribed = r->oversubscribed};
  CHECK_ST(r, r->ops->open(&p, tl), ZCOLL_OK, "open()");
  return 0;
}

enum { SETUP_PLAIN = 0, SETUP_BAD_CALLS = 1 };

static int setup(struct rank *r, size_t region_len, size_t src_len, int how) {
  r->live = r->size;
  CHECK(r, zcoll_config_create(&r->cfg) == ZCOLL_OK, "config: %s", zcoll_last_error());
  r->cfg->rank = r->rank;
  r->cfg->size = r->size;
  r->cfg->timeout = WAIT_S;
  if (open_tl(r, &r->tl)) return -1;
  size_t n = BLOB;
  CHECK_ST(r, r->ops->address(r->tl, r->sh->addr[r->rank], &n), ZCOLL_OK, "address()");
  r->sh->addr_len[r->rank] = n;
  if (sync_ranks(r)) return -1;
  if (how == SETUP_BAD_CALLS && bad_setup_calls(r)) return -1;
  int ranks[MAXR], k = 0;
  const void *addrs[MAXR];
  size_t lens[MAXR];
  struct zcoll_ep *eps[MAXR];
  for (int i = 0; i < r->size; i++)
    if (i != r->rank) {
      ranks[k] = i;
      addrs[k] = r->sh->addr[i];
      lens[k++] = r->sh->addr_len[i];
    }
  zcoll_status_t st = r->ops->connect(r->tl, k, ranks, addrs, lens, eps);
  if (st == ZCOLL_ERR_UNSUPPORTED && !r->threads) {
    atomic_store(&r->sh->unsupported, 1); /* run again as threads */
    return -1;
  }
  CHECK_ST(r, st, ZCOLL_OK, "connect()");
  for (int i = 0; i < k; i++) r->ep[ranks[i]] = eps[i];

  /* The receive region as the core makes it: the transport's memory if it offers some. */
  r->region_len = region_len;
  if (r->ops->mem_alloc) {
    void *p = NULL;
    CHECK_ST(r, r->ops->mem_alloc(r->tl, region_len, &p), ZCOLL_OK, "mem_alloc()");
    r->region = p;
  } else {
    r->region = mmap(NULL, region_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(r, r->region != MAP_FAILED, "mmap: %s", strerror(errno));
  }
  memset(r->region, CANARY, region_len);
  CHECK_ST(r, r->ops->mem_reg(r->tl, r->region, region_len, 1, &r->mr), ZCOLL_OK,
           "mem_reg(remote = 1) of the receive region");
  r->src_len = src_len;
  r->src = mmap(NULL, src_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(r, r->src != MAP_FAILED, "mmap: %s", strerror(errno));
  CHECK_ST(r, r->ops->mem_reg(r->tl, r->src, src_len, 0, &r->smr), ZCOLL_OK,
           "mem_reg(remote = 0) of a source");
  if (how == SETUP_BAD_CALLS) {
    n = 1;
    CHECK_ST(r, r->ops->rkey_pack(r->mr, r->sh->key[r->rank], &n), ZCOLL_ERR_INVALID_ARG,
             "rkey_pack() into a 1-byte buffer");
    n = BLOB;
    CHECK_ST(r, r->ops->rkey_pack(r->smr, r->sh->key[r->rank], &n), ZCOLL_ERR_INVALID_ARG,
             "rkey_pack() of a source-only region");
  }
  n = BLOB;
  CHECK_ST(r, r->ops->rkey_pack(r->mr, r->sh->key[r->rank], &n), ZCOLL_OK, "rkey_pack()");
  r->sh->key_len[r->rank] = n;
  if (sync_ranks(r)) return -1;
  for (int i = 0; i < r->size; i++)
    if (i != r->rank)
      CHECK_ST(r, r->ops->rkey_unpack(r->ep[i], r->sh->key[i], r->sh->key_len[i], &r->rk[i]),
               ZCOLL_OK, "rkey_unpack()");
  return sync_ranks(r);
}

/* Releases in the core's order: keys, registrations, the instance, then the memory. */
static double teardown(struct rank *r, int meet) {
  /* nobody closes under a peer still at work, nor stops progressing its puts */
  if (meet && !aborted(r)) sync_ranks_progress(r, 1);
  for (int i = 0; i < MAXR; i++)
    if (r->rk[i]) r->ops->rkey_release(r->rk[i]);
  if (r->mr) r->ops->mem_dereg(r->mr);
  if (r->smr) r->ops->mem_dereg(r->smr);
  double t0 = now();
  if (r->tl) r->ops->close(r->tl);
  double took = now() - t0;
  if (r->region && r->region != MAP_FAILED) munmap(r->region, r->region_len);
  if (r->src && r->src != MAP_FAILED) munmap(r->src, r->src_len);
  if (r->cfg) zcoll_config_free(r->cfg);
  return took;
}

/* Polls once; any status but OK is a failure of the case. */
static int poll_ok(struct rank *r, struct zcoll_tl_event *ev, int max, int *n) {
  CHECK_ST(r, r->ops->poll(r->tl, ev, max, n), ZCOLL_OK, "poll()");
  CHECK(r, *n >= 0 && *n <= max, "poll() filled %d of %d events", *n, max);
  return 0;
}

/* ---- running a job ------------------------------------------------------------------ */

typedef int (*body_fn)(struct rank *r);

struct job {
  int tl_index, size, oversubscribed;
  int victim; /* >= 0: this rank is killed (processes) or closed abruptly (threads) */
  body_fn body;
};

static body_fn current_body;

static void *run_thread(void *arg) {
  struct rank *r = arg;
  current_body(r);
  return NULL;
}

static struct shared *run_once(const struct job *j, int threads, double *took) {
  struct shared *sh =
      mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  cr_assert(sh != MAP_FAILED, "mmap: %s", strerror(errno));
  memset(sh, 0, sizeof(*sh));
  struct rank ranks[MAXR];
  for (int i = 0; i < j->size; i++)
    ranks[i] = (struct rank){.sh = sh, .ops = zcoll__transports[j->tl_index].ops,
                             .tl_index = j->tl_index, .rank = i, .size = j->size,
                             .threads = threads, .oversubscribed = j->oversubscribed};
  double t0 = now();
  current_body = j->body;
  if (threads) {
    pthread_t th[MAXR];
    for (int i = 0; i < j->size; i++) pthread_create(&th[i], NULL, run_thread, &ranks[i]);
    for (int i = 0; i < j->size; i++) pthread_join(th[i], NULL);
  } else {
    pid_t pid[MAXR];
    fflush(NULL);
    for (int i = 0; i < j->size; i++) {
      pid[i] = fork();
      cr_assert(pid[i] >= 0, "fork: %s", strerror(errno));
      if (pid[i] == 0) {
        /* A transport that reaches other hosts may leave a death on its own host to the
         * bootstrap (transport.h: UCX does); the one it must see itself is a peer on
         * another host, played by giving each rank a host of its own (lib/node.c). */
        if (j->victim >= 0 && !(zcoll__transports[j->tl_index].flags & ZCOLL_TLE_ONE_HOST))
          setenv("ZCOLL_TEST_SPLIT_NODES", "1", 1);
        _exit(j->body(&ranks[i]) ? 1 : 0);
      }
    }
    if (j->victim >= 0) {
      /* Killed once connected with its keys out: its peers must find out by themselves. */
      while (!atomic_load(&sh->victim_ready) && !aborted(&ranks[0]) && now() - t0 < WAIT_S)
        usleep(1000);
      kill(pid[j->victim], SIGKILL);
      waitpid(pid[j->victim], NULL, 0);
      pid[j->victim] = 0;
      atomic_store(&sh->victim_dead, 1);
    }
    for (int i = 0; i < j->size; i++) {
      if (!pid[i]) continue;
      int ws, done = 0;
      while (!done && now() - t0 < 3 * WAIT_S) {
        pid_t w = waitpid(pid[i], &ws, WNOHANG);
        if (w == pid[i]) done = 1;
        else usleep(2000);
      }
      if (!done) {
        kill(pid[i], SIGKILL);
        waitpid(pid[i], &ws, 0);
        snprintf(sh->fail[i], sizeof(sh->fail[i]), "rank %d hung; killed after %.0f s", i,
                 3 * WAIT_S);
        atomic_fetch_add(&sh->nfail, 1);
      } else if (!(WIFEXITED(ws) && (WEXITSTATUS(ws) == 0 || WEXITSTATUS(ws) == 1))) {
        snprintf(sh->fail[i], sizeof(sh->fail[i]), "rank %d died (wait status %#x)", i, ws);
        atomic_fetch_add(&sh->nfail, 1);
      }
    }
  }
  *took = now() - t0;
  return sh;
}

/* Runs the job as processes, or as threads where the transport refuses processes. */
static struct shared *run(const struct job *j) {
  const char *name = zcoll__transports[j->tl_index].name;
  double took;
  int threads = 0;
  struct shared *sh = run_once(j, 0, &took);
  if (atomic_load(&sh->unsupported) && !atomic_load(&sh->nfail)) {
    munmap(sh, sizeof(*sh));
    threads = 1;
    sh = run_once(j, 1, &took);
  }
  char all[MAXR * 1100] = "";
  for (int i = 0; i < j->size; i++)
    if (sh->fail[i][0]) {
      size_t u = strlen(all);
      snprintf(all + u, sizeof(all) - u, "\n  rank %d: %s", i, sh->fail[i]);
    }
  cr_assert(!atomic_load(&sh->nfail) && !atomic_load(&sh->unsupported),
            "%s (%d ranks as %s): %s", name, j->size, threads ? "threads" : "processes",
            all[0] ? all : " refused processes and threads alike");
  cr_log_info("%s: %d ranks as %s, %.2f s", name, j->size, threads ? "threads" : "processes",
              took);
  return sh;
}

/* ---- which transports --------------------------------------------------------------- */

static int selected(const char *name) {
  const char *v = getenv("ZCOLL_TEST_TRANSPORTS");
  if (!v || !*v) return 1;
  size_t n = strlen(name);
  for (const char *p = v; *p;) {
    size_t k = strcspn(p, ",");
    if (k == n && !strncmp(p, name, n)) return 1;
    p += k + (p[k] == ',');
  }
  return 0;
}

/* The rows under test: all of them, or those ZCOLL_TEST_TRANSPORTS names. */
static struct criterion_test_params table_rows(int need_placement) {
  static int idx[2][ZCOLL_TL_MAX];
  int n = 0;
  for (int i = 0; i < zcoll__ntransports; i++) {
    const struct zcoll_tl_ops *ops = zcoll__transports[i].ops;
    if (!selected(zcoll__transports[i].name)) continue;
    if (need_placement && !(ops && ops->set_placement)) continue;
    idx[need_placement][n++] = i;
  }
  return cr_make_param_array(int, idx[need_placement], (size_t)n);
}

/* Can this row run here? A skip with the reason if not, a failure inside the harness. */
static void need(int i) {
  const struct zcoll__tl_entry *t = &zcoll__transports[i];
  char why[300] = "";
  if (!t->ops) {
    snprintf(why, sizeof(why), "%s", t->missing);
  } else {
    zcoll_config_t *cfg;
    cr_assert_eq(zcoll_config_create(&cfg), ZCOLL_OK);
    cfg->rank = 0;
    if (t->ops->probe(cfg, why, sizeof(why)) == ZCOLL_OK) why[0] = '\0';
    else if (!why[0]) snprintf(why, sizeof(why), "probe refused without a reason");
    zcoll_config_free(cfg);
  }
  if (!why[0]) return;
  const char *req = getenv("ZCOLL_TEST_REQUIRE_RDMA");
  if (req && !strcmp(req, "1"))
    cr_assert_fail("%s cannot run here, and ZCOLL_TEST_REQUIRE_RDMA=1: %s", t->name, why);
  cr_skip_test("%s cannot run here: %s", t->name, why);
}

/* ---- data, notifications and completions -------------------------------------------- */

#define NPUTS 200
#define INFLIGHT 32 /* per peer: the executor keeps at most 256 (transport.h) */

static size_t put_len(int i) {
  if (i % 9 == 0) return 0;        /* a bare notification */
  if (i % 40 == 3) return 70001;   /* past eager protocols and inline limits */
  return 1 + (size_t)(i * 97) % 3000;
}
static size_t put_off(int i) { /* puts from one sender never overlap */
  size_t off = 0;
  for (int k = 0; k < i; k++) off += put_len(k);
  return off;
}
static size_t seg_bytes(void) { return (put_off(NPUTS) + 4095) & ~(size_t)4095; }
static unsigned char pattern(int s, int d, int i, size_t b) {
  return (unsigned char)(s * 61 + d * 17 + i * 7 + (int)(b % 251) * 3 + 1);
}
static uint32_t imm_of(int s, int i) { return 0x80000000u | (uint32_t)s << 20 | (uint32_t)i; }
static uint64_t cookie_of(int d, int i) {
  return 0xc0ffee0000000000ull | (uint64_t)d << 32 | (uint64_t)i;
}

/* Every rank puts NPUTS pieces to every other, a few in flight per peer, and checks what
 * it receives as each notification comes: its (imm, len) in put order per sender, its
 * bytes already in place. Sources are scribbled over at their PUT_DONE, so a transport
 * that still reads a source after reporting it free delivers the scribble. */
static int data_body(struct rank *r) {
  size_t seg = seg_bytes();
  if (setup(r, seg * (size_t)r->size, seg * (size_t)r->size, SETUP_PLAIN)) goto out;
  int next_out[MAXR] = {0}, next_in[MAXR] = {0}, inflight[MAXR] = {0}, done = 0, arrived = 0;
  static _Thread_local unsigned char seen[MAXR][NPUTS];
  memset(seen, 0, sizeof(seen));
  int want = NPUTS * (r->size - 1);
  double t0 = now();
  while (done < want || arrived < want) {
    if (now() - t0 > 2 * WAIT_S) {
      fail_(r, __LINE__, "after %.0f s: %d of %d puts done, %d of %d arrived", 2 * WAIT_S,
            done, want, arrived, want);
      goto out;
    }
    for (int d = 0; d < r->size; d++) {
      if (d == r->rank || next_out[d] == NPUTS || inflight[d] >= INFLIGHT) continue;
      int i = next_out[d]++;
      size_t len = put_len(i), off = (size_t)r->rank * seg + put_off(i);
      char *src = r->src + (size_t)d * seg + put_off(i);
      for (size_t b = 0; b < len; b++) src[b] = (char)pattern(r->rank, d, i, b);
      zcoll_status_t st = len ? r->ops->put(r->ep[d], src, r->smr, r->rk[d], off, len,
                                            imm_of(r->rank, i), cookie_of(d, i))
                              : r->ops->put(r->ep[d], NULL, NULL, NULL, 0, 0,
                                            imm_of(r->rank, i), cookie_of(d, i));
      if (st != ZCOLL_OK) {
        fail_(r, __LINE__, "put %d of %zu bytes to rank %d: %s (%s)", i, len, d,
              zcoll_strerror(st), zcoll_last_error());
        goto out;
      }
      inflight[d]++;
    }
    struct zcoll_tl_event ev[16];
    int n;
    if (poll_ok(r, ev, 16, &n)) goto out;
    for (int k = 0; k < n; k++) {
      const struct zcoll_tl_event *e = &ev[k];
      int p = e->peer;
      if (p < 0 || p >= r->size || p == r->rank) {
        fail_(r, __LINE__, "an event names rank %d", p);
        goto out;
      }
      if (e->kind == ZCOLL_TL_EV_PUT_DONE) {
        int i = (int)(e->cookie & 0xffffffffu);
        if ((e->cookie & ~0xffffffffull) != (cookie_of(p, 0)) || i >= next_out[p] || seen[p][i]) {
          fail_(r, __LINE__, "PUT_DONE from rank %d with cookie %#llx: not a put of ours, or twice",
                p, (unsigned long long)e->cookie);
          goto out;
        }
        if (e->status != ZCOLL_OK) {
          fail_(r, __LINE__, "put %d to rank %d completed with %s", i, p,
                zcoll_strerror(e->status));
          goto out;
        }
        seen[p][i] = 1;
        memset(r->src + (size_t)p * seg + put_off(i), SCRIBBLE, put_len(i));
        inflight[p]--;
        done++;
      } else if (e->kind == ZCOLL_TL_EV_ARRIVED) {
        int i = next_in[p];
        if (i >= NPUTS || e->imm != imm_of(p, i) || e->len != put_len(i)) {
          fail_(r, __LINE__, "from rank %d: ARRIVED(imm %#x, len %u) where put %d (imm %#x, "
                "len %zu) was due: notifications out of put order, or wrong", p, e->imm,
                e->len, i, imm_of(p, i), put_len(i));
          goto out;
        }
        const unsigned char *at = (unsigned char *)r->region + (size_t)p * seg + put_off(i);
        for (size_t b = 0; b < e->len; b++)
          if (at[b] != pattern(p, r->rank, i, b)) {
            fail_(r, __LINE__, "put %d from rank %d: byte %zu of %u is %#x, not %#x, when its "
                  "ARRIVED came%s", i, p, b, e->len, at[b], pattern(p, r->rank, i, b),
                  at[b] == SCRIBBLE ? " (the writer's scribble: PUT_DONE came before the "
                                      "source was read)" : "");
            goto out;
          }
        next_in[p]++;
        arrived++;
      } else {
        fail_(r, __LINE__, "an event of kind %d", e->kind);
        goto out;
      }
    }
  }
  /* Nothing landed anywhere it was not sent. */
  for (int s = 0; s < r->size; s++) {
    const unsigned char *base = (unsigned char *)r->region + (size_t)s * seg;
    size_t from = s == r->rank ? 0 : put_off(NPUTS);
    for (size_t b = from; b < seg; b++)
      if (base[b] != CANARY) {
        fail_(r, __LINE__, "byte %zu of rank %d's part of the region was written", b, s);
        goto out;
      }
  }
out:
  teardown(r, 1);
  return atomic_load(&r->sh->nfail) ? -1 : 0;
}

ParameterizedTestParameters(conformance, data) { return table_rows(0); }
ParameterizedTest(int *i, conformance, data, .timeout = 300) {
  need(*i);
  struct job j = {.tl_index = *i, .size = 3, .victim = -1, .body = data_body};
  munmap(run(&j), sizeof(struct shared));
}

/* ---- the caller's mistakes ---------------------------------------------------------- */

/* Waits (polling) until `arrive` ARRIVED and `done` PUT_DONE events came, checking data
 * of arrivals at region offset `at` as pattern(peer, me, 0, b). */
static int settle(struct rank *r, int arrive, int done, size_t at) {
  double t0 = now();
  while (arrive > 0 || done > 0) {
    CHECK(r, now() - t0 < WAIT_S, "%d arrivals and %d completions still due after %.0f s",
          arrive, done, WAIT_S);
    struct zcoll_tl_event ev[8];
    int n;
    if (poll_ok(r, ev, 8, &n)) return -1;
    for (int k = 0; k < n; k++) {
      if (ev[k].kind == ZCOLL_TL_EV_PUT_DONE) {
        CHECK(r, ev[k].status == ZCOLL_OK, "a put completed with %s", zcoll_strerror(ev[k].status));
        done--;
        continue;
      }
      for (size_t b = 0; b < ev[k].len; b++)
        CHECK(r, (unsigned char)r->region[at + b] == pattern(ev[k].peer, r->rank, 0, b),
              "byte %zu of a put from rank %d is not in place at its ARRIVED", b, ev[k].peer);
      arrive--;
    }
  }
  return 0;
}

#define BAD_REGION 65536

static int bad_calls_body(struct rank *r) {
  if (setup(r, BAD_REGION, BAD_REGION, SETUP_BAD_CALLS)) goto out;
  int peer = (r->rank + 1) % r->size;
  struct zcoll_ep *ep = r->ep[peer];
  struct zcoll_tl_rkey *rk = r->rk[peer];
  const struct zcoll_tl_ops *o = r->ops;
  /* A malformed key: empty, or a byte short (copied to its exact size, so that a
   * transport reading past the length it was given shows under ASan). */
  size_t kl = r->sh->key_len[peer];
  unsigned char *shortkey = malloc(kl);
  memcpy(shortkey, r->sh->key[peer], kl);
  struct zcoll_tl_rkey *out = (void *)&kl;
  zcoll_status_t st0 = o->rkey_unpack(ep, shortkey, 0, &out);
  zcoll_status_t st1 = o->rkey_unpack(ep, shortkey, kl - 1, &out);
  free(shortkey);
  CHECK_ST(r, st0, ZCOLL_ERR_TRANSPORT, "rkey_unpack() of an empty key");
  CHECK_ST(r, st1, ZCOLL_ERR_TRANSPORT, "rkey_unpack() of a key one byte short");
  CHECK(r, out == (void *)&kl, "a failed rkey_unpack() wrote its output");
  /* Puts outside the key's region, or over 4 GiB. */
  struct {
    uint64_t roff;
    size_t len;
    int null_key;
    const char *what;
  } bad[] = {
      {BAD_REGION - 1, 2, 0, "a put one byte past the region's end"},
      {BAD_REGION + 1, 1, 0, "a put that starts past the region's end"},
      {UINT64_MAX, 1, 0, "a put at offset 2^64 - 1 (the sum wraps)"},
      {0, BAD_REGION + 1, 0, "a put longer than the region"},
      {0, ((size_t)1 << 32) + 1, 0, "a put over 4 GiB"},
      {0, 1, 1, "a put of data with no key"},
  };
  for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
    CHECK_ST(r, o->put(ep, r->src, r->smr, bad[k].null_key ? NULL : rk, bad[k].roff, bad[k].len,
                       1, 1),
             ZCOLL_ERR_INVALID_ARG, bad[k].what);
  if (!(o->caps & ZCOLL_TL_CAP_PUT_ANY)) {
    /* Larger than any inline limit: the NIC would have to read it through lmr. */
    static char outside[8192];
    CHECK_ST(r, o->put(ep, outside, r->smr, rk, 0, sizeof(outside), 1, 1), ZCOLL_ERR_INVALID_ARG,
             "a put from a source outside lmr (no CAP_PUT_ANY)");
    CHECK_ST(r, o->put(ep, r->src, NULL, rk, 0, 8192, 1, 1), ZCOLL_ERR_INVALID_ARG,
             "a put from a source with no lmr (no CAP_PUT_ANY)");
  }
  if (o->mem_alloc && !(o->caps & ZCOLL_TL_CAP_REMOTE_USER)) {
    struct zcoll_tl_mr *mr = (void *)&kl;
    CHECK_ST(r, o->mem_reg(r->tl, r->src, 4096, 1, &mr), ZCOLL_ERR_INVALID_ARG,
             "mem_reg(remote = 1) of memory not from mem_alloc (no CAP_REMOTE_USER)");
    CHECK(r, mr == (void *)&kl, "a failed mem_reg() wrote its output");
  }
  /* None of that broke the instance: a put with data and a bare one still go through. */
  for (size_t b = 0; b < 1000; b++) r->src[b] = (char)pattern(r->rank, peer, 0, b);
  CHECK_ST(r, o->put(ep, r->src, r->smr, rk, 100, 1000, 7, 1), ZCOLL_OK, "a put after bad ones");
  CHECK_ST(r, o->put(ep, NULL, NULL, NULL, 0, 0, 8, 2), ZCOLL_OK, "a bare put after bad ones");
  if (settle(r, 2, 2, 100) || sync_ranks(r)) goto out;
  /* An address that is not one: empty, or a byte short, each on an instance of its own
   * (a failed connect may leave an instance fit only for close). */
  size_t al = r->sh->addr_len[peer];
  for (int k = 0; k < 2; k++) {
    struct zcoll_tl *tl2 = NULL;
    if (open_tl(r, &tl2)) goto out;
    void *blob = malloc(al);
    memcpy(blob, r->sh->addr[peer], al);
    const void *a[1] = {blob};
    size_t len[1] = {k ? al - 1 : 0};
    struct zcoll_ep *e2 = NULL;
    zcoll_status_t st = o->connect(tl2, 1, &peer, a, len, &e2);
    o->close(tl2);
    free(blob);
    CHECK_ST(r, st, ZCOLL_ERR_TRANSPORT, k ? "connect() with an address one byte short"
                                           : "connect() with an empty address");
  }
out:
  teardown(r, 1);
  return atomic_load(&r->sh->nfail) ? -1 : 0;
}

ParameterizedTestParameters(conformance, bad_calls) { return table_rows(0); }
ParameterizedTest(int *i, conformance, bad_calls, .timeout = 200) {
  need(*i);
  struct job j = {.tl_index = *i, .size = 2, .victim = -1, .body = bad_calls_body};
  munmap(run(&j), sizeof(struct shared));
}

/* ---- sleeping: event_fd and arm ----------------------------------------------------- */

/* Waits for `want` events of `kind` the way the executor does: poll, arm, and only once
 * arm said OK, sleep on the descriptor -- which must then wake for the event. */
static int sleep_for(struct rank *r, int kind, int want, size_t at) {
  int fd = r->ops->event_fd(r->tl);
  double t0 = now();
  while (want > 0) {
    CHECK(r, now() - t0 < WAIT_S, "%d events still due after %.0f s", want, WAIT_S);
    struct zcoll_tl_event ev[8];
    int n;
    if (poll_ok(r, ev, 8, &n)) return -1;
    for (int k = 0; k < n; k++) {
      if (ev[k].kind != kind) continue;
      for (size_t b = 0; b < ev[k].len; b++)
        CHECK(r, (unsigned char)r->region[at + b] == pattern(ev[k].peer, r->rank, 0, b),
              "byte %zu not in place at ARRIVED", b);
      want--;
    }
    if (!want || n) continue;
    zcoll_status_t st = r->ops->arm(r->tl);
    if (st == ZCOLL_IN_PROGRESS) continue;
    CHECK_ST(r, st, ZCOLL_OK, "arm()");
    struct pollfd p = {fd, POLLIN, 0};
    int k = poll(&p, 1, (int)(WAIT_S * 1000));
    CHECK(r, k == 1, "arm() said OK with %s due, and event_fd %d did not turn readable in %.0f s",
          kind == ZCOLL_TL_EV_ARRIVED ? "an ARRIVED" : "a PUT_DONE", fd, WAIT_S);
  }
  return 0;
}

#define ROUNDS 6

/* Rank 0 sleeps, rank 1 writes: in even rounds the put comes after rank 0 armed (the
 * descriptor must wake it), in odd ones before (arm must say IN_PROGRESS, or the
 * descriptor turn readable once it is in). The writer sleeps for its PUT_DONE alike. */
static int event_fd_body(struct rank *r) {
  if (setup(r, 131072, 131072, SETUP_PLAIN)) goto out;
  int fd = r->ops->event_fd(r->tl);
  if (fd < 0) { /* "-1 if the transport cannot block": nothing more to hold it to */
    r->sh->seconds[r->rank][0] = -1;
    goto out;
  }
  for (int round = 0; round < ROUNDS; round++) {
    size_t len = round % 3 == 2 ? 0 : round % 3 ? 70001 : 100;
    if (r->rank == 0) {
      if (round % 2 == 0) {
        zcoll_status_t st;
        double t0 = now();
        while ((st = r->ops->arm(r->tl)) == ZCOLL_IN_PROGRESS) {
          struct zcoll_tl_event ev[8];
          int n;
          if (poll_ok(r, ev, 8, &n)) goto out;
          if (now() - t0 > WAIT_S) break;
        }
        if (st != ZCOLL_OK) {
          fail_(r, __LINE__, "arm() with nothing due: %s", zcoll_strerror(st));
          goto out;
        }
        atomic_store(&r->sh->flag, 2 * round + 1); /* armed: now put */
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, (int)(WAIT_S * 1000)) != 1) {
          fail_(r, __LINE__, "round %d: armed, a put came, event_fd stayed quiet %.0f s", round,
                WAIT_S);
          goto out;
        }
      } else {
        if (wait_flag(r, &r->sh->flag, 2 * round + 2)) goto out; /* the put is out */
      }
      if (sleep_for(r, ZCOLL_TL_EV_ARRIVED, 1, 0)) goto out;
    } else {
      if (round % 2 == 0 && wait_flag(r, &r->sh->flag, 2 * round + 1)) goto out;
      if (round % 2 == 0) usleep(20000); /* let rank 0 fall asleep */
      for (size_t b = 0; b < len; b++) r->src[b] = (char)pattern(1, 0, 0, b);
      zcoll_status_t st = len ? r->ops->put(r->ep[0], r->src, r->smr, r->rk[0], 0, len, 9, 9)
                              : r->ops->put(r->ep[0], NULL, NULL, NULL, 0, 0, 9, 9);
      if (st != ZCOLL_OK) {
        fail_(r, __LINE__, "put: %s (%s)", zcoll_strerror(st), zcoll_last_error());
        goto out;
      }
      /* Put, not done: a rendezvous completes only with the receiver's progress. */
      if (round % 2) atomic_store(&r->sh->flag, 2 * round + 2);
      if (sleep_for(r, ZCOLL_TL_EV_PUT_DONE, 1, 0)) goto out;
    }
    if (sync_ranks(r)) goto out;
  }
out:
  teardown(r, 1);
  return atomic_load(&r->sh->nfail) ? -1 : 0;
}

ParameterizedTestParameters(conformance, event_fd) { return table_rows(0); }
ParameterizedTest(int *i, conformance, event_fd, .timeout = 200) {
  need(*i);
  struct job j = {.tl_index = *i, .size = 2, .oversubscribed = 1, .victim = -1,
                  .body = event_fd_body};
  struct shared *sh = run(&j);
  if (sh->seconds[0][0] < 0)
    cr_log_info("%s: event_fd is -1 (the transport cannot block)", zcoll__transports[*i].name);
  munmap(sh, sizeof(*sh));
}

/* ---- a peer that dies --------------------------------------------------------------- */

#define VICTIM 2

/* Rank 2 dies once connected (SIGKILL, or as a thread its instance closed abruptly).
 * Ranks 0 and 1 keep putting to it and polling: the first error must be PEER_FAILED
 * naming rank 2; a broken instance keeps failing, still says INVALID_ARG first to a
 * caller's mistake, and closes in bounded time. */
static int dead_peer_body(struct rank *r) {
  if (setup(r, 65536, 65536, SETUP_PLAIN)) goto out;
  if (r->rank == VICTIM) {
    atomic_store(&r->sh->victim_ready, 1);
    if (!r->threads) pause(); /* until killed */
    r->ops->close(r->tl);
    r->tl = NULL;
    atomic_store(&r->sh->victim_dead, 1);
    teardown(r, 0);
    return 0;
  }
  r->live = r->size - 1;
  if (wait_flag(r, &r->sh->victim_dead, 1)) goto out;
  struct zcoll_ep *ep = r->ep[VICTIM];
  double t0 = now();
  zcoll_status_t st = ZCOLL_OK;
  int from_poll = 0, inflight = 0;
  while (st == ZCOLL_OK) {
    if (now() - t0 > WAIT_S) {
      fail_(r, __LINE__, "rank %d died %.0f s ago; put and poll still say OK", VICTIM, WAIT_S);
      goto out;
    }
    if (inflight < 16) {
      st = r->ops->put(ep, r->src, r->smr, r->rk[VICTIM], 0, 64, 1, 1);
      if (st != ZCOLL_OK) break;
      inflight++;
    }
    struct zcoll_tl_event ev[8];
    int n = 0;
    st = r->ops->poll(r->tl, ev, 8, &n);
    from_poll = st != ZCOLL_OK;
    for (int k = 0; k < n && st == ZCOLL_OK; k++)
      if (ev[k].kind == ZCOLL_TL_EV_PUT_DONE) {
        inflight--;
        if (ev[k].status != ZCOLL_OK) st = ev[k].status;
      }
    if (st == ZCOLL_OK && !n) usleep(1000);
  }
  double found = now() - t0;
  char words[512];
  snprintf(words, sizeof(words), "%s", zcoll_last_error());
  char name[32];
  snprintf(name, sizeof(name), "rank %d", VICTIM);
  CHECK(r, st == ZCOLL_ERR_PEER_FAILED, "the dead peer showed as %s (%s)", zcoll_strerror(st),
        words);
  CHECK(r, strstr(words, name), "PEER_FAILED without naming %s: \"%s\"", name, words);
  if (from_poll) {
    struct zcoll_tl_event ev[8];
    int n;
    CHECK(r, r->ops->poll(r->tl, ev, 8, &n) != ZCOLL_OK, "poll() said OK after an error");
    CHECK(r, r->ops->put(ep, r->src, r->smr, r->rk[VICTIM], 0, 64, 1, 1) != ZCOLL_OK,
          "put() said OK after poll() failed");
  }
  CHECK_ST(r, r->ops->put(ep, r->src, r->smr, r->rk[VICTIM], 65536, 64, 1, 1),
           ZCOLL_ERR_INVALID_ARG, "a put outside the region on a broken instance");
  if (r->ops->quiesce) r->ops->quiesce(r->tl);
  r->sh->seconds[r->rank][0] = found;
out:;
  double took = teardown(r, 1);
  r->sh->seconds[r->rank][1] = took;
  if (took > 10) fail_(r, __LINE__, "close() took %.1f s after the peer died", took);
  return atomic_load(&r->sh->nfail) ? -1 : 0;
}

ParameterizedTestParameters(conformance, dead_peer) { return table_rows(0); }
ParameterizedTest(int *i, conformance, dead_peer, .timeout = 300) {
  need(*i);
  struct job j = {.tl_index = *i, .size = 3, .victim = VICTIM, .body = dead_peer_body};
  struct shared *sh = run(&j);
  for (int k = 0; k < VICTIM; k++)
    cr_log_info("%s: rank %d saw the death in %.2f s, closed in %.2f s",
                zcoll__transports[*i].name, k, sh->seconds[k][0], sh->seconds[k][1]);
  munmap(sh, sizeof(*sh));
}

/* ---- the placement hook ------------------------------------------------------------- */

#define HOOK_SLOT 131072
#define HOOK_NULL 0xdeadu /* the hook has no place for this one */

struct hook {
  char *buf;
  int calls, bad;
  char what[200];
};

static void *place(void *arg, int peer, uint32_t imm, size_t len, int *final) {
  struct hook *h = arg;
  h->calls++;
  if (peer != 1 && !h->bad) {
    h->bad = 1;
    snprintf(h->what, sizeof(h->what), "the hook was asked for rank %d's piece", peer);
  }
  if (!len && !h->bad) {
    h->bad = 1;
    snprintf(h->what, sizeof(h->what), "the hook was asked about a zero-length put");
  }
  if ((imm & 0xffffu) == HOOK_NULL) return NULL;
  *final = (imm >> 30) & 1;
  return h->buf + (size_t)(imm & 0xffffu) * HOOK_SLOT;
}

static const size_t hook_lens[] = {100, 70001, 1, 0, 4096, 3};
#define NHOOK (int)(sizeof(hook_lens) / sizeof(hook_lens[0]))

/* Rank 0 installs a hook, rank 1 aims every put at offset 0 of rank 0's region: the data
 * must land where the hook says (the writer's offset is not trusted), `placed` must carry
 * the hook's `final`, and the region stays untouched. Without the hook the writer's
 * offset counts again. A hook that answers NULL fails the transport. */
static int placement_body(struct rank *r) {
  struct hook h = {0};
  h.buf = mmap(NULL, NHOOK * HOOK_SLOT, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (setup(r, 4 * HOOK_SLOT, 4 * HOOK_SLOT, SETUP_PLAIN)) goto out;
  if (r->rank == 0) r->ops->set_placement(r->tl, place, &h);
  if (sync_ranks(r)) goto out;
  if (r->rank == 1) {
    for (int k = 0; k < NHOOK; k++) {
      for (size_t b = 0; b < hook_lens[k]; b++) r->src[b] = (char)pattern(1, 0, k, b);
      uint32_t imm = (uint32_t)k | (k % 2 ? 1u << 30 : 0);
      zcoll_status_t st = hook_lens[k]
                              ? r->ops->put(r->ep[0], r->src, r->smr, r->rk[0], 0, hook_lens[k],
                                            imm, (uint64_t)k)
                              : r->ops->put(r->ep[0], NULL, NULL, NULL, 0, 0, imm, (uint64_t)k);
      if (st != ZCOLL_OK) {
        fail_(r, __LINE__, "put %d: %s (%s)", k, zcoll_strerror(st), zcoll_last_error());
        goto out;
      }
      if (settle(r, 0, 1, 0)) goto out; /* one source, reused */
    }
  } else {
    double t0 = now();
    int k = 0;
    while (k < NHOOK) {
      if (now() - t0 > WAIT_S) {
        fail_(r, __LINE__, "only %d of %d pieces arrived in %.0f s", k, NHOOK, WAIT_S);
        goto out;
      }
      struct zcoll_tl_event ev[8];
      int n;
      if (poll_ok(r, ev, 8, &n)) goto out;
      for (int e = 0; e < n; e++, k++) {
        if (ev[e].kind != ZCOLL_TL_EV_ARRIVED || (ev[e].imm & 0xffffu) != (uint32_t)k ||
            ev[e].len != hook_lens[k]) {
          fail_(r, __LINE__, "piece %d: event kind %d imm %#x len %u", k, ev[e].kind, ev[e].imm,
                ev[e].len);
          goto out;
        }
        if (hook_lens[k] && ev[e].placed != (k % 2)) {
          fail_(r, __LINE__, "piece %d: placed = %d, the hook said final = %d", k, ev[e].placed,
                k % 2);
          goto out;
        }
        const unsigned char *at = (unsigned char *)h.buf + (size_t)k * HOOK_SLOT;
        for (size_t b = 0; b < hook_lens[k]; b++)
          if (at[b] != pattern(1, 0, k, b)) {
            fail_(r, __LINE__, "piece %d byte %zu is not where the hook said", k, b);
            goto out;
          }
      }
    }
    int expect = 0;
    for (int q = 0; q < NHOOK; q++) expect += hook_lens[q] > 0;
    if (h.bad || h.calls != expect) {
      fail_(r, __LINE__, "%s (%d calls of the hook for %d pieces with data)",
            h.bad ? h.what : "hook", h.calls, expect);
      goto out;
    }
    for (size_t b = 0; b < r->region_len; b++)
      if ((unsigned char)r->region[b] != CANARY) {
        fail_(r, __LINE__, "byte %zu of the region was written: the writer's offset won", b);
        goto out;
      }
    r->ops->set_placement(r->tl, NULL, NULL);
  }
  /* No hook: the writer's offset again. */
  if (sync_ranks(r)) goto out;
  if (r->rank == 1) {
    for (size_t b = 0; b < 5000; b++) r->src[b] = (char)pattern(1, 0, 0, b);
    zcoll_status_t st = r->ops->put(r->ep[0], r->src, r->smr, r->rk[0], 1000, 5000, 77, 77);
    if (st != ZCOLL_OK || settle(r, 0, 1, 0)) {
      if (st != ZCOLL_OK) fail_(r, __LINE__, "put: %s", zcoll_strerror(st));
      goto out;
    }
  } else if (settle(r, 1, 0, 1000)) {
    goto out;
  }
  /* A hook with no place for a piece: the transport fails. */
  if (r->rank == 0) r->ops->set_placement(r->tl, place, &h);
  if (sync_ranks(r)) goto out;
  if (r->rank == 1) {
    zcoll_status_t st = r->ops->put(r->ep[0], r->src, r->smr, r->rk[0], 0, 64, HOOK_NULL, 1);
    if (st != ZCOLL_OK) {
      fail_(r, __LINE__, "put: %s", zcoll_strerror(st));
      goto out;
    }
    if (settle(r, 0, 1, 0)) goto out;
  } else {
    double t0 = now();
    zcoll_status_t st = ZCOLL_OK;
    while (st == ZCOLL_OK && now() - t0 < WAIT_S) {
      struct zcoll_tl_event ev[8];
      int n = 0;
      st = r->ops->poll(r->tl, ev, 8, &n);
      for (int e = 0; e < n; e++)
        if (ev[e].kind == ZCOLL_TL_EV_ARRIVED) {
          fail_(r, __LINE__, "ARRIVED for a piece the hook had no place for");
          goto out;
        }
    }
    if (st != ZCOLL_ERR_TRANSPORT) {
      fail_(r, __LINE__, "a NULL from the hook: poll() said %s, the contract says TRANSPORT",
            zcoll_strerror(st));
      goto out;
    }
    r->ops->set_placement(r->tl, NULL, NULL);
  }
out:
  teardown(r, 1);
  munmap(h.buf, NHOOK * HOOK_SLOT);
  return atomic_load(&r->sh->nfail) ? -1 : 0;
}

ParameterizedTestParameters(conformance, placement) { return table_rows(1); }
ParameterizedTest(int *i, conformance, placement, .timeout = 200) {
  need(*i);
  struct job j = {.tl_index = *i, .size = 2, .victim = -1, .body = placement_body};
  munmap(run(&j), sizeof(struct shared));
}
