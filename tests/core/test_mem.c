/*
 * zcoll_mem_alloc / zcoll_mem_free: page-rounded, zero-filled memory that collectives take
 * like any other (in and out of place); a memfd of the shm transport's where the
 * communicator has it; every misuse refused with INVALID_ARG and a message naming it; and
 * memory left at destroy still the application's. Python's comm.empty is on it
 * (python/tests/test_mem.py).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "solo.h"
#include "spawn.h"
#include "zcoll.h"

static zcoll_comm_t *single(const char *tl) { return solo_comm("TRANSPORT", tl); }

/* The memfd behind p, if any: its /proc/self/maps line names it "/memfd:zcoll-...". */
static int is_zcoll_memfd(const void *p) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[512];
  int found = 0;
  while (f && fgets(line, sizeof(line), f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && (uintptr_t)p >= lo && (uintptr_t)p < hi)
      found = strstr(line, "/memfd:zcoll-") != NULL;
  }
  if (f) fclose(f);
  return found;
}

static void alloc_use_free(const char *tl, int memfd) {
  zcoll_comm_t *comm = single(tl);
  float *x = NULL;
  cr_assert_eq(zcoll_mem_alloc(comm, 1000 * sizeof(float), (void **)&x), ZCOLL_OK, "%s",
               zcoll_last_error());
  cr_assert(x && (uintptr_t)x % (uintptr_t)sysconf(_SC_PAGESIZE) == 0);
  cr_expect_eq(is_zcoll_memfd(x), memfd, "%s: memfd %d", tl, memfd);
  long page = sysconf(_SC_PAGESIZE);
  for (long i = 0; i < page / (long)sizeof(float); i++) cr_assert_eq(x[i], 0.0f); /* whole page */
  for (int i = 0; i < 1000; i++) x[i] = (float)i;
  float out[1000];
  cr_assert_eq(zcoll_allreduce(comm, x, out, 1000, ZCOLL_FLOAT32, ZCOLL_SUM), ZCOLL_OK);
  cr_assert_eq(zcoll_allreduce(comm, ZCOLL_IN_PLACE, x, 1000, ZCOLL_FLOAT32, ZCOLL_SUM), ZCOLL_OK);
  for (int i = 0; i < 1000; i++) cr_assert(out[i] == (float)i && x[i] == (float)i);
  cr_assert_eq(zcoll_mem_free(comm, x), ZCOLL_OK, "%s", zcoll_comm_last_error(comm));
  /* Freed: a second free, and one of anything else, are refused. */
  cr_expect_eq(zcoll_mem_free(comm, x), ZCOLL_ERR_INVALID_ARG);
  cr_expect(strstr(zcoll_comm_last_error(comm), "not memory zcoll_mem_alloc"), "%s",
            zcoll_comm_last_error(comm));
  cr_expect_eq(zcoll_mem_free(comm, out), ZCOLL_ERR_INVALID_ARG);
  /* Left at destroy: still the application's, readable and writable. */
  char *kept = NULL;
  cr_assert_eq(zcoll_mem_alloc(comm, 1, (void **)&kept), ZCOLL_OK);
  strcpy(kept, "still here");
  cr_assert_eq(zcoll_comm_destroy(comm), ZCOLL_OK);
  cr_expect_str_eq(kept, "still here");
  kept[0] = 'S';
}

Test(mem, shm_memory_is_a_memfd) { alloc_use_free("shm", 1); }
Test(mem, loopback_memory_is_anonymous) { alloc_use_free("loopback", 0); }

Test(mem, bad_arguments_are_refused) {
  zcoll_comm_t *comm = single("shm");
  void *p = NULL;
  cr_expect_eq(zcoll_mem_alloc(NULL, 8, &p), ZCOLL_ERR_INVALID_ARG);
  cr_expect_eq(zcoll_mem_alloc(comm, 0, &p), ZCOLL_ERR_INVALID_ARG);
  cr_expect(strstr(zcoll_last_error(), "len is 0"), "%s", zcoll_last_error());
  cr_expect_eq(zcoll_mem_alloc(comm, 8, NULL), ZCOLL_ERR_INVALID_ARG);
  cr_expect_eq(zcoll_mem_alloc(comm, SIZE_MAX, &p), ZCOLL_ERR_INVALID_ARG);
  cr_expect(p == NULL);
  cr_expect_eq(zcoll_mem_alloc(comm, (size_t)1 << 50, &p), ZCOLL_ERR_NO_MEMORY);
  cr_expect(p == NULL);
  cr_expect_eq(zcoll_mem_free(NULL, &p), ZCOLL_ERR_INVALID_ARG);
  cr_expect_eq(zcoll_mem_free(comm, NULL), ZCOLL_ERR_INVALID_ARG);
  cr_assert_eq(zcoll_comm_destroy(comm), ZCOLL_OK);
}
