/*
 * solo.h -- a communicator of one rank, for Criterion tests of calls that need no peer:
 * RANK 0, SIZE 1 and one more configuration field (NULL name: none).
 */
#ifndef ZCOLL_TEST_SOLO_H
#define ZCOLL_TEST_SOLO_H

#include <criterion/criterion.h>

#include "zcoll.h"

static inline zcoll_comm_t *solo_comm(const char *name, const char *value) {
  zcoll_config_t *cfg;
  cr_assert_eq(zcoll_config_create(&cfg), ZCOLL_OK, "%s", zcoll_last_error());
  cr_assert_eq(zcoll_config_set(cfg, "RANK", "0"), ZCOLL_OK);
  cr_assert_eq(zcoll_config_set(cfg, "SIZE", "1"), ZCOLL_OK);
  if (name) cr_assert_eq(zcoll_config_set(cfg, name, value), ZCOLL_OK, "%s", zcoll_last_error());
  zcoll_comm_t *comm;
  cr_assert_eq(zcoll_comm_init(&comm, cfg), ZCOLL_OK, "%s", zcoll_last_error());
  zcoll_config_free(cfg);
  return comm;
}

#endif
