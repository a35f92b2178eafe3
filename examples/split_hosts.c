/*
 * split_hosts -- a two-level allreduce from split communicators: the ranks of each host
 * sum among themselves, the hosts' leaders sum across hosts, each leader broadcasts the
 * total to its host. The answer is checked against one allreduce over every rank.
 *
 *   zcoll_run -np 4 build/split_hosts [--ranks-per-host K] [--count N]
 *
 * A rank's host is its host name (gathered over the world communicator); --ranks-per-host
 * K pretends instead that every K consecutive ranks share a host, to try it on one
 * machine. zcoll's own allreduce already does this hierarchy by itself where ranks share
 * hosts (the "hier" algorithm): this shows the communicators an application builds for
 * work of its own per host and across hosts.
 */
#define _DEFAULT_SOURCE /* gethostname */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zcoll.h"

#define CHECK(call)                                                            \
  do {                                                                         \
    zcoll_status_t st_ = (call);                                               \
    if (st_ != ZCOLL_OK) {                                                     \
      fprintf(stderr, "split_hosts: %s: %s: %s\n", #call, zcoll_strerror(st_), \
              zcoll_last_error());                                             \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

int main(int argc, char **argv) {
  int per_host = 0;
  size_t count = 1 << 16;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--ranks-per-host")) per_host = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--count")) count = strtoull(argv[i + 1], NULL, 10);
  }
  zcoll_comm_t *world, *host, *leaders;
  CHECK(zcoll_comm_init(&world, NULL));
  int rank = zcoll_comm_rank(world), size = zcoll_comm_size(world);

  /* The host's color: the first rank with this rank's host name. */
  char name[64] = {0}, *names = calloc((size_t)size, sizeof(name));
  if (per_host > 0)
    snprintf(name, sizeof(name), "host%d", rank / per_host);
  else
    gethostname(name, sizeof(name) - 1);
  CHECK(zcoll_allgather(world, name, names, sizeof(name), ZCOLL_UINT8));
  int color = 0;
  while (strcmp(names + (size_t)color * sizeof(name), name)) color++;
  CHECK(zcoll_comm_split(world, color, rank, &host));
  int leader = zcoll_comm_rank(host) == 0;
  CHECK(zcoll_comm_split(world, leader ? 0 : ZCOLL_UNDEFINED, rank, &leaders));

  /* Every rank's vector: element i is rank + i (exact in float up to 2^24). */
  float *v = malloc(count * sizeof(float)), *want = malloc(count * sizeof(float));
  for (size_t i = 0; i < count; i++) v[i] = want[i] = (float)(rank + (int)(i % 1000));
  CHECK(zcoll_allreduce(world, ZCOLL_IN_PLACE, want, count, ZCOLL_FLOAT32, ZCOLL_SUM));
  CHECK(zcoll_allreduce(host, ZCOLL_IN_PLACE, v, count, ZCOLL_FLOAT32, ZCOLL_SUM));
  if (leader) CHECK(zcoll_allreduce(leaders, ZCOLL_IN_PLACE, v, count, ZCOLL_FLOAT32, ZCOLL_SUM));
  CHECK(zcoll_broadcast(host, v, count, ZCOLL_FLOAT32, 0));
  int same = !memcmp(v, want, count * sizeof(float));
  printf("split_hosts: rank %d: host %d (rank %d of %d)%s: two-level sum %s the allreduce's\n",
         rank, color, zcoll_comm_rank(host), zcoll_comm_size(host), leader ? ", a leader" : "",
         same ? "equals" : "DIFFERS FROM");
  fflush(stdout);
  if (leaders) CHECK(zcoll_comm_destroy(leaders));
  CHECK(zcoll_comm_destroy(host));
  CHECK(zcoll_comm_destroy(world));
  free(v), free(want), free(names);
  return same ? 0 : 1;
}
