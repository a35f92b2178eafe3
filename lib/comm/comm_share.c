/*
 * comm_share.c -- wiring a communicator split from another over the other's transport
 * instances (core/family.h).
 *
 * The parent already knows each rank's host, ran the probes, agreed on the pipeline's
 * geometry and opened and connected its instances: the child takes all of that, joins
 * the family with a channel set of its own (split.c agreed on it), maps its own slots,
 * registers them with the shared instances and swaps receive keys with its peers. A peer
 * the family reaches already keeps its endpoint; one it does not (a child's ring
 * neighbour need not be the parent's) is connected on the same instance.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "core/comm.h"
#include "core/family.h"
#include "core/onehost.h"
#include "transports.h"
#include "wire.h"

/* The child's hosts, renumbered in order of first rank, as the host round numbers them. */
static zcoll_status_t hosts_of(zcoll_comm_t *comm, const zcoll_comm_t *parent, const int *members) {
  int *map = malloc(sizeof(int) * (size_t)parent->nhosts);
  if (!(comm->wiring.host_of = malloc(sizeof(int) * (size_t)comm->size)) || !map) {
    free(map);
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
  }
  for (int h = 0; h < parent->nhosts; h++) map[h] = -1;
  comm->nhosts = 0;
  for (int r = 0; r < comm->size; r++) {
    int h = parent->wiring.host_of[members[r]];
    if (map[h] < 0) map[h] = comm->nhosts++;
    comm->wiring.host_of[r] = map[h];
  }
  free(map);
  return ZCOLL_OK;
}

/* The child's ranks in the instances' numbering, and back. */
static zcoll_status_t engine_ranks(zcoll_comm_t *comm, const zcoll_comm_t *parent,
                                   const int *members) {
  int size = parent->fam->size;
  comm->erank_of = malloc(sizeof(int) * (size_t)comm->size);
  comm->crank_of = malloc(sizeof(int) * (size_t)size);
  if (!comm->erank_of || !comm->crank_of) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
  for (int e = 0; e < size; e++) comm->crank_of[e] = -1;
  for (int r = 0; r < comm->size; r++) {
    int e = parent->erank_of ? parent->erank_of[members[r]] : members[r];
    comm->erank_of[r] = e;
    comm->crank_of[e] = r;
  }
  return ZCOLL_OK;
}

zcoll_status_t zcoll__comm_wire_shared(zcoll_comm_t *comm, const struct zcoll__share *share) {
  const zcoll_comm_t *parent = share->parent;
  int *peers = NULL, *kinds = NULL, npeers = 0;
  zcoll_status_t st = hosts_of(comm, parent, share->members);
  if (st == ZCOLL_OK) st = engine_ranks(comm, parent, share->members);
  /* One instance reaches every member (below): the one-host allreduce if it maps regions. */
  const struct zcoll_tl_ops *ops = zcoll__transports[share->tl_idx].ops;
  comm->onehost_want = comm->size >= 2 && comm->size <= ZCOLL_ONEHOST_MAX_RANKS && ops &&
                       ops->rkey_ptr;
  if (st == ZCOLL_OK) st = zcoll__wire_peers(comm, &peers, &npeers);
  if (st != ZCOLL_OK) goto out;
  /* The parent's instance that reaches this host's ranks, under the family's counts. */
  const struct zcoll__tli *p = NULL;
  for (int k = 0; k < parent->ntlis; k++)
    if (parent->tlis[k].idx == share->tl_idx) p = &parent->tlis[k];
  if (!p) {
    st = zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "split: the parent has no %s instance to share",
                     zcoll__transports[share->tl_idx].name);
    goto out;
  }
  comm->tlis[0] = (struct zcoll__tli){p->ops, p->tl, p->idx, 0, NULL, NULL, p->ftl};
  if (p == parent->reg) comm->reg = &comm->tlis[0];
  comm->ntlis = 1;
  snprintf(comm->wiring.tl_names, sizeof(comm->wiring.tl_names), "%s", p->ops->name);
  char dev[sizeof(comm->wiring.tl_devices)] = "-";
  if (p->ops->device) p->ops->device(p->tl, dev, sizeof(dev));
  snprintf(comm->wiring.tl_devices, sizeof(comm->wiring.tl_devices), "%s", dev);
  comm->slot_bytes = parent->slot_bytes;
  comm->depth = parent->depth;
  /* Whether ranks outnumber cores is the host's matter, not the child's: the parent's
   * count of local ranks. */
  comm->cfg->local_size = parent->cfg->local_size;
  (void)zcoll__wire_oversubscribed(comm);
  zcoll__family_join(parent->fam, comm, share->set, share->gen);
  zcoll_log_debug("split: channel set %d over the parent's %s instance%s", share->set,
                  comm->wiring.tl_names, comm->ntlis > 1 ? "s" : "");
  if ((st = zcoll__wire_tables(comm, npeers, &kinds)) != ZCOLL_OK) goto out;
  /* One instance reaches every member: they are all on this host. */
  for (int i = 0; i < npeers; i++) kinds[i] = comm->tlis[0].idx;
  st = zcoll__wire_channels(comm, peers, npeers, kinds);
out:
  free(peers), free(kinds);
  return st;
}
