/*
 * requests_check -- non-blocking and persistent allreduce between processes, on whatever
 * transport the environment chooses; every element checked on every rank.
 *
 *   requests_check               16 requests in flight (up to 2 MiB each) completed in an
 *                                order of each rank's own by test and wait, with a
 *                                blocking call among them; then two persistent requests
 *                                double-buffered over 10 rounds. Rank 0 prints
 *                                "requests: every element exact on every rank over <tl>".
 *   requests_check kill V        rank V issues 8 requests and _exits (3) without
 *                                progressing them; each survivor waits for its 8 and prints
 *                                "survivor R: 8 requests ended with <status> after S s"
 *                                (exit 0) if every one ended with an error, none hung.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../requests_common.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define NREQ 16
static const size_t counts[NREQ] = {1,    300000, 7,  65536,  0,    4097, 262144, 33,
                                    1000, 2,      99, 131071, 5000, 64,   200001, 3};

static int many(zcoll_comm_t *comm, int rank, int p) {
  int64_t *in[NREQ], *out[NREQ];
  zcoll_request_t *req[NREQ];
  int bad = 0;
  for (int k = 0; k < NREQ; k++) {
    in[k] = malloc((counts[k] + 1) * sizeof(int64_t));
    out[k] = malloc((counts[k] + 1) * sizeof(int64_t));
    rq_fill(in[k], counts[k], rank, k);
    const void *src = in[k];
    if (k % 4 == 1) { /* some in place */
      memcpy(out[k], in[k], counts[k] * sizeof(int64_t));
      src = ZCOLL_IN_PLACE;
    }
    zcoll_op_t op = rq_op(k);
    if (zcoll_iallreduce(comm, src, out[k], counts[k], ZCOLL_INT64, op, &req[k]) != ZCOLL_OK) {
      fprintf(stderr, "rank %d: iallreduce %d: %s\n", rank, k, zcoll_comm_last_error(comm));
      return 1;
    }
    if (k == NREQ / 2) {
      int64_t b[3], bo[3];
      rq_fill(b, 3, rank, 77);
      if (zcoll_allreduce(comm, b, bo, 3, ZCOLL_INT64, ZCOLL_SUM) != ZCOLL_OK ||
          rq_check(bo, 3, p, 77, ZCOLL_SUM) >= 0) {
        fprintf(stderr, "rank %d: the blocking call among requests: %s\n", rank,
                zcoll_comm_last_error(comm));
        bad++;
      }
    }
  }
  int order[NREQ];
  rq_shuffle(order, NREQ, rank);
  for (int n = 0; n < NREQ; n++) {
    int k = order[n];
    zcoll_status_t st = rq_end(req[k], n % 2);
    long w = st == ZCOLL_OK ? rq_check(out[k], counts[k], p, k, rq_op(k)) : -2;
    if (w != -1) {
      fprintf(stderr, "rank %d: request %d (count %zu): %s, first wrong element %ld: %s\n", rank, k,
              counts[k], zcoll_strerror(st), w, zcoll_comm_last_error(comm));
      bad++;
    }
    if (zcoll_request_free(req[k]) != ZCOLL_OK) bad++;
    free(in[k]);
    free(out[k]);
  }
  return bad;
}

static int persistent(zcoll_comm_t *comm, int rank, int p) {
  enum { N = 1 << 18, ROUNDS = 10 };
  int64_t *a_in = malloc(N * sizeof(int64_t)), *a_out = malloc(N * sizeof(int64_t));
  int64_t *b = malloc(N * sizeof(int64_t));
  zcoll_request_t *ra, *rb;
  int bad = 0;
  rq_fill(a_in, N, rank, 0);
  if (zcoll_allreduce_init(comm, a_in, a_out, N, ZCOLL_INT64, ZCOLL_SUM, &ra) != ZCOLL_OK ||
      zcoll_allreduce_init(comm, ZCOLL_IN_PLACE, b, N, ZCOLL_INT64, ZCOLL_MAX, &rb) != ZCOLL_OK) {
    fprintf(stderr, "rank %d: init: %s\n", rank, zcoll_comm_last_error(comm));
    return 1;
  }
  bad += zcoll_start(ra) != ZCOLL_OK;
  for (int round = 0; round < ROUNDS && !bad; round++) {
    rq_fill(b, N, rank, 500 + round);
    bad += zcoll_start(rb) != ZCOLL_OK;
    if (zcoll_wait(ra) != ZCOLL_OK || rq_check(a_out, N, p, round, ZCOLL_SUM) >= 0) {
      fprintf(stderr, "rank %d: persistent sum, round %d: %s\n", rank, round,
              zcoll_comm_last_error(comm));
      bad++;
    }
    rq_fill(a_in, N, rank, round + 1);
    if (round + 1 < ROUNDS) bad += zcoll_start(ra) != ZCOLL_OK;
    if (zcoll_wait(rb) != ZCOLL_OK || rq_check(b, N, p, 500 + round, ZCOLL_MAX) >= 0) {
      fprintf(stderr, "rank %d: persistent max, round %d: %s\n", rank, round,
              zcoll_comm_last_error(comm));
      bad++;
    }
  }
  bad += zcoll_request_free(ra) != ZCOLL_OK;
  bad += zcoll_request_free(rb) != ZCOLL_OK;
  free(a_in);
  free(a_out);
  free(b);
  return bad;
}

static int killed(zcoll_comm_t *comm, int rank, int p, int victim) {
  enum { K = 8, N = 100000 };
  static int64_t in[K][N], out[K][N];
  zcoll_request_t *req[K];
  for (int k = 0; k < K; k++) {
    rq_fill(in[k], N, rank, k);
    /* The victim may be gone before a slow survivor posts: then the post reports it. */
    if (zcoll_iallreduce(comm, in[k], out[k], N, ZCOLL_INT64, ZCOLL_SUM, &req[k]) != ZCOLL_OK)
      req[k] = NULL;
  }
  if (rank == victim) _exit(3);
  double t0 = now();
  zcoll_status_t first = ZCOLL_OK;
  int ended_ok = 0;
  for (int k = K - 1; k >= 0; k--) { /* the newest first: it must not wait for the others */
    zcoll_status_t st = req[k] ? zcoll_wait(req[k]) : ZCOLL_ERR_PEER_FAILED;
    if (st == ZCOLL_OK) ended_ok++;
    if (first == ZCOLL_OK) first = st;
    if (req[k]) zcoll_request_free(req[k]);
  }
  (void)p;
  printf("survivor %d: %d requests ended with %s after %.1f s%s\n", rank, K, zcoll_strerror(first),
         now() - t0, ended_ok ? " (some with success!)" : "");
  fflush(stdout);
  zcoll_comm_destroy(comm);
  return ended_ok || first == ZCOLL_OK;
}

int main(int argc, char **argv) {
  zcoll_comm_t *comm;
  if (zcoll_comm_init(&comm, NULL) != ZCOLL_OK) {
    fprintf(stderr, "requests_check: init: %s\n", zcoll_last_error());
    return 1;
  }
  int rank = zcoll_comm_rank(comm), p = zcoll_comm_size(comm);
  if (argc >= 3 && strcmp(argv[1], "kill") == 0) return killed(comm, rank, p, atoi(argv[2]));
  int bad = many(comm, rank, p);
  bad += persistent(comm, rank, p);
  /* Everyone's verdict, through zcoll itself only after the checks above. */
  int64_t mine = bad, total = 0;
  if (zcoll_allreduce(comm, &mine, &total, 1, ZCOLL_INT64, ZCOLL_SUM) != ZCOLL_OK) total = 1;
  if (rank == 0 && total == 0)
    printf("requests: every element exact on every rank over %s\n", zcoll_comm_transport(comm));
  zcoll_status_t st = zcoll_comm_destroy(comm);
  return total != 0 || st != ZCOLL_OK;
}
