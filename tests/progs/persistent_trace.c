/*
 * persistent_trace: a persistent float32 SUM allreduce started again and again with new
 * contents, every element checked; then how its result pieces arrived (in place or
 * copied out of the slots: zcoll_comm_stats). With `compare`, also the median time of a
 * blocking allreduce and of a persistent start + wait on the same buffers, alternated so
 * that both see the same machine. Run it with ZCOLL_TRACE=prefix to get each rank's
 * pipeline timeline (test_verbs counts its copy stages). Public API only.
 *
 *   zcoll_run -np P persistent_trace [count] [starts] [compare|-] [inplace]
 *
 * Prints one "rank R: placed N copied M" line per rank, then "persistent ok: ..." on
 * rank 0, and exits 0; or names the first wrong element and exits 1.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zcoll.h"

static int rank, size;

static int fail_st(zcoll_comm_t *comm, const char *what, zcoll_status_t st) {
  fprintf(stderr, "persistent_trace: rank %d: %s: %s: %s\n", rank, what, zcoll_strerror(st),
          comm ? zcoll_comm_last_error(comm) : zcoll_last_error());
  return 1;
}

/* Small integers: every sum is exact in float32. */
static float value(int r, int k, size_t i) {
  return (float)((r + 1) * 3 + k * 5 + (int)(i % 1021));
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  size_t count = argc > 1 ? strtoull(argv[1], NULL, 0) : 2097152;
  int starts = argc > 2 ? atoi(argv[2]) : 3;
  int compare = argc > 3 && strcmp(argv[3], "compare") == 0;
  int in_place = argc > 4 && strcmp(argv[4], "inplace") == 0;
  if (!count || starts < 1) {
    fprintf(stderr, "usage: persistent_trace [count > 0] [starts > 0] [compare|-] [inplace]\n");
    return 2;
  }
  zcoll_config_t *cfg;
  zcoll_comm_t *comm;
  if (zcoll_config_create(&cfg) != ZCOLL_OK) return 1;
  zcoll_status_t st = zcoll_comm_init(&comm, cfg);
  zcoll_config_free(cfg);
  if (st != ZCOLL_OK) return fail_st(NULL, "zcoll_comm_init", st);
  rank = zcoll_comm_rank(comm);
  size = zcoll_comm_size(comm);
  float *in = malloc(count * sizeof(float)), *out = malloc(count * sizeof(float));
  if (!in || !out) return fail_st(comm, "malloc", ZCOLL_ERR_NO_MEMORY);
  zcoll_request_t *req;
  const void *src = in_place ? ZCOLL_IN_PLACE : in;
  st = zcoll_allreduce_init(comm, src, out, count, ZCOLL_FLOAT32, ZCOLL_SUM, &req);
  if (st != ZCOLL_OK) return fail_st(comm, "zcoll_allreduce_init", st);
  int bad = 0;
  for (int k = 0; k < starts && !bad; k++) {
    if (!in_place) memset(out, 0xff, count * sizeof(float)); /* NaN: undelivered shows */
    for (size_t i = 0; i < count; i++) (in_place ? out : in)[i] = value(rank, k, i);
    if ((st = zcoll_start(req)) != ZCOLL_OK || (st = zcoll_wait(req)) != ZCOLL_OK)
      return fail_st(comm, "persistent start/wait", st);
    for (size_t i = 0; i < count && !bad; i++) {
      float want = 0;
      for (int r = 0; r < size; r++) want += value(r, k, i);
      if (out[i] != want) {
        fprintf(stderr, "persistent_trace: rank %d start %d: element %zu is %g, want %g\n", rank, k,
                i, (double)out[i], (double)want);
        bad = 1;
      }
    }
  }
  zcoll_comm_stats_t s;
  if ((st = zcoll_comm_stats(comm, &s, sizeof(s))) != ZCOLL_OK) return fail_st(comm, "stats", st);
  printf("rank %d: placed %llu copied %llu\n", rank, (unsigned long long)s.result_pieces_placed,
         (unsigned long long)s.result_pieces_copied);
  fflush(stdout);
  if (compare && !bad) {
    double *tb = malloc(sizeof(double) * (size_t)starts);
    double *tp = malloc(sizeof(double) * (size_t)starts);
    for (int k = 0; k < starts && tb && tp; k++) {
      double t0 = now_us();
      /* Timing only: in place, the values grow from call to call. */
      if ((st = zcoll_allreduce(comm, src, out, count, ZCOLL_FLOAT32, ZCOLL_SUM)) != ZCOLL_OK)
        return fail_st(comm, "zcoll_allreduce", st);
      double t1 = now_us();
      if ((st = zcoll_start(req)) != ZCOLL_OK || (st = zcoll_wait(req)) != ZCOLL_OK)
        return fail_st(comm, "persistent start/wait", st);
      tb[k] = t1 - t0;
      tp[k] = now_us() - t1;
    }
    if (tb && tp && rank == 0) {
      qsort(tb, (size_t)starts, sizeof(double), cmp_double);
      qsort(tp, (size_t)starts, sizeof(double), cmp_double);
      printf("%zu bytes on %d ranks over %s: blocking median %.0f us, persistent median %.0f us "
             "(ratio %.3f)\n",
             count * sizeof(float), size, zcoll_comm_transport(comm), tb[starts / 2],
             tp[starts / 2], tp[starts / 2] / tb[starts / 2]);
    }
    free(tb);
    free(tp);
  }
  /* Everyone's verdict, so that every rank exits alike. */
  int32_t flag = bad;
  if ((st = zcoll_allreduce(comm, ZCOLL_IN_PLACE, &flag, 1, ZCOLL_INT32, ZCOLL_SUM)) != ZCOLL_OK)
    return fail_st(comm, "zcoll_allreduce (verdict)", st);
  if (rank == 0 && !flag)
    printf("persistent ok: %d starts of %zu floats on %d ranks over %s, every element exact\n",
           starts, count, size, zcoll_comm_transport(comm));
  if ((st = zcoll_request_free(req)) != ZCOLL_OK) return fail_st(comm, "zcoll_request_free", st);
  if ((st = zcoll_comm_destroy(comm)) != ZCOLL_OK) return fail_st(NULL, "destroy", st);
  free(in);
  free(out);
  return flag ? 1 : 0;
}
