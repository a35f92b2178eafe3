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
/* A message in flight (lib/p2p) reads or receives through the explicit registration that
 * holds [addr, addr+len) -- remote: one peers may write into (its grant) -- so that
 * zcoll_mem_deregister refuses it until zcoll__mr_unhold. Returns its number (0: none
 * holds the range), its transport registration in *tl, its grant in *grant, and where
 * addr lies in it in *base. By number, not pointer: destroy frees the registrations
 * before the messages. */
uint64_t zcoll__mr_hold(zcoll_comm_t *comm, const void *addr, size_t len, int remote,
                        struct zcoll_tl_mr **tl, const struct zcoll__grant_src **grant,
                        uint64_t *base);
/* Lets go of hold `id` (0, or a registration already freed: nothing). */
void zcoll__mr_unhold(zcoll_comm_t *comm, uint64_t id);
/* local: in a forked child, leave the transport's registrations to the parent. */
void zcoll__mr_release_all(zcoll_comm_t *comm, int local);

#endif
