/*
 * node.h -- which host (and PID namespace) this process runs on: ranks with the same
 * node id can share memory through /proc, so ZCOLL_TRANSPORT=auto picks the
 * shared-memory transport when every rank has the same one.
 */
#ifndef ZCOLL_NODE_H
#define ZCOLL_NODE_H

#include <stddef.h>

/* The kernel's boot id, the PID namespace and the effective user, as text.
 * ZCOLL_TEST_SPLIT_NODES lets tests play a job over several hosts: =1 gives every rank a
 * host of its own, =2,3,1 puts ranks 0-1, 2-4 and 5 on three hosts. */
void zcoll__node_id(char *buf, size_t len, int rank);

/* The first line of a small file (a /proc or /sys setting) without its newline, into buf;
 * "" if it cannot be read. */
void zcoll__read_line(const char *path, char *buf, size_t len);

#endif
