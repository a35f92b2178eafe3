/*
 * fsize.h -- the largest file this process may make (RLIMIT_FSIZE, `ulimit -f`, which
 * batch systems pass on to every rank).
 *
 * Growing a file past the limit, by ftruncate() or write(), raises SIGXFSZ, whose default
 * action kills the process; a library may not change that disposition. So whatever makes
 * a file -- the shm transport's memfds, UCX's shared-memory segments -- checks its size
 * here first and fails init with a status instead.
 */
#ifndef ZCOLL_FSIZE_H
#define ZCOLL_FSIZE_H

#include <stdint.h>

#include "zcoll.h"

/* The soft RLIMIT_FSIZE in bytes; UINT64_MAX when there is none. */
uint64_t zcoll__fsize_limit(void);

/* ZCOLL_OK if files of `bytes` bytes are within the limit. Else ZCOLL_ERR_NO_MEMORY and a
 * message "<who> needs files of up to <bytes> bytes, but RLIMIT_FSIZE ... <hint>", saying
 * how far to raise the limit; who names the maker ("the shm transport (its inbox)"). */
zcoll_status_t zcoll__fsize_check(uint64_t bytes, const char *who, const char *hint);

#endif
