/*
 * split.c -- zcoll_comm_split: communicators of the ranks that pass the same color,
 * ordered by key, then by rank in the parent (MPI_Comm_split).
 *
 * Collective over the parent: an allgather of every rank's (color, key) -- a collective of
 * the parent like any other, numbered and checked -- tells each rank its group, its rank
 * in it and its group's leader (rank 0 there); the leaders make a unique id each
 * (unique_id.c: a rendezvous of their own, on 127.0.0.1 when the parent is on one host),
 * a second allgather hands every rank its leader's, and each group forms from it as a
 * job of its own. So a child is a communicator like any other: its own sequence numbers,
 * fingerprints, selector, failure news (relayed by its own rank 0) and lifetime -- the
 * parent may be destroyed first, and parent and children used from different threads at
 * once. Where the parent's transport instances allow it (core/family.h: every member's
 * instances report a lost peer without breaking), the child runs its channels over them,
 * on a channel set of its own, instead of opening and connecting instances of its own
 * (comm_share.c). What it does not do yet: do without a rendezvous of its own for its
 * control plane (failure news, the final barrier, the task interface's ordering).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/log.h"
#include "core/comm.h"
#include "init.h"
#include "wire.h"

struct member {
  int32_t color, key;
};

struct order {
  int key, rank;
};

/* What a rank can offer its group's communicator: whether its parent's transport instances
 * may be shared (core/family.h), and the channel sets free in its family. */
struct offer {
  uint64_t free_sets;
  int32_t can_share, pad;
};

static int by_key_then_rank(const void *a, const void *b) {
  const struct order *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->rank < y->rank ? -1 : x->rank > y->rank;
}

zcoll_status_t zcoll_comm_split(zcoll_comm_t *comm, int color, int key, zcoll_comm_t **newcomm) {
  if (newcomm) *newcomm = NULL;
  if (!comm || !newcomm)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_comm_split: %s is NULL",
                       comm ? "newcomm" : "comm");
  /* A bad color is still this rank's part of the collective: the allgather carries it,
   * and every rank refuses the split alike. */
  int p = comm->size;
  struct member mine = {color, key}, *all = malloc(sizeof(*all) * (size_t)p);
  struct order *group = malloc(sizeof(*group) * (size_t)p);
  zcoll_unique_id_t *ids = malloc(sizeof(*ids) * (size_t)p);
  struct offer *offers = malloc(sizeof(*offers) * (size_t)p);
  int *members = malloc(sizeof(int) * (size_t)p);
  if (!all || !group || !ids || !offers || !members) {
    free(all), free(group), free(ids), free(offers), free(members);
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "zcoll_comm_split: out of memory");
  }
  zcoll_status_t st = zcoll_allgather(comm, &mine, all, 2, ZCOLL_INT32);
  int bad = -1;
  for (int r = 0; st == ZCOLL_OK && r < p && bad < 0; r++)
    if (all[r].color < 0 && all[r].color != ZCOLL_UNDEFINED) bad = r;
  if (st == ZCOLL_OK && bad >= 0)
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                     "zcoll_comm_split: rank %d passed color %d (a color is >= 0, or "
                     "ZCOLL_UNDEFINED)",
                     bad, (int)all[bad].color);
  /* This rank's group in order; its rank there; the group's leader's rank in the parent. */
  int n = 0, me = -1, leader = -1;
  for (int r = 0; st == ZCOLL_OK && color != ZCOLL_UNDEFINED && r < p; r++)
    if (all[r].color == color) group[n++] = (struct order){all[r].key, r};
  if (n) {
    qsort(group, (size_t)n, sizeof(*group), by_key_then_rank);
    for (int i = 0; i < n; i++)
      if (group[i].rank == comm->rank) me = i;
    leader = group[0].rank;
  }
  zcoll_unique_id_t id;
  memset(&id, 0, sizeof(id));
  zcoll_status_t made = ZCOLL_OK;
  if (st == ZCOLL_OK && me == 0) { /* a leader: its group's rendezvous */
    made = zcoll__uid_make(comm->nhosts == 1, comm->cfg->timeout, &id);
    if (made != ZCOLL_OK) memset(&id, 0, sizeof(id)); /* the others see it failed */
  }
  /* Every rank takes part, also after a bad color or a failed id: the others wait. */
  struct offer mine_offer = {0, 0, 0};
  if (comm->fam) {
    mine_offer.free_sets = zcoll__family_free_sets(comm->fam);
    mine_offer.can_share = zcoll__family_can_share(comm);
  }
  if (st == ZCOLL_OK)
    st = zcoll_allgather(comm, &mine_offer, offers, sizeof(mine_offer), ZCOLL_UINT8);
  if (st == ZCOLL_OK) st = zcoll_allgather(comm, &id, ids, sizeof(id), ZCOLL_UINT8);
  /* The group shares its members' instances if every member can, on a set free in every
   * member's family (each decides alike from the same offers). */
  struct zcoll__share share = {comm, -1, members};
  uint64_t common = ~0ull;
  int can = n > 0;
  for (int i = 0; st == ZCOLL_OK && i < n; i++) {
    members[i] = group[i].rank;
    common &= offers[group[i].rank].free_sets;
    can &= offers[group[i].rank].can_share != 0;
  }
  if (can && common) share.set = __builtin_ctzll(common);
  if (st == ZCOLL_OK && made != ZCOLL_OK) st = made;
  static const zcoll_unique_id_t none;
  if (st == ZCOLL_OK && me >= 0 && !memcmp(&ids[leader], &none, sizeof(none)))
    st = zcoll__fail(ZCOLL_ERR_BOOTSTRAP,
                     "zcoll_comm_split: rank %d, the leader of color %d, could not open its "
                     "group's rendezvous",
                     leader, color);
  zcoll_config_t *cfg = NULL;
  if (st == ZCOLL_OK && me >= 0 && (st = zcoll__config_dup(comm->cfg, &cfg)) == ZCOLL_OK) {
    zcoll_log_debug("split: color %d, key %d: rank %d of %d (leader: parent rank %d)", color, key,
                    me, n, leader);
    st = zcoll__comm_init_uid(newcomm, &ids[leader], me, n, cfg, share.set > 0 ? &share : NULL);
  }
  explicit_bzero(ids, sizeof(*ids) * (size_t)p); /* the groups' keys */
  explicit_bzero(&id, sizeof(id));
  free(all), free(group), free(ids), free(offers), free(members);
  return st;
}
