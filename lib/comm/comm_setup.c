/*
 * comm_setup.c -- wiring a new communicator: which transport reaches each peer, and a
 * channel per peer over it.
 *
 * After the host rounds (comm_hosts.c) every rank knows every rank's host and what each
 * can run, and decides each pair's transport with the same rule as the other end
 * (zcoll__transport_pick), so both agree without asking each other. One more round gets
 * each rank its peers' addresses and receive keys (comm_addr.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/comm.h"
#include "base/log.h"
#include "transports.h"
#include "base/node.h"
#include "wire.h"
#include "core/exec.h"
#include "core/onehost.h"

#define MAX_PEERS_PER_ALGO 256

/* The union of every algorithm's peers: the channels this rank needs. */
zcoll_status_t zcoll__wire_peers(zcoll_comm_t *comm, int **out, int *n) {
  int *peers = malloc(sizeof(int) * (size_t)comm->size);
  int *tmp = malloc(sizeof(int) * MAX_PEERS_PER_ALGO);
  char *seen = calloc((size_t)comm->size, 1);
  if (!peers || !tmp || !seen) {
    free(peers), free(tmp), free(seen);
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory computing peers");
  }
  int k = 0;
  /* A channel to every peer where zcoll__wires_all_peers (core/comm.h): alltoall's pairwise
   * exchange and the direct gather and scatter (algorithms/exchange.c) reach every peer, as
   * the one-host allreduce reads every peer's mailbox. Else the algorithms' peers below. */
  int all = zcoll__wires_all_peers(comm);
  for (int r = 0; all && r < comm->size; r++)
    if (r != comm->rank) seen[r] = 1, peers[k++] = r;
  for (int a = 0; a < zcoll__nalgos + zcoll__nbcast_algos; a++) {
    const struct zcoll__algo *al = a < zcoll__nalgos ? zcoll__algos[a]
                                                     : zcoll__bcast_algos[a - zcoll__nalgos];
    int m = al->peers(comm->rank, comm->size, &comm->plan.algo_params, tmp, MAX_PEERS_PER_ALGO);
    for (int i = 0; i < m; i++)
      if (tmp[i] != comm->rank && !seen[tmp[i]]) {
        seen[tmp[i]] = 1;
        peers[k++] = tmp[i];
      }
  }
  free(tmp);
  free(seen);
  *out = peers;
  *n = k;
  return ZCOLL_OK;
}

/* ---- transports ---------------------------------------------------------------- */

static void mask_names(unsigned mask, char *buf, size_t len) {
  size_t off = 0;
  buf[0] = '\0';
  for (int i = 0; i < zcoll__ntransports && off < len; i++)
    if (mask >> i & 1u)
      off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "," : "",
                              zcoll__transports[i].name);
  if (!off) snprintf(buf, len, "none");
}

/* The transport of each peer (kinds[i] for peers[i]), from what each rank can run. */
static zcoll_status_t choose(zcoll_comm_t *comm, const int *peers, int npeers,
                             const unsigned *masks, int *kinds) {
  const zcoll_config_t *cfg = comm->cfg;
  int me = comm->rank;
  if (cfg->transport != ZCOLL_TL_AUTO &&
      (zcoll__transports[cfg->transport].flags & ZCOLL_TLE_ONE_HOST) && comm->nhosts > 1)
    return zcoll__fail(ZCOLL_ERR_UNSUPPORTED,
                       "ZCOLL_TRANSPORT=%s needs every rank on one host (and in one PID "
                       "namespace); this job spans %d",
                       zcoll__transports[cfg->transport].name, comm->nhosts);
  for (int i = 0; i < npeers; i++) {
    int q = peers[i], same = comm->wiring.host_of[q] == comm->wiring.host_of[me];
    kinds[i] = zcoll__transport_pick(cfg, same, masks[me], masks[q]);
    if (kinds[i] < 0) {
      char a[96], b[96], why[512] = "";
      mask_names(masks[me], a, sizeof(a));
      mask_names(masks[q], b, sizeof(b));
      if (cfg->transport != ZCOLL_TL_AUTO && !(masks[me] >> cfg->transport & 1u))
        zcoll__transport_probe(cfg, 0, why, sizeof(why)); /* say why it cannot run here */
      return zcoll__fail(ZCOLL_ERR_UNSUPPORTED,
                         "no transport reaches rank %d (%s host) from rank %d: this rank can "
                         "run %s, that one %s%s%s",
                         q, same ? "this" : "another", me, a, b, why[0] ? "; " : "", why);
    }
  }
  return ZCOLL_OK;
}

/* Every rank on this host, every pair reached by a transport that maps the peer's region
 * (shm): the one-host allreduce may run (onehost.h). The masks are every rank's, so every
 * rank answers alike. */
static int onehost_candidate(const zcoll_comm_t *comm, const unsigned *masks) {
  if (comm->nhosts != 1 || comm->size < 2 || comm->size > ZCOLL_ONEHOST_MAX_RANKS) return 0;
  for (int a = 0; a < comm->size; a++)
    for (int b = a + 1; b < comm->size; b++) {
      int k = zcoll__transport_pick(comm->cfg, 1, masks[a], masks[b]);
      if (k < 0 || !zcoll__transports[k].ops || !zcoll__transports[k].ops->rkey_ptr) return 0;
    }
  return 1;
}

/* Does this rank have a peer no host-local transport reaches (so it must probe the
 * network ones)? */
static int needs_net(zcoll_comm_t *comm, const int *peers, int npeers, const unsigned *masks) {
  for (int i = 0; i < npeers; i++)
    if (zcoll__transport_pick(comm->cfg,
                              comm->wiring.host_of[peers[i]] == comm->wiring.host_of[comm->rank],
                              masks[comm->rank], masks[peers[i]]) < 0)
      return 1;
  return 0;
}

static zcoll_status_t job_alive(void *bs) { return zcoll__bootstrap_check(bs); }

/* Opens the instances the channels use (in table order); a rank without peers opens the
 * one it would use with a peer on its own host, as a job of one always has. */
static zcoll_status_t open_transports(zcoll_comm_t *comm, const int *kinds, int npeers,
                                      unsigned mine, int oversubscribed) {
  unsigned used = 0;
  for (int i = 0; i < npeers; i++) used |= 1u << kinds[i];
  char why[512] = "";
  if (!used) {
    unsigned can = mine ? mine : zcoll__transport_probe(comm->cfg, 0, why, sizeof(why));
    if (!can)
      return zcoll__fail(ZCOLL_ERR_UNSUPPORTED, "no usable transport (%s)",
                         why[0] ? why : "none built");
    used = can & -can;
  }
  struct zcoll_tl_params tp = {comm->rank,     comm->size, comm->cfg,
                               oversubscribed, job_alive,  comm->bs};
  size_t off = 0;
  for (int k = 0; k < zcoll__ntransports; k++) {
    if (!(used >> k & 1u)) continue;
    struct zcoll__tli *t = &comm->tlis[comm->ntlis];
    t->ops = zcoll__transports[k].ops;
    t->idx = k;
    zcoll_status_t st = t->ops->open(&tp, &t->tl);
    if (st != ZCOLL_OK) return st;
    comm->ntlis++;
    if (!(t->ops->caps & ZCOLL_TL_CAP_PUT_ANY)) {
      if (comm->reg)
        return zcoll__fail(ZCOLL_ERR_UNSUPPORTED,
                           "transports %s and %s both read only registered memory: a "
                           "communicator supports one such",
                           comm->reg->ops->name, t->ops->name);
      comm->reg = t;
    }
    off += (size_t)snprintf(comm->wiring.tl_names + off, sizeof(comm->wiring.tl_names) - off,
                            "%s%s", off ? "+" : "", t->ops->name);
    char dev[sizeof(comm->wiring.tl_devices)] = "-";
    if (t->ops->device) t->ops->device(t->tl, dev, sizeof(dev));
    size_t doff = strlen(comm->wiring.tl_devices);
    snprintf(comm->wiring.tl_devices + doff, sizeof(comm->wiring.tl_devices) - doff, "%s%s",
             doff ? "+" : "", dev);
  }
  return ZCOLL_OK;
}

/* ---- channels ----------------------------------------------------------------------- */

static void *map_region(size_t len) {
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* Slots start half a page into their region. A slot on a page boundary and a user buffer
 * a few bytes past one (malloc and numpy put large blocks 16 bytes into a page) have
 * addresses that agree in their low 12 bits but for those few bytes: every copy and
 * reduction between them then stalls its loads behind stores they only seem to overlap
 * (4K aliasing; a 1 MiB allreduce at p = 2 took 12 % longer from such buffers). Half a
 * page away from both, neither a malloc'd nor an aligned buffer comes near. */
#define SLOT_SKEW ((size_t)2048)
/* The room before the first slot holds the one-host mailbox (onehost.h). */
_Static_assert(SLOT_SKEW >= ZCOLL_ONEHOST_MAILBOX_BYTES, "the mailbox fits before the slots");

/* One region of receive slots for every peer, whatever its transport: allocated by the
 * instance that must provide it (shm: peers map it) and registered with each. Send
 * staging for the instance that reads only registered memory. */
static zcoll_status_t map_regions(zcoll_comm_t *comm, int npeers) {
  /* Point-to-point's slots follow each peer's collective ones (lib/p2p/p2p.h): fewer of
   * them, as a message is one piece, or a rendezvous streaming through a few. */
  comm->p2p_depth = comm->depth < ZCOLL_P2P_DEPTH_MAX ? comm->depth : ZCOLL_P2P_DEPTH_MAX;
  size_t ring = comm->slot_bytes * (size_t)(comm->depth + comm->p2p_depth);
  comm->region_bytes = SLOT_SKEW + ring * (size_t)(npeers ? npeers : 1);
  struct zcoll__tli *alloc = NULL;
  for (int k = 0; k < comm->ntlis; k++)
    if (comm->tlis[k].ops->mem_alloc) alloc = &comm->tlis[k];
  zcoll_status_t st = ZCOLL_OK;
  int locked = zcoll__tl_lock(comm->fam); /* instances a split shares with its parent's */
  if (alloc) {
    void *p = NULL;
    if ((st = alloc->ops->mem_alloc(alloc->tl, comm->region_bytes, &p)) == ZCOLL_OK)
      comm->recv_region = p;
  } else if (!(comm->recv_region = map_region(comm->region_bytes))) {
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "cannot map %zu bytes of receive slots: %m",
                     comm->region_bytes);
  }
  for (int k = 0; st == ZCOLL_OK && k < comm->ntlis; k++) {
    struct zcoll__tli *t = &comm->tlis[k];
    st = t->ops->mem_reg(t->tl, comm->recv_region, comm->region_bytes, 1, &t->recv_mr);
  }
  if (st == ZCOLL_OK && comm->reg) {
    if (!(comm->send_region = map_region(comm->region_bytes)))
      st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "cannot map %zu bytes of send staging: %m",
                       comm->region_bytes);
    else
      st = comm->reg->ops->mem_reg(comm->reg->tl, comm->send_region, comm->region_bytes, 0,
                                   &comm->reg->send_mr);
  }
  zcoll__tl_unlock(comm->fam, locked);
  return st;
}

/* The point-to-point channel beside collective channel c (channel.h: sets in pairs): the
 * same peer, endpoint and key, its slots after c's (cring bytes of them) at both ends. */
static zcoll_status_t p2p_channel(zcoll_comm_t *comm, const struct zcoll__chan *c,
                                  struct zcoll__chan *m, size_t cring) {
  *m = (struct zcoll__chan){.peer = c->peer,
                            .t = c->t,
                            .ops = c->ops,
                            .staged = c->staged,
                            .same_host = c->same_host,
                            .ep = c->ep,
                            .rkey = c->rkey};
  m->imm_set = (uint32_t)ZCOLL_CHAN_P2P_SET(comm->set) << ZCOLL_IMM_SET_SHIFT;
  m->imm_gen = c->imm_gen;
  m->roff = c->roff + cring;
  m->credits = (uint32_t)comm->p2p_depth;
  m->recv = c->recv + cring;
  size_t pring = comm->slot_bytes * (size_t)comm->p2p_depth;
  /* A piece is built whole (header, payload) before it is put: in the registered staging
   * where the transport reads only that, else in memory of its own. */
  m->stage = c->staged ? c->stage + cring : malloc(pring);
  m->slots = calloc((size_t)comm->p2p_depth, sizeof(*m->slots));
  m->inflight = calloc((size_t)comm->p2p_depth, sizeof(*m->inflight));
  if (!m->stage || !m->slots || !m->inflight)
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
  return ZCOLL_OK;
}

/* Connects each instance to its peers and fills the channels. */
static zcoll_status_t connect_channels(zcoll_comm_t *comm, const int *peers, int npeers,
                                       const int *kinds, const uint32_t *pos, const char **blob,
                                       const uint32_t *blen) {
  size_t cring = comm->slot_bytes * (size_t)comm->depth;
  size_t ring = comm->slot_bytes * (size_t)(comm->depth + comm->p2p_depth); /* map_regions' */
  size_t n1 = (size_t)(npeers ? npeers : 1);
  const void **addr_ptrs = calloc(n1, sizeof(void *));
  size_t *addr_lens = calloc(n1, sizeof(size_t));
  int *ranks = calloc(n1, sizeof(int)), *at = calloc(n1, sizeof(int));
  struct zcoll_ep **eps = calloc(n1, sizeof(struct zcoll_ep *));
  zcoll_status_t st = ZCOLL_OK;
  if (!addr_ptrs || !addr_lens || !ranks || !at || !eps) {
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
    goto out;
  }
  /* Before any connect: a peer that does not list us has no part of its address for us. */
  for (int i = 0; i < npeers; i++)
    if (pos[i] == UINT32_MAX) {
      st = zcoll__fail(ZCOLL_ERR_BOOTSTRAP,
                       "rank %d does not count rank %d among its peers (different ZCOLL_* "
                       "settings across ranks?)",
                       peers[i], comm->rank);
      goto out;
    }
  for (int k = 0; k < comm->ntlis; k++) {
    struct zcoll__tli *t = &comm->tlis[k];
    int n = 0;
    t->nchans = 0;
    for (int i = 0; i < npeers; i++) {
      if (kinds[i] != t->idx) continue;
      t->nchans++;
      /* The instance's numbering is the family's (family.h); a peer it already reaches
       * (the parent's, or a sibling's) keeps its endpoint. */
      int e = comm->erank_of ? comm->erank_of[peers[i]] : peers[i];
      if (t->ftl && t->ftl->ep_of[e]) {
        comm->chans[i].ep = t->ftl->ep_of[e];
        continue;
      }
      const char *key;
      size_t klen;
      st = zcoll__wire_find_entry(blob[i], blen[i], peers[i], t->idx, (const char **)&addr_ptrs[n],
                                  &addr_lens[n], &key, &klen);
      if (st != ZCOLL_OK) goto out;
      ranks[n] = e;
      at[n++] = i;
    }
    if (!n) continue;
    int locked = zcoll__tl_lock(comm->fam);
    st = t->ops->connect(t->tl, n, ranks, addr_ptrs, addr_lens, eps);
    for (int m = 0; st == ZCOLL_OK && m < n; m++) {
      comm->chans[at[m]].ep = eps[m];
      if (t->ftl) t->ftl->ep_of[ranks[m]] = eps[m];
    }
    zcoll__tl_unlock(comm->fam, locked);
    if (st != ZCOLL_OK) goto out;
  }
  for (int i = 0; i < npeers; i++) {
    struct zcoll__chan *c = &comm->chans[i];
    int q = peers[i];
    for (int k = 0; k < comm->ntlis; k++)
      if (comm->tlis[k].idx == kinds[i]) c->t = &comm->tlis[k];
    c->ops = c->t->ops;
    c->staged = c->t == comm->reg;
    c->same_host = comm->wiring.host_of[q] == comm->wiring.host_of[comm->rank];
    c->peer = q;
    c->imm_set = (uint32_t)comm->set << ZCOLL_IMM_SET_SHIFT;
    c->imm_gen = (uint32_t)comm->set_gen << ZCOLL_IMM_GEN_SHIFT;
    c->roff = SLOT_SKEW + (uint64_t)pos[i] * ring;
    c->credits = (uint32_t)comm->depth;
    c->recv = comm->recv_region + SLOT_SKEW + (size_t)i * ring;
    if (c->staged) c->stage = comm->send_region + SLOT_SKEW + (size_t)i * ring;
    c->slots = calloc((size_t)comm->depth, sizeof(*c->slots));
    c->inflight = calloc((size_t)comm->depth, sizeof(*c->inflight));
    if (!c->staged)
      c->small = malloc((size_t)comm->depth * (ZCOLL_CHAN_HDR_BYTES + ZCOLL_CHAN_MERGE_MAX));
    if (!c->slots || !c->inflight || (!c->staged && !c->small)) {
      st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
      goto out;
    }
    const char *addr, *key;
    size_t alen, klen;
    if ((st = zcoll__wire_find_entry(blob[i], blen[i], q, kinds[i], &addr, &alen, &key, &klen)) !=
            ZCOLL_OK ||
        (st = c->ops->rkey_unpack(c->ep, key, klen, &c->rkey)) != ZCOLL_OK)
      goto out;
    if ((st = p2p_channel(comm, c, &comm->p2p_chans[i], cring)) != ZCOLL_OK) goto out;
    comm->chan_of[q] = i;
  }
out:
  free(addr_ptrs), free(addr_lens), free(ranks), free(at), free(eps);
  return st;
}

/* Oversubscribed ranks must not spin: the rank that has work needs the core. How many
 * ranks share this host: the launcher's word, else the count of round A. */
int zcoll__wire_oversubscribed(zcoll_comm_t *comm) {
  zcoll_config_t *cfg = comm->cfg;
  if (cfg->local_size <= 0) {
    cfg->local_size = 0;
    for (int r = 0; r < comm->size; r++)
      cfg->local_size += comm->wiring.host_of[r] == comm->wiring.host_of[comm->rank];
  }
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int over = cores > 0 && cfg->local_size > cores;
  comm->spin_adapts = !zcoll__config_explicit(cfg, "SPIN_US");
  if (over && comm->spin_adapts) {
    zcoll_log_info("%d local ranks on %ld cores: not spinning while waiting", cfg->local_size,
                   cores);
    cfg->spin_us = 0;
  }
  return over;
}

/* After the channels: whether a waiting rank may sleep, and the placement hooks. */
static void finish_wiring(zcoll_comm_t *comm) {
  comm->can_block = 1;
  for (int k = 0; k < comm->ntlis; k++)
    comm->can_block &= comm->tlis[k].ops->event_fd(comm->tlis[k].tl) >= 0;
  for (int k = 0; k < comm->ntlis; k++)
    if (comm->tlis[k].ops->set_placement)
      comm->tlis[k].ops->set_placement(comm->tlis[k].tl, zcoll__place, comm);
}

zcoll_status_t zcoll__wire_tables(zcoll_comm_t *comm, int npeers, int **kinds) {
  size_t n1 = (size_t)(npeers ? npeers : 1);
  *kinds = malloc(sizeof(int) * n1);
  comm->chans = calloc(n1, sizeof(*comm->chans));
  comm->p2p_chans = calloc(n1, sizeof(*comm->p2p_chans));
  comm->chan_of = malloc(sizeof(int) * (size_t)comm->size);
  if (!*kinds || !comm->chans || !comm->p2p_chans || !comm->chan_of)
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
  for (int r = 0; r < comm->size; r++) comm->chan_of[r] = -1;
  return ZCOLL_OK;
}

zcoll_status_t zcoll__wire_channels(zcoll_comm_t *comm, const int *peers, int npeers,
                                    const int *kinds) {
  size_t n1 = (size_t)(npeers ? npeers : 1);
  uint32_t *pos = malloc(sizeof(uint32_t) * n1), *blen = malloc(sizeof(uint32_t) * n1);
  const char **blob = malloc(sizeof(char *) * n1);
  void *reply = NULL;
  zcoll_status_t st = pos && blen && blob ? map_regions(comm, npeers)
                                          : zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
  if (st == ZCOLL_OK)
    st = zcoll__wire_addresses(comm, peers, npeers, kinds, pos, blob, blen, &reply);
  if (st == ZCOLL_OK) {
    comm->nchans = npeers;
    finish_wiring(comm);
    st = connect_channels(comm, peers, npeers, kinds, pos, blob, blen);
  }
  if (st == ZCOLL_OK) st = zcoll__onehost_setup(comm);
  free(pos), free(blen), free(blob), free(reply);
  return st;
}

zcoll_status_t zcoll__comm_wire(zcoll_comm_t *comm) {
  int *peers = NULL, *kinds = NULL, npeers = 0, net_round = 0;
  unsigned *masks = malloc(sizeof(unsigned) * (size_t)comm->size);
  uint64_t chunk = 0;
  uint32_t depth = 0;
  zcoll_status_t st = masks ? zcoll__wire_hosts(comm, masks, &chunk, &depth, &net_round)
                            : zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
  if (st != ZCOLL_OK) goto out;
  if (comm->nhosts > 1)
    zcoll_log_info("%d ranks on %d hosts; this one is host %d", comm->size, comm->nhosts,
                   comm->wiring.host_of[comm->rank]);
  comm->onehost_want = onehost_candidate(comm, masks);
  if ((st = zcoll__wire_peers(comm, &peers, &npeers)) != ZCOLL_OK) goto out;
  if (net_round && (st = zcoll__wire_nets(comm, masks, needs_net(comm, peers, npeers, masks),
                                          &chunk, &depth)) != ZCOLL_OK)
    goto out;
  if ((st = zcoll__wire_tables(comm, npeers, &kinds)) != ZCOLL_OK) goto out;
  if ((st = choose(comm, peers, npeers, masks, kinds)) != ZCOLL_OK) goto out;
  if ((st = open_transports(comm, kinds, npeers, masks[comm->rank],
                            zcoll__wire_oversubscribed(comm))) != ZCOLL_OK)
    goto out;
  /* Rank 0's pipeline geometry is everybody's: both ends of a channel must cut pieces and
   * slots alike. */
  if ((comm->cfg->chunk_bytes && chunk != comm->cfg->chunk_bytes) ||
      depth != (uint32_t)comm->cfg->pipeline_depth)
    zcoll_log_info("using rank 0's chunk of %llu bytes and depth %u", (unsigned long long)chunk,
                   depth);
  comm->slot_bytes = (size_t)chunk;
  comm->depth = (int)depth;
  st = zcoll__wire_channels(comm, peers, npeers, kinds);
out:
  free(peers), free(kinds), free(masks);
  return st;
}
