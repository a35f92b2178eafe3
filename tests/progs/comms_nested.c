/* comms_nested: several communicators in one process, each launched on its own: two
 * alive at once, one destroyed, a third created after it. Under PMIx each takes its own
 * key for rank 0's address and job key (tests/launch_pmix.sh). Prints "comms ok via
 * <launcher>" on every rank whose sums are all exact. */
#include <stdio.h>

#include "zcoll.h"

static int sum_ok(zcoll_comm_t *comm) {
  int v = zcoll_comm_rank(comm) + 1, sum = 0, p = zcoll_comm_size(comm);
  return zcoll_allreduce(comm, &v, &sum, 1, ZCOLL_INT32, ZCOLL_SUM) == ZCOLL_OK &&
         sum == p * (p + 1) / 2;
}

static zcoll_comm_t *make(const char *which) {
  zcoll_comm_t *comm;
  zcoll_status_t st = zcoll_comm_init(&comm, NULL);
  if (st == ZCOLL_OK) return comm;
  fprintf(stderr, "comm %s: zcoll_comm_init: %s: %s\n", which, zcoll_strerror(st),
          zcoll_last_error());
  return NULL;
}

int main(void) {
  zcoll_comm_t *a = make("a"), *b = a ? make("b") : NULL, *c = NULL;
  int ok = b && sum_ok(a) && sum_ok(b) && sum_ok(a);
  if (b) ok = zcoll_comm_destroy(b) == ZCOLL_OK && ok;
  if (ok) c = make("c");
  ok = ok && c && sum_ok(c) && sum_ok(a);
  if (ok)
    printf("comms ok via %s\n", zcoll_comm_launcher(c));
  else
    fprintf(stderr, "comms: a sum was wrong or a call failed\n");
  if (c) zcoll_comm_destroy(c);
  if (a) zcoll_comm_destroy(a);
  return !ok;
}
