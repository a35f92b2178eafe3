/*
 * mr.h -- the user's explicit registrations (mr.c), as the executor finds them.
 */
#ifndef ZCOLL_MR_H
#define ZCOLL_MR_H

#include <stddef.h>
#include <stdint.h>

#include "comm.h"

/* The transport registration covering [addr, addr+len), or NULL (mr.c). */
struct zcoll_tl_mr *zcoll__mr_find(zcoll_comm_t *comm, const void *addr, size_t len);
/* The region of an explicit registration that peers may write results into and that
 * holds [addr, addr+len) -- *base: where addr lies in it -- or NULL (mr.c). */
struct zcoll__grant_src;
struct zcoll__grant_src *zcoll__mr_grant(zcoll_comm_t *comm, const void *addr, size_t len,
                                         uint64_t *base);
/* local: in a forked child, leave the transport's registrations to the parent. */
void zcoll__mr_release_all(zcoll_comm_t *comm, int local);

#endif
