/*
 * The transport contract (lib/tl/transport.h), held against every row of the one table of
 * transports (zcoll__transports[], lib/comm/transports.c): a transport added to the table is
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
 *
 * This file is the harness (the job, its ranks and their meeting place, setup and
 * teardown, which rows run); the cases are in tests/transports/conformance/, one concern a file.
 */
#include "conformance/conformance.h"

double conf_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the job: ranks, their meeting place, their failures ------------------------------ */

int conf_fail(struct rank *r, int line, const char *fmt, ...) {
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

int conf_aborted(struct rank *r) {
  return atomic_load(&r->sh->nfail) || atomic_load(&r->sh->unsupported);
}

/* A barrier among r->live ranks that gives up when another rank has failed. progress:
 * keep polling the transport meanwhile (events are dropped: the body has counted what it
 * expected), because a peer's puts may need this rank's progress to complete -- over UCX
 * the sender's completion waits for the receiver's acknowledgement of a rendezvous, which
 * the receiver sends from its poll. */
int conf_sync_ranks_progress(struct rank *r, int progress) {
  struct shared *sh = r->sh;
  unsigned g = atomic_load(&sh->gen);
  if (atomic_fetch_add(&sh->arrived, 1) + 1 == (unsigned)r->live) {
    atomic_store(&sh->arrived, 0);
    atomic_fetch_add(&sh->gen, 1);
    return 0;
  }
  double t0 = conf_now();
  while (atomic_load(&sh->gen) == g) {
    if (conf_aborted(r)) return -1;
    CHECK(r, conf_now() - t0 < WAIT_S, "the other ranks did not meet in %.0f s", WAIT_S);
    if (progress && r->tl) {
      struct zcoll_tl_event ev[16];
      int n;
      (void)r->ops->poll(r->tl, ev, 16, &n); /* a failed instance's status: not this wait's */
    }
    usleep(200);
  }
  return 0;
}

int conf_sync_ranks(struct rank *r) { return conf_sync_ranks_progress(r, 0); }

int conf_wait_flag(struct rank *r, _Atomic int *f, int value) {
  double t0 = conf_now();
  while (atomic_load(f) < value) {
    if (conf_aborted(r)) return -1;
    CHECK(r, conf_now() - t0 < WAIT_S, "waited %.0f s for another rank's step", WAIT_S);
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
             : bad[i] < 0      ? "connect() to rank -1"
                               : "connect() to rank size");
    CHECK(r, ep == (void *)&n, "a failed connect() wrote its output");
  }
  return 0;
}

int conf_open_tl(struct rank *r, struct zcoll_tl **tl) {
  struct zcoll_tl_params p = {
      .rank = r->rank, .size = r->size, .cfg = r->cfg, .oversubscribed = r->oversubscribed};
  CHECK_ST(r, r->ops->open(&p, tl), ZCOLL_OK, "open()");
  return 0;
}

int conf_peer_address(struct rank *r, struct zcoll_tl *tl, int n, const int *ranks, int store) {
  if (!r->ops->peer_address) return 0;
  unsigned char parts[MAXR * PART];
  size_t each = PART;
  CHECK_ST(r, r->ops->peer_address(tl, n, ranks, parts, &each), ZCOLL_OK, "peer_address()");
  CHECK(r, each <= PART, "peer_address() wrote parts of %zu bytes, more than the %d allowed", each,
        PART);
  for (int i = 0; store && i < n; i++)
    if (ranks[i] >= 0) memcpy(r->sh->part[r->rank][ranks[i]], parts + (size_t)i * each, each);
  if (store) r->sh->part_len[r->rank] = each;
  return 0;
}

size_t conf_addr_for(const struct rank *r, int peer, unsigned char *buf) {
  size_t n = r->sh->addr_len[peer], p = r->sh->part_len[peer];
  memcpy(buf, r->sh->addr[peer], n);
  memcpy(buf + n, r->sh->part[peer][r->rank], p);
  return n + p;
}

int conf_setup(struct rank *r, size_t region_len, size_t src_len, int how) {
  r->live = r->size;
  CHECK(r, zcoll_config_create(&r->cfg) == ZCOLL_OK, "config: %s", zcoll_last_error());
  r->cfg->rank = r->rank;
  r->cfg->size = r->size;
  r->cfg->timeout = WAIT_S;
  if (how == SETUP_SHORT_RETRIES) {
    r->cfg->ib_timeout = 10;
    r->cfg->ib_retry_cnt = 2;
  }
  if (conf_open_tl(r, &r->tl)) return -1;
  size_t n = BLOB;
  CHECK_ST(r, r->ops->address(r->tl, r->sh->addr[r->rank], &n), ZCOLL_OK, "address()");
  r->sh->addr_len[r->rank] = n;
  int ranks[MAXR], k = 0;
  const void *addrs[MAXR];
  size_t lens[MAXR];
  struct zcoll_ep *eps[MAXR];
  static _Thread_local unsigned char full[MAXR][BLOB + PART];
  for (int i = 0; i < r->size; i++)
    if (i != r->rank) ranks[k++] = i;
  if (conf_peer_address(r, r->tl, k, ranks, 1) || conf_sync_ranks(r)) return -1;
  if (how == SETUP_BAD_CALLS && bad_setup_calls(r)) return -1;
  for (int i = 0; i < k; i++) {
    lens[i] = conf_addr_for(r, ranks[i], full[i]);
    addrs[i] = full[i];
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
  if (conf_sync_ranks(r)) return -1;
  for (int i = 0; i < r->size; i++)
    if (i != r->rank)
      CHECK_ST(r, r->ops->rkey_unpack(r->ep[i], r->sh->key[i], r->sh->key_len[i], &r->rk[i]),
               ZCOLL_OK, "rkey_unpack()");
  return conf_sync_ranks(r);
}

/* Releases in the core's order: keys, registrations, the instance, then the memory. */
double conf_teardown(struct rank *r, int meet) {
  /* nobody closes under a peer still at work, nor stops progressing its puts */
  if (meet && !conf_aborted(r)) conf_sync_ranks_progress(r, 1);
  for (int i = 0; i < MAXR; i++)
    if (r->rk[i]) r->ops->rkey_release(r->rk[i]);
  if (r->mr) r->ops->mem_dereg(r->mr);
  if (r->smr) r->ops->mem_dereg(r->smr);
  double t0 = conf_now();
  if (r->tl) r->ops->close(r->tl);
  double took = conf_now() - t0;
  if (r->region && r->region != MAP_FAILED) munmap(r->region, r->region_len);
  if (r->src && r->src != MAP_FAILED) munmap(r->src, r->src_len);
  if (r->cfg) zcoll_config_free(r->cfg);
  return took;
}

/* Polls once; any status but OK is a failure of the case. */
int conf_poll_ok(struct rank *r, struct zcoll_tl_event *ev, int max, int *n) {
  CHECK_ST(r, r->ops->poll(r->tl, ev, max, n), ZCOLL_OK, "poll()");
  CHECK(r, *n >= 0 && *n <= max, "poll() filled %d of %d events", *n, max);
  return 0;
}

/* ---- running a job ------------------------------------------------------------------ */

static body_fn current_body;

static void *run_thread(void *arg) {
  struct rank *r = arg;
  current_body(r);
  return NULL;
}

static struct shared *run_once(const struct job *j, int threads, double *took) {
  struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                           -1, 0);
  cr_assert(sh != MAP_FAILED, "mmap: %s", strerror(errno));
  memset(sh, 0, sizeof(*sh));
  struct rank ranks[MAXR];
  for (int i = 0; i < j->size; i++)
    ranks[i] = (struct rank){.sh = sh,
                             .ops = zcoll__transports[j->tl_index].ops,
                             .tl_index = j->tl_index,
                             .rank = i,
                             .size = j->size,
                             .threads = threads,
                             .oversubscribed = j->oversubscribed};
  double t0 = conf_now();
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
         * another host, played by giving each rank a host of its own (lib/base/node.c). */
        if (j->victim >= 0 && !(zcoll__transports[j->tl_index].flags & ZCOLL_TLE_ONE_HOST))
          setenv("ZCOLL_TEST_SPLIT_NODES", "1", 1);
        _exit(j->body(&ranks[i]) ? 1 : 0);
      }
    }
    if (j->victim >= 0) {
      /* Killed once connected with its keys out: its peers must find out by themselves. */
      while (!atomic_load(&sh->victim_ready) && !conf_aborted(&ranks[0]) &&
             conf_now() - t0 < WAIT_S)
        usleep(1000);
      kill(pid[j->victim], SIGKILL);
      waitpid(pid[j->victim], NULL, 0);
      pid[j->victim] = 0;
      atomic_store(&sh->victim_dead, 1);
    }
    for (int i = 0; i < j->size; i++) {
      if (!pid[i]) continue;
      int ws, done = 0;
      while (!done && conf_now() - t0 < 3 * WAIT_S) {
        pid_t w = waitpid(pid[i], &ws, WNOHANG);
        if (w == pid[i])
          done = 1;
        else
          usleep(2000);
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
  *took = conf_now() - t0;
  return sh;
}

/* Runs the job as processes, or as threads where the transport refuses processes. */
struct shared *conf_run(const struct job *j) {
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
  cr_assert(!atomic_load(&sh->nfail) && !atomic_load(&sh->unsupported), "%s (%d ranks as %s): %s",
            name, j->size, threads ? "threads" : "processes",
            all[0] ? all : " refused processes and threads alike");
  cr_log_info("%s: %d ranks as %s, %.2f s", name, j->size, threads ? "threads" : "processes", took);
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
struct criterion_test_params conf_rows(int need_placement) {
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
void conf_need(int i) {
  const struct zcoll__tl_entry *t = &zcoll__transports[i];
  char why[300] = "";
  if (!t->ops) {
    snprintf(why, sizeof(why), "%s", t->missing);
  } else {
    zcoll_config_t *cfg;
    cr_assert_eq(zcoll_config_create(&cfg), ZCOLL_OK);
    cfg->rank = 0;
    if (t->ops->probe(cfg, why, sizeof(why)) == ZCOLL_OK)
      why[0] = '\0';
    else if (!why[0])
      snprintf(why, sizeof(why), "probe refused without a reason");
    zcoll_config_free(cfg);
  }
  if (!why[0]) return;
  const char *req = getenv("ZCOLL_TEST_REQUIRE_RDMA");
  if (req && !strcmp(req, "1"))
    cr_assert_fail("%s cannot run here, and ZCOLL_TEST_REQUIRE_RDMA=1: %s", t->name, why);
  cr_skip_test("%s cannot run here: %s", t->name, why);
}

/* ---- helpers the cases share ------------------------------------------------------- */

unsigned char conf_pattern(int s, int d, int i, size_t b) {
  return (unsigned char)(s * 61 + d * 17 + i * 7 + (int)(b % 251) * 3 + 1);
}

/* Waits (polling) until `arrive` ARRIVED and `done` PUT_DONE events came, checking data
 * of arrivals at region offset `at` as conf_pattern(peer, me, 0, b). */
int conf_settle(struct rank *r, int arrive, int done, size_t at) {
  double t0 = conf_now();
  while (arrive > 0 || done > 0) {
    CHECK(r, conf_now() - t0 < WAIT_S, "%d arrivals and %d completions still due after %.0f s",
          arrive, done, WAIT_S);
    struct zcoll_tl_event ev[8];
    int n;
    if (conf_poll_ok(r, ev, 8, &n)) return -1;
    for (int k = 0; k < n; k++) {
      if (ev[k].kind == ZCOLL_TL_EV_PUT_DONE) {
        CHECK(r, ev[k].status == ZCOLL_OK, "a put completed with %s", zcoll_strerror(ev[k].status));
        done--;
        continue;
      }
      for (size_t b = 0; b < ev[k].len; b++)
        CHECK(r, (unsigned char)r->region[at + b] == conf_pattern(ev[k].peer, r->rank, 0, b),
              "byte %zu of a put from rank %d is not in place at its ARRIVED", b, ev[k].peer);
      arrive--;
    }
  }
  return 0;
}
