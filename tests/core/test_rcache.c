/*
 * The registration cache (lib/core/rcache.c) on its own, over a fake transport that counts
 * registrations: hits, libucm's unmap events invalidating entries (munmap, a remapped
 * address, free of a large block), the byte bound and LRU eviction, and entries a
 * collective in flight uses surviving eviction. The end-to-end check over verbs is
 * test_verbs: rcache_follows_new_pages.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/rcache.h"

struct zcoll_tl_mr {
  void *addr;
  size_t len;
};

static int regs, deregs, attempts;
static size_t live, limit; /* limit: registered bytes the fake NIC allows (0: any) */

static zcoll_status_t fake_reg(struct zcoll_tl *tl, void *addr, size_t len, int remote,
                               struct zcoll_tl_mr **mr) {
  (void)tl, (void)remote;
  attempts++;
  if (limit && live + len > limit) return ZCOLL_ERR_NO_MEMORY; /* like ulimit -l */
  live += len;
  *mr = malloc(sizeof(**mr));
  (*mr)->addr = addr;
  (*mr)->len = len;
  regs++;
  return ZCOLL_OK;
}

static void fake_dereg(struct zcoll_tl_mr *mr) {
  live -= mr->len;
  free(mr);
  deregs++;
}

static const struct zcoll_tl_ops fake = {
    .name = "fake", .mem_reg = fake_reg, .mem_dereg = fake_dereg};

#define MB ((size_t)1 << 20)

static struct zcoll__rcache *make(size_t max) {
  regs = deregs = attempts = 0;
  live = limit = 0;
  struct zcoll__rcache *rc = zcoll__rcache_create(&fake, NULL, max);
  cr_assert_not_null(rc, "no cache: is libucm (libucx0) installed?");
  return rc;
}

Test(rcache, hits_cover_the_page_aligned_range) {
  struct zcoll__rcache *rc = make(64 * MB);
  char *b = mmap(NULL, 4 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  struct zcoll_tl_mr *m = zcoll__rcache_get(rc, b + 100, MB, 1);
  cr_assert_not_null(m);
  cr_expect_eq(m->addr, b, "registered from the page start");
  cr_expect_eq(m->len, MB + 4096);
  cr_expect_eq(zcoll__rcache_get(rc, b + 200, 1000, 1), m, "inside: a hit");
  cr_expect_eq(regs, 1);
  cr_expect_neq(zcoll__rcache_get(rc, b + 2 * MB, MB, 1), m, "outside: another entry");
  cr_expect_eq(regs, 2);
  struct zcoll__rcache_stats st;
  zcoll__rcache_stats(rc, &st);
  cr_expect_eq(st.hits, 1);
  cr_expect_eq(st.misses, 2);
  munmap(b, 4 * MB);
  zcoll__rcache_destroy(rc, 0);
  cr_expect_eq(deregs, regs);
}

/* The stale-data case: the same address, new pages. */
Test(rcache, munmap_invalidates_and_a_remap_registers_anew) {
  struct zcoll__rcache *rc = make(64 * MB);
  char *b = mmap(NULL, MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  cr_assert_not_null(zcoll__rcache_get(rc, b, MB, 1));
  munmap(b, MB);
  char *c = mmap(b, MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  cr_assert_eq(c, b);
  cr_assert_not_null(zcoll__rcache_get(rc, c, MB, 5));
  cr_expect_eq(regs, 2, "the unmapped entry must not be found again");
  struct zcoll__rcache_stats st;
  zcoll__rcache_stats(rc, &st);
  cr_expect_eq(st.invalidations, 1);
  cr_expect_eq(deregs, 1, "released at the next lookup that needed room or swept");
  /* A partial unmap (one page in the middle) invalidates too. */
  munmap(c + 4096 * 3, 4096);
  zcoll__rcache_stats(rc, &st);
  cr_expect_eq(st.invalidations, 2);
  munmap(c, MB);
  zcoll__rcache_destroy(rc, 0);
}

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

Test(rcache, free_of_a_large_block_invalidates) {
#ifdef UNDER_ASAN
  /* ASan's allocator keeps freed blocks mapped (quarantine): nothing is unmapped, and
   * a reused block has the same pages, so its registration stays right. */
  cr_skip_test("ASan's allocator does not unmap freed blocks");
#endif
  struct zcoll__rcache *rc = make(64 * MB);
  char *b = malloc(2 * MB); /* above glibc's mmap threshold: freed with munmap */
  cr_assert_not_null(zcoll__rcache_get(rc, b, 2 * MB, 1));
  free(b);
  struct zcoll__rcache_stats st;
  zcoll__rcache_stats(rc, &st);
  cr_expect_eq(st.invalidations, 1, "free() of a 2 MiB block was not seen");
  zcoll__rcache_destroy(rc, 0);
}

Test(rcache, bound_evicts_least_recently_used_but_not_in_use) {
  struct zcoll__rcache *rc = make(3 * MB);
  char *b = mmap(NULL, 8 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  struct zcoll_tl_mr *a = zcoll__rcache_get(rc, b, MB, 1);
  zcoll__rcache_get(rc, b + 2 * MB, MB, 1);
  zcoll__rcache_get(rc, b + 4 * MB, MB, 1);
  cr_expect_eq(zcoll__rcache_get(rc, b, MB, 1), a, "a used again: most recent now");
  uint64_t since = zcoll__rcache_clock(rc) + 1; /* a collective starts here */
  zcoll__rcache_get(rc, b + 6 * MB, MB, since); /* evicts b + 2M, the least recent */
  cr_expect_eq(deregs, 1);
  cr_expect_eq(zcoll__rcache_get(rc, b, MB, since), a);
  struct zcoll__rcache_stats st;
  zcoll__rcache_stats(rc, &st);
  cr_expect_eq(st.evictions, 1);
  cr_expect_leq(st.bytes, 3 * MB);
  /* Everything registered is used by the collective in flight: no room, staged. */
  cr_expect_null(zcoll__rcache_get(rc, b + 2 * MB, MB, 1));
  cr_expect_null(zcoll__rcache_get(rc, b, 4 * MB, 1), "larger than the bound");
  munmap(b, 8 * MB);
  zcoll__rcache_destroy(rc, 0);
  cr_expect_eq(deregs, regs);
}

Test(rcache, zero_bytes_means_no_cache) { cr_expect_null(zcoll__rcache_create(&fake, NULL, 0)); }

/* Locked memory used up (the fake NIC refuses past 2 MiB): idle entries are given back
 * and the registration tried once more; when even that fails, the next misses are staged
 * without trying, rather than each paying a failing registration. */
Test(rcache, failed_registration_frees_idle_entries_then_backs_off) {
  struct zcoll__rcache *rc = make(3 * MB);
  limit = 2 * MB;
  char *b = mmap(NULL, 8 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  cr_assert_not_null(zcoll__rcache_get(rc, b, MB, 1));
  cr_assert_not_null(zcoll__rcache_get(rc, b + 2 * MB, MB, 1));
  uint64_t since = zcoll__rcache_clock(rc) + 1; /* nothing in flight uses them */
  cr_expect_not_null(zcoll__rcache_get(rc, b + 4 * MB, MB, since), "not retried");
  cr_expect_eq(deregs, 2, "the idle entries were not given back");
  limit = 1; /* nothing fits any more */
  since = zcoll__rcache_clock(rc) + 1;
  int before = attempts;
  cr_expect_null(zcoll__rcache_get(rc, b + 6 * MB, MB, since));
  cr_expect_eq(attempts - before, 2, "one attempt and one retry");
  for (int i = 0; i < 10; i++) zcoll__rcache_get(rc, b + 6 * MB, MB, since);
  cr_expect_eq(attempts - before, 2, "failing registrations repeated");
  munmap(b, 8 * MB);
  zcoll__rcache_destroy(rc, 0);
}

Test(rcache, a_range_that_wraps_is_not_registered) {
  struct zcoll__rcache *rc = make(64 * MB);
  cr_expect_null(zcoll__rcache_get(rc, (void *)(UINTPTR_MAX - 4095), 8192, 1));
  cr_expect_eq(attempts, 0);
  zcoll__rcache_destroy(rc, 0);
}

/* A fork while another thread holds the cache's lock (a lookup on the progress thread,
 * or libucm's callback for another thread's munmap): the child inherits the lock held,
 * and must still be able to unmap memory (found by review: 3 children in 300 hung). */
static atomic_int stop;
static struct zcoll__rcache *shared;
static char *base;
#define PG ((size_t)4096)
#define NENT 200

static void *unmapper(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    void *p = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(p, PG);
  }
  return NULL;
}

static void *looker(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) zcoll__rcache_get(shared, base + (NENT - 1) * 2 * PG, PG, 1);
  return NULL;
}

static int forks_that_hang(void *(*holder)(void *), int tries) {
  shared = make(64 * MB);
  base = mmap(NULL, NENT * 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  for (int i = 0; i < NENT; i++) zcoll__rcache_get(shared, base + (size_t)i * 2 * PG, PG, 1);
  atomic_store(&stop, 0);
  pthread_t t;
  pthread_create(&t, NULL, holder, NULL);
  int hung = 0;
  for (int k = 0; k < tries; k++) {
    pid_t pid = fork();
    if (pid == 0) {
      alarm(2);
      void *p = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      munmap(p, PG);
      _exit(0);
    }
    int ws;
    waitpid(pid, &ws, 0);
    hung += WIFSIGNALED(ws) && WTERMSIG(ws) == SIGALRM;
  }
  atomic_store(&stop, 1);
  pthread_join(t, NULL);
  munmap(base, NENT * 2 * PG);
  zcoll__rcache_destroy(shared, 0);
  return hung;
}

Test(rcache, fork_while_a_lookup_holds_the_lock, .timeout = 120) {
  cr_expect_eq(forks_that_hang(looker, 200), 0);
}

Test(rcache, fork_while_the_callback_holds_the_lock, .timeout = 120) {
  cr_expect_eq(forks_that_hang(unmapper, 200), 0);
}
