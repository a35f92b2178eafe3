/* plan.c -- what every collective call plans through: the schedule cache (schedules depend
 * on the algorithm, count, placement and root only), a plan's release, and a plan that
 * failed. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "core/exec.h"
#include "core/kind.h"
#include "core/report.h"
#include "kernels/op.h"

static zcoll_status_t build_sched(zcoll_comm_t *comm, struct zcoll__sched *s, int kind, int algo,
                                  size_t count, int in_place, int root) {
  zcoll__sched_init(s, comm->rank, comm->size, count, in_place);
  s->root = root;
  zcoll__kind_build(kind, algo, s, &comm->plan.algo_params);
  zcoll_status_t st = zcoll__sched_finish(s);
  if (st != ZCOLL_OK) zcoll__sched_free(s);
  return st;
}

/* Schedules depend on (kind, algorithm, count, in place, root) only: cache the last few so that a
 * loop of same-sized allreduces plans once. An entry a collective in flight uses is
 * pinned (never evicted); with all of them pinned, the plan gets a schedule of its own. */
zcoll_status_t zcoll__sched_get(zcoll_comm_t *comm, int kind, int algo, size_t count, int in_place,
                                int root, struct zcoll__plan *pl, int *built) {
  struct zcoll__sched_cache_entry *victim = NULL, *m = comm->plan.cache_mru;
  /* A loop of one size hits the entry it hit last: one comparison, not a scan. */
  if (m && m->used && m->kind == kind && m->algo == algo && m->count == count &&
      m->in_place == in_place && m->root == root) {
    m->stamp = ++comm->plan.ncolls;
    m->pins++;
    pl->entry = m;
    pl->s = &m->sched;
    return ZCOLL_OK;
  }
  for (int i = 0; i < ZCOLL_SCHED_CACHE; i++) {
    struct zcoll__sched_cache_entry *e = &comm->plan.cache[i];
    if (e->used && e->kind == kind && e->algo == algo && e->count == count &&
        e->in_place == in_place && e->root == root) {
      comm->plan.cache_mru = e;
      e->stamp = ++comm->plan.ncolls;
      e->pins++;
      pl->entry = e;
      pl->s = &e->sched;
      return ZCOLL_OK;
    }
    if (!e->pins && (!victim || !e->used || (victim->used && e->stamp < victim->stamp))) victim = e;
  }
  *built = 1;
  if (!victim) {
    if (!(pl->owned = malloc(sizeof(*pl->owned))))
      return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for a schedule");
    zcoll_status_t st = build_sched(comm, pl->owned, kind, algo, count, in_place, root);
    if (st != ZCOLL_OK) {
      free(pl->owned);
      pl->owned = NULL;
      return st;
    }
    pl->s = pl->owned;
    return ZCOLL_OK;
  }
  if (victim->used) zcoll__sched_free(&victim->sched);
  victim->used = 0;
  victim->gen = ++comm->plan.sched_gen; /* a memo of the old build is stale now */
  zcoll_status_t st = build_sched(comm, &victim->sched, kind, algo, count, in_place, root);
  if (st != ZCOLL_OK) return st;
  victim->used = 1;
  victim->root = root;
  victim->kind = kind;
  victim->algo = algo;
  victim->count = count;
  victim->in_place = in_place;
  victim->stamp = ++comm->plan.ncolls;
  victim->pins = 1;
  comm->plan.cache_mru = victim;
  pl->entry = victim;
  pl->s = &victim->sched;
  return ZCOLL_OK;
}

void zcoll__plan_release(struct zcoll__plan *pl) {
  if (pl->entry) pl->entry->pins--;
  zcoll__op_put(pl->op);
  if (pl->owned) {
    zcoll__sched_free(pl->owned);
    free(pl->owned);
  }
  memset(pl, 0, sizeof(*pl));
}

zcoll_status_t zcoll__plan_failed(zcoll_comm_t *comm, zcoll_status_t st) {
  if (st == ZCOLL_ERR_INVALID_ARG) return zcoll__poison(comm, st);
  comm->ordinal++; /* the others are in this collective: it counts, and breaks */
  return zcoll__comm_break(comm, st);
}

uint8_t zcoll__wire_of(const zcoll_comm_t *comm, zcoll_dtype_t dtype, zcoll_op_t op,
                       const struct zcoll__op_def *uop) {
  /* Only where the result is an average-like sum: a rounded MIN, MAX or PROD would be a
   * different answer, not a less precise one. */
  int sum = uop ? uop->kind == ZCOLL_OPK_PREMUL : op == ZCOLL_SUM || op == ZCOLL_AVG;
  return dtype == ZCOLL_FLOAT32 && sum && comm->size > 1 ? (uint8_t)comm->cfg->wire_dtype : 0;
}
