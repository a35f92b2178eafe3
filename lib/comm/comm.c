/* comm.c -- communicator lifecycle: who am I, rendezvous, wiring (comm_setup.c), teardown. */
#include "core/comm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/comm_registry.h"
#include "core/guard.h"
#include "base/log.h"
#include "coll/group.h"
#include "coll/partial.h"
#include "coll/progress_thread.h"
#include "coll/request.h"
#include "coll/tasks.h"
#include "init.h"
#include "wire.h"
#include "core/exec.h"
#include "core/mr.h"
#include "core/report.h"
#include "core/mem.h"
#include "core/onehost.h"
#include "p2p/p2p.h"

/* A communicator's address is its handle, and a watchdog may hold one after destroy:
 * zcoll_comm_abort on it must find nothing (comm_registry.c), not a new communicator
 * that malloc placed there. So each gets pages of its own, and a freed one keeps its
 * address reserved (no memory, one mapping) for the life of the process. */
static zcoll_comm_t *comm_alloc(void) {
  void *p = mmap(NULL, sizeof(zcoll_comm_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  return p == MAP_FAILED ? NULL : p; /* zeroed */
}

static void comm_retire(zcoll_comm_t *comm) {
  void *p = mmap(comm, sizeof(*comm), PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) munmap(comm, sizeof(*comm)); /* the memory at least */
}

/* local: in a child forked after init, where the transport's resources are the parent's
 * (its queue pairs, its UCX worker, its peers' mappings): free our memory, close our
 * descriptors, and touch nothing the parent still uses. */
static void release(zcoll_comm_t *comm, int local) {
  /* First: a revoke from a signal handler must find nothing from here on. */
  zcoll__guard_unrevocable(comm);
  /* Runs still listed (an abort with requests in flight) let go of their memory: another
   * communicator's regions stay freeable (core/mem.h). */
  for (struct zcoll__run *r = comm->active; r; r = r->next) zcoll__mem_unhold(&r->hold);
  /* Closing a transport may still progress it (UCX flushes), and peers' messages then
   * still arrive: they must not ask the placement hook, which reads the channels we are
   * about to free. Without the hook a transport places by region, into memory it owns. */
  for (int k = 0; !local && k < comm->ntlis; k++)
    if (comm->tlis[k].ops->set_placement)
      comm->tlis[k].ops->set_placement(comm->tlis[k].tl, NULL, NULL);
  /* Registrations go before the endpoints on purpose: after zcoll__drain nothing uses
   * them, and after an abort (no drain) a put still queued fails on the missing key
   * instead of reading user memory the application may already reuse. */
  zcoll__requests_revoke_grants(comm, local);
  zcoll__rcache_destroy(comm->rcache, local);
  comm->rcache = NULL;
  zcoll__mr_release_all(comm, local); /* registrations the application left behind */
  zcoll__mem_forget_all(comm, local); /* zcoll_mem_alloc's: they stay the application's */
  zcoll__onehost_free(comm, local);   /* before the channels its mappings came through */
  for (int i = 0; comm->chans && i < comm->nchans; i++) {
    struct zcoll__chan *c = &comm->chans[i];
    if (c->rkey && !local) c->ops->rkey_release(c->rkey);
    free(c->slots);
    free(c->inflight);
    free(c->small);
    if (!c->staged) free(c->stage); /* a premul sum's (executor.c) */
  }
  for (int i = 0; comm->p2p_chans && i < comm->nchans; i++) { /* their keys are chans[i]'s */
    struct zcoll__chan *c = &comm->p2p_chans[i];
    free(c->slots);
    free(c->inflight);
    if (!c->staged) free(c->stage);
  }
  int locked = local ? 0 : zcoll__tl_lock(comm->fam);
  struct zcoll__tli *alloc = NULL; /* the instance that made the receive slots (comm_setup.c) */
  for (int k = 0; !local && k < comm->ntlis; k++) {
    struct zcoll__tli *t = &comm->tlis[k];
    if (t->recv_mr) t->ops->mem_dereg(t->recv_mr);
    if (t->send_mr) t->ops->mem_dereg(t->send_mr);
    if (t->ops->mem_alloc) alloc = t;
  }
  /* An instance of a family may outlive this communicator: it forgets our slots now. */
  if (alloc && alloc->ftl && alloc->ops->mem_free && comm->recv_region) {
    alloc->ops->mem_free(alloc->tl, comm->recv_region, comm->region_bytes);
    comm->recv_region = NULL;
  }
  zcoll__tl_unlock(comm->fam, locked);
  /* Endpoints go with the instance, before the memory they might still write: the
   * family closes the instances its last member leaves; one never in a family (a wiring
   * that failed first) is closed here. */
  for (int k = 0; !local && k < comm->ntlis; k++)
    if (!comm->tlis[k].ftl) comm->tlis[k].ops->close(comm->tlis[k].tl);
  zcoll__family_leave(comm, comm->wiring.drained, local);
  free(comm->erank_of);
  free(comm->crank_of);
  if (comm->recv_region) munmap(comm->recv_region, comm->region_bytes);
  if (comm->send_region) munmap(comm->send_region, comm->region_bytes);
  free(comm->chans);
  free(comm->p2p_chans);
  free(comm->chan_of);
  free(comm->wiring.host_of);
  zcoll__vecs_release(comm);     /* their requests are among the next */
  zcoll__group_release(comm);    /* the calls queued in a group never ended */
  zcoll__requests_release(comm); /* before the schedules they pin */
  zcoll__p2p_release(comm);      /* the messages' requests and copies */
  for (int i = 0; i < ZCOLL_SCHED_CACHE; i++)
    if (comm->plan.cache[i].used) zcoll__sched_free(&comm->plan.cache[i].sched);
  zcoll__exec_free(comm->exec);
  free(comm->chan_block);
  free(comm->pollfds);
  if (comm->wake_fd >= 0) close(comm->wake_fd);
  zcoll__trace_close(&comm->trace);
  zcoll__flight_close(&comm->flight);
  zcoll__selector_free(&comm->plan.selector);
  zcoll_config_free(comm->cfg);
  comm_retire(comm);
}

zcoll_status_t zcoll_comm_init(zcoll_comm_t **out, const zcoll_config_t *cfg) {
  zcoll__clear_error();
  if (!out) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_comm_init: comm is NULL");
  zcoll_config_t *own;
  zcoll_status_t st = cfg ? zcoll__config_dup(cfg, &own) : zcoll_config_create(&own);
  return st == ZCOLL_OK ? zcoll__comm_init(out, own, NULL, NULL) : st;
}

zcoll_status_t zcoll__comm_init(zcoll_comm_t **out, zcoll_config_t *cfg,
                                const struct zcoll__launch *given,
                                const struct zcoll__share *share) {
  int token = 0, bs_tried = 0; /* this creation's, in the registry */
  zcoll_comm_t *comm = comm_alloc();
  if (!comm) {
    if (given && given->close_root_fd && cfg->root_fd >= 0) close(cfg->root_fd);
    for (int r = cfg->rank ? 0 : 1; share && share->bs_fds && r < (cfg->rank ? 1 : cfg->size); r++)
      close(share->bs_fds[r]);
    zcoll_config_free(cfg);
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory allocating a communicator");
  }
  comm->wake_fd = -1;
  comm->fork_gen = zcoll__guard_fork_gen();
  comm->cfg = cfg;
  zcoll_status_t st = ZCOLL_OK;
  if (given)
    comm->wiring.launch = *given;
  else if ((st = zcoll__launch_resolve(comm->cfg, &comm->wiring.launch)) != ZCOLL_OK)
    goto fail;
  comm->rank = comm->cfg->rank;
  comm->size = comm->cfg->size;
  /* Two threads creating as the same rank of the same job would pair with the other
   * processes' threads in no defined way: refuse the second, before it talks to anyone. */
  if ((st = zcoll__registry_creating(comm->rank, comm->size, comm->cfg->root, comm->cfg->root_fd,
                                     comm->cfg->job_id, &token)) != ZCOLL_OK)
    goto fail;
  if (!(comm->pollfds = calloc((size_t)comm->size + 1 + ZCOLL_TL_MAX, sizeof(*comm->pollfds)))) {
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory allocating a communicator");
    goto fail;
  }
  if ((comm->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "cannot create an eventfd for the communicator: %m");
    goto fail;
  }
  zcoll__log_set_rank(comm->rank);
  comm->plan.algo_params.tree_arity = comm->cfg->tree_arity;
  comm->plan.forced_algo = zcoll__algo_find(comm->cfg->algo);
  comm->plan.tree_algo = zcoll__algo_find("tree");
  comm->plan.chain_algo = zcoll__algo_find("chain");
  comm->plan.butterfly_algo = zcoll__algo_find("butterfly");
  comm->plan.ring_algo = zcoll__algo_find("ring");
  comm->plan.rhd_algo = zcoll__algo_find("rhd");
  comm->plan.hier_algo = zcoll__algo_find("hier");
  comm->plan.forced_bcast_algo = zcoll__bcast_algo_find(comm->cfg->bcast_algo);
  if ((st = zcoll__selector_init(&comm->plan.selector, comm->cfg->tuning_file)) != ZCOLL_OK)
    goto fail;

  /* Under PMIx: rank 0's address and the job key, from rank 0 to all. */
  if ((st = zcoll__launch_rendezvous(comm->cfg, &comm->wiring.launch)) != ZCOLL_OK) goto fail;
  struct zcoll__bootstrap_params bp = {comm->rank,
                                       comm->size,
                                       comm->cfg->root,
                                       comm->cfg->root_fd,
                                       comm->cfg->job_key,
                                       comm->cfg->timeout,
                                       comm->cfg->require_key,
                                       comm->cfg->job_id,
                                       comm->wiring.launch.close_root_fd,
                                       comm->wiring.launch.root_listens};
  bs_tried = 1; /* from here the bootstrap owns (and closes) a root_fd it was handed */
  st = share && share->bs_fds ? zcoll__bootstrap_attach(comm->rank, comm->size, comm->cfg->timeout,
                                                        share->bs_fds, &comm->bs)
                              : zcoll__bootstrap_create(&bp, &comm->bs);
  if (st != ZCOLL_OK) goto fail;
  st = share ? zcoll__comm_wire_shared(comm, share) : zcoll__comm_wire(comm);
  if (st == ZCOLL_OK && !share) st = zcoll__family_create(comm);
  if (st != ZCOLL_OK) goto fail_abort;
  comm->plan.hier_auto = comm->nhosts > 1 && comm->nhosts < comm->size &&
                         !comm->cfg->tuning_file[0];
  /* Where registering pins memory, user buffers stay registered between calls. */
  if (comm->reg && (comm->reg->ops->caps & ZCOLL_TL_CAP_PINS))
    comm->rcache = zcoll__rcache_create(comm->reg->ops, comm->reg->tl, comm->cfg->rcache_max_bytes);
  /* Nobody starts (and could fail and leave) before every rank is connected. */
  if ((st = zcoll__bootstrap_barrier(comm->bs)) != ZCOLL_OK) goto fail_abort;
  if (comm->cfg->trace[0] &&
      (st = zcoll__trace_open(&comm->trace, comm->cfg->trace, comm->rank)) != ZCOLL_OK)
    goto fail_abort;
  if ((st = zcoll__flight_open(&comm->flight, (unsigned)comm->cfg->flight_n)) != ZCOLL_OK)
    goto fail_abort;
  if (comm->cfg->progress == ZCOLL_PROGRESS_THREAD &&
      (st = zcoll__progress_thread_start(comm)) != ZCOLL_OK)
    goto fail_abort;
  zcoll__comm_log_summary(comm);
  zcoll__registry_created(token, comm);
  zcoll__guard_revocable(comm);
  *out = comm;
  return ZCOLL_OK;
fail_abort:
  /* The others are waiting in the rendezvous for us: tell them rather than let them
   * time out. */
  zcoll__bootstrap_abort(comm->bs, st, zcoll__last_error());
fail:
  if (!bs_tried && comm->wiring.launch.close_root_fd && comm->cfg->root_fd >= 0)
    close(comm->cfg->root_fd);
  /* A star of socket pairs not yet the bootstrap's: closed, so the other end hears it. */
  for (int r = comm->rank ? 0 : 1;
       !bs_tried && share && share->bs_fds && r < (comm->rank ? 1 : comm->size); r++)
    close(share->bs_fds[r]);
  if (token) zcoll__registry_created(token, NULL);
  zcoll__bootstrap_destroy(comm->bs);
  release(comm, 0);
  return st;
}

int zcoll_comm_rank(const zcoll_comm_t *comm) { return comm ? comm->rank : -1; }

int zcoll_comm_size(const zcoll_comm_t *comm) { return comm ? comm->size : -1; }

const char *zcoll_comm_transport(const zcoll_comm_t *comm) {
  return comm && comm->ntlis ? comm->wiring.tl_names : NULL;
}

const char *zcoll_comm_device(const zcoll_comm_t *comm) {
  return comm && comm->ntlis ? comm->wiring.tl_devices : NULL;
}

const char *zcoll_comm_launcher(const zcoll_comm_t *comm) {
  return comm ? comm->wiring.launch.name : NULL;
}

const char *zcoll_comm_last_error(const zcoll_comm_t *comm) {
  return comm ? comm->last_error : zcoll__last_error();
}

/* In a forked child: say nothing to anyone (closing our copies of the sockets sends
 * nothing while the parent holds them too), free what is ours. */
static zcoll_status_t release_in_child(zcoll_comm_t *comm) {
  zcoll__progress_thread_stop(comm, ZCOLL_PT_FORKED);
  zcoll__bootstrap_destroy(comm->bs);
  zcoll__registry_remove(comm);
  release(comm, 1);
  return ZCOLL_OK;
}

zcoll_status_t zcoll_comm_destroy(zcoll_comm_t *comm) {
  if (!comm) return ZCOLL_OK;
  /* Not a field of comm is read before the registry says it is alive and ours to free:
   * an abort on another thread, or a destroy before, may have freed it. */
  zcoll_status_t st = zcoll__registry_destroy_begin(comm);
  if (st != ZCOLL_OK) return st;
  if (zcoll__guard_forked(comm)) return release_in_child(comm);
  if ((st = zcoll__enter(comm, "zcoll_comm_destroy")) != ZCOLL_OK) {
    zcoll__registry_destroy_cancel(comm);
    return st;
  }
  int busy = comm->broken == ZCOLL_OK ? zcoll__requests_active(comm) + zcoll__partials_busy(comm)
                                      : 0;
  if (busy) {
    st = zcoll__report(comm, zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                                         "zcoll_comm_destroy: %d request%s still in flight "
                                         "(zcoll_wait for them first); nothing was destroyed",
                                         busy, busy > 1 ? "s are" : " is"));
    zcoll__leave(comm);
    zcoll__registry_destroy_cancel(comm);
    return st;
  }
  /* Partial requests left behind, each on a communicator of its own: freed as the others
   * are (their handles are then invalid), before anything of comm goes. */
  zcoll__partials_free_left(comm, comm->broken != ZCOLL_OK);
  zcoll__progress_thread_stop(comm, ZCOLL_PT_HELD); /* it uses what follows tears down */
  zcoll_status_t was_broken = comm->broken;
  /* A revoke (or an abort from a watchdog) from here on ends each wait below at once. */
  zcoll__bootstrap_set_cancel(comm->bs, comm->wake_fd, &comm->revoked);
  if (was_broken == ZCOLL_OK) {
    /* Our puts must be done before the peers free what they write into, and theirs
     * before we free ours: drain, then meet everyone once more. Whatever fails (a revoke
     * included) breaks the communicator as in a collective: the peers are told, and the
     * transport is stopped rather than flushed shut. */
    if (atomic_load(&comm->revoked))
      st = zcoll__fail(ZCOLL_ERR_PEER_FAILED, "the communicator was revoked");
    else if ((st = zcoll__drain(comm)) == ZCOLL_OK &&
             (st = zcoll__bootstrap_leave(comm->bs, comm->ordinal)) == ZCOLL_OK)
      comm->wiring.drained = zcoll__family_drain(comm) == ZCOLL_OK;
    if (st != ZCOLL_OK) st = zcoll__exec_broken(comm, st);
  }
  zcoll__bootstrap_destroy(comm->bs);
  /* Revoked before destroy or during it: the peers are told (by the final barrier's
   * wait, or here), and destroy says so. A communicator broken by an earlier call was
   * reported by that call: destroy only frees it. */
  if (atomic_load(&comm->revoked) && was_broken == ZCOLL_OK) {
    if (st == ZCOLL_OK || st == ZCOLL_ERR_PEER_FAILED)
      st = zcoll__fail(ZCOLL_ERR_PEER_FAILED,
                       "zcoll_comm_destroy: rank %d's communicator was revoked (zcoll_comm_revoke "
                       "or zcoll_comm_abort); the other ranks were told",
                       comm->rank);
  } else if (was_broken != ZCOLL_OK) {
    /* Broken by the progress thread and not reported by a call yet: destroy reports it. */
    st = comm->last_error_async ? zcoll__report(comm, was_broken) : ZCOLL_OK;
  }
  zcoll__registry_remove(comm); /* before anything is freed: an abort now finds nothing */
  release(comm, 0);
  return st;
}

/* How long abort waits for a call on another thread to notice the revoke and leave; it
 * notices within 10 ms unless its thread is not scheduled. */
#define ABORT_WAIT_S 10.0

zcoll_status_t zcoll_comm_abort(zcoll_comm_t *comm) {
  if (!comm) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_comm_abort: comm is NULL");
  /* A destroy in progress on another thread frees comm itself: abort revokes it, which
   * ends that destroy with ZCOLL_ERR_PEER_FAILED now, and waits until it is gone. */
  zcoll_status_t st = zcoll__registry_abort_begin(comm, ABORT_WAIT_S);
  if (st == ZCOLL_IN_PROGRESS) return ZCOLL_OK;
  if (st != ZCOLL_OK) return st;
  if (zcoll__guard_forked(comm)) return release_in_child(comm);
  zcoll__flight_dump_failure(comm, ZCOLL_ERR_PEER_FAILED, "abort");
  zcoll_comm_revoke(comm);
  if (!zcoll__guard_take_over(comm, ABORT_WAIT_S)) {
    zcoll__registry_abort_cancel(comm);
    /* Freeing under a call that is still running would crash it: leak instead. */
    return zcoll__fail(ZCOLL_ERR_TIMEOUT,
                       "zcoll_comm_abort: the call on another thread did not return within "
                       "%.0f s; the communicator is revoked but not freed",
                       ABORT_WAIT_S);
  }
  zcoll__partials_free_left(comm, 1); /* revoked: they ask nothing of the other ranks */
  zcoll__progress_thread_stop(comm, ZCOLL_PT_NOT_HELD);
  zcoll__bootstrap_abort(comm->bs, ZCOLL_ERR_PEER_FAILED, "zcoll_comm_abort was called");
  zcoll__bootstrap_destroy(comm->bs);
  zcoll__registry_remove(comm);
  release(comm, 0);
  return ZCOLL_OK;
}
