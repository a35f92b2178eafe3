/*
 * init.h -- creating a communicator (comm.c), for the ways in beyond zcoll_comm_init:
 * a unique id (unique_id.c).
 */
#ifndef ZCOLL_COMM_INIT_H
#define ZCOLL_COMM_INIT_H

#include "base/config.h"
#include "boot/launch.h"
#include "zcoll.h"

/* Creates a communicator from cfg, which it takes (freed on every path). given: who this
 * process is and where its rendezvous is, already decided (cfg's rank, size, root,
 * root_fd and job_key say it); NULL: from the launcher (zcoll__launch_resolve). */
struct zcoll__share;
zcoll_status_t zcoll__comm_init(zcoll_comm_t **out, zcoll_config_t *cfg,
                                const struct zcoll__launch *given,
                                const struct zcoll__share *share);

/* A unique id (unique_id.c) for a communicator made inside the library (a split): on
 * 127.0.0.1 (local_only) or this host's address others reach; expiring after timeout s. */
zcoll_status_t zcoll__uid_make(int local_only, double timeout, zcoll_unique_id_t *id);
/* zcoll_comm_init_rank's body, with cfg taken (freed on every path); share: a split's
 * child that runs over its parent's transport instances (wire.h), or NULL. */
zcoll_status_t zcoll__comm_init_uid(zcoll_comm_t **out, const zcoll_unique_id_t *id, int rank,
                                    int size, zcoll_config_t *cfg,
                                    const struct zcoll__share *share);

/* zcoll_comm_split's body; all_peers: the child gets a channel to every rank, not only
 * those its algorithms need (a partial allreduce's rounds may pair any two), and its
 * transports remote atomics (cfg->atomics). */
zcoll_status_t zcoll__comm_split(zcoll_comm_t *comm, int color, int key, int all_peers,
                                 zcoll_comm_t **newcomm);

#endif
