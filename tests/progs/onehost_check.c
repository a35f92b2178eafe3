/*
 * onehost_check -- the one-host small allreduce (lib/core/onehost.h) between processes,
 * for tests/core/test_onehost.c. Results are checked element by element against values
 * computed here, independently of zcoll.
 *
 *   onehost_check stress ITERS     ITERS blocking allreduces of 1..512 bytes, six
 *                                  dtype x op pairs in turn, in place every other time, a
 *                                  different rank late by up to 2 ms every fifth call (so
 *                                  that waits sleep), and every seventh call made while a
 *                                  non-blocking allreduce of 64 KiB (the executor's) is in
 *                                  flight. Prints "onehost: ITERS ok over T, algorithm A"
 *                                  or "rank R WRONG call K element I: GOT want WANT".
 *   onehost_check cross-bcast      rank 0 calls a 2-float allreduce (the mailboxes), the
 *                                  others a 2-float broadcast from rank 0 (the executor)
 *   onehost_check cross-count      rank 0 a 2-float allreduce, the others one of 64 Ki
 *                                  floats
 *   onehost_check cross-op         rank 0 a 2-float MAX, the others SUM: both mailboxes
 *   onehost_check bigkill          the same with 1 MiB vectors in zcoll_mem_alloc memory
 *   onehost_check kill             rank 1 _exits 300 ms into the others' 2-float
 *                                  allreduce, before it publishes: they must fail
 *                                  (PEER_FAILED) at once, not wait for a timeout
 *
 *   onehost_check bigrevoke        large allreduces (32 MiB, zcoll_mem_alloc memory, out of
 *                                  place) in a loop until rank 0 revokes the communicator
 *                                  from a thread 40..100 ms in: every rank's failed call
 *                                  must be the end of writes into its result -- it is
 *                                  copied, and compared 50 ms later. Prints "rank R: calls
 *                                  K, then STATUS; result unchanged after" or "rank R:
 *                                  WRITTEN AFTER THE ERROR at byte I"; every result of a
 *                                  call that succeeded is checked (a sample of elements).
 *   onehost_check bigdie           the same, but rank 2 _exits from a thread 40..100 ms
 *                                  in (mid-call, most likely mid-copy): the others must
 *                                  fail with PEER_FAILED, no result changing after.
 *   onehost_check big WHO ITERS    ITERS blocking allreduces of 1..3 MiB (odd counts too),
 *                                  the six dtype x op pairs in turn, in place every other
 *                                  time (the third call of 9 MiB, out of place, which
 *                                  streams its result past the cache), a different rank
 *                                  late each time: WHO = all: every
 *                                  rank's vectors in zcoll_mem_alloc memory (the large
 *                                  one-host path); WHO = one: rank 0's in malloc'd memory
 *                                  (every rank falls back to the schedule). Prints
 *                                  "onehost: rank R: ITERS ok over T" with the collective
 *                                  count (zcoll_comm_stats), which must be ITERS, and how
 *                                  many read the vectors where they lie (ITERS for all, 0
 *                                  for one).
 *
 * The cross modes print "rank R: STATUS: MESSAGE" for the one call and exit 0: every rank
 * must fail it (MISMATCH where it saw the difference, or the news of it), none may hang.
 */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zcoll.h"

/* Small integers: every sum and product below is exact in every dtype used. */
static int val(int rank, int i, int call) { return 1 + (rank * 7 + i * 3 + call) % 3; }

struct kind {
  zcoll_dtype_t dtype;
  zcoll_op_t op;
  size_t size;
};
static const struct kind kinds[] = {
    {ZCOLL_INT32, ZCOLL_SUM, 4},   {ZCOLL_INT32, ZCOLL_PROD, 4}, {ZCOLL_FLOAT32, ZCOLL_AVG, 4},
    {ZCOLL_FLOAT64, ZCOLL_SUM, 8}, {ZCOLL_UINT8, ZCOLL_MAX, 1},  {ZCOLL_INT64, ZCOLL_MIN, 8},
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

static void put(const struct kind *k, void *buf, size_t i, double v) {
  switch (k->dtype) {
  case ZCOLL_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
  case ZCOLL_FLOAT32: ((float *)buf)[i] = (float)v; break;
  case ZCOLL_FLOAT64: ((double *)buf)[i] = v; break;
  case ZCOLL_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
  default: ((int64_t *)buf)[i] = (int64_t)v; break;
  }
}

static double get(const struct kind *k, const void *buf, size_t i) {
  switch (k->dtype) {
  case ZCOLL_INT32: return ((const int32_t *)buf)[i];
  case ZCOLL_FLOAT32: return ((const float *)buf)[i];
  case ZCOLL_FLOAT64: return ((const double *)buf)[i];
  case ZCOLL_UINT8: return ((const uint8_t *)buf)[i];
  default: return (double)((const int64_t *)buf)[i];
  }
}

static double want(const struct kind *k, int p, size_t i, int call) {
  double acc = val(0, (int)i, call);
  for (int r = 1; r < p; r++) {
    double x = val(r, (int)i, call);
    if (k->op == ZCOLL_SUM || k->op == ZCOLL_AVG) acc += x;
    if (k->op == ZCOLL_PROD) acc *= x;
    if (k->op == ZCOLL_MAX) acc = x > acc ? x : acc;
    if (k->op == ZCOLL_MIN) acc = x < acc ? x : acc;
  }
  return k->op == ZCOLL_AVG ? (double)(float)(acc / p) : acc;
}

static int stress(zcoll_comm_t *comm, int iters) {
  int rank = zcoll_comm_rank(comm), p = zcoll_comm_size(comm), bad = 0;
  enum { BIG = 16384 };
  float *big = malloc(BIG * sizeof(float)), *big_out = malloc(BIG * sizeof(float));
  unsigned char in[512], out[512];
  for (int call = 0; call < iters && !bad; call++) {
    const struct kind *k = &kinds[call % NKINDS];
    size_t max = 512 / k->size, n = 1 + (size_t)(call * 37) % max;
    int in_place = call % 2;
    void *src = in_place ? out : in;
    for (size_t i = 0; i < n; i++) put(k, src, i, val(rank, (int)i, call));
    memset(out + (in_place ? n * k->size : 0), 0xa5, sizeof(out) - (in_place ? n * k->size : 0));
    if (call % 5 == 0 && rank == call / 5 % p) usleep((useconds_t)(200 + call * 131 % 1800));
    zcoll_request_t *q = NULL;
    zcoll_status_t st = ZCOLL_OK;
    if (call % 7 == 3) {
      for (int i = 0; i < BIG; i++) big[i] = (float)(rank + i % 5);
      st = zcoll_iallreduce(comm, big, big_out, BIG, ZCOLL_FLOAT32, ZCOLL_SUM, &q);
    }
    if (st == ZCOLL_OK)
      st = zcoll_allreduce(comm, in_place ? ZCOLL_IN_PLACE : in, out, n, k->dtype, k->op);
    if (st == ZCOLL_OK && q) st = zcoll_wait(q);
    if (q) zcoll_request_free(q);
    if (st != ZCOLL_OK) {
      printf("rank %d call %d: %s: %s\n", rank, call, zcoll_strerror(st),
             zcoll_comm_last_error(comm));
      return 1;
    }
    for (size_t i = 0; i < n && !bad; i++) {
      double got = get(k, out, i), w = want(k, p, i, call);
      /* An average may be the sum times 1/p: within a rounding of the quotient. */
      if (k->op == ZCOLL_AVG ? fabs(got - w) > 1e-6 * fabs(w) : got != w) {
        printf("rank %d WRONG call %d element %zu: %g want %g\n", rank, call, i, got, w);
        bad = 1;
      }
    }
    for (int i = 0; q && i < BIG && !bad; i++) {
      float w = 0;
      for (int r = 0; r < p; r++) w += (float)(r + i % 5);
      if (big_out[i] != w) {
        printf("rank %d WRONG call %d big element %d: %g want %g\n", rank, call, i,
               (double)big_out[i], (double)w);
        bad = 1;
      }
    }
  }
  const char *algo = "?";
  zcoll_allreduce_algorithm(comm, 2, ZCOLL_FLOAT32, ZCOLL_SUM, &algo);
  if (!bad)
    printf("onehost: rank %d: %d ok over %s, algorithm %s\n", rank, iters,
           zcoll_comm_transport(comm), algo);
  free(big), free(big_out);
  return bad;
}

static int big(zcoll_comm_t *comm, const char *who, int iters) {
  int rank = zcoll_comm_rank(comm), p = zcoll_comm_size(comm);
  size_t max = (size_t)9 << 20;
  unsigned char *in, *out;
  int mapped = strcmp(who, "all") == 0 || rank != 0;
  if (mapped) {
    if (zcoll_mem_alloc(comm, max, (void **)&in) != ZCOLL_OK ||
        zcoll_mem_alloc(comm, max, (void **)&out) != ZCOLL_OK) {
      printf("rank %d: zcoll_mem_alloc: %s\n", rank, zcoll_comm_last_error(comm));
      return 1;
    }
  } else {
    in = malloc(max);
    out = malloc(max);
  }
  for (int call = 0; call < iters; call++) {
    const struct kind *k = &kinds[call % NKINDS];
    size_t n = ((size_t)1 << 20) / k->size + (size_t)call * 104729 % (((size_t)2 << 20) / k->size);
    if (call == 2) n = max / k->size - 1;
    int in_place = call % 2;
    void *src = in_place ? out : in;
    for (size_t i = 0; i < n; i++) put(k, src, i, val(rank, (int)(i % 1000), call));
    if (rank == call % p) usleep(2000);
    zcoll_status_t st = zcoll_allreduce(comm, in_place ? ZCOLL_IN_PLACE : in, out, n, k->dtype,
                                        k->op);
    if (st != ZCOLL_OK) {
      printf("rank %d call %d: %s: %s\n", rank, call, zcoll_strerror(st),
             zcoll_comm_last_error(comm));
      return 1;
    }
    for (size_t i = 0; i < n; i++) {
      double got = get(k, out, i), w = want(k, p, i % 1000, call);
      if (k->op == ZCOLL_AVG ? fabs(got - w) > 1e-6 * fabs(w) : got != w) {
        printf("rank %d WRONG call %d element %zu: %g want %g\n", rank, call, i, got, w);
        return 1;
      }
    }
  }
  zcoll_comm_stats_t s;
  zcoll_comm_stats(comm, &s, sizeof(s));
  printf("onehost: rank %d: %d ok over %s, %llu collectives, %llu mapped\n", rank, iters,
         zcoll_comm_transport(comm), (unsigned long long)s.collectives,
         (unsigned long long)s.mapped_collectives);
  if (mapped) {
    zcoll_mem_free(comm, in);
    zcoll_mem_free(comm, out);
  } else {
    free(in), free(out);
  }
  return 0;
}

static void cross(zcoll_comm_t *comm, const char *mode) {
  int rank = zcoll_comm_rank(comm);
  enum { BIG = 65536 };
  int kill = strcmp(mode, "kill") == 0, bigkill = strcmp(mode, "bigkill") == 0;
  float *x = NULL, *y = NULL;
  if (bigkill && (zcoll_mem_alloc(comm, 4 * BIG * sizeof(float), (void **)&x) != ZCOLL_OK ||
                  zcoll_mem_alloc(comm, 4 * BIG * sizeof(float), (void **)&y) != ZCOLL_OK)) {
    printf("rank %d: zcoll_mem_alloc: %s\n", rank, zcoll_comm_last_error(comm));
    return;
  }
  if (!bigkill) {
    x = calloc(BIG, sizeof(float));
    y = calloc(BIG, sizeof(float));
  }
  zcoll_status_t st;
  if ((kill || bigkill) && rank == 1) {
    usleep(300000);
    _exit(0); /* dies without a word: as a crash would, but zcoll_run lets the job go on */
  }
  if (kill || bigkill)
    st = zcoll_allreduce(comm, x, y, bigkill ? 4 * BIG : 2, ZCOLL_FLOAT32, ZCOLL_SUM);
  else if (rank == 0)
    st = zcoll_allreduce(comm, x, y, 2, ZCOLL_FLOAT32,
                         strcmp(mode, "cross-op") == 0 ? ZCOLL_MAX : ZCOLL_SUM);
  else if (strcmp(mode, "cross-bcast") == 0)
    st = zcoll_broadcast(comm, x, 2, ZCOLL_FLOAT32, 0);
  else if (strcmp(mode, "cross-count") == 0)
    st = zcoll_allreduce(comm, x, y, BIG, ZCOLL_FLOAT32, ZCOLL_SUM);
  else
    st = zcoll_allreduce(comm, x, y, 2, ZCOLL_FLOAT32, ZCOLL_SUM);
  printf("rank %d: %s: %s\n", rank, zcoll_strerror(st),
         st == ZCOLL_OK ? "" : zcoll_comm_last_error(comm));
  if (!bigkill) free(x), free(y); /* zcoll_mem_alloc's stay mapped past destroy */
}

static void *revoker(void *arg) {
  usleep(40000 + (useconds_t)(rand() % 60000));
  zcoll_comm_revoke(arg);
  return NULL;
}

static void *dier(void *arg) {
  (void)arg;
  usleep(40000 + (useconds_t)(rand() % 60000));
  _exit(0); /* mid-call, most likely mid-copy: zcoll_run lets the job go on */
}

/* die: rank 2 _exits instead of rank 0 revoking. */
static int bigrevoke(zcoll_comm_t *comm, int die) {
  int rank = zcoll_comm_rank(comm);
  size_t bytes = (size_t)32 << 20, n = bytes / sizeof(float);
  float *in, *out;
  unsigned char *copy = malloc(bytes);
  if (!copy || zcoll_mem_alloc(comm, bytes, (void **)&in) != ZCOLL_OK ||
      zcoll_mem_alloc(comm, bytes, (void **)&out) != ZCOLL_OK) {
    printf("rank %d: zcoll_mem_alloc: %s\n", rank, zcoll_comm_last_error(comm));
    return 1;
  }
  for (size_t i = 0; i < n; i++) in[i] = (float)(rank + i % 7);
  pthread_t t;
  srand((unsigned)getpid());
  int p = zcoll_comm_size(comm), starter = die ? 2 : 0;
  if (rank == starter && pthread_create(&t, NULL, die ? dier : revoker, comm) != 0) return 1;
  zcoll_status_t st = ZCOLL_OK;
  int calls = 0;
  for (; calls < 100000 && st == ZCOLL_OK; calls++) {
    memset(out, 0xee, bytes); /* nothing zcoll writes: a write after the error shows */
    st = zcoll_allreduce(comm, in, out, n, ZCOLL_FLOAT32, ZCOLL_SUM);
    /* Every call that succeeded is right: a sample (every 4093rd element, the last), so
     * that the loop's time is the calls', where the death or the revoke should land. */
    for (size_t i = 0; st == ZCOLL_OK && i < n; i = i + 4093 < n || i == n - 1 ? i + 4093 : n - 1)
      if (out[i] != (float)(p * (p - 1) / 2 + p * (int)(i % 7))) {
        printf("rank %d WRONG call %d element %zu: %g\n", rank, calls, i, (double)out[i]);
        return 1;
      }
  }
  memcpy(copy, out, bytes);
  usleep(50000);
  int rc = 0;
  size_t at = 0;
  while (at < bytes && copy[at] == ((unsigned char *)out)[at]) at++;
  if (at < bytes) {
    printf("rank %d: WRITTEN AFTER THE ERROR at byte %zu\n", rank, at);
    rc = 1;
  } else {
    printf("rank %d: calls %d, then %s; result unchanged after\n", rank, calls, zcoll_strerror(st));
  }
  if (rank == starter) pthread_join(t, NULL);
  free(copy);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr,
            "usage: onehost_check stress ITERS | big all|one ITERS | cross-bcast | cross-count | "
            "cross-op | kill | bigkill | bigrevoke | bigdie\n");
    return 2;
  }
  zcoll_comm_t *comm;
  if (zcoll_comm_init(&comm, NULL) != ZCOLL_OK) {
    fprintf(stderr, "onehost_check: init: %s\n", zcoll_last_error());
    return 1;
  }
  int rc = 0;
  if (strcmp(argv[1], "stress") == 0)
    rc = stress(comm, argc > 2 ? atoi(argv[2]) : 200);
  else if (strcmp(argv[1], "bigrevoke") == 0 || strcmp(argv[1], "bigdie") == 0)
    rc = bigrevoke(comm, strcmp(argv[1], "bigdie") == 0);
  else if (strcmp(argv[1], "big") == 0)
    rc = big(comm, argc > 2 ? argv[2] : "all", argc > 3 ? atoi(argv[3]) : 12);
  else
    cross(comm, argv[1]);
  fflush(stdout);
  zcoll_comm_destroy(comm);
  return rc;
}
