/* comm.c -- communicator lifecycle: who am I, rendezvous, transport, channels. */
#include "comm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "guard.h"
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

struct setup_info { /* what every rank publishes in the first round */
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

static zcoll_status_t setup_channels(zcoll_comm_t *comm) {
  int *peers = NULL, npeers = 0;
  char *addr = NULL, *addrs = NULL, *rkeys = NULL, *lists = NULL, *info = NULL;
  void **addr_ptrs = NULL;
  size_t *addr_lens = NULL;
  struct zcoll_ep **eps = NULL;
  size_t addr_stride, rkey_stride, list_stride;
  zcoll_status_t st = compute_peers(comm, &peers, &npeers);
  if (st != ZCOLL_OK) return st;

  /* Round 1: sizes. Rank 0's pipeline geometry is everybody's: both ends of a
   * channel must cut pieces and slots alike. */
  struct setup_info mine = {comm->cfg->chunk_bytes ? comm->cfg->chunk_bytes
                                                   : comm->tl_ops->default_chunk_bytes,
                            (uint32_t)comm->cfg->pipeline_depth, (uint32_t)npeers};
  info = malloc(sizeof(mine) * (size_t)comm->size);
  if (!info) {
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
    goto out;
  }
  if ((st = zcoll__bootstrap_allgather(comm->bs, &mine, sizeof(mine), info)) != ZCOLL_OK) goto out;
  struct setup_info root;
  memcpy(&root, info, sizeof(root));
  if (root.chunk != mine.chunk || root.depth != mine.depth)
    zcoll_log_info("using rank 0's chunk of %llu bytes and depth %u",
                   (unsigned long long)root.chunk, root.depth);
  comm->slot_bytes = (size_t)root.chunk;
  comm->depth = (int)root.depth;

  /* Regions: one receive ring per peer, and send staging if the transport needs it. */
  size_t ring = comm->slot_bytes * (size_t)comm->depth;
  comm->region_bytes = SLOT_SKEW + ring * (size_t)(npeers ? npeers : 1);
  if (comm->tl_ops->mem_alloc) {
    void *p = NULL;
    if ((st = comm->tl_ops->mem_alloc(comm->tl, comm->region_bytes, &p)) != ZCOLL_OK) goto out;
    comm->recv_region = p;
  } else if (!(comm->recv_region = map_region(comm->region_bytes))) {
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "cannot map %zu bytes of receive slots: %m",
                     comm->region_bytes);
    goto out;
  }
  if ((st = comm->tl_ops->mem_reg(comm->tl, comm->recv_region, comm->region_bytes, 1,
                                  &comm->recv_mr)) != ZCOLL_OK)
    goto out;
  if (!(comm->tl_ops->caps & ZCOLL_TL_CAP_PUT_ANY)) {
    if (!(comm->send_region = map_region(comm->region_bytes))) {
      st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "cannot map %zu bytes of send staging: %m",
                       comm->region_bytes);
      goto out;
    }
    if ((st = comm->tl_ops->mem_reg(comm->tl, comm->send_region, comm->region_bytes, 0,
                                    &comm->send_mr)) != ZCOLL_OK)
      goto out;
  }

  /* Round 2: transport addresses, receive-region keys, and peer lists (a sender
   * finds its ring in the receiver's region by its place in the receiver's list). */
  char rkey[1024];
  size_t addr_len = 4096, rkey_len = sizeof(rkey);
  if (!(addr = malloc(addr_len))) {
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
    goto out;
  }
  if ((st = comm->tl_ops->address(comm->tl, addr, &addr_len)) != ZCOLL_OK) goto out;
  if ((st = comm->tl_ops->rkey_pack(comm->recv_mr, rkey, &rkey_len)) != ZCOLL_OK) goto out;
  if ((st = exchange(comm, addr, addr_len, &addrs, &addr_stride)) != ZCOLL_OK) goto out;
  if ((st = exchange(comm, rkey, rkey_len, &rkeys, &rkey_stride)) != ZCOLL_OK) goto out;
  if ((st = exchange(comm, peers, sizeof(int) * (size_t)npeers, &lists, &list_stride)) !=
      ZCOLL_OK)
    goto out;

  comm->nchans = npeers;
  if (comm->tl_ops->set_placement) comm->tl_ops->set_placement(comm->tl, zcoll__place, comm);
  comm->chans = calloc((size_t)(npeers ? npeers : 1), sizeof(*comm->chans));
  comm->chan_of = malloc(sizeof(int) * (size_t)comm->size);
  addr_ptrs = calloc((size_t)(npeers ? npeers : 1), sizeof(void *));
  addr_lens = calloc((size_t)(npeers ? npeers : 1), sizeof(size_t));
  eps = calloc((size_t)(npeers ? npeers : 1), sizeof(*eps));
  if (!comm->chans || !comm->chan_of || !addr_ptrs || !addr_lens || !eps) {
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
    goto out;
  }
  for (int r = 0; r < comm->size; r++) comm->chan_of[r] = -1;
  for (int i = 0; i < npeers; i++) {
    addr_ptrs[i] = addrs + (size_t)peers[i] * addr_stride;
    addr_lens[i] = addr_stride;
  }
  if ((st = comm->tl_ops->connect(comm->tl, npeers, peers, (const void *const *)addr_ptrs,
                                  addr_lens, eps)) != ZCOLL_OK)
    goto out;
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
    c->peer = q;
    c->ep = eps[i];
    c->roff = SLOT_SKEW + (uint64_t)me * ring;
    c->credits = (uint32_t)comm->depth;
    c->recv = comm->recv_region + SLOT_SKEW + (size_t)i * ring;
    if (comm->send_region) c->stage = comm->send_region + SLOT_SKEW + (size_t)i * ring;
    c->slots = calloc((size_t)comm->depth, sizeof(*c->slots));
    c->inflight = calloc((size_t)comm->depth, sizeof(*c->inflight));
    if (!comm->send_region)
      c->small = malloc((size_t)comm->depth * (ZCOLL_CHAN_HDR_BYTES + ZCOLL_CHAN_MERGE_MAX));
    if (!c->slots || !c->inflight || (!comm->send_region && !c->small)) {
      st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
      goto out;
    }
    if ((st = comm->tl_ops->rkey_unpack(c->ep, rkeys + (size_t)q * rkey_stride, rkey_stride,
                                        &c->rkey)) != ZCOLL_OK)
      goto out;
    comm->chan_of[q] = i;
  }
out:
  free(peers), free(addr), free(addrs), free(rkeys), free(lists), free(info);
  free(addr_ptrs), free(addr_lens), free(eps);
  return st;
}

/* local: in a child forked after init, where the transport's resources are the parent's
 * (its queue pairs, its UCX worker, its peers' mappings): free our memory, close our
 * descriptors, and touch nothing the parent still uses. */
static void release(zcoll_comm_t *comm, int local) {
  /* Closing a transport may still progress it (UCX flushes), and peers' messages then
   * still arrive: they must not ask the placement hook, which reads the channels we are
   * about to free. Without the hook a transport places by region, into memory it owns. */
  if (!local && comm->tl && comm->tl_ops->set_placement)
    comm->tl_ops->set_placement(comm->tl, NULL, NULL);
  /* Registrations go before the endpoints on purpose: after zcoll__drain nothing uses
   * them, and after an abort (no drain) a put still queued fails on the missing key
   * instead of reading user memory the application may already reuse. */
  zcoll__requests_revoke_grants(comm, local);
  zcoll__rcache_destroy(comm->rcache, local);
  comm->rcache = NULL;
  zcoll__mr_release_all(comm, local); /* registrations the application left behind */
  for (int i = 0; comm->chans && i < comm->nchans; i++) {
    if (comm->chans[i].rkey && !local) comm->tl_ops->rkey_release(comm->chans[i].rkey);
    free(comm->chans[i].slots);
    free(comm->chans[i].inflight);
    free(comm->chans[i].small);
    if (!comm->send_region) free(comm->chans[i].stage); /* a premul sum's (executor.c) */
  }
  if (!local) {
    if (comm->recv_mr) comm->tl_ops->mem_dereg(comm->recv_mr);
    if (comm->send_mr) comm->tl_ops->mem_dereg(comm->send_mr);
    /* Endpoints go with the instance, before the memory they might still write. */
    if (comm->tl) comm->tl_ops->close(comm->tl);
  }
  if (comm->recv_region) munmap(comm->recv_region, comm->region_bytes);
  if (comm->send_region) munmap(comm->send_region, comm->region_bytes);
  free(comm->chans);
  free(comm->chan_of);
  zcoll__vecs_release(comm);     /* their requests are among the next */
  zcoll__requests_release(comm); /* before the schedules they pin */
  for (int i = 0; i < ZCOLL_SCHED_CACHE; i++)
    if (comm->cache[i].used) zcoll__sched_free(&comm->cache[i].sched);
  zcoll__exec_free(comm->exec);
  free(comm->chan_block);
  free(comm->pollfds);
  if (comm->wake_fd >= 0) close(comm->wake_fd);
  zcoll__trace_close(&comm->trace);
  zcoll__selector_free(&comm->selector);
  zcoll_config_free(comm->cfg);
  free(comm);
}

static zcoll_status_t job_alive(void *bs) { return zcoll__bootstrap_check(bs); }

/* Whether every rank runs on this host, in this PID namespace: one round of the
 * rendezvous, and only when the transport choice depends on it. */
static zcoll_status_t on_one_node(zcoll_comm_t *comm, int *one) {
  *one = 0;
  if (comm->cfg->transport != ZCOLL_TL_AUTO && comm->cfg->transport != ZCOLL_TL_SHM)
    return ZCOLL_OK;
  char mine[64] = {0};
  zcoll__node_id(mine, sizeof(mine), comm->rank);
  char *all = malloc(sizeof(mine) * (size_t)comm->size);
  if (!all) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory");
  zcoll_status_t st = zcoll__bootstrap_allgather(comm->bs, mine, sizeof(mine), all);
  if (st == ZCOLL_OK) {
    *one = 1;
    for (int r = 0; r < comm->size && *one; r++)
      if (memcmp(all + (size_t)r * sizeof(mine), mine, sizeof(mine)) != 0) {
        *one = 0;
        zcoll_log_debug("rank %d is on another host (%.64s)", r, all + (size_t)r * sizeof(mine));
      }
  }
  free(all);
  return st;
}

zcoll_status_t zcoll_comm_init(zcoll_comm_t **out, const zcoll_config_t *cfg) {
  zcoll__clear_error();
  if (!out) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_comm_init: comm is NULL");
  zcoll_comm_t *comm = calloc(1, sizeof(*comm));
  if (!comm) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory allocating a communicator");
  comm->wake_fd = -1;
  comm->fork_gen = zcoll__guard_fork_gen();
  zcoll_status_t st = cfg ? zcoll__config_dup(cfg, &comm->cfg) : zcoll_config_create(&comm->cfg);
  if (st != ZCOLL_OK) {
    free(comm);
    return st;
  }
  if ((st = zcoll__launch_resolve(comm->cfg, &comm->launch)) != ZCOLL_OK) goto fail;
  comm->rank = comm->cfg->rank;
  comm->size = comm->cfg->size;
  if (!(comm->pollfds = calloc((size_t)comm->size + 2, sizeof(*comm->pollfds)))) {
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory allocating a communicator");
    goto fail;
  }
  if ((comm->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "cannot create an eventfd for the communicator: %m");
    goto fail;
  }
  zcoll__log_set_rank(comm->rank);
  comm->algo_params.tree_arity = comm->cfg->tree_arity;
  comm->forced_algo = zcoll__algo_find(comm->cfg->algo);
  comm->tree_algo = zcoll__algo_find("tree");
  comm->chain_algo = zcoll__algo_find("chain");
  comm->forced_bcast_algo = zcoll__bcast_algo_find(comm->cfg->bcast_algo);
  if ((st = zcoll__selector_init(&comm->selector, comm->cfg->tuning_file)) != ZCOLL_OK) goto fail;

  /* Oversubscribed ranks must not spin: the rank that has work needs the core. */
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int oversubscribed = comm->cfg->local_size > 0 && cores > 0 && comm->cfg->local_size > cores;
  if (oversubscribed && !zcoll__config_explicit(comm->cfg, "SPIN_US")) {
    zcoll_log_info("%d local ranks on %ld cores: not spinning while waiting",
                   comm->cfg->local_size, cores);
    comm->cfg->spin_us = 0;
  }
  /* Under PMIx: rank 0's address and the job key, from rank 0 to all. */
  if ((st = zcoll__launch_rendezvous(comm->cfg, &comm->launch)) != ZCOLL_OK) goto fail;
  struct zcoll__bootstrap_params bp = {comm->rank, comm->size, comm->cfg->root,
                                       comm->cfg->root_fd, comm->cfg->job_key,
                                       comm->cfg->timeout, comm->cfg->require_key,
                                       comm->cfg->job_id, comm->launch.close_root_fd};
  if ((st = zcoll__bootstrap_create(&bp, &comm->bs)) != ZCOLL_OK) goto fail;
  int one_node;
  if ((st = on_one_node(comm, &one_node)) != ZCOLL_OK) goto fail_abort;
  if ((st = zcoll__transport_select(comm->cfg, one_node, &comm->tl_ops)) != ZCOLL_OK)
    goto fail_abort;
  struct zcoll_tl_params tp = {comm->rank, comm->size, comm->cfg, oversubscribed, job_alive,
                               comm->bs};
  if ((st = comm->tl_ops->open(&tp, &comm->tl)) != ZCOLL_OK) goto fail_abort;
  if ((st = setup_channels(comm)) != ZCOLL_OK) goto fail_abort;
  /* Where registering pins memory, user buffers stay registered between calls. */
  if (comm->tl_ops->caps & ZCOLL_TL_CAP_PINS)
    comm->rcache = zcoll__rcache_create(comm->tl_ops, comm->tl, comm->cfg->rcache_max_bytes);
  /* Nobody starts (and could fail and leave) before every rank is connected. */
  if ((st = zcoll__bootstrap_barrier(comm->bs)) != ZCOLL_OK) goto fail_abort;
  if (comm->cfg->trace[0] &&
      (st = zcoll__trace_open(&comm->trace, comm->cfg->trace, comm->rank)) != ZCOLL_OK)
    goto fail_abort;
  if (comm->cfg->progress == ZCOLL_PROGRESS_THREAD &&
      (st = zcoll__progress_thread_start(comm)) != ZCOLL_OK)
    goto fail_abort;
  zcoll_log_info("rank %d of %d ready: transport %s, %d peers, chunk %zu bytes, depth %d",
                 comm->rank, comm->size, comm->tl_ops->name, comm->nchans, comm->slot_bytes,
                 comm->depth);
  *out = comm;
  return ZCOLL_OK;
fail_abort:
  /* The others are waiting in the rendezvous for us: tell them rather than let them
   * time out. */
  zcoll__bootstrap_abort(comm->bs, st, zcoll__last_error());
fail:
  zcoll__bootstrap_destroy(comm->bs, 0);
  release(comm, 0);
  return st;
}

int zcoll_comm_rank(const zcoll_comm_t *comm) { return comm ? comm->rank : -1; }

int zcoll_comm_size(const zcoll_comm_t *comm) { return comm ? comm->size : -1; }

const char *zcoll_comm_transport(const zcoll_comm_t *comm) {
  return comm && comm->tl_ops ? comm->tl_ops->name : NULL;
}

const char *zcoll_comm_launcher(const zcoll_comm_t *comm) {
  return comm ? comm->launch.name : NULL;
}

const char *zcoll_comm_last_error(const zcoll_comm_t *comm) {
  return comm ? comm->last_error : zcoll__last_error();
}

/* In a forked child: say nothing to anyone (closing our copies of the sockets sends
 * nothing while the parent holds them too), free what is ours. */
static zcoll_status_t release_in_child(zcoll_comm_t *comm) {
  zcoll__progress_thread_stop(comm, ZCOLL_PT_FORKED);
  zcoll__bootstrap_destroy(comm->bs, 0);
  release(comm, 1);
  return ZCOLL_OK;
}

zcoll_status_t zcoll_comm_destroy(zcoll_comm_t *comm) {
  if (!comm) return ZCOLL_OK;
  if (zcoll__guard_forked(comm)) return release_in_child(comm);
  zcoll_status_t st = zcoll__enter(comm, "zcoll_comm_destroy");
  if (st != ZCOLL_OK) return st;
  int busy = comm->broken == ZCOLL_OK ? zcoll__requests_active(comm) : 0;
  if (busy) {
    st = zcoll__report(comm, zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                                         "zcoll_comm_destroy: %d request%s still in flight "
                                         "(zcoll_wait for them first); nothing was destroyed",
                                         busy, busy > 1 ? "s are" : " is"));
    zcoll__leave(comm);
    return st;
  }
  zcoll__progress_thread_stop(comm, ZCOLL_PT_HELD); /* it uses what follows tears down */
  if (atomic_load(&comm->revoked) && comm->broken == ZCOLL_OK) {
    comm->broken = zcoll__fail(ZCOLL_ERR_PEER_FAILED, "the communicator was revoked");
    zcoll__bootstrap_abort(comm->bs, comm->broken, "zcoll_comm_revoke was called");
  }
  if (comm->broken == ZCOLL_OK) {
    /* Our puts must be done before the peers free what they write into, and theirs
     * before we free ours: drain, then meet everyone once more. */
    st = zcoll__drain(comm);
    if (st != ZCOLL_OK) zcoll__bootstrap_abort(comm->bs, st, zcoll__last_error());
  }
  zcoll_status_t bst = zcoll__bootstrap_destroy(comm->bs, comm->broken == ZCOLL_OK && st == ZCOLL_OK);
  if (st == ZCOLL_OK && comm->broken == ZCOLL_OK) st = bst;
  release(comm, 0);
  return st;
}

/* How long abort waits for a call on another thread to notice the revoke and leave; it
 * notices within 10 ms unless its thread is not scheduled. */
#define ABORT_WAIT_S 10.0

zcoll_status_t zcoll_comm_abort(zcoll_comm_t *comm) {
  if (!comm) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_comm_abort: comm is NULL");
  if (zcoll__guard_forked(comm)) return release_in_child(comm);
  zcoll_comm_revoke(comm);
  if (!zcoll__guard_take_over(comm, ABORT_WAIT_S))
    /* Freeing under a call that is still running would crash it: leak instead. */
    return zcoll__fail(ZCOLL_ERR_TIMEOUT,
                       "zcoll_comm_abort: the call on another thread did not return within "
                       "%.0f s; the communicator is revoked but not freed",
                       ABORT_WAIT_S);
  zcoll__progress_thread_stop(comm, ZCOLL_PT_NOT_HELD);
  zcoll__bootstrap_abort(comm->bs, ZCOLL_ERR_PEER_FAILED, "zcoll_comm_abort was called");
  zcoll__bootstrap_destroy(comm->bs, 0);
  release(comm, 0);
  return ZCOLL_OK;
}
