/*
 * pmix_client.h -- the PMIx client: who this process is, and one value from rank 0 to every
 * rank, when a PMIx server (srun --mpi=pmix, Open MPI's mpirun, PRRTE) started it.
 *
 * libpmix.so.2 is loaded with dlopen() only when the environment says a PMIx server is
 * there (pmix_client.c says why): libzcoll does not depend on it, plain runs pay nothing.
 * A build without PMIx's headers (libpmix-dev) has none of this: the launcher's
 * variables and ZCOLL_* still work as before.
 */
#ifndef ZCOLL_PMIX_CLIENT_H
#define ZCOLL_PMIX_CLIENT_H

#include <stddef.h>
#include "zcoll.h"

struct zcoll__pmix_job {
  int rank, size;
  int local_rank, local_size; /* -1: the server did not say */
  char nspace[256];
};

/* 1 if the environment names a PMIx server (PMIX_NAMESPACE and PMIX_RANK). */
int zcoll__pmix_present(void);

/* Connects to the server (once per process; the connection is kept until exit, see
 * pmix_client.c) and reads this process's place in the job. ZCOLL_ERR_UNSUPPORTED, recorded
 * as a message but not logged as an error, when no server answers or this build or
 * machine has no libpmix: the caller falls back to the other launchers. */
zcoll_status_t zcoll__pmix_job(struct zcoll__pmix_job *out);

/* Collective over the job: rank 0 publishes `value` (NULL on the others) under a key of
 * its own for this call, every rank waits for all (a fence that collects the data) and
 * reads rank 0's into out. Calls are numbered per process, so each communicator has
 * its own key as long as every rank creates its communicators in the same order.
 * ZCOLL_ERR_TIMEOUT after `timeout` seconds (0: never), ZCOLL_ERR_BOOTSTRAP when the
 * server says no. */
zcoll_status_t zcoll__pmix_share(const char *value, double timeout, char *out, size_t outlen);

#endif
