/*
 * sample.h -- the large parameter matrices, split between CI's two passes.
 *
 * ZCOLL_TEST_SAMPLE=1: CI's sanitizer pass, where every job is 2-3 times slower, runs a
 * documented subset (the sample) of each large matrix. ZCOLL_TEST_SAMPLE=rest: CI's plain
 * pass runs the other cases, so that every case of every matrix runs once per CI run,
 * under the sanitizers or without them. Unset (a developer's ctest): every case. Each
 * matrix says in a comment which cases its sample keeps.
 */
#ifndef ZCOLL_TEST_SAMPLE_H
#define ZCOLL_TEST_SAMPLE_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum { ZT_ALL, ZT_SAMPLE, ZT_REST };

static inline int zt_pass(void) {
  const char *v = getenv("ZCOLL_TEST_SAMPLE");
  if (v && strcmp(v, "1") == 0) return ZT_SAMPLE;
  if (v && strcmp(v, "rest") == 0) return ZT_REST;
  return ZT_ALL;
}

/* The sanitizer pass (ZCOLL_TEST_SAMPLE=1). */
static inline int zt_sampled(void) { return zt_pass() == ZT_SAMPLE; }

/* Whether a case runs in this pass, given whether it is in its matrix's sample. */
static inline int zt_keep(int in_sample) {
  int pass = zt_pass();
  return pass == ZT_ALL || (pass == ZT_SAMPLE) == (in_sample != 0);
}

/* For a matrix whose sample is its first k of n cases: the first case this pass runs
 * (zt_from) and how many (zt_count). */
static inline size_t zt_from(size_t k) { return zt_pass() == ZT_REST ? k : 0; }
static inline size_t zt_count(size_t k, size_t n) {
  int pass = zt_pass();
  return pass == ZT_ALL ? n : pass == ZT_SAMPLE ? k : n - k;
}

#endif
