/*
 * Zero-copy results of persistent requests (lib/core/grant.c) over the loopback transport,
 * which keeps the RDMA rules (the writer places the data; a deregistered key refuses
 * writes): receivers grant ranges of their result, senders write the rest of those
 * ranges straight into it. Checked: every element of every start, with the buffers'
 * contents changed between starts, for each algorithm and 2 to 5 ranks; that pieces did
 * arrive in place (and, where the schedule allows it for certain, that none was copied);
 * writers in blocking calls using a persistent receiver's grants; results inside an
 * explicitly registered region, of any call; and that a write
 * through a revoked key fails without touching the memory.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rank_threads.h"
#include "requests_common.h"
#include "comm/transports.h"
#include "tl/transport.h"

enum { N = 40000, ROUNDS = 4 };

struct grant_job {
  int blocking_ranks; /* ranks >= this call blocking allreduce instead (size: none) */
  int in_place;
  atomic_ullong placed, copied;
  unsigned long long copied_max; /* per rank */
  pthread_mutex_t lock;
};

/* Says what went wrong in a round (bad: the first wrong element, or -1). */
static int round_ok(struct rt_job *job, int rank, zcoll_comm_t *comm, int round, zcoll_status_t st,
                    long bad) {
  if (st == ZCOLL_OK && bad < 0) return 1;
  char msg[300];
  snprintf(msg, sizeof(msg), "round %d: %s, first wrong element %ld: %s", round, zcoll_strerror(st),
           bad, zcoll_comm_last_error(comm));
  rt_fail(job, rank, msg);
  return 0;
}

static void grant_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  struct grant_job *g = job->arg;
  int p = zcoll_comm_size(comm);
  int64_t *in = malloc(N * sizeof(int64_t)), *out = malloc(N * sizeof(int64_t));
  int persistent = rank < g->blocking_ranks;
  const void *src = g->in_place ? ZCOLL_IN_PLACE : in;
  int64_t *dst = g->in_place ? in : out;
  zcoll_request_t *rq = NULL;
  if (persistent &&
      zcoll_allreduce_init(comm, src, dst, N, ZCOLL_INT64, ZCOLL_SUM, &rq) != ZCOLL_OK) {
    rt_fail(job, rank, zcoll_comm_last_error(comm));
    goto out;
  }
  for (int round = 0; round < ROUNDS; round++) {
    rq_fill(in, N, rank, round);
    if (!g->in_place) memset(out, 0x5a, N * sizeof(int64_t));
    zcoll_status_t st = persistent ? zcoll_start(rq) : ZCOLL_OK;
    if (st == ZCOLL_OK)
      st = persistent ? zcoll_wait(rq) : zcoll_allreduce(comm, src, dst, N, ZCOLL_INT64, ZCOLL_SUM);
    long bad = st == ZCOLL_OK ? rq_check(dst, N, p, round, ZCOLL_SUM) : -1;
    if (!round_ok(job, rank, comm, round, st, bad)) break;
  }
  zcoll_comm_stats_t s;
  if (zcoll_comm_stats(comm, &s, sizeof(s)) != ZCOLL_OK) {
    rt_fail(job, rank, "zcoll_comm_stats");
  } else {
    atomic_fetch_add(&g->placed, s.result_pieces_placed);
    atomic_fetch_add(&g->copied, s.result_pieces_copied);
    pthread_mutex_lock(&g->lock);
    if (persistent && s.result_pieces_copied > g->copied_max)
      g->copied_max = s.result_pieces_copied;
    pthread_mutex_unlock(&g->lock);
  }
  if (rq && zcoll_request_free(rq) != ZCOLL_OK) rt_fail(job, rank, "zcoll_request_free");
out:
  free(in);
  free(out);
}

static void run(const char *algo, int p, int blocking_ranks, int in_place, struct grant_job *g) {
  memset(g, 0, sizeof(*g));
  pthread_mutex_init(&g->lock, NULL);
  g->blocking_ranks = blocking_ranks;
  g->in_place = in_place;
  struct rt_job job = {.size = p, .body = grant_body, .arg = g};
  job.settings[0][0] = "ALGO";
  job.settings[0][1] = algo;
  job.settings[1][0] = "CHUNK_BYTES"; /* 160 pieces per rank's result */
  job.settings[1][1] = "2048";
  job.settings[2][0] = "TIMEOUT";
  job.settings[2][1] = "60";
  cr_assert_eq(rt_run(&job), 0, "ALGO=%s p=%d in_place=%d: %s", algo, p, in_place, job.first);
  pthread_mutex_destroy(&g->lock);
}

Test(grants, persistent_results_arrive_in_place, .timeout = 300) {
  static const char *const algos[] = {"ring", "rhd", "butterfly", "tree"};
  struct grant_job g;
  for (int a = 0; a < 4; a++)
    for (int p = 2; p <= 5; p++)
      for (int in_place = 0; in_place < 2; in_place++) {
        run(algos[a], p, p, in_place, &g);
        /* Ring, halving-doubling and tree end with pieces some rank only copies (an
         * allgather or a broadcast); out of place, some rank can grant them at the start,
         * so they arrive in place whatever the timing. In place, a range is granted as
         * this rank sends it, and whether the peer's answer comes before the grant is
         * timing (placed here in 6 runs of 6, but not promised): only results count.
         * The butterfly reduces every piece it receives (a non-power-of-two's extra
         * ranks aside): nothing to place. */
        if (!in_place && (a != 2 || (p & (p - 1))))
          cr_assert_gt(atomic_load(&g.placed), 0, "ALGO=%s p=%d in_place=%d: nothing in place",
                       algos[a], p, in_place);
      }
}

/* Two ranks in a ring: each grants the block it will receive in the allgather before it
 * sends anything, and the peer sends that block only after reducing what came after the
 * grant. So every piece after the first of the allgather arrives in place, whatever the
 * timing. */
Test(grants, two_rank_ring_copies_nothing, .timeout = 120) {
  struct grant_job g;
  run("ring", 2, 2, 0, &g);
  cr_assert_eq(g.copied_max, 0, "a persistent rank copied %llu pieces out of its slots",
               g.copied_max);
  cr_assert_gt(atomic_load(&g.placed), 0);
}

/* Writers in blocking calls (or in requests without a registered result) take the
 * grants of a persistent receiver all the same. */
Test(grants, blocking_writers_use_the_grants, .timeout = 120) {
  struct grant_job g;
  for (int p = 2; p <= 4; p++) {
    run("ring", p, 1, 0, &g);
    cr_assert_gt(atomic_load(&g.placed), 0, "p=%d", p);
    run("tree", p, 1, 1, &g);
  }
}

/* Results inside a zcoll_mem_register region, of blocking and non-blocking calls alike,
 * at an offset inside the region (so the grant's base matters), in place or not. */
static void registered_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  struct grant_job *g = job->arg;
  int p = zcoll_comm_size(comm);
  enum { OFF = 1000 }; /* elements before the result in the region */
  int64_t *in = malloc(N * sizeof(int64_t)), *region = malloc((N + 2 * OFF) * sizeof(int64_t));
  int64_t *out = region + OFF;
  zcoll_mr_t *mr;
  if (zcoll_mem_register(comm, region, (N + 2 * OFF) * sizeof(int64_t), &mr) != ZCOLL_OK) {
    rt_fail(job, rank, zcoll_comm_last_error(comm));
    goto out;
  }
  for (int round = 0; round < ROUNDS; round++) {
    int in_place = round & 1, nonblocking = round & 2;
    rq_fill(in_place ? out : in, N, rank, round);
    for (int k = 0; k < OFF; k++) region[k] = region[OFF + N + k] = -7;
    if (!in_place) memset(out, 0x5a, N * sizeof(int64_t));
    const void *src = in_place ? ZCOLL_IN_PLACE : in;
    zcoll_status_t st;
    if (nonblocking) {
      zcoll_request_t *rq;
      st = zcoll_iallreduce(comm, src, out, N, ZCOLL_INT64, ZCOLL_SUM, &rq);
      if (st == ZCOLL_OK) {
        st = zcoll_wait(rq);
        zcoll_request_free(rq);
      }
    } else {
      st = zcoll_allreduce(comm, src, out, N, ZCOLL_INT64, ZCOLL_SUM);
    }
    long bad = st == ZCOLL_OK ? rq_check(out, N, p, round, ZCOLL_SUM) : -1;
    for (int k = 0; k < OFF && bad < 0; k++)
      if (region[k] != -7 || region[OFF + N + k] != -7) bad = N + k; /* outside the result */
    if (!round_ok(job, rank, comm, round, st, bad)) break;
  }
  zcoll_comm_stats_t s;
  if (zcoll_comm_stats(comm, &s, sizeof(s)) == ZCOLL_OK)
    atomic_fetch_add(&g->placed, s.result_pieces_placed);
  if (zcoll_mem_deregister(mr) != ZCOLL_OK) rt_fail(job, rank, "zcoll_mem_deregister");
out:
  free(in);
  free(region);
}

Test(grants, registered_results_arrive_in_place, .timeout = 120) {
  static const char *const algos[] = {"ring", "rhd", "tree"};
  for (int a = 0; a < 3; a++)
    for (int p = 2; p <= 4; p++) {
      struct grant_job g;
      memset(&g, 0, sizeof(g));
      struct rt_job job = {.size = p, .body = registered_body, .arg = &g};
      job.settings[0][0] = "ALGO";
      job.settings[0][1] = algos[a];
      job.settings[1][0] = "CHUNK_BYTES";
      job.settings[1][1] = "2048";
      cr_assert_eq(rt_run(&job), 0, "ALGO=%s p=%d: %s", algos[a], p, job.first);
      cr_assert_gt(atomic_load(&g.placed), 0, "ALGO=%s p=%d: nothing in place", algos[a], p);
    }
}

/* Ranks that call differently get the header's words, not a grant's: a grant may reach
 * a peer before the header does, and is then set aside for the header to speak. */
static void mismatch_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  struct grant_job *g = job->arg;
  int64_t *in = calloc(N, sizeof(int64_t)), *out = calloc(N, sizeof(int64_t));
  zcoll_request_t *rq = NULL;
  zcoll_status_t st;
  if (rank == 0) {
    st = zcoll_allreduce_init(comm, in, out, N, ZCOLL_INT64, ZCOLL_SUM, &rq);
    if (st == ZCOLL_OK && (st = zcoll_start(rq)) == ZCOLL_OK) st = zcoll_wait(rq);
  } else {
    st = zcoll_allreduce(comm, in, out, N, ZCOLL_INT64, ZCOLL_MAX);
  }
  if (st == ZCOLL_OK) rt_fail(job, rank, "a call that differs between ranks succeeded");
  if (strstr(zcoll_comm_last_error(comm), "differs between ranks") &&
      strstr(zcoll_comm_last_error(comm), "allreduce(count 40000, int64, max, ring)"))
    atomic_fetch_add(&g->placed, 1); /* here: ranks whose message names both calls */
  if (rq) zcoll_request_free(rq);
  free(in);
  free(out);
}

Test(grants, a_mismatch_is_named_by_the_header, .timeout = 120) {
  for (int k = 0; k < 3; k++) {
    struct grant_job g;
    memset(&g, 0, sizeof(g));
    struct rt_job job = {.size = 2, .body = mismatch_body, .arg = &g};
    job.settings[0][0] = "ALGO";
    job.settings[0][1] = "ring";
    job.settings[1][0] = "CHUNK_BYTES";
    job.settings[1][1] = "2048";
    job.settings[2][0] = "TIMEOUT";
    job.settings[2][1] = "30";
    cr_assert_eq(rt_run(&job), 0, "%s", job.first);
    cr_assert_gt(atomic_load(&g.placed), 0, "no rank said which calls differ");
  }
}

/* A registration whose region receives a result in flight stays until the call ends. */
static void dereg_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  int p = zcoll_comm_size(comm);
  int64_t *in = malloc(N * sizeof(int64_t)), *out = malloc(N * sizeof(int64_t));
  zcoll_mr_t *mr;
  zcoll_request_t *rq;
  rq_fill(in, N, rank, 3);
  if (zcoll_mem_register(comm, out, N * sizeof(int64_t), &mr) != ZCOLL_OK ||
      zcoll_iallreduce(comm, in, out, N, ZCOLL_INT64, ZCOLL_SUM, &rq) != ZCOLL_OK) {
    rt_fail(job, rank, zcoll_comm_last_error(comm));
  } else {
    /* Caller progress: nothing moves before the next call, so the request is in flight. */
    if (zcoll_mem_deregister(mr) != ZCOLL_ERR_INVALID_ARG)
      rt_fail(job, rank, "deregistered a region a collective in flight writes into");
    zcoll_status_t st = zcoll_wait(rq);
    round_ok(job, rank, comm, 3, st, st == ZCOLL_OK ? rq_check(out, N, p, 3, ZCOLL_SUM) : -1);
    zcoll_request_free(rq);
    if (zcoll_mem_deregister(mr) != ZCOLL_OK) rt_fail(job, rank, zcoll_comm_last_error(comm));
  }
  free(in);
  free(out);
}

Test(grants, no_deregistration_under_a_collective, .timeout = 120) {
  struct rt_job job = {.size = 3, .body = dereg_body};
  job.settings[0][0] = "CHUNK_BYTES";
  job.settings[0][1] = "2048";
  cr_assert_eq(rt_run(&job), 0, "%s", job.first);
}

/* The promise grants rest on: after the receiver deregisters its result (a failure, a
 * freed request), a write through the key it handed out fails and lands nowhere. */
Test(grants, a_revoked_key_writes_nothing) {
  const struct zcoll_tl_ops *ops = &zcoll__tl_loopback;
  cr_assert(ops->caps & ZCOLL_TL_CAP_REMOTE_USER);
  zcoll_config_t *cfg;
  cr_assert_eq(zcoll_config_create(&cfg), ZCOLL_OK);
  /* Rank 0 writes into rank 1's result: two instances of one process, as loopback has. */
  struct zcoll_tl_params prm = {.rank = 0, .size = 2, .cfg = cfg}, prm1 = prm;
  prm1.rank = 1;
  struct zcoll_tl *tl, *tl1;
  cr_assert_eq(ops->open(&prm, &tl), ZCOLL_OK);
  cr_assert_eq(ops->open(&prm1, &tl1), ZCOLL_OK);
  char addr[64];
  size_t alen = sizeof(addr);
  cr_assert_eq(ops->address(tl1, addr, &alen), ZCOLL_OK);
  const void *addrs[1] = {addr};
  int ranks[1] = {1};
  struct zcoll_ep *ep;
  cr_assert_eq(ops->connect(tl, 1, ranks, addrs, &alen, &ep), ZCOLL_OK);
  static char result[4096], src[4096];
  memset(result, 0, sizeof(result));
  memset(src, 7, sizeof(src));
  struct zcoll_tl_mr *rmr, *smr;
  cr_assert_eq(ops->mem_reg(tl1, result, sizeof(result), 1, &rmr), ZCOLL_OK);
  cr_assert_eq(ops->mem_reg(tl, src, sizeof(src), 0, &smr), ZCOLL_OK);
  char key[64];
  size_t klen = sizeof(key);
  cr_assert_eq(ops->rkey_pack(rmr, key, &klen), ZCOLL_OK);
  struct zcoll_tl_rkey *rkey;
  cr_assert_eq(ops->rkey_unpack(ep, key, klen, &rkey), ZCOLL_OK);
  cr_assert_eq(ops->put(ep, src, smr, rkey, 0, 100, 1, 1), ZCOLL_OK);
  cr_assert_eq(result[99], 7, "a write through a live key lands");
  ops->mem_dereg(rmr);
  memset(src, 9, sizeof(src));
  cr_assert_eq(ops->put(ep, src, smr, rkey, 0, 100, 2, 2), ZCOLL_ERR_TRANSPORT);
  for (int i = 0; i < 100; i++) cr_assert_eq(result[i], 7, "byte %d written after revoke", i);
  ops->rkey_release(rkey);
  ops->mem_dereg(smr);
  ops->close(tl);
  ops->close(tl1);
  zcoll_config_free(cfg);
}
