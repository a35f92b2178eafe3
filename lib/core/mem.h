/* mem.h -- zcoll_mem_alloc's regions: memory this host's ranks can map (mem.c). */
#ifndef ZCOLL_MEM_H
#define ZCOLL_MEM_H

#include "comm.h"
#include "onehost.h"

/* zcoll_mem_alloc and zcoll_mem_free (lib/comm/mem_api.c checks the arguments and
 * reports): len > 0, any pointer. */
zcoll_status_t zcoll__mem_alloc(zcoll_comm_t *comm, size_t len, void **ptr);
zcoll_status_t zcoll__mem_free(zcoll_comm_t *comm, void *ptr);
/* At destroy: every region left is forgotten, not unmapped (zcoll.h). local: in a forked
 * child, where the transport's state is the parent's. */
void zcoll__mem_forget_all(zcoll_comm_t *comm, int local);
/* Where [addr, addr + len) lies for the peers to map: 1 and *place filled if inside a
 * zcoll_mem_alloc region of the shm transport's (registered for them on first use), else 0
 * and *place cleared. */
int zcoll__mem_place(zcoll_comm_t *comm, const void *addr, size_t len,
                     struct zcoll__oh_place *place);

#endif
