/*
 * split_bodies.h -- split scenarios over rank threads, shared by test_split.c and the
 * ThreadSanitizer program (progs/requests_tsan.c): a child used on a thread of its own
 * while the parent runs collectives on the rank's, over the transport instances they
 * share (core/family.h), then the parent destroyed first.
 */
#ifndef ZCOLL_TEST_SPLIT_BODIES_H
#define ZCOLL_TEST_SPLIT_BODIES_H

#include <pthread.h>
#include <stdint.h>

#include "rank_threads.h"
#include "vec_bodies.h"

/* The child on a thread of its own, the parent on the rank's: both busy at once. */
struct side {
  zcoll_comm_t *child;
  int n, ok;
};

static inline void *child_side(void *arg) {
  struct side *s = arg;
  s->ok = 1;
  for (int i = 0; i < 200; i++) {
    float v = 1.0f;
    if (zcoll_allreduce(s->child, ZCOLL_IN_PLACE, &v, 1, ZCOLL_FLOAT32, ZCOLL_SUM) != ZCOLL_OK ||
        v != (float)s->n)
      s->ok = 0;
  }
  return NULL;
}

static inline void concurrent_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  int p = job->size;
  zcoll_comm_t *child = NULL;
  if (zcoll_comm_split(comm, rank % 2, 0, &child) != ZCOLL_OK) {
    rt_fail(job, rank, zcoll_last_error());
    return;
  }
  struct side s = {child, zcoll_comm_size(child), 0};
  pthread_t t;
  pthread_create(&t, NULL, child_side, &s);
  int ok = 1;
  for (int i = 0; i < 200; i++) {
    int64_t v = rank;
    if (zcoll_allreduce(comm, ZCOLL_IN_PLACE, &v, 1, ZCOLL_INT64, ZCOLL_SUM) != ZCOLL_OK ||
        v != (int64_t)p * (p - 1) / 2)
      ok = 0;
  }
  pthread_join(t, NULL);
  if (!ok || !s.ok)
    rt_fail(job, rank, ok ? "the child's allreduces failed" : "the parent's failed");
  /* The parent goes first (collectively); the child still works after. */
  if (zcoll_comm_destroy(comm) != ZCOLL_OK) rt_fail(job, rank, "the parent's destroy failed");
  job->released[rank] = 1;
  s.ok = 0;
  child_side(&s);
  if (!s.ok) rt_fail(job, rank, "the child failed after the parent's destroy");
  if (zcoll_comm_destroy(child) != ZCOLL_OK) rt_fail(job, rank, "the child's destroy failed");
}

/* A child without the parent's rank 0: the vector interface's ordering runs through the
 * child's own rank 0 (parent rank 1), over whatever carries the child's control. */
static inline void vec_child_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  zcoll_comm_t *child = NULL;
  if (zcoll_comm_split(comm, rank ? 1 : ZCOLL_UNDEFINED, 0, &child) != ZCOLL_OK ||
      !child != !rank) {
    rt_fail(job, rank, child || !rank ? zcoll_last_error() : "no child");
    return;
  }
  if (!rank) return;
  struct rt_job sub = {.size = job->size - 1, .lock = PTHREAD_MUTEX_INITIALIZER};
  two_keys_body(&sub, zcoll_comm_rank(child), child);
  if (sub.failures) {
    char msg[400];
    snprintf(msg, sizeof(msg), "in the child: %.360s", sub.first);
    rt_fail(job, rank, msg);
  }
  if (zcoll_comm_destroy(child) != ZCOLL_OK) rt_fail(job, rank, zcoll_last_error());
}

#endif
