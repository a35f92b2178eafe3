/*
 * Bad input gets a clear status and a message naming the problem; never a crash, a
 * hang or silent wrong data.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rank_threads.h"
#include "zcoll.h"

static zcoll_comm_t *single(void) {
  zcoll_config_t *cfg;
  cr_assert_eq(zcoll_config_create(&cfg), ZCOLL_OK, "%s", zcoll_last_error());
  cr_assert_eq(zcoll_config_set(cfg, "RANK", "0"), ZCOLL_OK);
  cr_assert_eq(zcoll_config_set(cfg, "SIZE", "1"), ZCOLL_OK);
  zcoll_comm_t *comm;
  cr_assert_eq(zcoll_comm_init(&comm, cfg), ZCOLL_OK, "%s", zcoll_last_error());
  zcoll_config_free(cfg);
  return comm;
}

#define EXPECT(call, status, needle)                                                          \
  do {                                                                                        \
    zcoll_status_t st_ = (call);                                                              \
    cr_assert_eq(st_, status, "%s returned %s: %s", #call, zcoll_strerror(st_),               \
                 zcoll_comm_last_error(comm));                                                \
    cr_assert(strstr(zcoll_comm_last_error(comm), needle) != NULL, "message '%s' lacks '%s'", \
              zcoll_comm_last_error(comm), needle);                                           \
  } while (0)

/* An argument error is this rank's call of the collective, which the others cannot
 * finish: it breaks the communicator (see zcoll.h), so each case gets a fresh one. */
#define EXPECT_BROKEN(call, needle)                                                 \
  do {                                                                              \
    zcoll_comm_t *comm = single();                                                  \
    EXPECT(call, ZCOLL_ERR_INVALID_ARG, needle);                                    \
    float ok_[1] = {1};                                                             \
    EXPECT(zcoll_allreduce(comm, ZCOLL_IN_PLACE, ok_, 1, ZCOLL_FLOAT32, ZCOLL_SUM), \
           ZCOLL_ERR_INVALID_ARG, "unusable after an earlier error");               \
    cr_assert_eq(zcoll_comm_destroy(comm), ZCOLL_OK);                               \
  } while (0)

Test(errors, bad_arguments) {
  float s[4] = {1, 2, 3, 4}, r[4];
  EXPECT_BROKEN(zcoll_allreduce(comm, NULL, r, 4, ZCOLL_FLOAT32, ZCOLL_SUM), "sendbuf is NULL");
  EXPECT_BROKEN(zcoll_allreduce(comm, s, NULL, 4, ZCOLL_FLOAT32, ZCOLL_SUM), "recvbuf is NULL");
  EXPECT_BROKEN(zcoll_allreduce(comm, s, r, 4, (zcoll_dtype_t)99, ZCOLL_SUM), "unknown dtype 99");
  EXPECT_BROKEN(zcoll_allreduce(comm, s, r, 4, (zcoll_dtype_t)-1, ZCOLL_SUM), "unknown dtype");
  EXPECT_BROKEN(zcoll_allreduce(comm, s, r, 4, ZCOLL_FLOAT32, (zcoll_op_t)7), "unknown op 7");
  EXPECT_BROKEN(zcoll_allreduce(comm, s, r, SIZE_MAX / 4, ZCOLL_FLOAT64, ZCOLL_SUM), "overflows");
  EXPECT_BROKEN(zcoll_allreduce(comm, s, s + 1, 3, ZCOLL_FLOAT32, ZCOLL_SUM), "overlap");
  cr_assert_eq(zcoll_allreduce(NULL, s, r, 4, ZCOLL_FLOAT32, ZCOLL_SUM), ZCOLL_ERR_INVALID_ARG);
  cr_assert(strstr(zcoll_last_error(), "comm is NULL"));
  zcoll_comm_t *comm = single();
  cr_assert_eq(zcoll_allreduce(comm, s, r, 4, ZCOLL_FLOAT32, ZCOLL_SUM), ZCOLL_OK);
  cr_assert(r[0] == 1 && r[3] == 4);
  /* count 0 needs no buffers, as in MPI */
  cr_assert_eq(zcoll_allreduce(comm, NULL, NULL, 0, ZCOLL_INT8, ZCOLL_MAX), ZCOLL_OK);
  cr_assert_eq(zcoll_comm_destroy(comm), ZCOLL_OK);
}

Test(errors, request_misuse) {
  zcoll_comm_t *comm = single();
  float s[3] = {1, 2, 3}, r[3];
  zcoll_request_t *req = (zcoll_request_t *)&req, *pr;
  cr_assert_eq(zcoll_wait(NULL), ZCOLL_ERR_INVALID_ARG);
  cr_assert_eq(zcoll_test(NULL), ZCOLL_ERR_INVALID_ARG);
  cr_assert_eq(zcoll_start(NULL), ZCOLL_ERR_INVALID_ARG);
  cr_assert_eq(zcoll_request_free(NULL), ZCOLL_ERR_INVALID_ARG);
  /* A persistent request's arguments are checked at init, which is local: the
   * communicator stays usable. */
  EXPECT(zcoll_allreduce_init(comm, s, NULL, 3, ZCOLL_FLOAT32, ZCOLL_SUM, &req),
         ZCOLL_ERR_INVALID_ARG, "recvbuf");
  cr_assert_null(req);
  cr_assert_eq(zcoll_iallreduce(comm, s, r, 3, ZCOLL_FLOAT32, ZCOLL_SUM, &req), ZCOLL_OK);
  /* In flight: not freed, not restarted, and destroy refuses (changing nothing). */
  EXPECT(zcoll_request_free(req), ZCOLL_ERR_INVALID_ARG, "in flight");
  EXPECT(zcoll_start(req), ZCOLL_ERR_INVALID_ARG, "not persistent");
  EXPECT(zcoll_comm_destroy(comm), ZCOLL_ERR_INVALID_ARG, "in flight");
  cr_assert_eq(zcoll_wait(req), ZCOLL_OK);
  cr_assert(r[0] == 1 && r[1] == 2 && r[2] == 3);
  cr_assert_eq(zcoll_request_free(req), ZCOLL_OK);
  /* A freed request is kept for reuse: a second free (or any call) on it is refused, not
   * a corrupted list -- until a new request takes its place. */
  EXPECT(zcoll_request_free(req), ZCOLL_ERR_INVALID_ARG, "was freed");
  EXPECT(zcoll_wait(req), ZCOLL_ERR_INVALID_ARG, "was freed");
  EXPECT(zcoll_test(req), ZCOLL_ERR_INVALID_ARG, "was freed");
  zcoll_request_t *again;
  cr_assert_eq(zcoll_iallreduce(comm, s, r, 3, ZCOLL_FLOAT32, ZCOLL_MAX, &again), ZCOLL_OK);
  cr_assert_eq(zcoll_wait(again), ZCOLL_OK);
  cr_assert(r[0] == 1 && r[1] == 2 && r[2] == 3);
  cr_assert_eq(zcoll_request_free(again), ZCOLL_OK);
  /* Out of place: alone, in place, there is nothing to do and it completes as it starts. */
  cr_assert_eq(zcoll_allreduce_init(comm, s, r, 3, ZCOLL_FLOAT32, ZCOLL_MAX, &pr), ZCOLL_OK);
  cr_assert_eq(zcoll_test(pr), ZCOLL_OK, "inactive is complete");
  cr_assert_eq(zcoll_start(pr), ZCOLL_OK);
  EXPECT(zcoll_start(pr), ZCOLL_ERR_INVALID_ARG, "still in flight");
  cr_assert_eq(zcoll_wait(pr), ZCOLL_OK);
  cr_assert_eq(zcoll_start(pr), ZCOLL_OK);
  while (zcoll_test(pr) == ZCOLL_IN_PROGRESS) {
  }
  /* Left for destroy to free: it is not in flight. */
  cr_assert_eq(zcoll_comm_destroy(comm), ZCOLL_OK);
  /* A revoke ends a request in flight at the next call, even one that could finish. */
  comm = single();
  cr_assert_eq(zcoll_iallreduce(comm, s, r, 3, ZCOLL_FLOAT32, ZCOLL_SUM, &req), ZCOLL_OK);
  cr_assert_eq(zcoll_comm_revoke(comm), ZCOLL_OK);
  EXPECT(zcoll_test(req), ZCOLL_ERR_PEER_FAILED, "revoked");
  EXPECT(zcoll_wait(req), ZCOLL_ERR_PEER_FAILED, "revoked");
  cr_assert_eq(zcoll_request_free(req), ZCOLL_OK);
  zcoll_comm_destroy(comm);
  /* req NULL in a non-blocking call is this rank's call going wrong: it breaks. */
  comm = single();
  EXPECT(zcoll_iallreduce(comm, s, r, 3, ZCOLL_FLOAT32, ZCOLL_SUM, NULL), ZCOLL_ERR_INVALID_ARG,
         "req is NULL");
  cr_assert_neq(zcoll_allreduce(comm, s, r, 3, ZCOLL_FLOAT32, ZCOLL_SUM), ZCOLL_OK);
  cr_assert_eq(zcoll_comm_destroy(comm), ZCOLL_OK);
}

Test(errors, registration) {
  zcoll_comm_t *comm = single();
  float s[4] = {1, 2, 3, 4}, r[4];
  zcoll_mr_t *mr = (zcoll_mr_t *)&comm;
  EXPECT(zcoll_mem_register(comm, NULL, 16, &mr), ZCOLL_ERR_INVALID_ARG, "addr is NULL");
  EXPECT(zcoll_mem_register(comm, s, 0, &mr), ZCOLL_ERR_INVALID_ARG, "len is 0");
  cr_assert_eq(mr, (zcoll_mr_t *)&comm, "output set on failure");
  cr_assert_eq(zcoll_mem_register(comm, s, sizeof(s), &mr), ZCOLL_OK);
  cr_assert_eq(zcoll_allreduce(comm, s, r, 4, ZCOLL_FLOAT32, ZCOLL_SUM), ZCOLL_OK);
  cr_assert(r[0] == 1 && r[3] == 4);
  cr_assert_eq(zcoll_mem_deregister(mr), ZCOLL_OK);
  cr_assert_eq(zcoll_mem_deregister(NULL), ZCOLL_ERR_INVALID_ARG);
  /* A registration left behind is released with the communicator. */
  cr_assert_eq(zcoll_mem_register(comm, r, sizeof(r), &mr), ZCOLL_OK);
  cr_assert_eq(zcoll_comm_destroy(comm), ZCOLL_OK);
}

/* The counters: collectives counted, no cache on this transport, older and newer
 * callers' struct sizes, and the argument errors. */
Test(errors, stats) {
  zcoll_comm_t *comm = single();
  float s[4] = {1, 2, 3, 4}, r[4];
  for (int i = 0; i < 3; i++)
    cr_assert_eq(zcoll_allreduce(comm, s, r, 4, ZCOLL_FLOAT32, ZCOLL_SUM), ZCOLL_OK);
  zcoll_comm_stats_t st;
  memset(&st, 0xff, sizeof(st));
  cr_assert_eq(zcoll_comm_stats(comm, &st, sizeof(st)), ZCOLL_OK);
  cr_expect_eq(st.collectives, 3);
  cr_expect_eq(st.rcache_hits + st.rcache_misses + st.rcache_bytes, 0);
  uint64_t older[1] = {0}; /* a caller built when the struct had one field */
  cr_assert_eq(zcoll_comm_stats(comm, (zcoll_comm_stats_t *)older, sizeof(older)), ZCOLL_OK);
  cr_expect_eq(older[0], 3);
  unsigned char newer[sizeof(st) + 16];
  memset(newer, 0xff, sizeof(newer));
  cr_assert_eq(zcoll_comm_stats(comm, (zcoll_comm_stats_t *)newer, sizeof(newer)), ZCOLL_OK);
  for (size_t i = sizeof(st); i < sizeof(newer); i++) cr_expect_eq(newer[i], 0);
  EXPECT(zcoll_comm_stats(comm, NULL, sizeof(st)), ZCOLL_ERR_INVALID_ARG, "stats is NULL");
  EXPECT(zcoll_comm_stats(comm, &st, 0), ZCOLL_ERR_INVALID_ARG, "size is 0");
  cr_expect_eq(zcoll_comm_stats(NULL, &st, sizeof(st)), ZCOLL_ERR_INVALID_ARG);
  cr_assert_eq(zcoll_comm_destroy(comm), ZCOLL_OK);
}

Test(errors, bad_configuration) {
  zcoll_config_t *cfg;
  cr_assert_eq(zcoll_config_create(&cfg), ZCOLL_OK);
  cr_assert_eq(zcoll_config_set(cfg, "ALGO", "bogus"), ZCOLL_ERR_INVALID_ARG);
  cr_assert(strstr(zcoll_last_error(), "ZCOLL_ALGO") && strstr(zcoll_last_error(), "bogus"), "%s",
            zcoll_last_error());
  cr_assert_eq(zcoll_config_set(cfg, "ZCOLL_TIMEOUT", "-3"), ZCOLL_ERR_INVALID_ARG);
  cr_assert_eq(zcoll_config_set(cfg, "CHUNK_BYTES", "12Q"), ZCOLL_ERR_INVALID_ARG);
  cr_assert_eq(zcoll_config_set(cfg, "PIPELINE_DEPTH", "1"), ZCOLL_ERR_INVALID_ARG);
  cr_assert_eq(zcoll_config_set(cfg, "TRANSPORT", "carrier-pigeon"), ZCOLL_ERR_INVALID_ARG);
  cr_assert(strstr(zcoll_last_error(), "auto|shm|verbs|ucx|loopback"), "%s", zcoll_last_error());
  /* The verbs settings (docs/configuration.md), refused by name before any device is
   * looked at; each good value is taken. */
  static const struct {
    const char *name, *bad[3], *good;
  } ib[] = {{"IB_HCA", {"mlx5_0:0", "^", "a b"}, "^=mlx5_0:1,mlx5_1"},
            {"IB_GID_INDEX", {"-2", "256", "3x"}, "3"},
            {"IB_TC", {"-2", "256", "ef"}, "106"},
            {"IB_SL", {"-1", "16", "3x"}, "15"},
            {"IB_PKEY", {"0x8000", "0x10000", "0x0"}, "0x8001"},
            {"IB_TIMEOUT", {"0", "32", "-1"}, "20"},
            {"IB_RETRY_CNT", {"-1", "8", "7.5"}, "0"},
            {"IB_QP_DEPTH", {"575", "1048577", "-1"}, "4096"}};
  for (size_t i = 0; i < sizeof(ib) / sizeof(ib[0]); i++) {
    for (int b = 0; b < 3; b++) {
      cr_expect_eq(zcoll_config_set(cfg, ib[i].name, ib[i].bad[b]), ZCOLL_ERR_INVALID_ARG,
                   "ZCOLL_%s=%s accepted", ib[i].name, ib[i].bad[b]);
      cr_expect(strstr(zcoll_last_error(), ib[i].name) && strstr(zcoll_last_error(), ib[i].bad[b]),
                "%s", zcoll_last_error());
    }
    cr_expect_eq(zcoll_config_set(cfg, ib[i].name, ib[i].good), ZCOLL_OK, "ZCOLL_%s=%s: %s",
                 ib[i].name, ib[i].good, zcoll_last_error());
  }
  cr_assert_eq(zcoll_config_set(cfg, "NO_SUCH_THING", "1"), ZCOLL_ERR_INVALID_ARG);
  cr_assert(strstr(zcoll_last_error(), "NO_SUCH_THING"));
  /* A rejected value leaves the field as it was. */
  char buf[64];
  cr_assert_eq(zcoll_config_get(cfg, "ALGO", buf, sizeof(buf)), ZCOLL_OK);
  cr_assert_str_eq(buf, "auto");
  cr_assert_eq(zcoll_config_set(cfg, "chunk_bytes", "64K"), ZCOLL_OK);
  cr_assert_eq(zcoll_config_get(cfg, "ZCOLL_CHUNK_BYTES", buf, sizeof(buf)), ZCOLL_OK);
  cr_assert_str_eq(buf, "64K");
  /* Ranks must be consistent. */
  cr_assert_eq(zcoll_config_set(cfg, "RANK", "3"), ZCOLL_OK);
  cr_assert_eq(zcoll_config_set(cfg, "SIZE", "2"), ZCOLL_OK);
  zcoll_comm_t *comm = (zcoll_comm_t *)&cfg;
  cr_assert_eq(zcoll_comm_init(&comm, cfg), ZCOLL_ERR_INVALID_ARG);
  cr_assert(strstr(zcoll_last_error(), "rank 3 of size 2"), "%s", zcoll_last_error());
  cr_assert_eq(comm, (zcoll_comm_t *)&cfg, "output set on failure");
  zcoll_config_free(cfg);
}

Test(errors, bad_environment) {
  setenv("ZCOLL_TIMEOUT", "soon", 1);
  zcoll_config_t *cfg = NULL;
  cr_assert_eq(zcoll_config_create(&cfg), ZCOLL_ERR_INVALID_ARG);
  cr_assert(strstr(zcoll_last_error(), "ZCOLL_TIMEOUT") && strstr(zcoll_last_error(), "soon"), "%s",
            zcoll_last_error());
  cr_assert_null(cfg);
  zcoll_comm_t *comm;
  cr_assert_eq(zcoll_comm_init(&comm, NULL), ZCOLL_ERR_INVALID_ARG);
  unsetenv("ZCOLL_TIMEOUT");
}

/* ZCOLL_ROOT names the port the other ranks connect to: one they cannot reach (0, or one
 * that getaddrinfo() takes modulo 65536) used to show only as a job timing out. */
Test(errors, bad_root) {
  static const char *const bad[] = {
      "127.0.0.1:0",   "127.0.0.1:65536", "127.0.0.1:70000", "127.0.0.1:", "127.0.0.1:80x",
      "127.0.0.1: 80", "127.0.0.1:-1",    "127.0.0.1",       ":8080",      "[::1]:0",
      "[::1]:99999",   "[::1]8080",       "*:000000"};
  static const char *const good[] = {"127.0.0.1:65535", "127.0.0.1:1",  "[::1]:8080",
                                     "*:8080",          "node-7:00080", ""};
  zcoll_config_t *cfg;
  cr_assert_eq(zcoll_config_create(&cfg), ZCOLL_OK);
  cr_assert_eq(zcoll_config_set(cfg, "ROOT", "127.0.0.1:4000"), ZCOLL_OK);
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    cr_expect_eq(zcoll_config_set(cfg, "ROOT", bad[i]), ZCOLL_ERR_INVALID_ARG, "'%s'", bad[i]);
    cr_expect(strstr(zcoll_last_error(), "ZCOLL_ROOT") && strstr(zcoll_last_error(), bad[i]),
              "'%s': %s", bad[i], zcoll_last_error());
  }
  char buf[64];
  cr_assert_eq(zcoll_config_get(cfg, "ROOT", buf, sizeof(buf)), ZCOLL_OK);
  cr_expect_str_eq(buf, "127.0.0.1:4000", "a rejected value changed the field");
  for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
    cr_expect_eq(zcoll_config_set(cfg, "ROOT", good[i]), ZCOLL_OK, "'%s': %s", good[i],
                 zcoll_last_error());
  zcoll_config_free(cfg);
  /* From the environment, zcoll_comm_init refuses it at once, not after the timeout. */
  setenv("ZCOLL_RANK", "1", 1);
  setenv("ZCOLL_SIZE", "2", 1);
  setenv("ZCOLL_TIMEOUT", "30", 1);
  for (size_t i = 0; i < 3; i++) {
    setenv("ZCOLL_ROOT", bad[i], 1);
    zcoll_comm_t *comm = NULL;
    double t0 = sp_now_();
    cr_expect_eq(zcoll_comm_init(&comm, NULL), ZCOLL_ERR_INVALID_ARG, "'%s'", bad[i]);
    cr_expect(strstr(zcoll_last_error(), "ZCOLL_ROOT") && strstr(zcoll_last_error(), bad[i]),
              "'%s': %s", bad[i], zcoll_last_error());
    cr_expect_lt(sp_now_() - t0, 10.0, "'%s': not refused at once", bad[i]);
    cr_expect_null(comm);
  }
  unsetenv("ZCOLL_ROOT"), unsetenv("ZCOLL_RANK"), unsetenv("ZCOLL_SIZE");
  unsetenv("ZCOLL_TIMEOUT");
}

Test(errors, verbs_not_built_is_clear) {
  zcoll_config_t *cfg;
  zcoll_config_create(&cfg);
  zcoll_config_set(cfg, "TRANSPORT", "verbs");
  zcoll_comm_t *comm;
  cr_assert_eq(zcoll_comm_init(&comm, cfg), ZCOLL_ERR_UNSUPPORTED);
  cr_assert(strstr(zcoll_last_error(), "verbs"), "%s", zcoll_last_error());
  zcoll_config_free(cfg);
}

/* ---- ranks that disagree ------------------------------------------------------------ */

struct disagree {
  int rank;                /* the odd one out */
  size_t count, odd_count; /* elements */
  zcoll_dtype_t dtype, odd_dtype;
  zcoll_op_t op, odd_op;
  int mismatches; /* ranks that saw ZCOLL_ERR_MISMATCH themselves */
  /* First one call all ranks agree on, so that the disagreeing call's first pieces go as
   * "same as last" (channel.h) from the ranks that repeat it and with a header from the
   * others: 1, the majority's call; 2, the odd rank's. 0: no such call. */
  int repeat;
};

static void disagree_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  struct disagree *d = job->arg;
  int odd = rank == d->rank;
  size_t count = odd ? d->odd_count : d->count;
  size_t most = d->count > d->odd_count ? d->count : d->odd_count;
  double *s = calloc(most + 1, 8), *r = calloc(most + 1, 8);
  if (d->repeat) {
    int as_odd = d->repeat == 2;
    zcoll_status_t st = zcoll_allreduce(comm, s, r, as_odd ? d->odd_count : d->count,
                                        as_odd ? d->odd_dtype : d->dtype,
                                        as_odd ? d->odd_op : d->op);
    /* A slow rank may still be in it when a fast one, already in the next call, finds
     * the mismatch and breaks the communicator: then this call fails with that news. */
    if (st == ZCOLL_ERR_MISMATCH || st == ZCOLL_ERR_PEER_FAILED) {
      if (st == ZCOLL_ERR_MISMATCH) __atomic_fetch_add(&d->mismatches, 1, __ATOMIC_RELAXED);
      if (zcoll_allreduce(comm, s, r, 1, ZCOLL_FLOAT64, ZCOLL_SUM) == ZCOLL_OK)
        rt_fail(job, rank, "the communicator went on after a mismatch");
      free(s);
      free(r);
      return;
    }
    if (st != ZCOLL_OK) {
      char msg[300];
      snprintf(msg, sizeof(msg), "the call all ranks agree on failed: %s (%s)", zcoll_strerror(st),
               zcoll_comm_last_error(comm));
      rt_fail(job, rank, msg);
    }
  }
  zcoll_status_t st = zcoll_allreduce(comm, s, r, count, odd ? d->odd_dtype : d->dtype,
                                      odd ? d->odd_op : d->op);
  /* A rank whose own exchanges all agreed may finish this call before the news of the
   * mismatch reaches it; none may get anything but an error or success... */
  if (st != ZCOLL_OK && st != ZCOLL_ERR_MISMATCH && st != ZCOLL_ERR_PEER_FAILED) {
    char msg[300];
    snprintf(msg, sizeof(msg), "got %s (%s)", zcoll_strerror(st), zcoll_comm_last_error(comm));
    rt_fail(job, rank, msg);
  }
  if (st == ZCOLL_ERR_MISMATCH) __atomic_fetch_add(&d->mismatches, 1, __ATOMIC_RELAXED);
  /* ...except the odd rank: everything it receives disagrees with its call. */
  if (odd && st == ZCOLL_OK && d->count && d->odd_count)
    rt_fail(job, rank, "the odd rank got ZCOLL_OK for a call no peer made");
  /* ...and every one of them fails from the next call on: no silent wrong data. */
  if (zcoll_allreduce(comm, s, r, 1, ZCOLL_FLOAT64, ZCOLL_SUM) == ZCOLL_OK)
    rt_fail(job, rank, "the communicator went on after a mismatch");
  free(s);
  free(r);
}

static void run_disagree_with(const char *algo, int size, struct disagree d) {
  struct rt_job job = {.size = size, .body = disagree_body, .arg = &d};
  job.settings[2][0] = "ALGO";
  job.settings[2][1] = algo;
  job.settings[0][0] = "TIMEOUT";
  job.settings[0][1] = "60";
  job.settings[1][0] = "CHUNK_BYTES";
  job.settings[1][1] = "4096";
  double t0 = sp_now_();
  cr_assert_eq(rt_run(&job), 0, "ALGO=%s p=%d: %s", algo, size, job.first);
  cr_assert_gt(d.mismatches, 0, "ALGO=%s p=%d: nobody reported ZCOLL_ERR_MISMATCH", algo, size);
  /* Well before the 60 s timeout: detected, not timed out. */
  cr_assert_lt(sp_now_() - t0, 30.0);
}

/* Every algorithm must keep the shape of its exchanges whatever the count. */
static void run_disagree(int size, struct disagree d) {
  static const char *const algos[] = {"auto", "ring", "butterfly", "rhd", "tree"};
  for (size_t i = 0; i < sizeof(algos) / sizeof(algos[0]); i++)
    run_disagree_with(algos[i], size, d);
}

Test(errors, different_counts, .timeout = 120) {
  run_disagree(
      3, (struct disagree){1, 1000, 1001, ZCOLL_FLOAT32, ZCOLL_FLOAT32, ZCOLL_SUM, ZCOLL_SUM});
  run_disagree(4, (struct disagree){2, 5, 0, ZCOLL_INT32, ZCOLL_INT32, ZCOLL_MAX, ZCOLL_MAX});
  run_disagree(2, (struct disagree){0, 100000, 10, ZCOLL_INT8, ZCOLL_INT8, ZCOLL_SUM, ZCOLL_SUM});
  run_disagree(5, (struct disagree){4, 3, 0, ZCOLL_FLOAT64, ZCOLL_FLOAT64, ZCOLL_AVG, ZCOLL_AVG});
  run_disagree(6, (struct disagree){0, 0, 2, ZCOLL_UINT8, ZCOLL_UINT8, ZCOLL_MIN, ZCOLL_MIN});
}

/* The call before was alike on every rank, so that some ranks state theirs only as "the
 * same as last time": that must be caught as surely as a header. */
Test(errors, differ_after_a_repeat, .timeout = 180) {
  for (int repeat = 1; repeat <= 2; repeat++) {
    run_disagree(3, (struct disagree){1, 64, 64, ZCOLL_FLOAT32, ZCOLL_INT32, ZCOLL_SUM, ZCOLL_SUM,
                                      0, repeat});
    run_disagree(2, (struct disagree){0, 1000, 1001, ZCOLL_FLOAT32, ZCOLL_FLOAT32, ZCOLL_SUM,
                                      ZCOLL_SUM, 0, repeat});
    run_disagree(4, (struct disagree){3, 8, 8, ZCOLL_FLOAT64, ZCOLL_FLOAT64, ZCOLL_SUM, ZCOLL_MAX,
                                      0, repeat});
  }
}

Test(errors, different_dtype_or_op, .timeout = 120) {
  /* Same byte count: only the signature can tell. */
  run_disagree(3, (struct disagree){2, 64, 64, ZCOLL_FLOAT32, ZCOLL_INT32, ZCOLL_SUM, ZCOLL_SUM});
  run_disagree(2,
               (struct disagree){1, 64, 64, ZCOLL_FLOAT64, ZCOLL_FLOAT64, ZCOLL_SUM, ZCOLL_PROD});
}
