/*
 * first_touch.c -- what the first write into a page of fresh shared memory costs here,
 * without zcoll: docs/performance.md's "slow start". A memfd mapped MAP_SHARED, as the
 * shm transport maps its slots, takes 32 KiB copies into 8 slots, then the same 8 slots
 * again; the first pass writes pages nobody wrote before.
 *
 *   build/zcoll_first_touch [none|populate|memset]      (or: cc -O2 perf/first_touch.c)
 *
 * populate: MADV_POPULATE_WRITE first (the kernel fills the page tables); memset: the
 * process writes every page first. Prints each copy's time in microseconds.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
  const size_t copy = 32768, slot = copy + 4096, slots = 8, len = slots * slot;
  const char *how = argc > 1 ? argv[1] : "none";
  int fd = memfd_create("first_touch", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, (off_t)len) != 0) return perror("memfd"), 1;
  char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  char *src = malloc(copy);
  if (m == MAP_FAILED || !src) return perror("mmap"), 1;
  memset(src, 1, copy);
  if (strcmp(how, "populate") == 0 && madvise(m, len, MADV_POPULATE_WRITE) != 0) perror("madvise");
  if (strcmp(how, "memset") == 0) memset(m, 0, len);
  for (int pass = 0; pass < 2; pass++) {
    printf("%s pass (%s):", pass ? "second" : "first", how);
    for (size_t i = 0; i < slots; i++) {
      double t0 = now_us();
      memcpy(m + i * slot, src, copy);
      printf(" %.1f", now_us() - t0);
    }
    printf(" us\n");
  }
  return 0;
}
