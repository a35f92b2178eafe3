/* verbs/need_rdma.h -- test_verbs' guard: skip where no RDMA device is visible, saying why,
 * unless ZCOLL_TEST_REQUIRE_RDMA=1 (the rxe harness), where that fails the test. */
#ifndef ZCOLL_TESTS_NEED_RDMA_H
#define ZCOLL_TESTS_NEED_RDMA_H

#include <criterion/criterion.h>
#include <infiniband/verbs.h>
#include <stdlib.h>
#include <string.h>

static inline void need_rdma(void) {
  int n = 0;
  struct ibv_device **d = ibv_get_device_list(&n);
  if (d) ibv_free_device_list(d);
  if (n > 0) return;
  const char *req = getenv("ZCOLL_TEST_REQUIRE_RDMA");
  if (req && strcmp(req, "1") == 0)
    cr_assert_fail("ZCOLL_TEST_REQUIRE_RDMA=1 but no RDMA device is visible");
  cr_skip_test("no RDMA device here (ci/rxe.sh provides soft-RoCE ones)");
}

#endif
