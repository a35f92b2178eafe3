/*
 * sample.h -- ZCOLL_TEST_SAMPLE=1: CI's sanitizer pass, where every job is 2-3 times
 * slower, runs a documented subset of the large parameter matrices. The plain pass runs
 * them whole; each matrix says in a comment which cases its sample keeps.
 */
#ifndef ZCOLL_TEST_SAMPLE_H
#define ZCOLL_TEST_SAMPLE_H

#include <stdlib.h>
#include <string.h>

static inline int zt_sampled(void) {
  const char *v = getenv("ZCOLL_TEST_SAMPLE");
  return v && strcmp(v, "1") == 0;
}

#endif
