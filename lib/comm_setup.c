/*
 * comm_setup.c -- wiring a new communicator: which host each rank runs on, which
 * transport reaches each peer, and a channel per peer over it.
 *
 * Three rendezvous rounds, or four:
 *   A. every rank's host (boot id, PID namespace, user: node.h) and the host-local
 *      transports it can run (shm);
 *   B. only when some pair cannot use a host-local one (ranks span hosts, or one cannot
 *      run shm): the network transports each rank can run -- probed only by ranks that
 *      have such a peer, so a one-host job never loads UCX;
 *   then the pipeline geometry, and the transports' addresses and receive-region keys.
 * Every rank decides each pair's transport from the same data with the same rule
 * (zcoll__transport_pick), so both ends of a channel agree without asking each other.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "comm.h"
#include "log.h"
#include "node.h"

#define MAX_PEERS_PER_ALGO 256

/* The union of every algorithm's peers: the channels this rank needs. */
static zcoll_status_t compute_peers(zcoll_comm_t *comm, int **out, int *n) {
  int *peers = malloc(sizeof(int) * (size_t)comm->size);
  int *tmp = malloc(sizeof(int) * MAX_PEERS_PER_ALGO);
  char *seen = calloc((size_t)comm->size, 1);
  if (!peers || !tmp || !seen) {
    free(peers), free(tmp), free(seen);
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory computing peers");
  }
  int k = 0;
  for (int a = 0; a < zcoll__nalgos + zcoll__nbcast_algos; a++) {
    const struct zcoll__algo *al =
        a < zcoll__nalgos ? zcoll__algos[a] : zcoll__bcast_algos[a - zcoll__nalgos];
    int m = al->peers(comm->rank, comm->size, &comm->algo_params, tmp, MAX_PEERS_PER_ALGO);
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

/* Every rank's blob, padded to the longest. */
static zcoll_status_t exchange(zcoll_comm_t *comm, const void *mine, size_t len, char **all,
                               size_t *stride) {
  uint32_t mylen = (uint32_t)len, *lens = malloc(sizeof(uint32_t) * (size_t)comm->size);
  if (!lens) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
  zcoll_status_t st = zcoll__bootstrap_allgather(comm->bs, &mylen, sizeof(mylen), lens);
  size_t max = 0;
  for (int r = 0; st == ZCOLL_OK && r < comm->size; r++)
    if (lens[r] > max) max = lens[r];
  free(lens);
  if (st != ZCOLL_OK) return st;
  char *buf = calloc(1, max ? max : 1), *every = calloc((size_t)comm->size, max ? max : 1);
  if (!buf || !every) {
    free(buf), free(every);
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
  }
  memcpy(buf, mine, len);
  st = zcoll__bootstrap_allgather(comm->bs, buf, max, every);
  free(buf);
  if (st != ZCOLL_OK) {
    free(every);
    return st;
  }
  *all = every;
  *stride = max;
  return ZCOLL_OK;
}

/* ---- hosts and transports ----------------------------------------------------------- */

struct host_rec { /* round A */
  char node[64];
  uint32_t local; /* host-local transports this rank can run */
  uint32_t pad;
};

static uint64_t hash_node(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n && s[i]; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
  return h;
}

/* host_of from the node ids: a host's number is its order of first appearance. Hashed,
 * so that 4096 ranks cost no 8 million comparisons. */
static zcoll_status_t number_hosts(zcoll_comm_t *comm, const struct host_rec *all) {
  size_t cap = 2;
  while (cap < 2 * (size_t)comm->size) cap *= 2;
  int *slot = malloc(sizeof(int) * cap); /* the first rank of each host, by hash */
  comm->host_of = malloc(sizeof(int) * (size_t)comm->size);
  if (!slot || !comm->host_of) {
    free(slot);
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory numbering hosts");
  }
  for (size_t i = 0; i < cap; i++) slot[i] = -1;
  int nhosts = 0;
  for (int r = 0; r < comm->size; r++) {
    size_t i = hash_node(all[r].node, sizeof(all[r].node)) & (cap - 1);
    while (slot[i] >= 0 && memcmp(all[slot[i]].node, all[r].node, sizeof(all[r].node)))
      i = (i + 1) & (cap - 1);
    if (slot[i] < 0) {
      slot[i] = r;
      comm->host_of[r] = nhosts++;
    } else {
      comm->host_of[r] = comm->host_of[slot[i]];
    }
  }
  free(slot);
  comm->nhosts = nhosts;
  comm->algo_params.host_of = comm->host_of;
  comm->algo_params.nhosts = nhosts;
  return ZCOLL_OK;
}

static void mask_names(unsigned mask, char *buf, size_t len) {
  size_t off = 0;
  buf[0] = '\0';
  for (int i = 0; i < zcoll__ntransports && off < len; i++)
    if (mask >> i & 1u)
      off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "," : "",
                              zcoll__transports[i].name);
  if (!off) snprintf(buf, len, "none");
}

/* What each rank can run (masks[r]), from rounds A and B, and the transport of each
 * peer (kinds[i] for peers[i]). */
static zcoll_status_t choose(zcoll_comm_t *comm, const struct host_rec *all, const int *peers,
                             int npeers, unsigned *masks, int *kinds) {
  const zcoll_config_t *cfg = comm->cfg;
  int me = comm->rank;
  unsigned every = ~0u;
  for (int r = 0; r < comm->size; r++) {
    masks[r] = all[r].local;
    every &= all[r].local;
  }
  if (cfg->transport != ZCOLL_TL_AUTO &&
      (zcoll__transports[cfg->transport].flags & ZCOLL_TLE_ONE_HOST) && comm->nhosts > 1)
    return zcoll__fail(ZCOLL_ERR_UNSUPPORTED,
                       "ZCOLL_TRANSPORT=%s needs every rank on one host (and in one PID "
                       "namespace); this job spans %d",
                       zcoll__transports[cfg->transport].name, comm->nhosts);
  if (comm->nhosts > 1 || !every) { /* round B */
    int need = 0;
    for (int i = 0; i < npeers && !need; i++)
      need = zcoll__transport_pick(cfg, comm->host_of[peers[i]] == comm->host_of[me],
                                   masks[me], masks[peers[i]]) < 0;
    char why[512] = "";
    uint32_t net = need ? zcoll__transport_probe(cfg, 0, why, sizeof(why)) & ~masks[me] : 0;
    uint32_t *nets = malloc(sizeof(uint32_t) * (size_t)comm->size);
    if (!nets) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
    zcoll_status_t st = zcoll__bootstrap_allgather(comm->bs, &net, sizeof(net), nets);
    for (int r = 0; st == ZCOLL_OK && r < comm->size; r++) masks[r] |= nets[r];
    free(nets);
    if (st != ZCOLL_OK) return st;
    if (need && !net && why[0]) zcoll_log_info("no network transport here: %s", why);
  }
  for (int i = 0; i < npeers; i++) {
    int q = peers[i], same = comm->host_of[q] == comm->host_of[me];
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
  struct zcoll_tl_params tp = {comm->rank, comm->size, comm->cfg, oversubscribed, job_alive,
                               comm->bs};
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
    off += (size_t)snprintf(comm->tl_names + off, sizeof(comm->tl_names) - off, "%s%s",
                            off ? "+" : "", t->ops->name);
  }
  return ZCOLL_OK;
}

/* ---- channels ----------------------------------------------------------------------- */

struct setup_info { /* what every rank publishes in the geometry round */
  uint64_t chunk;
  uint32_t depth;
  uint32_t npeers;
};

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

/* One region of receive slots for every peer, whatever its transport: allocated by the
 * instance that must provide it (shm: peers map it) and registered with each. Send
 * staging for the instance that reads only registered memory. */
static zcoll_status_t map_regions(zcoll_comm_t *comm, int npeers) {
  size_t ring = comm->slot_bytes * (size_t)comm->depth;
  comm->region_bytes = SLOT_SKEW + ring * (size_t)(npeers ? npeers : 1);
  struct zcoll__tli *alloc = NULL;
  for (int k = 0; k < comm->ntlis; k++)
    if (comm->tlis[k].ops->mem_alloc) alloc = &comm->tlis[k];
  zcoll_status_t st;
  if (alloc) {
    void *p = NULL;
    if ((st = alloc->ops->mem_alloc(alloc->tl, comm->region_bytes, &p)) != ZCOLL_OK) return st;
    comm->recv_region = p;
  } else if (!(comm->recv_region = map_region(comm->region_bytes))) {
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "cannot map %zu bytes of receive slots: %m",
                       comm->region_bytes);
  }
  for (int k = 0; k < comm->ntlis; k++) {
    struct zcoll__tli *t = &comm->tlis[k];
    if ((st = t->ops->mem_reg(t->tl, comm->recv_region, comm->region_bytes, 1, &t->recv_mr)) !=
        ZCOLL_OK)
      return st;
  }
  if (!comm->reg) return ZCOLL_OK;
  if (!(comm->send_region = map_region(comm->region_bytes)))
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "cannot map %zu bytes of send staging: %m",
                       comm->region_bytes);
  return comm->reg->ops->mem_reg(comm->reg->tl, comm->send_region, comm->region_bytes, 0,
                                 &comm->reg->send_mr);
}

/* This rank's addresses and receive keys: how many entries, then one per instance:
 * {index, address length, key length}, the address and the key. */
struct blob_entry {
  uint32_t idx, alen, klen;
};

static zcoll_status_t pack_blob(zcoll_comm_t *comm, char **out, size_t *len) {
  size_t cap = sizeof(uint32_t) + (size_t)comm->ntlis * (sizeof(struct blob_entry) + 4096 + 1024);
  char *b = malloc(cap);
  if (!b) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
  uint32_t n = (uint32_t)comm->ntlis;
  memcpy(b, &n, sizeof(n));
  size_t off = sizeof(n);
  for (int k = 0; k < comm->ntlis; k++) {
    struct zcoll__tli *t = &comm->tlis[k];
    size_t alen = 4096, klen = 1024;
    char *e = b + off + sizeof(struct blob_entry);
    zcoll_status_t st = t->ops->address(t->tl, e, &alen);
    if (st == ZCOLL_OK) st = t->ops->rkey_pack(t->recv_mr, e + alen, &klen);
    if (st != ZCOLL_OK) {
      free(b);
      return st;
    }
    struct blob_entry h = {(uint32_t)t->idx, (uint32_t)alen, (uint32_t)klen};
    memcpy(b + off, &h, sizeof(h));
    off += sizeof(h) + alen + klen;
  }
  *out = b;
  *len = off;
  return ZCOLL_OK;
}

/* Rank q's address and key for transport idx in its blob. */
static zcoll_status_t find_entry(const char *blob, size_t len, int q, int idx, const char **addr,
                                 size_t *alen, const char **key, size_t *klen) {
  uint32_t n = 0;
  if (len >= sizeof(n)) memcpy(&n, blob, sizeof(n));
  size_t off = sizeof(n);
  for (uint32_t k = 0; k < n && off + sizeof(struct blob_entry) <= len; k++) {
    struct blob_entry h;
    memcpy(&h, blob + off, sizeof(h));
    if ((size_t)h.alen + h.klen > len - off - sizeof(h)) break;
    if ((int)h.idx == idx) {
      *addr = blob + off + sizeof(h);
      *alen = h.alen;
      *key = *addr + h.alen;
      *klen = h.klen;
      return ZCOLL_OK;
    }
    off += sizeof(h) + h.alen + h.klen;
  }
  return zcoll__fail(ZCOLL_ERR_BOOTSTRAP,
                     "rank %d published no %s address, though both ends chose it (different "
                     "ZCOLL_* settings across ranks?)",
                     q, zcoll__transports[idx].name);
}

/* Connects each instance to its peers and fills the channels. */
static zcoll_status_t connect_channels(zcoll_comm_t *comm, const int *peers, int npeers,
                                       const int *kinds, const char *info, const char *blobs,
                                       size_t blob_stride, const char *lists,
                                       size_t list_stride) {
  size_t ring = comm->slot_bytes * (size_t)comm->depth;
  const void **addr_ptrs = calloc((size_t)(npeers ? npeers : 1), sizeof(void *));
  size_t *addr_lens = calloc((size_t)(npeers ? npeers : 1), sizeof(size_t));
  int *ranks = calloc((size_t)(npeers ? npeers : 1), sizeof(int));
  int *at = calloc((size_t)(npeers ? npeers : 1), sizeof(int));
  struct zcoll_ep **eps = calloc((size_t)(npeers ? npeers : 1), sizeof(*eps));
  zcoll_status_t st = ZCOLL_OK;
  if (!addr_ptrs || !addr_lens || !ranks || !at || !eps) {
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
    goto out;
  }
  for (int k = 0; k < comm->ntlis && st == ZCOLL_OK; k++) {
    struct zcoll__tli *t = &comm->tlis[k];
    int n = 0;
    for (int i = 0; i < npeers; i++) {
      if (kinds[i] != t->idx) continue;
      const char *key;
      size_t klen;
      st = find_entry(blobs + (size_t)peers[i] * blob_stride, blob_stride, peers[i], t->idx,
                      (const char **)&addr_ptrs[n], &addr_lens[n], &key, &klen);
      if (st != ZCOLL_OK) goto out;
      ranks[n] = peers[i];
      at[n++] = i;
    }
    t->nchans = n;
    if (!n) continue;
    if ((st = t->ops->connect(t->tl, n, ranks, addr_ptrs, addr_lens, eps)) != ZCOLL_OK) goto out;
    for (int m = 0; m < n; m++) comm->chans[at[m]].ep = eps[m];
  }
  for (int i = 0; i < npeers; i++) {
    struct zcoll__chan *c = &comm->chans[i];
    int q = peers[i];
    struct setup_info qi;
    memcpy(&qi, info + sizeof(qi) * (size_t)q, sizeof(qi));
    const int *qlist = (const int *)(lists + (size_t)q * list_stride);
    int me = -1;
    for (uint32_t k = 0; k < qi.npeers && (size_t)(k + 1) * sizeof(int) <= list_stride; k++)
      if (qlist[k] == comm->rank) me = (int)k;
    if (me < 0) {
      st = zcoll__fail(ZCOLL_ERR_BOOTSTRAP,
                       "rank %d does not count rank %d among its peers (different ZCOLL_* "
                       "settings across ranks?)",
                       q, comm->rank);
      goto out;
    }
    for (int k = 0; k < comm->ntlis; k++)
      if (comm->tlis[k].idx == kinds[i]) c->t = &comm->tlis[k];
    c->ops = c->t->ops;
    c->staged = c->t == comm->reg;
    c->same_host = comm->host_of[q] == comm->host_of[comm->rank];
    c->peer = q;
    c->roff = SLOT_SKEW + (uint64_t)me * ring;
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
    if ((st = find_entry(blobs + (size_t)q * blob_stride, blob_stride, q, kinds[i], &addr,
                         &alen, &key, &klen)) != ZCOLL_OK ||
        (st = c->ops->rkey_unpack(c->ep, key, klen, &c->rkey)) != ZCOLL_OK)
      goto out;
    comm->chan_of[q] = i;
    zcoll_log_info("rank %d -> %d: %s", comm->rank, q, c->ops->name);
  }
out:
  free(addr_ptrs), free(addr_lens), free(ranks), free(at), free(eps);
  return st;
}

/* Oversubscribed ranks must not spin: the rank that has work needs the core. How many
 * ranks share this host: the launcher's word, else the count of round A. */
static int oversubscribed(zcoll_comm_t *comm) {
  zcoll_config_t *cfg = comm->cfg;
  if (cfg->local_size <= 0) {
    cfg->local_size = 0;
    for (int r = 0; r < comm->size; r++)
      cfg->local_size += comm->host_of[r] == comm->host_of[comm->rank];
  }
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int over = cores > 0 && cfg->local_size > cores;
  if (over && !zcoll__config_explicit(cfg, "SPIN_US")) {
    zcoll_log_info("%d local ranks on %ld cores: not spinning while waiting", cfg->local_size,
                   cores);
    cfg->spin_us = 0;
  }
  return over;
}

zcoll_status_t zcoll__comm_wire(zcoll_comm_t *comm) {
  int *peers = NULL, *kinds = NULL, npeers = 0;
  unsigned *masks = NULL;
  struct host_rec *all = NULL;
  char *blob = NULL, *blobs = NULL, *lists = NULL, *info = NULL;
  size_t blob_len = 0, blob_stride = 0, list_stride = 0;

  /* Round A: hosts. */
  struct host_rec mine = {{0}, 0, 0};
  zcoll__node_id(mine.node, sizeof(mine.node), comm->rank);
  char why[512] = "";
  mine.local = zcoll__transport_probe(comm->cfg, ZCOLL_TLE_ONE_HOST, why, sizeof(why));
  all = malloc(sizeof(mine) * (size_t)comm->size);
  masks = malloc(sizeof(unsigned) * (size_t)comm->size);
  zcoll_status_t st = all && masks ? ZCOLL_OK
                                   : zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
  if (st == ZCOLL_OK) st = zcoll__bootstrap_allgather(comm->bs, &mine, sizeof(mine), all);
  if (st == ZCOLL_OK) st = number_hosts(comm, all);
  if (st != ZCOLL_OK) goto out;
  if (comm->nhosts > 1)
    zcoll_log_info("%d ranks on %d hosts; this one is host %d", comm->size, comm->nhosts,
                   comm->host_of[comm->rank]);
  if ((st = compute_peers(comm, &peers, &npeers)) != ZCOLL_OK) goto out;
  if (!(kinds = malloc(sizeof(int) * (size_t)(npeers ? npeers : 1)))) {
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
    goto out;
  }
  if ((st = choose(comm, all, peers, npeers, masks, kinds)) != ZCOLL_OK) goto out;
  if ((st = open_transports(comm, kinds, npeers, masks[comm->rank], oversubscribed(comm))) !=
      ZCOLL_OK)
    goto out;

  /* Rank 0's pipeline geometry is everybody's: both ends of a channel must cut pieces
   * and slots alike. A rank's default chunk is the largest of its transports'. */
  size_t chunk = 0;
  for (int k = 0; k < comm->ntlis; k++)
    if (comm->tlis[k].ops->default_chunk_bytes > chunk)
      chunk = comm->tlis[k].ops->default_chunk_bytes;
  struct setup_info me = {comm->cfg->chunk_bytes ? comm->cfg->chunk_bytes : chunk,
                          (uint32_t)comm->cfg->pipeline_depth, (uint32_t)npeers};
  if (!(info = malloc(sizeof(me) * (size_t)comm->size))) {
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
    goto out;
  }
  if ((st = zcoll__bootstrap_allgather(comm->bs, &me, sizeof(me), info)) != ZCOLL_OK) goto out;
  struct setup_info root;
  memcpy(&root, info, sizeof(root));
  if (root.chunk != me.chunk || root.depth != me.depth)
    zcoll_log_info("using rank 0's chunk of %llu bytes and depth %u",
                   (unsigned long long)root.chunk, root.depth);
  comm->slot_bytes = (size_t)root.chunk;
  comm->depth = (int)root.depth;
  if ((st = map_regions(comm, npeers)) != ZCOLL_OK) goto out;

  /* Addresses, receive-region keys, and peer lists (a sender finds its ring in the
   * receiver's region by its place in the receiver's list). */
  if ((st = pack_blob(comm, &blob, &blob_len)) != ZCOLL_OK) goto out;
  if ((st = exchange(comm, blob, blob_len, &blobs, &blob_stride)) != ZCOLL_OK) goto out;
  if ((st = exchange(comm, peers, sizeof(int) * (size_t)npeers, &lists, &list_stride)) !=
      ZCOLL_OK)
    goto out;
  comm->nchans = npeers;
  comm->can_block = 1;
  for (int k = 0; k < comm->ntlis; k++)
    comm->can_block &= comm->tlis[k].ops->event_fd(comm->tlis[k].tl) >= 0;
  for (int k = 0; k < comm->ntlis; k++)
    if (comm->tlis[k].ops->set_placement)
      comm->tlis[k].ops->set_placement(comm->tlis[k].tl, zcoll__place, comm);
  comm->chans = calloc((size_t)(npeers ? npeers : 1), sizeof(*comm->chans));
  comm->chan_of = malloc(sizeof(int) * (size_t)comm->size);
  if (!comm->chans || !comm->chan_of) {
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
    goto out;
  }
  for (int r = 0; r < comm->size; r++) comm->chan_of[r] = -1;
  st = connect_channels(comm, peers, npeers, kinds, info, blobs, blob_stride, lists, list_stride);
out:
  free(peers), free(kinds), free(masks), free(all);
  free(blob), free(blobs), free(lists), free(info);
  return st;
}
