/*
 * comm_hosts.c -- the first rounds of a communicator's wiring: which host each rank runs
 * on, what transports each can run, and the pipeline geometry (rank 0's).
 *
 * Round 1: every rank tells rank 0 its host (boot id, PID namespace, user: node.h) and the
 * host-local transports it can run (shm). Rank 0 numbers the hosts and answers every rank
 * alike with runs of (ranks, host, transports) -- a few runs when ranks are placed host by
 * host -- rather than every rank's 72-byte record: the reply is what the algorithms need
 * (every rank's host), not an allgather of p^2 records.
 * Round 2, only when some pair cannot use a host-local transport (ranks span hosts, or a
 * rank cannot run shm), the same for the network transports, which only ranks with such
 * a peer probe: a one-host job never loads UCX.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/comm.h"
#include "base/log.h"
#include "transports.h"
#include "base/node.h"
#include "wire.h"

struct host_rec { /* round 1, to rank 0 */
  char node[64];
  uint32_t mask;
  uint32_t pad;
};

struct geometry { /* rank 0's pipeline, in both rounds' replies */
  uint64_t chunk;
  uint32_t depth;
  uint32_t nruns;
  uint32_t nhosts; /* round 1 */
  uint32_t pad;
};

struct run_rec {
  uint32_t count;
  int32_t host; /* round 2: unused */
  uint32_t mask;
};

struct root_state { /* rank 0: the reply, built once and sent to every rank */
  zcoll_comm_t *comm;
  void *reply;
  size_t len;
};

static uint64_t hash_node(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n && s[i]; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
  return h;
}

/* Each rank's host: its number is its order of first appearance. Hashed, so that 4096
 * ranks cost no 8 million comparisons. */
static zcoll_status_t number_hosts(int size, const void *const *blobs, int *host_of, int *nhosts) {
  size_t cap = 2;
  while (cap < 2 * (size_t)size) cap *= 2;
  int *slot = malloc(sizeof(int) * cap); /* the first rank of each host, by hash */
  if (!slot) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory numbering hosts");
  for (size_t i = 0; i < cap; i++) slot[i] = -1;
  int n = 0;
  for (int r = 0; r < size; r++) {
    const struct host_rec *h = blobs[r];
    size_t i = hash_node(h->node, sizeof(h->node)) & (cap - 1);
    while (slot[i] >= 0 &&
           memcmp(((const struct host_rec *)blobs[slot[i]])->node, h->node, sizeof(h->node)) != 0)
      i = (i + 1) & (cap - 1);
    if (slot[i] < 0) {
      slot[i] = r;
      host_of[r] = n++;
    } else {
      host_of[r] = host_of[slot[i]];
    }
  }
  free(slot);
  *nhosts = n;
  return ZCOLL_OK;
}

/* Rank 0's geometry: its own settings, the chunk from the transports some rank can run. */
static struct geometry geometry_of(const zcoll_config_t *cfg, unsigned any) {
  struct geometry g = {zcoll__transport_chunk(cfg, any), (uint32_t)cfg->pipeline_depth, 0, 0, 0};
  return g;
}

/* The reply of a round: the geometry, then the runs of equal (host, mask). hosts NULL in
 * round 2. */
static zcoll_status_t build_reply(struct root_state *rs, const int *hosts, int nhosts,
                                  const unsigned *masks) {
  zcoll_comm_t *comm = rs->comm;
  unsigned any = 0;
  int nruns = 0;
  for (int r = 0; r < comm->size; r++) {
    any |= masks[r];
    if (!r || masks[r] != masks[r - 1] || (hosts && hosts[r] != hosts[r - 1])) nruns++;
  }
  struct geometry g = geometry_of(comm->cfg, any);
  g.nruns = (uint32_t)nruns;
  g.nhosts = (uint32_t)nhosts;
  rs->len = sizeof(g) + sizeof(struct run_rec) * (size_t)nruns;
  char *b = rs->reply = malloc(rs->len);
  if (!b) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
  memcpy(b, &g, sizeof(g));
  struct run_rec *runs = (struct run_rec *)(b + sizeof(g)), *cur = runs - 1;
  for (int r = 0; r < comm->size; r++) {
    if (!r || masks[r] != masks[r - 1] || (hosts && hosts[r] != hosts[r - 1]))
      *++cur = (struct run_rec){0, hosts ? hosts[r] : -1, masks[r]};
    cur->count++;
  }
  return ZCOLL_OK;
}

/* Every rank gets the same answer in these rounds: a copy of the one built. */
static zcoll_status_t copy_reply(const struct root_state *rs, void **reply, size_t *len) {
  if (!(*reply = malloc(rs->len))) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
  memcpy(*reply, rs->reply, rs->len);
  *len = rs->len;
  return ZCOLL_OK;
}

static zcoll_status_t bad_size(int rank, uint32_t got, size_t want, const char *round) {
  return zcoll__fail(ZCOLL_ERR_BOOTSTRAP,
                     "rank %d sent %u bytes in the %s round, not %zu (different zcoll versions?)",
                     rank, got, round, want);
}

static zcoll_status_t host_reply(void *arg, int rank, const void *const *blobs,
                                 const uint32_t *lens, void **reply, size_t *len) {
  struct root_state *rs = arg;
  if (!rs->reply) {
    zcoll_comm_t *comm = rs->comm;
    for (int r = 0; r < comm->size; r++)
      if (lens[r] != sizeof(struct host_rec))
        return bad_size(r, lens[r], sizeof(struct host_rec), "host");
    int *hosts = malloc(sizeof(int) * (size_t)comm->size);
    unsigned *masks = malloc(sizeof(unsigned) * (size_t)comm->size);
    int nhosts = 0;
    zcoll_status_t st = hosts && masks ? number_hosts(comm->size, blobs, hosts, &nhosts)
                                       : zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
    for (int r = 0; st == ZCOLL_OK && r < comm->size; r++)
      masks[r] = ((const struct host_rec *)blobs[r])->mask;
    if (st == ZCOLL_OK) st = build_reply(rs, hosts, nhosts, masks);
    free(hosts), free(masks);
    if (st != ZCOLL_OK) return st;
  }
  (void)rank;
  return copy_reply(rs, reply, len);
}

static zcoll_status_t net_reply(void *arg, int rank, const void *const *blobs, const uint32_t *lens,
                                void **reply, size_t *len) {
  struct root_state *rs = arg;
  if (!rs->reply) {
    zcoll_comm_t *comm = rs->comm;
    unsigned *masks = malloc(sizeof(unsigned) * (size_t)comm->size);
    if (!masks) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
    for (int r = 0; r < comm->size; r++) {
      uint32_t m = 0;
      if (lens[r] != sizeof(m)) {
        free(masks);
        return bad_size(r, lens[r], sizeof(m), "network");
      }
      memcpy(&m, blobs[r], sizeof(m));
      masks[r] = m;
    }
    zcoll_status_t st = build_reply(rs, NULL, 0, masks);
    free(masks);
    if (st != ZCOLL_OK) return st;
  }
  (void)rank;
  return copy_reply(rs, reply, len);
}

/* Unpacks a reply into the geometry, masks (or'ed in) and, in round 1, host_of. */
static zcoll_status_t unpack(const char *b, size_t len, int size, int *host_of, unsigned *masks,
                             struct geometry *g) {
  if (len < sizeof(*g)) goto bad;
  memcpy(g, b, sizeof(*g));
  if (len != sizeof(*g) + sizeof(struct run_rec) * (size_t)g->nruns) goto bad;
  int r = 0;
  for (uint32_t i = 0; i < g->nruns; i++) {
    struct run_rec run;
    memcpy(&run, b + sizeof(*g) + sizeof(run) * i, sizeof(run));
    if (run.count > (uint32_t)(size - r) ||
        (host_of && (run.host < 0 || (uint32_t)run.host >= g->nhosts)))
      goto bad;
    for (uint32_t k = 0; k < run.count; k++, r++) {
      if (host_of) host_of[r] = run.host;
      masks[r] |= run.mask;
    }
  }
  if (r == size) return ZCOLL_OK;
bad:
  return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "rank 0's reply in the wiring is malformed (%zu bytes)",
                     len);
}

/* One round: contribute, get rank 0's reply, unpack it. */
static zcoll_status_t round_trip(zcoll_comm_t *comm, const void *mine, size_t len,
                                 zcoll__bs_reply_fn fn, unsigned *masks, struct geometry *g,
                                 int host_round) {
  struct root_state rs = {comm, NULL, 0};
  void *reply = NULL;
  size_t rlen = 0;
  zcoll_status_t st = zcoll__bootstrap_gather_reply(comm->bs, mine, len, fn, &rs, &reply, &rlen);
  free(rs.reply);
  if (st == ZCOLL_OK)
    st = unpack(reply, rlen, comm->size, host_round ? comm->wiring.host_of : NULL, masks, g);
  if (st == ZCOLL_OK && host_round) {
    comm->nhosts = (int)g->nhosts;
    comm->plan.algo_params.host_of = comm->wiring.host_of;
    comm->plan.algo_params.nhosts = comm->nhosts;
  }
  free(reply);
  return st;
}

zcoll_status_t zcoll__wire_hosts(zcoll_comm_t *comm, unsigned *masks, uint64_t *chunk,
                                 uint32_t *depth, int *net_round) {
  struct host_rec mine = {{0}, 0, 0};
  zcoll__node_id(mine.node, sizeof(mine.node), comm->rank);
  comm->wiring.tl_why[0] = '\0';
  mine.mask = zcoll__transport_probe(comm->cfg, ZCOLL_TLE_ONE_HOST, comm->wiring.tl_why,
                                     sizeof(comm->wiring.tl_why));
  memset(masks, 0, sizeof(unsigned) * (size_t)comm->size);
  if (!(comm->wiring.host_of = malloc(sizeof(int) * (size_t)comm->size)))
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
  struct geometry g;
  zcoll_status_t st = round_trip(comm, &mine, sizeof(mine), host_reply, masks, &g, 1);
  if (st != ZCOLL_OK) return st;
  unsigned every = ~0u;
  for (int r = 0; r < comm->size; r++) every &= masks[r];
  *net_round = comm->nhosts > 1 || !every;
  *chunk = g.chunk;
  *depth = g.depth;
  return ZCOLL_OK;
}

zcoll_status_t zcoll__wire_nets(zcoll_comm_t *comm, unsigned *masks, int need, uint64_t *chunk,
                                uint32_t *depth) {
  /* This probe covers every transport, those of the host round too: its refusals
   * replace that round's rather than repeat them. */
  char why[512] = "";
  uint32_t net = need ? zcoll__transport_probe(comm->cfg, 0, why, sizeof(why)) & ~masks[comm->rank]
                      : 0;
  comm->wiring.net_probed = need;
  if (need) snprintf(comm->wiring.tl_why, sizeof(comm->wiring.tl_why), "%s", why);
  if (need && !net && why[0]) zcoll_log_info("no network transport here: %s", why);
  struct geometry g;
  zcoll_status_t st = round_trip(comm, &net, sizeof(net), net_reply, masks, &g, 0);
  if (st != ZCOLL_OK) return st;
  *chunk = g.chunk;
  *depth = g.depth;
  return ZCOLL_OK;
}
