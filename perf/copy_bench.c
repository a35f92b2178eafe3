/*
 * copy_bench.c -- memcpy against zcoll__copy (lib/kernels/copy.h) for the copies the data path
 * makes: pieces of 4 KiB .. 1 MiB out of an 8 MiB buffer, the destination placed d bytes
 * past the source modulo 4096. GB/s of the best of 9 passes over the 8 MiB.
 *
 *   build/rel/zcoll_copy_bench        (target zcoll_copy_bench, not installed)
 *
 * d = 16 is a slot (page-aligned) copied into a malloc'd result (16 bytes past a page).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/copy.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double pass_gbs(int ours, unsigned char *dst, const unsigned char *src, size_t total,
                       size_t piece) {
  double best = 1e30;
  for (int r = 0; r < 9; r++) {
    double t = now_s();
    for (size_t k = 0; k + piece <= total; k += piece) {
      if (ours)
        zcoll__copy(dst + k, src + k, piece);
      else
        memcpy(dst + k, src + k, piece);
    }
    t = now_s() - t;
    if (t < best) best = t;
  }
  return (double)total / best / 1e9;
}

int main(void) {
  const size_t total = 8u << 20;
  static const size_t pieces[] = {4096, 65536, 262144, 1u << 20};
  static const int dists[] = {0, 16, 24, 48, 4080};
  unsigned char *src = aligned_alloc(4096, total + 8192);
  unsigned char *dst = aligned_alloc(4096, total + 8192);
  if (!src || !dst) return 1;
  memset(src, 1, total + 8192);
  memset(dst, 2, total + 8192);
  printf("# GB/s, memcpy | zcoll__copy; d: destination - source (mod 4096)\n");
  printf("%10s", "piece");
  for (size_t j = 0; j < sizeof dists / sizeof *dists; j++) printf("   d=%-4d         ", dists[j]);
  printf("\n");
  for (size_t i = 0; i < sizeof pieces / sizeof *pieces; i++) {
    printf("%10zu", pieces[i]);
    for (size_t j = 0; j < sizeof dists / sizeof *dists; j++) {
      unsigned char *d = dst + dists[j];
      printf("   %5.1f | %5.1f  ", pass_gbs(0, d, src, total, pieces[i]),
             pass_gbs(1, d, src, total, pieces[i]));
    }
    printf("\n");
  }
  free(src);
  free(dst);
  return 0;
}
