/*
 * memcpy_perf.c -- one core's memcpy of each size, as the reference an allreduce's bus
 * bandwidth is held against (perf/coll_compare.sh -t allreduce): source and destination
 * malloc'd, as an application's are (16 bytes past a page for large blocks); past 1 MiB the
 * destination is rewritten before each copy, which is timed alone, so that none finds it in
 * cache from the last; up to 1 MiB the loop is timed whole (a clock read would outweigh it). Prints
 * the harness's table layout (tools/harness/: size, count, type, redop, root, time in us,
 * algbw, busbw, #wrong, time) so that the same scripts read it.
 *
 *   memcpy_perf -b 8 -e 33554432 -f 8 -n 20 -w 5      (sizes in bytes)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

int main(int argc, char **argv) {
  size_t b = 8, e = (size_t)32 << 20, f = 2;
  long n = 20, w = 5;
  int c;
  while ((c = getopt(argc, argv, "b:e:f:n:w:")) != -1) {
    if (c == 'b')
      b = (size_t)strtoull(optarg, NULL, 10);
    else if (c == 'e')
      e = (size_t)strtoull(optarg, NULL, 10);
    else if (c == 'f')
      f = (size_t)atol(optarg);
    else if (c == 'n')
      n = atol(optarg);
    else if (c == 'w')
      w = atol(optarg);
    else {
      fprintf(stderr, "usage: memcpy_perf [-b 8] [-e BYTES] [-f 2] [-n 20] [-w 5]\n");
      return 2;
    }
  }
  if (b < 1 || f < 2 || n < 1 || w < 0) return 2;
  char *src = malloc(e), *dst = malloc(e);
  if (!src || !dst) return 1;
  memset(src, 1, e);
  memset(dst, 2, e);
  printf("# memcpy_perf: one core, malloc'd buffers; time: mean us per copy over %ld after %ld\n",
         n, w);
  printf("#%11s %12s %8s %6s %6s %8s %7s %7s %6s %8s\n", "size", "count", "type", "redop", "root",
         "time", "algbw", "busbw", "#wrong", "time");
  for (size_t s = b; s <= e; s *= f) {
    for (long i = 0; i < w; i++) memcpy(dst, src, s);
    double t = 0;
    if (s > ((size_t)1 << 20)) { /* each copy timed alone, its destination out of cache */
      for (long i = 0; i < n; i++) {
        memset(dst, (int)i, s);
        double t0 = now_us();
        memcpy(dst, src, s);
        t += now_us() - t0;
      }
    } else { /* the loop timed whole: a clock read costs more than a small copy */
      double t0 = now_us();
      for (long i = 0; i < n; i++) {
        memcpy(dst, src, s);
        __asm__ volatile("" ::: "memory"); /* each copy is made */
      }
      t = now_us() - t0;
    }
    t /= (double)n;
    double gbs = (double)s / t / 1e3;
    printf("%12zu %12zu %8s %6s %6s %8.2f %7.2f %7.2f %6d %8.2f\n", s, s, "uint8", "none", "-1", t,
           gbs, gbs, 0, t);
    if (s > e / f) break;
  }
  free(src);
  free(dst);
  return 0;
}
