/* conformance.h -- the harness of the transport conformance test, shared by its cases
 * (the files beside it); the harness itself is tests/transports/test_transport_conformance.c. */
#ifndef ZCOLL_TEST_CONFORMANCE_H
#define ZCOLL_TEST_CONFORMANCE_H

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/config.h"
#include "comm/transports.h"
#include "tl/transport.h"

#define MAXR 3
#define PART 64       /* a part of an address for one peer (peer_address) */
#define BLOB 8192     /* an address or key: UCX worker addresses run to a few KiB */
#define WAIT_S 30.0   /* the longest any rank waits for anything (TCG guests are slow) */
#define CANARY 0xcb   /* every byte of a receive region no put was aimed at */
#define SCRIBBLE 0xee /* a source after its PUT_DONE: the transport must be done with it */

struct shared {                  /* MAP_SHARED: the same for thread and process ranks */
  _Atomic unsigned arrived, gen; /* the barrier */
  _Atomic int nfail;
  _Atomic int unsupported; /* a connect said: not across processes */
  _Atomic int flag;        /* a step one rank waits for another to take */
  _Atomic int victim_ready, victim_dead;
  char fail[MAXR][1024];
  double seconds[MAXR][2]; /* per rank, case-specific timings for the log */
  size_t addr_len[MAXR], key_len[MAXR];
  unsigned char addr[MAXR][BLOB], key[MAXR][BLOB];
  /* part[q][r]: the part of q's address for r alone (transport.h's peer_address) */
  size_t part_len[MAXR];
  unsigned char part[MAXR][MAXR][PART];
};

struct rank {
  struct shared *sh;
  const struct zcoll_tl_ops *ops;
  int tl_index;
  int rank, size, live; /* live: ranks the barrier waits for */
  int threads;          /* ranks are threads of one process */
  int oversubscribed;
  zcoll_config_t *cfg;
  struct zcoll_tl *tl;
  struct zcoll_ep *ep[MAXR];
  struct zcoll_tl_rkey *rk[MAXR];
  char *region; /* receive region: from mem_alloc if the transport has it */
  size_t region_len;
  struct zcoll_tl_mr *mr;
  char *src; /* source region, registered as a source only */
  size_t src_len;
  struct zcoll_tl_mr *smr;
};

#define CHECK(r, cond, ...)                                    \
  do {                                                         \
    if (!(cond)) return conf_fail((r), __LINE__, __VA_ARGS__); \
  } while (0)
/* A status the contract fixes; the message carries the transport's own words. */
#define CHECK_ST(r, got, want, what)                                                         \
  do {                                                                                       \
    zcoll_status_t got_ = (got);                                                             \
    if (got_ != (want))                                                                      \
      return conf_fail((r), __LINE__, "%s: %s, the contract says %s (last error: %s)", what, \
                       zcoll_strerror(got_), zcoll_strerror(want), zcoll_last_error());      \
  } while (0)

/* SETUP_SHORT_RETRIES: RDMA retries that run out in about a second (ZCOLL_IB_TIMEOUT 10,
 * ZCOLL_IB_RETRY_CNT 2), where a dead peer shows only so (death.c). */
enum { SETUP_PLAIN = 0, SETUP_BAD_CALLS = 1, SETUP_SHORT_RETRIES = 2 };

typedef int (*body_fn)(struct rank *r);

struct job {
  int tl_index, size, oversubscribed;
  int victim; /* >= 0: this rank is killed (processes) or closed abruptly (threads) */
  body_fn body;
};

double conf_now(void);
int conf_fail(struct rank *r, int line, const char *fmt, ...);
int conf_aborted(struct rank *r);
int conf_sync_ranks_progress(struct rank *r, int progress);
int conf_sync_ranks(struct rank *r);
int conf_wait_flag(struct rank *r, _Atomic int *f, int value);
int conf_open_tl(struct rank *r, struct zcoll_tl **tl);
/* peer_address (if the transport has it) on tl for the n ranks: the parts go to sh->part
 * (store 0) or are dropped (a second instance's). */
int conf_peer_address(struct rank *r, struct zcoll_tl *tl, int n, const int *ranks, int store);
/* Rank peer's address as the core's exchange hands it to r: with r's part appended. Into
 * buf (BLOB + PART bytes); its length. */
size_t conf_addr_for(const struct rank *r, int peer, unsigned char *buf);
int conf_setup(struct rank *r, size_t region_len, size_t src_len, int how);
double conf_teardown(struct rank *r, int meet);
int conf_poll_ok(struct rank *r, struct zcoll_tl_event *ev, int max, int *n);
struct shared *conf_run(const struct job *j);
struct criterion_test_params conf_rows(int need_placement);
void conf_need(int i);
unsigned char conf_pattern(int s, int d, int i, size_t b);
int conf_settle(struct rank *r, int arrive, int done, size_t at);

#endif
