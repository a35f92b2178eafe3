/*
 * rank_threads.h -- run P ranks as threads of this process over the loopback
 * transport (with the real TCP rendezvous), for fast tests of the executor and the
 * algorithms with no network.
 */
#ifndef ZCOLL_RANK_THREADS_H
#define ZCOLL_RANK_THREADS_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "zcoll.h"

#include <time.h>

static inline double sp_now_(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define RT_MAX_RANKS 128

struct rt_job;
typedef void (*rt_body)(struct rt_job *job, int rank, zcoll_comm_t *comm);

struct rt_job {
  int size;
  const char *settings[16][2]; /* extra configuration fields, NULL-terminated */
  rt_body body;
  void *arg;
  int port, lfd;
  pthread_mutex_t lock;
  unsigned long failures;
  char first[600];
  char all[2048];               /* every failure message, concatenated */
  const char *key_of_rank1;     /* if set: rank 1's ZCOLL_JOB_KEY (tests of the rendezvous) */
  const char *rank1_setting[2]; /* if set: one more field for rank 1 only (mismatches) */
  char released[RT_MAX_RANKS];  /* set by a body that aborted (released) its communicator */
  void (*before_init)(struct rt_job *job, int rank); /* if set: called first by each rank */
};

struct rt_rank {
  struct rt_job *job;
  int rank;
};

static inline void rt_fail(struct rt_job *job, int rank, const char *msg) {
  pthread_mutex_lock(&job->lock);
  if (!job->failures) snprintf(job->first, sizeof(job->first), "rank %d: %s", rank, msg);
  size_t used = strlen(job->all);
  snprintf(job->all + used, sizeof(job->all) - used, "rank %d: %s\n", rank, msg);
  job->failures++;
  pthread_mutex_unlock(&job->lock);
}

static inline void *rt_main(void *arg) {
  struct rt_rank *me = arg;
  struct rt_job *job = me->job;
  char buf[64];
  zcoll_config_t *cfg;
  if (job->before_init) job->before_init(job, me->rank);
  if (zcoll_config_create(&cfg) != ZCOLL_OK) {
    rt_fail(job, me->rank, zcoll_last_error());
    return NULL;
  }
  int ok = 1;
  snprintf(buf, sizeof(buf), "%d", me->rank);
  ok &= zcoll_config_set(cfg, "RANK", buf) == ZCOLL_OK;
  snprintf(buf, sizeof(buf), "%d", job->size);
  ok &= zcoll_config_set(cfg, "SIZE", buf) == ZCOLL_OK;
  snprintf(buf, sizeof(buf), "127.0.0.1:%d", job->port);
  ok &= zcoll_config_set(cfg, "ROOT", buf) == ZCOLL_OK;
  if (me->rank == 0) {
    snprintf(buf, sizeof(buf), "%d", job->lfd);
    ok &= zcoll_config_set(cfg, "ROOT_FD", buf) == ZCOLL_OK;
  }
  ok &= zcoll_config_set(cfg, "TRANSPORT", "loopback") == ZCOLL_OK;
  ok &= zcoll_config_set(cfg, "TIMEOUT", "120") == ZCOLL_OK;
  /* Threads oversubscribe the cores: spinning would starve the rank that has work. */
  ok &= zcoll_config_set(cfg, "SPIN_US", "0") == ZCOLL_OK;
  for (int i = 0; i < 16 && job->settings[i][0]; i++)
    ok &= zcoll_config_set(cfg, job->settings[i][0], job->settings[i][1]) == ZCOLL_OK;
  if (me->rank == 1 && job->key_of_rank1)
    ok &= zcoll_config_set(cfg, "JOB_KEY", job->key_of_rank1) == ZCOLL_OK;
  if (me->rank == 1 && job->rank1_setting[0])
    ok &= zcoll_config_set(cfg, job->rank1_setting[0], job->rank1_setting[1]) == ZCOLL_OK;
  if (!ok) {
    rt_fail(job, me->rank, zcoll_last_error());
    zcoll_config_free(cfg);
    return NULL;
  }
  zcoll_comm_t *comm;
  zcoll_status_t rc = zcoll_comm_init(&comm, cfg);
  zcoll_config_free(cfg);
  if (rc != ZCOLL_OK) {
    char msg[400];
    snprintf(msg, sizeof(msg), "zcoll_comm_init: %s: %s", zcoll_strerror(rc), zcoll_last_error());
    rt_fail(job, me->rank, msg);
    return NULL;
  }
  job->body(job, me->rank, comm);
  if (!job->released[me->rank] && (rc = zcoll_comm_destroy(comm)) != ZCOLL_OK)
    rt_fail(job, me->rank, "zcoll_comm_destroy failed");
  return NULL;
}

/* Runs job->body on job->size ranks over the listening socket job->lfd (port
 * job->port) made by the caller; returns the number of failures recorded. */
static inline unsigned long rt_run_prepared(struct rt_job *job) {
  pthread_mutex_init(&job->lock, NULL);
  job->failures = 0;
  job->first[0] = '\0';
  job->all[0] = '\0';
  pthread_t th[RT_MAX_RANKS];
  struct rt_rank ranks[RT_MAX_RANKS];
  if (job->size > RT_MAX_RANKS) {
    snprintf(job->first, sizeof(job->first), "at most %d ranks", RT_MAX_RANKS);
    return 1;
  }
  for (int r = 0; r < job->size; r++) {
    ranks[r] = (struct rt_rank){job, r};
    pthread_create(&th[r], NULL, rt_main, &ranks[r]);
  }
  for (int r = 0; r < job->size; r++) pthread_join(th[r], NULL);
  pthread_mutex_destroy(&job->lock);
  return job->failures;
}

/* Runs job->body on job->size ranks; returns the number of failures recorded. */
static inline unsigned long rt_run(struct rt_job *job) {
  /* The rendezvous socket is made here and handed to rank 0, as zcoll_run does. */
  job->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof(a);
  if (job->lfd < 0 || bind(job->lfd, (struct sockaddr *)&a, sizeof(a)) || listen(job->lfd, 128) ||
      getsockname(job->lfd, (struct sockaddr *)&a, &alen)) {
    snprintf(job->first, sizeof(job->first), "cannot make a rendezvous socket: %m");
    return 1;
  }
  job->port = ntohs(a.sin_port);
  return rt_run_prepared(job);
}

#endif
