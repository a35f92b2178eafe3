/*
 * test_flight.c -- the flight recorder (ZCOLL_FLIGHT_RECORDER, zcoll_comm_dump) over real
 * processes on shm: the dumps of a job where one rank skips a call name that rank and
 * that call, and a dump asked for on another thread returns while the owner is blocked.
 * The reference is the job's script itself (which rank skipped which call), not the
 * library's own accounting.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "solo.h"
#include "spawn.h"
#include "zcoll.h"

#define MAXR 4
#define MAXE 128

struct entry {
  long long seq, count;
  char kind[32], state[32];
  int await[8], nawait;
};

/* A rank's first dump: its header and entries. */
struct dump {
  int found;
  long long next_seq, last_done;
  char trigger[32];
  struct entry e[MAXE];
  int n;
};

/* The value of key in a "k=v k=v" line, into out (0 if absent). */
static int field(const char *line, const char *key, char *out, size_t len) {
  char pat[40];
  snprintf(pat, sizeof(pat), " %s=", key);
  const char *p = strstr(line, pat);
  if (!p) return 0;
  p += strlen(pat);
  size_t n = strcspn(p, " \n");
  snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), p);
  return 1;
}

static void parse(const char *path, int rank, struct dump *d) {
  memset(d, 0, sizeof(*d));
  FILE *f = fopen(path, "r");
  cr_assert(f, "rank %d wrote no dump to %s", rank, path);
  char line[1024], v[64];
  while (fgets(line, sizeof(line), f)) {
    if (strncmp(line, "zcoll flight rank=", 18) != 0) continue;
    cr_assert_eq(atoi(line + 18), rank, "%s names another rank: %s", path, line);
    /* A header. The first dump is the one that explains: a rank that hears of the failure
     * only in its destroy dumps once more there (trigger peer_failed). */
    if (strstr(line, " size=")) {
      if (d->found) break;
      d->found = 1;
      cr_assert(field(line, "next_seq", v, sizeof(v)), "%s", line);
      d->next_seq = atoll(v);
      cr_assert(field(line, "last_done", v, sizeof(v)), "%s", line);
      d->last_done = atoll(v);
      field(line, "trigger", d->trigger, sizeof(d->trigger));
      continue;
    }
    cr_assert(d->found && d->n < MAXE, "an entry before any header in %s: %s", path, line);
    struct entry *e = &d->e[d->n++];
    cr_assert(field(line, "seq", v, sizeof(v)) && field(line, "kind", e->kind, sizeof(e->kind)) &&
                  field(line, "state", e->state, sizeof(e->state)) &&
                  field(line, "awaiting", v, sizeof(v)),
              "%s", line);
    e->seq = atoll(strstr(line, " seq=") + 5);
    e->count = atoll(strstr(line, " count=") + 7);
    for (char *p = v; *p && *p != '-' && e->nawait < 8; p += strcspn(p, ","), p += *p == ',')
      e->await[e->nawait++] = atoi(p);
  }
  fclose(f);
  cr_assert(d->found, "no dump header in %s", path);
}

/* Starts np ranks of argv with env on shm, returns their exit statuses and outputs. */
static void run(int np, const char *const *argv, const char *const *extra, int *status,
                char **out) {
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof(a);
  cr_assert(lfd >= 0 && !bind(lfd, (struct sockaddr *)&a, sizeof(a)) && !listen(lfd, 64) &&
            !getsockname(lfd, (struct sockaddr *)&a, &alen));
  char root[64], size[32], fd[32], rank[MAXR][32];
  snprintf(root, sizeof(root), "ZCOLL_ROOT=127.0.0.1:%d", ntohs(a.sin_port));
  snprintf(size, sizeof(size), "ZCOLL_SIZE=%d", np);
  snprintf(fd, sizeof(fd), "ZCOLL_ROOT_FD=%d", lfd);
  struct sp_async jobs[MAXR];
  for (int r = 0; r < np; r++) {
    snprintf(rank[r], sizeof(rank[r]), "ZCOLL_RANK=%d", r);
    const char *env[16] = {rank[r], size, root, r == 0 ? fd : "ZCOLL_ROOT_FD=-1",
                           "ZCOLL_TRANSPORT=shm"};
    int n = 5;
    for (int i = 0; extra[i] && n < 15; i++) env[n++] = extra[i];
    env[n] = NULL;
    jobs[r] = sp_start(argv, env);
  }
  close(lfd);
  for (int r = 0; r < np; r++) {
    struct sp_result x = sp_finish(&jobs[r], 60);
    status[r] = x.status;
    out[r] = x.out ? x.out : strdup("");
  }
}

/* Runs np ranks of argv (with a recorder file in a scratch directory and extra), expects
 * each to exit 0, and parses each rank's first dump into d. */
static void run_dumps(int np, const char *const *argv, const char *extra, struct dump *d);

static char *scratch_dir(void) {
  char *dir = strdup("/tmp/zcoll_flight_XXXXXX");
  cr_assert(mkdtemp(dir));
  return dir;
}

static void cleanup(const char *dir, int np) {
  char p[300];
  for (int r = 0; r < np; r++) {
    snprintf(p, sizeof(p), "%s/fr.%d", dir, r);
    unlink(p);
    snprintf(p, sizeof(p), "%s/k.%d", dir, r); /* flight_skip's FLIGHT_SKIP_SYNC */
    unlink(p);
  }
  rmdir(dir);
}

static void run_dumps(int np, const char *const *argv, const char *extra, struct dump *d) {
  char *dir = scratch_dir();
  char file[300], sync[300];
  snprintf(file, sizeof(file), "ZCOLL_FLIGHT_RECORDER_FILE=%s/fr", dir);
  snprintf(sync, sizeof(sync), "FLIGHT_SKIP_SYNC=%s", dir);
  const char *env[] = {file, sync, extra, NULL};
  int status[MAXR];
  char *out[MAXR];
  run(np, argv, env, status, out);
  for (int r = 0; r < np; r++) {
    cr_expect_eq(status[r], 0, "rank %d exited %d:\n%s", r, status[r], out[r]);
    char path[300];
    snprintf(path, sizeof(path), "%s/fr.%d", dir, r);
    parse(path, r, &d[r]);
    free(out[r]);
  }
  cleanup(dir, np);
  free(dir);
}

/* The entry of call seq in d, or NULL. */
static struct entry *entry_of(struct dump *d, long long seq) {
  for (int i = 0; i < d->n; i++)
    if (d->e[i].seq == seq) return &d->e[i];
  return NULL;
}

/* The reading docs/flight-recorder.md explains: the rank behind is the one whose next collective is
 * the lowest; the call it misses is that number, as the ranks that made it recorded it. */
Test(flight, names_the_rank_behind_and_its_call) {
  enum { NP = 4, SKIPPER = 2, K = 5 };
  const char *argv[] = {SP_PROG("flight_skip"), "skip", "2", "5", NULL};
  struct dump d[NP];
  run_dumps(NP, argv, "ZCOLL_TIMEOUT=2", d);
  int behind = 0;
  for (int r = 1; r < NP; r++)
    if (d[r].next_seq < d[behind].next_seq) behind = r;
  cr_assert_eq(behind, SKIPPER, "the dumps name rank %d as behind", behind);
  long long missing = d[behind].next_seq;
  cr_expect_eq(missing, K, "rank %d's next call is #%lld", behind, missing);
  cr_expect_eq(d[behind].last_done, K - 1);
  cr_expect_str_eq(d[behind].trigger, "request");
  int named = 0; /* ranks whose waiting entry names the skipper among the peers awaited */
  for (int r = 0; r < NP; r++) {
    if (r == behind) continue;
    cr_expect_eq(d[r].next_seq, K + 1, "rank %d: next_seq %lld", r, d[r].next_seq);
    cr_expect(!strcmp(d[r].trigger, "timeout") || !strcmp(d[r].trigger, "peer_failed"),
              "rank %d dumped on %s", r, d[r].trigger);
    struct entry *e = entry_of(&d[r], missing);
    cr_assert(e, "rank %d recorded no call #%lld", r, missing);
    cr_expect_str_eq(e->kind, "allreduce", "rank %d: call #%lld is a %s", r, missing, e->kind);
    cr_expect_str_eq(e->state, "waiting", "rank %d: call #%lld %s", r, missing, e->state);
    cr_expect_gt(e->nawait, 0, "rank %d awaits no one in #%lld", r, missing);
    for (int i = 0; i < e->nawait; i++) named |= e->await[i] == SKIPPER;
    /* Oldest first, every earlier call done. */
    for (int i = 0; i < d[r].n; i++) {
      cr_expect_eq(d[r].e[i].seq, (long long)i, "rank %d: entry %d is #%lld", r, i, d[r].e[i].seq);
      if (d[r].e[i].seq < missing) cr_expect_str_eq(d[r].e[i].state, "done");
    }
  }
  cr_expect(named, "no rank names rank %d among the peers it awaits", SKIPPER);
}

/* A mismatch: every rank dumps once, on the mismatch (or the news of it), and the dumps
 * show the counts each rank passed to the call that differs. */
Test(flight, dumps_on_mismatch) {
  enum { NP = 3, K = 2 };
  const char *argv[] = {SP_PROG("flight_skip"), "mismatch", "2", NULL};
  struct dump d[NP];
  run_dumps(NP, argv, NULL, d);
  int mismatch = 0;
  for (int r = 0; r < NP; r++) {
    mismatch |= !strcmp(d[r].trigger, "mismatch");
    cr_expect(!strcmp(d[r].trigger, "mismatch") || !strcmp(d[r].trigger, "peer_failed"),
              "rank %d dumped on %s", r, d[r].trigger);
    cr_expect_eq(d[r].next_seq, K + 1);
    struct entry *e = entry_of(&d[r], K);
    cr_assert(e, "rank %d recorded no call #%d", r, K);
    cr_expect_eq(e->count, r == 1 ? 512 : 1024, "rank %d: count %lld", r, e->count);
  }
  cr_expect(mismatch, "no rank dumped on the mismatch itself");
}

/* An abort: the aborting rank dumps (trigger=abort) before its call #K, the others dump on
 * the news, inside it. */
Test(flight, dumps_on_abort) {
  enum { NP = 3, K = 2 };
  const char *argv[] = {SP_PROG("flight_skip"), "abort", "2", NULL};
  struct dump d[NP];
  run_dumps(NP, argv, NULL, d);
  for (int r = 0; r < NP; r++) {
    cr_expect_str_eq(d[r].trigger, r == 1 ? "abort" : "peer_failed", "rank %d", r);
    cr_expect_eq(d[r].next_seq, r == 1 ? K : K + 1, "rank %d: next_seq %lld", r, d[r].next_seq);
    cr_expect_eq(d[r].last_done, K - 1);
  }
}

/* flight_skip MODE K on 2 ranks, dumping into dir (extra: one more variable, or NULL),
 * each expected to exit 0; their outputs into out (the caller frees them), or freed. */
static void two_ranks(const char *dir, const char *mode, const char *k, const char *extra,
                      char **out) {
  char file[300];
  snprintf(file, sizeof(file), "ZCOLL_FLIGHT_RECORDER_FILE=%s/fr", dir);
  const char *env[] = {file, extra, NULL};
  const char *argv[] = {SP_PROG("flight_skip"), mode, k, NULL};
  int status[2];
  char *got[2];
  run(2, argv, env, status, got);
  for (int r = 0; r < 2; r++) {
    cr_expect_eq(status[r], 0, "rank %d exited %d:\n%s", r, status[r], got[r]);
    if (out)
      out[r] = got[r];
    else
      free(got[r]);
  }
}

/* flight_skip watch 3 on 2 ranks, dumping into dir (recorder: an extra variable). */
static void watch_job(const char *dir, const char *recorder) {
  two_ranks(dir, "watch", "3", recorder, NULL);
}

Test(flight, dump_from_another_thread_while_blocked) {
  enum { K = 3 };
  char *dir = scratch_dir();
  watch_job(dir, NULL);
  char path[300];
  snprintf(path, sizeof(path), "%s/fr.0", dir);
  struct dump d;
  parse(path, 0, &d);
  cr_expect_str_eq(d.trigger, "request");
  cr_expect_eq(d.next_seq, K + 1);
  cr_expect_eq(d.last_done, K - 1);
  cr_assert_eq(d.n, K + 1);
  cr_expect_str_eq(d.e[K].state, "waiting", "the blocked call is %s", d.e[K].state);
  cr_expect(d.e[K].nawait == 1 && d.e[K].await[0] == 1, "rank 0 awaits %d ranks, first %d",
            d.e[K].nawait, d.e[K].await[0]);
  snprintf(path, sizeof(path), "%s/fr.1", dir);
  cr_expect(access(path, F_OK) != 0, "rank 1 dumped, though nothing failed and nobody asked");
  cleanup(dir, 2);
  free(dir);
}

/* ZCOLL_FLIGHT_RECORDER=0: nothing is recorded, and the dump says so. */
Test(flight, off) {
  char *dir = scratch_dir();
  watch_job(dir, "ZCOLL_FLIGHT_RECORDER=0");
  char path[300], line[1024] = "";
  snprintf(path, sizeof(path), "%s/fr.0", dir);
  FILE *f = fopen(path, "r");
  cr_assert(f, "no dump in %s", path);
  cr_expect(fgets(line, sizeof(line), f) && strstr(line, " entries=0 ") &&
                strstr(line, " recorder=off"),
            "%s", line);
  cr_expect(!fgets(line, sizeof(line), f), "an entry while off: %s", line);
  fclose(f);
  cleanup(dir, 2);
  free(dir);
}

/* A one-rank communicator dumping into dir/fr.0. */
static zcoll_comm_t *one_rank(const char *dir) {
  char prefix[300];
  snprintf(prefix, sizeof(prefix), "%s/fr", dir);
  return solo_comm("FLIGHT_RECORDER_FILE", prefix);
}

/* Bad values are errors that name the problem: a recorder size out of range at config
 * time, a file that cannot be written when the dump is asked for. */
Test(flight, bad_settings_are_errors) {
  zcoll_config_t *cfg;
  cr_assert_eq(zcoll_config_create(&cfg), ZCOLL_OK);
  cr_expect_eq(zcoll_config_set(cfg, "FLIGHT_RECORDER", "-1"), ZCOLL_ERR_INVALID_ARG);
  cr_expect(strstr(zcoll_last_error(), "ZCOLL_FLIGHT_RECORDER") != NULL, "%s", zcoll_last_error());
  cr_expect_eq(zcoll_config_set(cfg, "FLIGHT_RECORDER", "2000000"), ZCOLL_ERR_INVALID_ARG);
  zcoll_config_free(cfg);
  zcoll_comm_t *comm = one_rank("/nonexistent/zcoll");
  float x = 1;
  cr_expect_eq(zcoll_allreduce(comm, ZCOLL_IN_PLACE, &x, 1, ZCOLL_FLOAT32, ZCOLL_SUM), ZCOLL_OK);
  cr_expect_eq(zcoll_comm_dump(comm), ZCOLL_ERR_INVALID_ARG);
  cr_expect(strstr(zcoll_last_error(), "/nonexistent/zcoll/fr.0") != NULL, "%s",
            zcoll_last_error());
  cr_expect_eq(zcoll_comm_dump(NULL), ZCOLL_ERR_INVALID_ARG);
  cr_expect_eq(zcoll_comm_destroy(comm), ZCOLL_OK);
}

/* The recorder's file must be a regular file of its own name: a FIFO with no reader held
 * the dump in open() for good (and with it the failing collective that dumped), a symbolic
 * link made it append to a file the link chose. Both are refused at once, the path and the
 * reason named. */

/* The dump of a one-rank communicator over dir/fr.0 is refused, promptly, naming the path
 * and, in its message, what. */
static void expect_refused(const char *dir, const char *what) {
  zcoll_comm_t *comm = one_rank(dir);
  double t0 = sp_now();
  cr_expect_eq(zcoll_comm_dump(comm), ZCOLL_ERR_INVALID_ARG);
  double took = sp_now() - t0;
  char path[300];
  snprintf(path, sizeof(path), "%s/fr.0", dir);
  const char *msg = zcoll_last_error();
  cr_expect(strstr(msg, path) && strstr(msg, what), "the message: %s", msg);
  cr_expect_lt(took, 1.0, "the dump took %.2f s", took);
  cr_expect_eq(zcoll_comm_destroy(comm), ZCOLL_OK);
}

Test(flight, fifo_without_reader_is_refused, .timeout = 10) {
  char *dir = scratch_dir(), path[300];
  snprintf(path, sizeof(path), "%s/fr.0", dir);
  cr_assert_eq(mkfifo(path, 0600), 0);
  expect_refused(dir, "a FIFO with no reader");
  cleanup(dir, 1);
  free(dir);
}

/* The failing collective that dumps into a FIFO with no reader returns its own status: a
 * mismatch on 2 ranks, each rank's file a FIFO; each rank logs why its dump went nowhere. */
Test(flight, fifo_does_not_hold_the_failing_call, .timeout = 30) {
  char *dir = scratch_dir(), path[300];
  for (int r = 0; r < 2; r++) {
    snprintf(path, sizeof(path), "%s/fr.%d", dir, r);
    cr_assert_eq(mkfifo(path, 0600), 0);
  }
  char *out[2];
  two_ranks(dir, "mismatch", "2", NULL, out);
  for (int r = 0; r < 2; r++) {
    char want[400];
    snprintf(want, sizeof(want), "cannot write %s/fr.%d: a FIFO with no reader", dir, r);
    cr_expect(strstr(out[r], want), "rank %d did not log '%s':\n%s", r, want, out[r]);
    free(out[r]);
  }
  cleanup(dir, 2);
  free(dir);
}

Test(flight, symlink_is_not_followed, .timeout = 10) {
  char *dir = scratch_dir(), path[300], target[300], absent[300];
  snprintf(path, sizeof(path), "%s/fr.0", dir);
  snprintf(target, sizeof(target), "%s/target", dir);
  snprintf(absent, sizeof(absent), "%s/absent", dir);
  FILE *f = fopen(target, "w");
  cr_assert(f);
  fputs("keep\n", f);
  fclose(f);
  cr_assert_eq(symlink(target, path), 0);
  expect_refused(dir, "symbolic link");
  char buf[64] = "";
  f = fopen(target, "r");
  cr_assert(f);
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  cr_expect_str_eq(buf, "keep\n", "the link's target was written to");
  /* A dangling link is not followed either: its target is not created. */
  cr_assert_eq(unlink(path), 0);
  cr_assert_eq(symlink(absent, path), 0);
  expect_refused(dir, "symbolic link");
  cr_expect(access(absent, F_OK) != 0, "the dangling link's target was created");
  unlink(target);
  unlink(absent);
  cleanup(dir, 1);
  free(dir);
}
