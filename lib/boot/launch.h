/*
 * launch.h -- who this process is in its job, and where its rendezvous is: from
 * ZCOLL_RANK/ZCOLL_SIZE (or code) first, then a PMIx server, then a launcher's
 * variables (Open MPI, PMI, Slurm); nothing at all is a job of one, unless torchrun's
 * WORLD_SIZE says there are others: that is an error.
 */
#ifndef ZCOLL_LAUNCH_H
#define ZCOLL_LAUNCH_H

#include "base/config.h"
#include "zcoll.h"

struct zcoll__launch {
  const char *name;  /* "ZCOLL_RANK", "PMIx", "Open MPI", "PMI", "Slurm" or "none" */
  int pmix;          /* rank and size from PMIx: the rendezvous's address and key too */
  int close_root_fd; /* cfg->root_fd is a socket zcoll__launch_rendezvous opened */
  int root_listens;  /* rank 0 listened before any rank started (a unique id) */
};

/* Sets cfg's rank and size (and local rank and size where the launcher says). */
zcoll_status_t zcoll__launch_resolve(zcoll_config_t *cfg, struct zcoll__launch *out);

/* Under PMIx, collective over the job: rank 0 listens on an address the others reach
 * (127.0.0.1 when every rank is on its host) and makes a fresh job key; both go to every
 * rank through PMIx only, into cfg's root (root_fd on rank 0) and job_key, unless they
 * were set explicitly. Does nothing under the other launchers. */
zcoll_status_t zcoll__launch_rendezvous(zcoll_config_t *cfg, struct zcoll__launch *l);

/* A listening socket on hostport (port 0: any free one), its "host:port" in root. */
zcoll_status_t zcoll__listen_at(const char *hostport, char *root, size_t len, int *fd);
/* The same on a free port of 127.0.0.1 (local_only) or of an address ranks on other hosts
 * reach (the first non-loopback interface up; none: an error saying to set ZCOLL_ROOT). */
zcoll_status_t zcoll__listen_reachable(int local_only, char *root, size_t len, int *fd);
/* A fresh secret job key: 64 hex digits (len >= 65) from getrandom. */
zcoll_status_t zcoll__fresh_key(char *out, size_t len);

#endif
