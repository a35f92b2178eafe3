/*
 * node.h -- which host (and PID namespace) this process runs on: ranks with the same
 * node id can share memory through /proc, so ZCOLL_TRANSPORT=auto picks the
 * shared-memory transport when every rank has the same one.
 */
#ifndef ZCOLL_NODE_H
#define ZCOLL_NODE_H

#include <stddef.h>

/* The kernel's boot id, the PID namespace and the effective user, as text. ZCOLL_TEST_SPLIT_NODES=1 adds
 * the rank, so that tests can play a job whose every rank is on its own host. */
void zcoll__node_id(char *buf, size_t len, int rank);

#endif
