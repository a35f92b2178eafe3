/* traffic.c -- the scale model's bytes between and within hosts, from the library's
 * schedules alone (no timing): what each rank's sends put on the network. Apart from the
 * discrete-event engine (sim.c), which it shares nothing with but the job description. */
#include <stdlib.h>

#include "algorithms/algorithms.h"
#include "sim.h"

int zsim_traffic(const struct zsim_job *job, double *net, double *shm) {
  int p = job->p, k = job->k > 0 ? job->k : 1, nhosts = (p + k - 1) / k;
  if (p < 1 || job->algo < 0 || (job->algo >= zcoll__nalgos && job->algo < ZSIM_XCHG)) return -1;
  int *host_of = malloc(sizeof(int) * (size_t)p);
  if (!host_of) abort();
  for (int r = 0; r < p; r++) host_of[r] = r / k;
  struct zcoll__algo_params ap = {job->arity, host_of, nhosts};
  int rc = 0;
  *net = *shm = 0;
  for (int r = 0; r < p && rc == 0; r++) {
    struct zcoll__sched s;
    rc = zsim_sched_build(job, r, &ap, &s);
    for (int i = 0; i < s.nops && rc == 0; i++)
      if (s.ops[i].kind == ZCOLL_SOP_SEND)
        *(host_of[s.ops[i].peer] == host_of[r] ? shm : net) += (double)s.ops[i].count * job->dsize;
    zcoll__sched_free(&s);
  }
  free(host_of);
  return rc;
}
