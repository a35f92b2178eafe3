/*
 * cma_bench.c -- the kernel's single copy between processes (process_vm_readv, "CMA")
 * against memcpy, size by size: where would pulling a peer's vector with one system call
 * beat the two memcpys of a put into shared memory? GB/s, best of 20, of reading a forked
 * child's buffer (whole, and by 256 KiB pieces) and of memcpy between two buffers here.
 *
 *   cc -O2 -o /tmp/cma_bench perf/cma_bench.c && /tmp/cma_bench
 *
 * Needs the ptrace "attach" right over the child (Yama's ptrace_scope 1 allows it: the
 * child is a descendant). On this project's 2-core VM (docs/performance.md): 1 MiB 0.33x,
 * 8 MiB 0.47x, 32 MiB 0.70x of memcpy's speed.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The best of 20 of reading n bytes of pid's src into dst by pieces of `piece`. */
static double cma_gbs(pid_t pid, char *dst, char *src, size_t n, size_t piece) {
  double best = 1e30;
  for (int i = 0; i < 20; i++) {
    double t = now_s();
    for (size_t o = 0; o < n; o += piece) {
      size_t l = n - o < piece ? n - o : piece;
      struct iovec li = {dst + o, l}, ri = {src + o, l};
      if (process_vm_readv(pid, &li, 1, &ri, 1, 0) != (ssize_t)l) return -1;
    }
    t = now_s() - t;
    if (t < best) best = t;
  }
  return (double)n / best / 1e9;
}

int main(void) {
  const size_t sizes[] = {(size_t)64 << 10, (size_t)1 << 20, (size_t)8 << 20, (size_t)32 << 20};
  size_t max = sizes[3];
  char *src = malloc(max), *dst = malloc(max);
  if (!src || !dst) return 1;
  memset(src, 1, max);
  memset(dst, 2, max);
  int p[2];
  if (pipe(p) != 0) return 1;
  pid_t pid = fork(); /* its src is ours, copy-on-write: the same pages to read */
  if (pid == 0) {
    char b;
    if (read(p[0], &b, 1) < 0) _exit(1);
    _exit(0);
  }
  printf("# GB/s, best of 20: memcpy | process_vm_readv whole | by 256 KiB pieces\n");
  for (int k = 0; k < 4; k++) {
    size_t n = sizes[k];
    double best = 1e30;
    for (int i = 0; i < 20; i++) {
      double t = now_s();
      memcpy(dst, src, n);
      __asm__ volatile("" ::: "memory");
      t = now_s() - t;
      if (t < best) best = t;
    }
    double whole = cma_gbs(pid, dst, src, n, n), pieces = cma_gbs(pid, dst, src, n, 256 << 10);
    if (whole < 0 || pieces < 0) {
      perror("process_vm_readv");
      return 1;
    }
    printf("%10zu  %6.2f | %6.2f (%.2fx) | %6.2f (%.2fx)\n", n, (double)n / best / 1e9, whole,
           whole * best * 1e9 / (double)n, pieces, pieces * best * 1e9 / (double)n);
  }
  if (write(p[1], "x", 1) != 1) return 1;
  waitpid(pid, NULL, 0);
  return 0;
}
