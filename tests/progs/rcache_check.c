/*
 * rcache_check: the registration cache must never move stale data. Every rank runs
 * rounds of allreduce on buffers it maps, fills, reduces and unmaps, so that the next
 * round's buffers often land at the same addresses on new pages (a registration kept
 * from the last round would send the old pages' bytes); then the same with malloc/free,
 * and one buffer whose contents change between calls. Every element of every result is
 * checked against the sum computed here. Run with ZCOLL_LOG=info to see the cache's
 * counts at destroy. Public API only.
 *
 *   zcoll_run -np 2 rcache_check [rounds]
 *
 * Prints "rcache ok: ..." on rank 0 and exits 0, or names the first wrong element.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "zcoll.h"

#define BYTES ((size_t)1 << 20)
#define COUNT (BYTES / sizeof(int32_t))

static int rank, size;

static int fail_st(zcoll_comm_t *comm, const char *what, zcoll_status_t st) {
  fprintf(stderr, "rcache_check: rank %d: %s: %s: %s\n", rank, what, zcoll_strerror(st),
          zcoll_comm_last_error(comm));
  return 1;
}

/* Element i of rank r's input in round k: distinct per round, rank and position. */
static int32_t value(int r, int k, size_t i) {
  return (int32_t)((r + 1) * 1000003 + k * 7919 + (int)(i % 4099));
}

static void fill(int32_t *b, int k) {
  for (size_t i = 0; i < COUNT; i++) b[i] = value(rank, k, i);
}

static int check(const int32_t *out, int k, const char *how) {
  for (size_t i = 0; i < COUNT; i++) {
    int64_t want = 0;
    for (int r = 0; r < size; r++) want += value(r, k, i);
    if (out[i] != (int32_t)want) {
      fprintf(stderr, "rcache_check: rank %d: %s round %d: element %zu is %d, want %d\n", rank, how,
              k, i, out[i], (int32_t)want);
      return 1;
    }
  }
  return 0;
}

static void *map(void *hint) {
  void *p = mmap(hint, BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 20;
  zcoll_config_t *cfg;
  zcoll_comm_t *comm;
  if (zcoll_config_create(&cfg) != ZCOLL_OK) return 1;
  zcoll_status_t st = zcoll_comm_init(&comm, cfg);
  zcoll_config_free(cfg);
  if (st != ZCOLL_OK) {
    fprintf(stderr, "rcache_check: zcoll_comm_init: %s: %s\n", zcoll_strerror(st),
            zcoll_last_error());
    return 1;
  }
  rank = zcoll_comm_rank(comm);
  size = zcoll_comm_size(comm);
  int reused = 0, bad = 0;
  void *last_in = NULL, *last_out = NULL;
  /* mmap/munmap: new pages, very often at the addresses just unmapped. */
  for (int k = 0; k < rounds && !bad; k++) {
    int32_t *in = map(last_in), *out = map(last_out);
    if (!in || !out) return fail_st(comm, "mmap", ZCOLL_ERR_NO_MEMORY);
    reused += (void *)in == last_in;
    fill(in, k);
    if ((st = zcoll_allreduce(comm, in, out, COUNT, ZCOLL_INT32, ZCOLL_SUM)) != ZCOLL_OK)
      return fail_st(comm, "zcoll_allreduce (mapped)", st);
    bad = check(out, k, "mmap out-of-place");
    fill(out, k + rounds); /* in place, from the result buffer */
    if (!bad && (st = zcoll_allreduce(comm, ZCOLL_IN_PLACE, out, COUNT, ZCOLL_INT32, ZCOLL_SUM)) !=
                    ZCOLL_OK)
      return fail_st(comm, "zcoll_allreduce (mapped, in place)", st);
    if (!bad) bad = check(out, k + rounds, "mmap in-place");
    last_in = in;
    last_out = out;
    munmap(in, BYTES);
    munmap(out, BYTES);
  }
  /* malloc/free: whatever the allocator does with large blocks. */
  for (int k = 0; k < rounds && !bad; k++) {
    int32_t *in = malloc(BYTES), *out = malloc(BYTES);
    if (!in || !out) return fail_st(comm, "malloc", ZCOLL_ERR_NO_MEMORY);
    fill(in, 2 * rounds + k);
    if ((st = zcoll_allreduce(comm, in, out, COUNT, ZCOLL_INT32, ZCOLL_SUM)) != ZCOLL_OK)
      return fail_st(comm, "zcoll_allreduce (malloc)", st);
    bad = check(out, 2 * rounds + k, "malloc");
    free(in);
    free(out);
  }
  /* One buffer kept, its contents changed between calls: the cached registration is
   * right (same pages), the data new. */
  int32_t *in = map(NULL), *out = map(NULL);
  for (int k = 0; k < rounds && !bad && in && out; k++) {
    fill(in, 3 * rounds + k);
    if ((st = zcoll_allreduce(comm, in, out, COUNT, ZCOLL_INT32, ZCOLL_SUM)) != ZCOLL_OK)
      return fail_st(comm, "zcoll_allreduce (kept)", st);
    bad = check(out, 3 * rounds + k, "kept buffer");
  }
  if (in) munmap(in, BYTES);
  if (out) munmap(out, BYTES);
  /* Everyone's verdict, so that every rank exits alike. */
  int32_t flags[2] = {bad, reused};
  if ((st = zcoll_allreduce(comm, ZCOLL_IN_PLACE, flags, 2, ZCOLL_INT32, ZCOLL_SUM)) != ZCOLL_OK)
    return fail_st(comm, "zcoll_allreduce (verdict)", st);
  if (rank == 0 && !flags[0])
    printf("rcache ok: %d rounds x 3 kinds on %d ranks over %s, every element exact; "
           "%d rank-rounds mapped at the address just unmapped\n",
           rounds, size, zcoll_comm_transport(comm), flags[1]);
  if ((st = zcoll_comm_destroy(comm)) != ZCOLL_OK) return fail_st(NULL, "destroy", st);
  return flags[0] ? 1 : 0;
}
