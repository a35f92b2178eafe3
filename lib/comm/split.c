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
        can &= offers[q].local_tl == offers[r].local_tl &&
               comm->wiring.host_of[q] == comm->wiring.host_of[r];
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

/* One split on one rank: what its rounds learn, and everything it holds until the end
 * (split_free). A round reads what the earlier ones left and runs only if they succeeded:
 * every rank runs the same rounds, so the allgathers pair up across the parent. */
struct split {
  zcoll_comm_t *comm;
  int color, key, p;
  struct member *all;   /* round 1: every rank's (color, key) */
  struct order *group;  /* this rank's group in order */
  int *members;         /* its ranks in the parent, in that order */
  int n, me, leader;    /* its size, this rank's rank in it, its leader in the parent */
  struct offer *offers; /* round 2 */
  int *set_of, *tl_of, *gen_of, any_share;
  struct zcoll__share share;
  zcoll_unique_id_t id;     /* round 3: this rank's way to it (an id or a link), */
  zcoll_unique_id_t *ids;   /* and everyone's */
  int pair[2];              /* a member's socket pair, when its group shares */
  zcoll_status_t made;      /* a leader's zcoll__uid_make */
  int32_t *took;            /* round 4: each leader took its members' ends (1), or not (2) */
  int *fds;                 /* a leader's ends taken, then the star of the child's control */
  int pairs;                /* this rank's group runs its control over the pairs */
  zcoll_unique_id_t *again; /* round 5 */
};

static void split_free(struct split *s) {
  for (int k = 0; k < 2; k++)
    if (s->pair[k] >= 0) close(s->pair[k]);
  for (int i = 0; s->fds && i < s->p; i++)
    if (s->fds[i] >= 0) close(s->fds[i]);
  /* the groups' keys */
  if (s->ids) explicit_bzero(s->ids, sizeof(*s->ids) * (size_t)s->p);
  if (s->again) explicit_bzero(s->again, sizeof(*s->again) * (size_t)s->p);
  explicit_bzero(&s->id, sizeof(s->id));
  free(s->all), free(s->group), free(s->members), free(s->offers), free(s->set_of);
  free(s->tl_of), free(s->gen_of), free(s->ids), free(s->took), free(s->fds), free(s->again);
}

static zcoll_status_t split_alloc(struct split *s) {
  size_t p = (size_t)s->p;
  s->all = malloc(sizeof(*s->all) * p);
  s->group = malloc(sizeof(*s->group) * p);
  s->members = malloc(sizeof(*s->members) * p);
  s->offers = malloc(sizeof(*s->offers) * p);
  s->set_of = malloc(sizeof(*s->set_of) * p);
  s->tl_of = malloc(sizeof(*s->tl_of) * p);
  s->gen_of = malloc(sizeof(*s->gen_of) * p);
  s->ids = malloc(sizeof(*s->ids) * p);
  s->took = malloc(sizeof(*s->took) * p);
  s->fds = malloc(sizeof(*s->fds) * p);
  s->again = malloc(sizeof(*s->again) * p);
  for (int r = 0; s->fds && r < s->p; r++) s->fds[r] = -1; /* split_free closes them */
  if (!s->all || !s->group || !s->members || !s->offers || !s->set_of || !s->tl_of || !s->gen_of ||
      !s->ids || !s->took || !s->fds || !s->again)
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "zcoll_comm_split: out of memory");
  return ZCOLL_OK;
}

/* Round 1: every rank's (color, key); this rank's group in order, its rank there, and the
 * group's leader's rank in the parent. A bad color is still this rank's part of the
 * collective: the allgather carries it, and every rank refuses the split alike. */
static zcoll_status_t round_colors(struct split *s) {
  struct member mine = {s->color, s->key};
  zcoll_status_t st = zcoll_allgather(s->comm, &mine, s->all, 2, ZCOLL_INT32);
  if (st != ZCOLL_OK) return st;
  for (int r = 0; r < s->p; r++)
    if (s->all[r].color < 0 && s->all[r].color != ZCOLL_UNDEFINED)
      return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                         "zcoll_comm_split: rank %d passed color %d (a color is >= 0, or "
                         "ZCOLL_UNDEFINED)",
                         r, (int)s->all[r].color);
  for (int r = 0; s->color != ZCOLL_UNDEFINED && r < s->p; r++)
    if (s->all[r].color == s->color) s->group[s->n++] = (struct order){s->all[r].key, r};
  if (s->n) {
    qsort(s->group, (size_t)s->n, sizeof(*s->group), by_key_then_rank);
    for (int i = 0; i < s->n; i++)
      if (s->group[i].rank == s->comm->rank) s->me = i;
    s->leader = s->group[0].rank;
  }
  for (int i = 0; i < s->n; i++) s->members[i] = s->group[i].rank;
  return ZCOLL_OK;
}

/* Round 2: what each can offer; every rank learns which groups share. */
static zcoll_status_t round_offers(struct split *s) {
  zcoll_comm_t *comm = s->comm;
  struct offer mine = {0, zcoll__family_local_tl(comm) + 1, 0, {0}};
  if (comm->fam) mine.free_sets = zcoll__family_free_sets(comm->fam, mine.gen);
  zcoll_status_t st = round_all(comm, &mine, s->offers, sizeof(mine));
  if (st != ZCOLL_OK) return st;
  decide(comm, s->all, s->offers, s->set_of, s->tl_of, s->gen_of);
  for (int r = 0; r < s->p; r++) s->any_share |= s->set_of[r] > 0;
  s->share = (struct zcoll__share){comm,
                                   s->me >= 0 ? s->set_of[comm->rank] : -1,
                                   s->gen_of[comm->rank],
                                   s->tl_of[comm->rank],
                                   s->members,
                                   NULL};
  return ZCOLL_OK;
}

/* Round 3: how to reach the leader. A group that shares needs no rendezvous: each member
 * makes a socket pair and offers one end, which the leader takes (take_fd). The others'
 * leaders open a rendezvous of their own (unique_id.c). Every rank takes part, also after
 * a failed id: the others wait (it is refused after round 5, in made). */
static zcoll_status_t round_ids(struct split *s) {
  if (s->me > 0 && s->share.set > 0 &&
      socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s->pair) == 0) {
    struct link l = {LINK_MAGIC, (int32_t)getpid(), s->pair[1]};
    memcpy(&s->id, &l, sizeof(l));
  } else if (s->me == 0 && s->share.set <= 0) {
    s->made = zcoll__uid_make(s->comm->nhosts == 1, s->comm->cfg->timeout, &s->id);
    if (s->made != ZCOLL_OK) memset(&s->id, 0, sizeof(s->id)); /* the others see it failed */
  }
  return round_all(s->comm, &s->id, s->ids, sizeof(s->id));
}

/* Round 4, if any group shares: whether each such leader took every member's end (1), or
 * not (2); 0 from the others. Then each rank knows whether its group runs its control
 * over the pairs, and lets go of the ends that will not serve. */
static zcoll_status_t round_took(struct split *s) {
  int32_t ok = 0;
  if (s->me == 0 && s->share.set > 0) {
    ok = 1;
    for (int i = 1; i < s->n; i++)
      if ((s->fds[i] = take_fd((const struct link *)(const void *)&s->ids[s->members[i]])) < 0)
        ok = 2;
  }
  zcoll_status_t st = s->any_share ? round_all(s->comm, &ok, s->took, sizeof(ok)) : ZCOLL_OK;
  if (st != ZCOLL_OK) return st;
  s->pairs = s->share.set > 0 && s->me >= 0 && s->took[s->leader] == 1;
  /* taken, or not to be: the leader's end is the leader's */
  if (s->pair[1] >= 0) close(s->pair[1]), s->pair[1] = -1;
  if (!s->pairs) {
    for (int i = 1; i < s->n; i++)
      if (s->fds[i] >= 0) close(s->fds[i]), s->fds[i] = -1;
    if (s->pair[0] >= 0) close(s->pair[0]), s->pair[0] = -1;
  }
  return ZCOLL_OK;
}

/* Round 5, if a leader could not take them (no right to, say): a rendezvous after all, for
 * that group's control; its channels still share the instances. */
static zcoll_status_t round_fallback(struct split *s) {
  int any_fallback = 0;
  for (int r = 0; s->any_share && r < s->p; r++) any_fallback |= s->took[r] == 2;
  if (!any_fallback) return ZCOLL_OK;
  memset(&s->id, 0, sizeof(s->id));
  if (s->me == 0 && s->share.set > 0 && !s->pairs) {
    s->made = zcoll__uid_make(s->comm->nhosts == 1, s->comm->cfg->timeout, &s->id);
    if (s->made != ZCOLL_OK) memset(&s->id, 0, sizeof(s->id));
  }
  zcoll_status_t st = round_all(s->comm, &s->id, s->again, sizeof(s->id));
  if (st == ZCOLL_OK && s->me >= 0 && s->share.set > 0 && !s->pairs)
    s->ids[s->leader] = s->again[s->leader];
  return st;
}

/* The child, on the ranks that have a group: over the pairs, or its leader's rendezvous. */
static zcoll_status_t make_child(struct split *s, int all_peers, zcoll_comm_t **newcomm) {
  static const zcoll_unique_id_t none;
  if (s->made != ZCOLL_OK) return s->made;
  if (s->me < 0) return ZCOLL_OK;
  if (!s->pairs && !memcmp(&s->ids[s->leader], &none, sizeof(none)))
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP,
                       "zcoll_comm_split: rank %d, the leader of color %d, could not open its "
                       "group's rendezvous",
                       s->leader, s->color);
  zcoll_config_t *cfg = NULL;
  zcoll_status_t st = zcoll__config_dup(s->comm->cfg, &cfg);
  if (st != ZCOLL_OK) return st;
  cfg->all_peers = cfg->atomics = all_peers;
  zcoll_log_debug("split: color %d, key %d: rank %d of %d (leader: parent rank %d)%s", s->color,
                  s->key, s->me, s->n, s->leader,
                  s->pairs           ? ", over the parent's instances and no rendezvous"
                  : s->share.set > 0 ? ", over the parent's instances"
                                     : "");
  if (!s->pairs)
    return zcoll__comm_init_uid(newcomm, &s->ids[s->leader], s->me, s->n, cfg,
                                s->share.set > 0 ? &s->share : NULL);
  /* the leader's fds[1..n), a member's fds[0]: the star of its control */
  if (s->me > 0) s->fds[0] = s->pair[0], s->pair[0] = -1;
  s->share.bs_fds = s->fds;
  st = init_over_pairs(newcomm, s->me, s->n, cfg, &s->share, s->leader);
  for (int i = 0; i < s->p; i++) s->fds[i] = -1; /* the bootstrap's now, on every path */
  return st;
}

zcoll_status_t zcoll__comm_split(zcoll_comm_t *comm, int color, int key, int all_peers,
                                 zcoll_comm_t **newcomm) {
  if (newcomm) *newcomm = NULL;
  if (!comm || !newcomm)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_comm_split: %s is NULL",
                       comm ? "newcomm" : "comm");
  struct split s = {.comm = comm, .color = color, .key = key, .p = comm->size};
  s.me = s.leader = -1;
  s.pair[0] = s.pair[1] = -1;
  s.share.set = -1;
  zcoll_status_t st = split_alloc(&s);
  if (st == ZCOLL_OK) st = round_colors(&s);
  if (st == ZCOLL_OK) st = round_offers(&s);
  if (st == ZCOLL_OK) st = round_ids(&s);
  if (st == ZCOLL_OK) st = round_took(&s);
  if (st == ZCOLL_OK) st = round_fallback(&s);
  if (st == ZCOLL_OK) st = make_child(&s, all_peers, newcomm);
  split_free(&s);
  return st;
}

zcoll_status_t zcoll_comm_split(zcoll_comm_t *comm, int color, int key, zcoll_comm_t **newcomm) {
  return zcoll__comm_split(comm, color, key, 0, newcomm);
}
