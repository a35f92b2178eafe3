/*
 * kernel_bench.c -- the reduction kernels against memcpy on the same buffers.
 *
 * For each buffer size, times the in-place accumulation an allreduce step does
 * (a[i] = a[i] op b[i], zcoll__reduce(dtype, op, a, a, b, n, 0)) against
 * memcpy(a, b, bytes), both best of many runs on buffers touched beforehand, and prints
 * GB/s of buffer bytes (n * element size / time) and time(reduce)/time(memcpy).
 * "avg/p" is the final AVG step (divides by p = 4); "oop" rows use a third buffer as
 * the destination.
 *
 * Built with the project (target zcoll_kernel_bench, not installed):
 *   cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release && cmake --build build/release
 *   build/release/zcoll_kernel_bench [generic|avx2|avx512] [size in KiB ...]
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/reduce.h"
#include "kernels/reduce_isa.h"
#include "zcoll.h"

static const char *const dtype_names[ZCOLL_DTYPE_COUNT] = {
    "int8",   "uint8",   "int32",    "uint32",  "int64",
    "uint64", "float16", "bfloat16", "float32", "float64"};
static const size_t dtype_sizes[ZCOLL_DTYPE_COUNT] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum { K_MEMCPY, K_REDUCE, K_REDUCE_OOP };

typedef struct {
  int kind;
  zcoll_dtype_t dt;
  zcoll_op_t op;
  int divisor;
  unsigned char *a, *b, *d;
  size_t bytes;
} job_t;

static void run_once(const job_t *j) {
  size_t n = j->bytes / dtype_sizes[j->dt];
  switch (j->kind) {
  case K_MEMCPY: memcpy(j->a, j->b, j->bytes); break;
  case K_REDUCE: zcoll__reduce(j->dt, j->op, j->a, j->a, j->b, n, j->divisor); break;
  default: zcoll__reduce(j->dt, j->op, j->d, j->a, j->b, n, j->divisor); break;
  }
}

/* Best of `samples` timings of `batch` back-to-back calls, per call, for the reduction
 * and for memcpy on the same buffers, interleaved so that both see the same cache state
 * and clock frequency (this matters on a shared machine). Small sizes are batched so
 * that one sample is far above the clock's resolution. */
static void best_times(const job_t *j, double *t_red, double *t_cpy) {
  job_t cpy = *j;
  cpy.kind = K_MEMCPY;
  size_t batch = j->bytes >= (1u << 20) ? 1 : (1u << 20) / j->bytes;
  int samples = j->bytes >= (64u << 20) ? 8 : 25;
  *t_red = *t_cpy = 1e30;
  for (int s = 0; s < samples; s++) {
    for (int which = 0; which < 2; which++) {
      const job_t *x = which ? &cpy : j;
      /* Untimed: the other kind may have left the buffers elsewhere in the hierarchy
       * (memcpy can bypass the caches), which is not what a steady loop sees. */
      run_once(x);
      double t0 = now();
      for (size_t k = 0; k < batch; k++) run_once(x);
      double t = (now() - t0) / (double)batch;
      double *best = which ? t_cpy : t_red;
      if (t < *best) *best = t;
    }
  }
}

/* Values that stay finite and normal under repeated in-place sums and products
 * (denormals or NaNs would measure the FPU's slow paths, not the kernel). */
static void fill(zcoll_dtype_t dt, unsigned char *p, size_t bytes, int which) {
  size_t sz = dtype_sizes[dt], n = bytes / sz;
  for (size_t i = 0; i < n; i++) {
    uint64_t v;
    switch (dt) {
    case ZCOLL_FLOAT16: v = which ? 0x3c00 : 0x3e00; break;  /* 1.0, 1.5 */
    case ZCOLL_BFLOAT16: v = which ? 0x3f80 : 0x3fc0; break; /* 1.0, 1.5 */
    case ZCOLL_FLOAT32: {
      float f = which ? 1.0f : 1.5f;
      uint32_t u;
      memcpy(&u, &f, 4);
      v = u;
      break;
    }
    case ZCOLL_FLOAT64: {
      double f = which ? 1.0 : 1.5;
      memcpy(&v, &f, 8);
      break;
    }
    default: v = (uint64_t)(i * 2654435761u + (unsigned)which * 97u + 1u); break;
    }
    memcpy(p + i * sz, &v, sz);
  }
}

static void row(const char *size, const char *op, const job_t *j) {
  double t_red, t_cpy, bytes = (double)j->bytes;
  best_times(j, &t_red, &t_cpy);
  printf("%-8s %-9s %-7s %12.2f %12.2f %10.2f\n", size, dtype_names[j->dt], op,
         bytes / t_red * 1e-9, bytes / t_cpy * 1e-9, t_red / t_cpy);
}

int main(int argc, char **argv) {
  static const size_t default_kib[] = {64, 1024, 8192, 65536};
  size_t kib[16];
  int nsizes = 0;
  int argi = 1;
  if (argi < argc && (argv[argi][0] < '0' || argv[argi][0] > '9')) {
    if (zcoll__reduce_set_isa(argv[argi]) != 0) {
      fprintf(stderr, "kernel_bench: this cpu cannot run the '%s' kernels\n", argv[argi]);
      return 1;
    }
    argi++;
  }
  for (; argi < argc && nsizes < 16; argi++) kib[nsizes++] = strtoul(argv[argi], NULL, 10);
  if (nsizes == 0)
    for (size_t i = 0; i < sizeof default_kib / sizeof default_kib[0]; i++)
      kib[nsizes++] = default_kib[i];

  static const char *const op_names[] = {"sum", "prod", "min", "max", "avg", "avg/p"};
  printf("zcoll kernel_bench: kernels=%s; GB/s = buffer bytes / time, best of runs\n",
         zcoll__reduce_isa());
  printf("%-8s %-9s %-7s %12s %12s %10s\n", "size", "dtype", "op", "reduce GB/s", "memcpy GB/s",
         "t(red)/t(cpy)");

  for (int s = 0; s < nsizes; s++) {
    size_t bytes = kib[s] << 10;
    size_t alloc = (bytes + 4095) & ~(size_t)4095; /* aligned_alloc wants a multiple */
    unsigned char *a = aligned_alloc(4096, alloc), *b = aligned_alloc(4096, alloc),
                  *d = aligned_alloc(4096, alloc);
    if (!a || !b || !d || bytes == 0) {
      fprintf(stderr, "kernel_bench: cannot allocate 3 x %zu KiB\n", kib[s]);
      return 1;
    }
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    memset(d, 3, bytes);
    char label[32];
    if (kib[s] % 1024 == 0)
      snprintf(label, sizeof label, "%zuMiB", kib[s] / 1024);
    else
      snprintf(label, sizeof label, "%zuKiB", kib[s]);

    /* The headline: float32 sum, in place and out of place. */
    fill(ZCOLL_FLOAT32, a, bytes, 0);
    fill(ZCOLL_FLOAT32, b, bytes, 1);
    job_t j = {K_REDUCE, ZCOLL_FLOAT32, ZCOLL_SUM, 0, a, b, d, bytes};
    row(label, "sum", &j);
    j.kind = K_REDUCE_OOP;
    row(label, "sum oop", &j);

    for (int dt = 0; dt < ZCOLL_DTYPE_COUNT; dt++) {
      for (int op = 0; op < 6; op++) {
        job_t k = {
            .kind = K_REDUCE, .dt = (zcoll_dtype_t)dt, .a = a, .b = b, .d = d, .bytes = bytes};
        k.op = op == 5 ? ZCOLL_AVG : (zcoll_op_t)op;
        k.divisor = op == 5 ? 4 : 0;
        /* Refilled per op: repeated in-place products/sums must not drift into
         * infinities or denormals. */
        fill((zcoll_dtype_t)dt, a, bytes, 0);
        fill((zcoll_dtype_t)dt, b, bytes, 1);
        /* avg/p in place would divide a by 4 each run, down into denormals. */
        if (op == 5) k.kind = K_REDUCE_OOP;
        row(label, op_names[op], &k);
      }
    }
    free(a);
    free(b);
    free(d);
  }
  return 0;
}
