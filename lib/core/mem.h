/* mem.h -- zcoll_mem_alloc's regions: memory this host's ranks can map (mem.c). */
#ifndef ZCOLL_MEM_H
#define ZCOLL_MEM_H

#include "comm.h"

/* At destroy: every region left is forgotten, not unmapped (zcoll.h). local: in a forked
 * child, where the transport's state is the parent's. */
void zcoll__mem_forget_all(zcoll_comm_t *comm, int local);

#endif
