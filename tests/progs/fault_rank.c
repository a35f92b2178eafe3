/*
 * fault_rank -- one rank of a job in which one rank (the victim) misbehaves, for the
 * fault matrix (tests/comm/test_faults.c). Every rank runs a stream of allreduces whose
 * results it checks element by element against values computed here, independently of
 * zcoll; what it prints is what the test asserts on:
 *
 *   rank R call K: STATUS after S s: MESSAGE      one line per call that returned
 *   rank R WRONG call K element I: GOT want WANT  an OK call with wrong data
 *   rank R LATE WRITE call K element I            the result buffer changed after the
 *                                                 call had returned an error
 *   rank R child: STATUS: MESSAGE                 (fork) what the child saw
 *   rank R thread: STATUS: MESSAGE                (two-threads) the second thread's call
 *   rank R cycle C: fds F maps M threads T        (cycles) resources after each cycle
 *                                                 (maps: those backed by a file, memfd,
 *                                                 SysV segment or device)
 *   rank R destroy: STATUS
 *
 *   fault_rank FAULT VICTIM [COUNT]
 *
 * FAULT, by phase:
 *   init:     kill-init (victim _exits right after zcoll_comm_init)
 *   first:    kill-first (SIGKILL 5 ms into call 0), mismatch-op (victim calls MAX where
 *             the others SUM), mismatch-dtype (int32 where the others float32),
 *             mismatch-count (one element more), count0 (victim calls with count 0),
 *             invalid-arg (victim's call 0 has recvbuf NULL; it carries on)
 *   mid:      kill-mid (SIGKILL 5 ms into call 1), abort-thread (a watchdog thread calls
 *             zcoll_comm_abort 300 ms into the victim's blocked call 1), revoke-signal (a
 *             SIGALRM handler calls zcoll_comm_revoke then), two-threads (a second
 *             thread calls while the victim's call 1 is blocked), sigstop (the victim
 *             stops itself before call 1), slow (the victim sleeps 2 s before call 1:
 *             not a failure)
 *   idle:     exit-idle (victim _exits between calls 0 and 1), exit-root-away (the same
 *             while rank 0 sleeps 3 s outside zcoll before call 1, so it relays nothing),
 *             revoke-idle (victim calls zcoll_comm_revoke between them: its next call
 *             must fail even if it would never wait), abort-main (victim calls
 *             zcoll_comm_abort between them), fork (the victim forks after call 0; the
 *             child tries a call and destroys)
 *   destroy:  exit-destroy (victim _exits instead of destroying), abort-destroy (a
 *             watchdog thread calls zcoll_comm_abort 300 ms into the victim's destroy,
 *             which waits for the rank after it: that one sleeps 3 s before destroying),
 *             abort-destroy-pt (the same with ZCOLL_PROGRESS=thread), revoke-destroy (a
 *             SIGALRM handler calls zcoll_comm_revoke then), leave-early (the victim
 *             destroys after 2 calls while the others make a third)
 *   cycles:   cycles (5 x init, a mismatched call, destroy; resources after each)
 * The rank after the victim sleeps 1.5 s before call 1 so that the victim's call blocks.
 * An interrupted victim prints how long after the revoke (or abort) its call returned.
 */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zcoll.h"

#define CALLS 3

static zcoll_comm_t *g_comm;
/* When the revoke or abort of call 1 was issued (CLOCK_MONOTONIC ns; lock-free, so a
 * signal handler may store it): the victim prints how long its call took to return. */
static _Atomic long long g_fired_ns;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void nap(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

static const char *name(zcoll_status_t st) {
  switch (st) {
#define NAME_(n, text) \
  case ZCOLL_##n: return "ZCOLL_" #n;
    ZCOLL_STATUS_MAP(NAME_)
#undef NAME_
  }
  return "?";
}

/* Rank r's element i in call k: small integers, exact in float32 and int32 sums. */
static int value(int r, int k, size_t i) { return (r + 1) + 10 * k + (int)(i % 7); }

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts); /* async-signal-safe */
  return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void on_alarm(int sig) {
  (void)sig;
  g_fired_ns = now_ns();
  zcoll_comm_revoke(g_comm); /* async-signal-safe by contract */
}

static void after_ms(long ms) {
  struct itimerval it = {{0, 0}, {ms / 1000, (ms % 1000) * 1000}};
  setitimer(ITIMER_REAL, &it, NULL);
}

static void *watchdog(void *arg) {
  (void)arg;
  nap(0.3);
  double t = now();
  g_fired_ns = now_ns();
  zcoll_status_t st = zcoll_comm_abort(g_comm);
  printf("watchdog: abort returned %s after %.3f s\n", name(st), now() - t);
  return NULL;
}

static void *second_thread(void *arg) {
  float *buf = arg;
  nap(0.3);
  zcoll_status_t st = zcoll_allreduce(g_comm, ZCOLL_IN_PLACE, buf, 1, ZCOLL_FLOAT32, ZCOLL_SUM);
  printf("rank %d thread: %s: %s\n", zcoll_comm_rank(g_comm), name(st), zcoll_last_error());
  return NULL;
}

static int check(int rank, int size, int k, const void *buf, size_t count, zcoll_dtype_t dt,
                 zcoll_op_t op) {
  for (size_t i = 0; i < count; i++) {
    long want = op == ZCOLL_MAX ? value(size - 1, k, i) : 0;
    for (int r = 0; op == ZCOLL_SUM && r < size; r++) want += value(r, k, i);
    long got = dt == ZCOLL_INT32 ? ((const int *)buf)[i] : (long)((const float *)buf)[i];
    if (got != want) {
      printf("rank %d WRONG call %d element %zu: %ld want %ld\n", rank, k, i, got, want);
      return 1;
    }
  }
  return 0;
}

/* After an error nothing may land in the call's buffer any more. */
static void expect_quiet(int rank, int k, const char *buf, size_t len) {
  char *snap = malloc(len);
  memcpy(snap, buf, len);
  nap(0.2);
  for (size_t i = 0; i < len; i++)
    if (snap[i] != buf[i]) {
      printf("rank %d LATE WRITE call %d element %zu\n", rank, k, i / 4);
      break;
    }
  free(snap);
}

/* Mappings of something: files, memfds, SysV segments, devices (verbs queues). Anonymous
 * ones come and go with the allocator (ASan's above all), so they prove nothing. */
static int count_backed_maps(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[512];
  int n = 0;
  while (f && fgets(line, sizeof(line), f)) {
    char path[256] = "";
    if (sscanf(line, "%*s %*s %*s %*s %*s %255s", path) == 1 && path[0] && path[0] != '[') n++;
  }
  if (f) fclose(f);
  return n;
}

static int count_threads(void) {
  int threads = 0;
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  while (f && fgets(line, sizeof(line), f)) sscanf(line, "Threads: %d", &threads);
  if (f) fclose(f);
  return threads;
}

/* Every thread but this one, by name, so that a leak says whose thread it is. */
static void print_other_threads(int rank) {
  DIR *d = opendir("/proc/self/task");
  char path[300], name[64];
  for (struct dirent *e; d && (e = readdir(d));) {
    if (e->d_name[0] == '.' || atoi(e->d_name) == (int)gettid()) continue;
    snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (f && fgets(name, sizeof(name), f)) printf("rank %d thread %s: %s", rank, e->d_name, name);
    if (f) fclose(f);
  }
  if (d) closedir(d);
}

static void print_resources(int rank, int cycle) {
  int fds = 0;
  DIR *d = opendir("/proc/self/fd");
  for (struct dirent *e; d && (e = readdir(d));) fds += e->d_name[0] != '.';
  if (d) closedir(d);
  /* A library's helper thread may still be on its way out when destroy returns (UCX
   * stops its async thread by signalling it): one that is gone within 2 s is not a
   * leak; one that stays is, and is named. */
  int threads = count_threads();
  for (int k = 0; k < 200 && threads > 1; k++) {
    usleep(10000);
    threads = count_threads();
  }
  if (threads > 1) print_other_threads(rank);
  printf("rank %d cycle %d: fds %d maps %d threads %d\n", rank, cycle, fds - 1, count_backed_maps(),
         threads);
}

static int is(const char *fault, const char *name_) { return strcmp(fault, name_) == 0; }

/* One communicator's life under the fault; returns 0 when the process should go on. */
static int run(const char *fault, int victim, size_t count, int cycle) {
  if (zcoll_comm_init(&g_comm, NULL) != ZCOLL_OK) {
    printf("init: %s\n", zcoll_last_error());
    return 1;
  }
  int rank = zcoll_comm_rank(g_comm), size = zcoll_comm_size(g_comm);
  int me = rank == victim, next = rank == (victim + 1) % size;
  if (me && is(fault, "kill-init")) _exit(3);
  void *sbuf = calloc(count + 1, 8), *rbuf = calloc(count + 1, 8);
  float spare[1] = {1};
  pthread_t th;
  int joined = 1;
  for (int k = 0; k < CALLS; k++) {
    if (me && k == 2 && is(fault, "leave-early")) break;
    zcoll_dtype_t dt = ZCOLL_FLOAT32;
    zcoll_op_t op = ZCOLL_SUM;
    size_t n = count;
    void *recv = rbuf;
    if (me && k == 0) {
      if (is(fault, "mismatch-op") || is(fault, "cycles")) op = ZCOLL_MAX;
      if (is(fault, "mismatch-dtype")) dt = ZCOLL_INT32;
      if (is(fault, "mismatch-count")) n = count + 1;
      if (is(fault, "count0")) n = 0;
      if (is(fault, "invalid-arg")) recv = NULL;
      if (is(fault, "kill-first")) after_ms(5);
    }
    for (size_t i = 0; i < n; i++) {
      if (dt == ZCOLL_INT32)
        ((int *)sbuf)[i] = value(rank, k, i);
      else
        ((float *)sbuf)[i] = (float)value(rank, k, i);
    }
    if (k == 1) {
      if (next && !is(fault, "fork") && !is(fault, "slow") && !is(fault, "sigstop") &&
          !is(fault, "exit-root-away"))
        nap(1.5);
      if (rank == 0 && is(fault, "exit-root-away")) nap(3.0);
      if (me) {
        if (is(fault, "exit-idle") || is(fault, "exit-root-away")) _exit(3);
        if (is(fault, "abort-main")) {
          printf("rank %d abort: %s\n", rank, name(zcoll_comm_abort(g_comm)));
          free(sbuf);
          free(rbuf);
          return 1;
        }
        if (is(fault, "kill-mid")) after_ms(5);
        if (is(fault, "revoke-idle")) zcoll_comm_revoke(g_comm);
        if (is(fault, "slow")) nap(2.0);
        if (is(fault, "sigstop")) raise(SIGSTOP);
        if (is(fault, "abort-thread")) {
          pthread_create(&th, NULL, watchdog, NULL);
        }
        if (is(fault, "revoke-signal")) {
          signal(SIGALRM, on_alarm);
          after_ms(300);
        }
        if (is(fault, "two-threads")) {
          pthread_create(&th, NULL, second_thread, spare);
          joined = 0;
        }
        if (is(fault, "fork")) {
          pid_t pid = fork();
          if (pid == 0) {
            zcoll_status_t st = zcoll_allreduce(g_comm, sbuf, rbuf, n, dt, op);
            zcoll_status_t dst = zcoll_comm_destroy(g_comm);
            printf("rank %d child: %s: %s; destroy %s\n", rank, name(st), zcoll_last_error(),
                   name(dst));
            fflush(stdout);
            _exit(st == ZCOLL_ERR_INVALID_ARG && dst == ZCOLL_OK ? 0 : 1);
          }
          int ws = 0;
          waitpid(pid, &ws, 0);
          if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) printf("rank %d child failed\n", rank);
        }
      }
    }
    double t = now();
    zcoll_status_t st = zcoll_allreduce(g_comm, sbuf, recv, n, dt, op);
    long long fired = g_fired_ns;
    if (me && k == 1 && fired)
      printf("rank %d interrupted: returned %.3f s after the revoke\n", rank,
             (double)(now_ns() - fired) * 1e-9);
    if (me && is(fault, "abort-thread") && k == 1) {
      /* The watchdog frees the communicator once this call has left: print what was
       * recorded for this thread, touch the communicator no more, and wait for abort to
       * return (over UCX it may wait for puts a sleeping peer has not taken). */
      printf("rank %d call %d: %s after %.3f s: %s\n", rank, k, name(st), now() - t,
             zcoll_last_error());
      pthread_join(th, NULL);
      free(sbuf);
      free(rbuf);
      return 1;
    }
    printf("rank %d call %d: %s after %.3f s: %s\n", rank, k, name(st), now() - t,
           zcoll_comm_last_error(g_comm));
    if (st == ZCOLL_OK && check(rank, size, k, rbuf, n, dt, op)) break;
    if (st != ZCOLL_OK && recv) expect_quiet(rank, k, recv, n * 4);
    if (st != ZCOLL_OK && !is(fault, "invalid-arg")) break;
  }
  if (!joined) pthread_join(th, NULL);
  if (me && is(fault, "exit-destroy")) _exit(3);
  int in_destroy = !strncmp(fault, "abort-destroy", 13) || is(fault, "revoke-destroy");
  if (next && in_destroy) nap(3.0);
  if (me && !strncmp(fault, "abort-destroy", 13)) {
    pthread_create(&th, NULL, watchdog, NULL);
    joined = 0;
  }
  if (me && is(fault, "revoke-destroy")) {
    signal(SIGALRM, on_alarm);
    after_ms(300);
  }
  double t = now();
  zcoll_status_t st = zcoll_comm_destroy(g_comm);
  printf("rank %d destroy: %s after %.3f s: %s\n", rank, name(st), now() - t,
         st == ZCOLL_OK ? "" : zcoll_last_error());
  if (!joined) pthread_join(th, NULL);
  free(sbuf);
  free(rbuf);
  if (is(fault, "cycles")) print_resources(rank, cycle);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  const char *fault = argv[1];
  int victim = atoi(argv[2]);
  size_t count = argc > 3 ? strtoul(argv[3], NULL, 10) : 4096;
  setvbuf(stdout, NULL, _IOLBF, 0);
  int cycles = is(fault, "cycles") ? 5 : 1;
  for (int c = 1; c <= cycles; c++)
    if (run(fault, victim, count, c)) break;
  return 0;
}
