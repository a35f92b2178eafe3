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
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

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

/* What a rank can offer its group's communicator: the instance of its parent's family it
 * may share with the ranks of its host (core/family.h: its transport's index + 1, 0 for
 * none), and the channel sets free in its family. */
struct offer {
  uint64_t free_sets;
  int32_t local_tl, pad;
  uint16_t gen[ZCOLL_CHAN_SETS]; /* each set's latest generation in its family (channel.h) */
};

static int by_key_then_rank(const void *a, const void *b) {
  const struct order *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* A member's end of its pair, for its leader to take (split over shared instances). */
#define LINK_MAGIC 0x7a73706cu /* "zspl" */
struct link {
  uint32_t magic;
  int32_t pid, fd;
};

/* The descriptor fd of process pid, as a descriptor of ours: a unix stream socket, or -1.
 * pidfd_getfd needs the ptrace attach right over pid (same user; Yama may refuse it). */
static int take_fd(const struct link *l) {
  int fd = -1;
  if (l->magic != LINK_MAGIC || l->pid <= 0 || l->fd < 0) return -1;
  if (l->pid == getpid()) { /* ranks that are threads of one process */
    fd = fcntl(l->fd, F_DUPFD_CLOEXEC, 0);
  } else {
    int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)l->pid, 0);
    if (pidfd >= 0) fd = (int)syscall(SYS_pidfd_getfd, pidfd, l->fd, 0);
    if (pidfd >= 0) close(pidfd);
  }
  struct stat sb;
  int domain = 0, type = 0;
  socklen_t dl = sizeof(domain), tl = sizeof(type);
  if (fd >= 0 && (fstat(fd, &sb) != 0 || !S_ISSOCK(sb.st_mode) ||
                  getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &dl) != 0 || domain != AF_UNIX ||
                  getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_STREAM)) {
    close(fd);
    fd = -1;
  }
  return fd;
}

/* Which set each rank's group shares its instances on (-1: it does not), decided alike on
 * every rank from the same colors, hosts and offers: the members are all on one host, each
 * has the same kind of shareable instance, and a set is free in every member's family (the
 * lowest such). tl: that instance's kind, by rank; gen: the set's new generation, one past
 * the latest any member had for it. */
static void decide(const zcoll_comm_t *comm, const struct member *all, const struct offer *offers,
                   int *set_of, int *tl, int *gen) {
  int p = comm->size;
  for (int r = 0; r < p; r++) set_of[r] = -2; /* not yet decided */
  for (int r = 0; r < p; r++) {
    if (all[r].color == ZCOLL_UNDEFINED) set_of[r] = -1;
    if (set_of[r] != -2) continue;
    uint64_t common = ~0ull;
    int can = offers[r].local_tl > 0;
    for (int q = r; q < p; q++)
      if (all[q].color == all[r].color) {
        common &= offers[q].free_sets;
        can &= offers[q].local_tl == offers[r].local_tl && comm->host_of[q] == comm->host_of[r];
      }
    int set = can && common ? __builtin_ctzll(common) : -1, g = 0;
    for (int q = r; set > 0 && q < p; q++)
      if (all[q].color == all[r].color && offers[q].gen[set] > g) g = offers[q].gen[set];
    for (int q = r; q < p; q++)
      if (all[q].color == all[r].color) {
        set_of[q] = set;
        tl[q] = offers[r].local_tl - 1;
        gen[q] = (g + 1) & (int)ZCOLL_IMM_GEN_MASK;
      }
  }
}

/* The child of a group that shares its instances and made its control's star of socket
 * pairs: no rendezvous, no listening socket. Its name in the registry of communicators
 * being made (and in messages) tells it from every other group's. */
static zcoll_status_t init_over_pairs(zcoll_comm_t **out, int me, int n, zcoll_config_t *cfg,
                                      const struct zcoll__share *share, int leader) {
  const zcoll_comm_t *parent = share->parent;
  cfg->rank = me;
  cfg->size = n;
  cfg->local_rank = cfg->local_size = -1;
  cfg->root_fd = -1;
  char root[sizeof(cfg->root)];
  snprintf(root, sizeof(root), "split set %d of parent rank %d (pid %ld) of %.100s", share->set,
           leader, (long)getpid(), parent->cfg->root[0] ? parent->cfg->root : "the launcher's");
  memcpy(cfg->root, root, sizeof(root));
  struct zcoll__launch given = {"split", 0, 0, 0};
  return zcoll__comm_init(out, cfg, &given, share);
}

/* One round among all the parent's ranks: each gives len bytes of mine. */
static zcoll_status_t round_all(zcoll_comm_t *comm, const void *mine, void *all, size_t len) {
  return zcoll_allgather(comm, mine, all, len, ZCOLL_UINT8);
}

zcoll_status_t zcoll__comm_split(zcoll_comm_t *comm, int color, int key, int all_peers,
                                 zcoll_comm_t **newcomm) {
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
  int *members = malloc(sizeof(int) * (size_t)p), *set_of = malloc(sizeof(int) * (size_t)p);
  int *tl_of = malloc(sizeof(int) * (size_t)p), *gen_of = malloc(sizeof(int) * (size_t)p);
  int32_t *took = malloc(sizeof(int32_t) * (size_t)p);
  int *fds = malloc(sizeof(int) * (size_t)p);
  if (!all || !group || !ids || !offers || !members || !set_of || !tl_of || !gen_of || !took ||
      !fds) {
    free(all), free(group), free(ids), free(offers), free(members), free(set_of), free(tl_of),
        free(gen_of), free(took), free(fds);
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "zcoll_comm_split: out of memory");
  }
  for (int r = 0; r < p; r++) fds[r] = -1;
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
  for (int i = 0; i < n; i++) members[i] = group[i].rank;
  /* Round 2: what each can offer; every rank learns which groups share. */
  struct offer mine_offer = {0, zcoll__family_local_tl(comm) + 1, 0, {0}};
  if (comm->fam) mine_offer.free_sets = zcoll__family_free_sets(comm->fam, mine_offer.gen);
  if (st == ZCOLL_OK) st = round_all(comm, &mine_offer, offers, sizeof(mine_offer));
  int any_share = 0;
  if (st == ZCOLL_OK) decide(comm, all, offers, set_of, tl_of, gen_of);
  for (int r = 0; st == ZCOLL_OK && r < p; r++) any_share |= set_of[r] > 0;
  struct zcoll__share share = {comm,
                               me >= 0 && st == ZCOLL_OK ? set_of[comm->rank] : -1,
                               st == ZCOLL_OK ? gen_of[comm->rank] : 0,
                               st == ZCOLL_OK ? tl_of[comm->rank] : -1,
                               members,
                               NULL};
  /* Round 3: how to reach the leader. A group that shares needs no rendezvous: each
   * member makes a socket pair and offers one end, which the leader takes (take_fd). The
   * others' leaders open a rendezvous of their own (unique_id.c). */
  zcoll_unique_id_t id;
  memset(&id, 0, sizeof(id));
  int pair[2] = {-1, -1};
  zcoll_status_t made = ZCOLL_OK;
  if (st == ZCOLL_OK && me > 0 && share.set > 0 &&
      socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0) {
    struct link l = {LINK_MAGIC, (int32_t)getpid(), pair[1]};
    memcpy(&id, &l, sizeof(l));
  } else if (st == ZCOLL_OK && me == 0 && share.set <= 0) {
    made = zcoll__uid_make(comm->nhosts == 1, comm->cfg->timeout, &id);
    if (made != ZCOLL_OK) memset(&id, 0, sizeof(id)); /* the others see it failed */
  }
  /* Every rank takes part, also after a failed id: the others wait. */
  if (st == ZCOLL_OK) st = round_all(comm, &id, ids, sizeof(id));
  /* Round 4, if any group shares: whether each such leader took every member's end (1),
   * or not (2); 0 from the others. */
  int32_t ok = 0;
  if (st == ZCOLL_OK && me == 0 && share.set > 0) {
    ok = 1;
    for (int i = 1; i < n; i++)
      if ((fds[i] = take_fd((const struct link *)(const void *)&ids[members[i]])) < 0) ok = 2;
  }
  if (st == ZCOLL_OK && any_share) st = round_all(comm, &ok, took, sizeof(ok));
  /* Round 5, if a leader could not take them (no right to, say): a rendezvous after all,
   * for that group's control; its channels still share the instances. */
  int any_fallback = 0;
  for (int r = 0; st == ZCOLL_OK && any_share && r < p; r++) any_fallback |= took[r] == 2;
  int pairs = share.set > 0 && st == ZCOLL_OK && me >= 0 && took[leader] == 1;
  if (pair[1] >= 0) close(pair[1]); /* taken, or not to be: the leader's end is the leader's */
  if (!pairs) {
    for (int i = 1; i < n; i++)
      if (fds[i] >= 0) close(fds[i]), fds[i] = -1;
    if (pair[0] >= 0) close(pair[0]), pair[0] = -1;
  }
  if (st == ZCOLL_OK && any_fallback) {
    memset(&id, 0, sizeof(id));
    if (me == 0 && share.set > 0 && !pairs) {
      made = zcoll__uid_make(comm->nhosts == 1, comm->cfg->timeout, &id);
      if (made != ZCOLL_OK) memset(&id, 0, sizeof(id));
    }
    zcoll_unique_id_t *again = malloc(sizeof(*again) * (size_t)p);
    st = again ? round_all(comm, &id, again, sizeof(id))
               : zcoll__fail(ZCOLL_ERR_NO_MEMORY, "zcoll_comm_split: out of memory");
    if (st == ZCOLL_OK && me >= 0 && share.set > 0 && !pairs) ids[leader] = again[leader];
    if (again) explicit_bzero(again, sizeof(*again) * (size_t)p);
    free(again);
  }
  if (st == ZCOLL_OK && made != ZCOLL_OK) st = made;
  static const zcoll_unique_id_t none;
  if (st == ZCOLL_OK && me >= 0 && !pairs && !memcmp(&ids[leader], &none, sizeof(none)))
    st = zcoll__fail(ZCOLL_ERR_BOOTSTRAP,
                     "zcoll_comm_split: rank %d, the leader of color %d, could not open its "
                     "group's rendezvous",
                     leader, color);
  zcoll_config_t *cfg = NULL;
  if (st == ZCOLL_OK && me >= 0 && (st = zcoll__config_dup(comm->cfg, &cfg)) == ZCOLL_OK) {
    cfg->all_peers = cfg->atomics = all_peers;
    zcoll_log_debug("split: color %d, key %d: rank %d of %d (leader: parent rank %d)%s", color, key,
                    me, n, leader,
                    pairs           ? ", over the parent's instances and no rendezvous"
                    : share.set > 0 ? ", over the parent's instances"
                                    : "");
    if (pairs) { /* the leader's fds[1..n), a member's fds[0]: the star of its control */
      if (me > 0) fds[0] = pair[0], pair[0] = -1;
      share.bs_fds = fds;
      st = init_over_pairs(newcomm, me, n, cfg, &share, leader);
      for (int i = 0; i < p; i++) fds[i] = -1; /* the bootstrap's now, on every path */
    } else {
      st = zcoll__comm_init_uid(newcomm, &ids[leader], me, n, cfg, share.set > 0 ? &share : NULL);
    }
  }
  if (pair[0] >= 0) close(pair[0]);
  for (int i = 0; i < p; i++)
    if (fds[i] >= 0) close(fds[i]);
  explicit_bzero(ids, sizeof(*ids) * (size_t)p); /* the groups' keys */
  explicit_bzero(&id, sizeof(id));
  free(all), free(group), free(ids), free(offers), free(members), free(set_of), free(tl_of),
      free(gen_of), free(took), free(fds);
  return st;
}

zcoll_status_t zcoll_comm_split(zcoll_comm_t *comm, int color, int key, zcoll_comm_t **newcomm) {
  return zcoll__comm_split(comm, color, key, 0, newcomm);
}
