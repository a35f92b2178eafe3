/*
 * The shared-memory transport on its own, between two real processes (a parent and a
 * forked child, addresses and keys exchanged over pipes): data and notifications in
 * order past the ring's capacity, a writer that outlives a sleeping receiver, and the
 * errors for bad regions, keys and puts.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../transports/shm/shm.h"
#include "comm/transports.h"

static struct zcoll_tl *open_rank(int rank) {
  struct zcoll_tl_params p = {.rank = rank, .size = 2};
  struct zcoll_tl *tl = NULL;
  cr_assert_eq(zcoll__tl_shm.open(&p, &tl), ZCOLL_OK, "%s", zcoll_last_error());
  return tl;
}

static void send_blob(int fd, const void *b, size_t n) {
  uint32_t len = (uint32_t)n;
  cr_assert_eq(write(fd, &len, sizeof(len)), (ssize_t)sizeof(len));
  cr_assert_eq(write(fd, b, n), (ssize_t)n);
}

static size_t recv_blob(int fd, void *b, size_t cap) {
  uint32_t len;
  cr_assert_eq(read(fd, &len, sizeof(len)), (ssize_t)sizeof(len));
  cr_assert_leq(len, cap);
  size_t got = 0;
  while (got < len) {
    ssize_t k = read(fd, (char *)b + got, len - got);
    cr_assert_gt(k, 0);
    got += (size_t)k;
  }
  return len;
}

/* Both sides connect to each other (a receiver polls only peers it connected to). */
static struct zcoll_ep *connect_pair(struct zcoll_tl *tl, int peer, int to, int from) {
  char mine[256], theirs[256];
  size_t n = sizeof(mine);
  cr_assert_eq(zcoll__tl_shm.address(tl, mine, &n), ZCOLL_OK);
  send_blob(to, mine, n);
  size_t m = recv_blob(from, theirs, sizeof(theirs));
  const void *addrs[1] = {theirs};
  size_t lens[1] = {m};
  struct zcoll_ep *ep = NULL;
  cr_assert_eq(zcoll__tl_shm.connect(tl, 1, &peer, addrs, lens, &ep), ZCOLL_OK, "%s",
               zcoll_last_error());
  return ep;
}

/* Rank 0's side: a region of `bytes` for the writer, its key sent down `to`. */
static struct zcoll_tl_mr *receiver(struct zcoll_tl *tl, int to, int from, size_t bytes,
                                    void **slots, struct zcoll_ep **ep) {
  *ep = connect_pair(tl, 1, to, from);
  cr_assert_eq(zcoll__tl_shm.mem_alloc(tl, bytes, slots), ZCOLL_OK);
  struct zcoll_tl_mr *mr = NULL;
  cr_assert_eq(zcoll__tl_shm.mem_reg(tl, *slots, bytes, 1, &mr), ZCOLL_OK);
  char key[256];
  size_t kn = sizeof(key);
  cr_assert_eq(zcoll__tl_shm.rkey_pack(mr, key, &kn), ZCOLL_OK);
  send_blob(to, key, kn);
  return mr;
}

/* The writer's side (a forked child: it exits rather than asserting): rank 0's key. */
static struct zcoll_tl_rkey *writer_key(struct zcoll_ep *ep, int from) {
  char key[256];
  size_t kn = recv_blob(from, key, sizeof(key));
  struct zcoll_tl_rkey *rk = NULL;
  if (zcoll__tl_shm.rkey_unpack(ep, key, kn, &rk) != ZCOLL_OK) _exit(2);
  return rk;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define NPUTS 1000 /* about twice the ring */
#define PIECE 64

/* The writer puts NPUTS pieces (every third a bare notification) before the receiver
 * looks: the ring fills, the rest waits in the writer's backlog and must still arrive
 * in order, each piece's bytes in place when its notification does. */
Test(shm, data_and_notifications_in_order_past_the_ring, .timeout = 60) {
  int down[2], up[2]; /* parent -> child, child -> parent */
  cr_assert_eq(pipe(down), 0);
  cr_assert_eq(pipe(up), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) { /* the writer: rank 1 */
    struct zcoll_tl *tl = open_rank(1);
    struct zcoll_ep *ep = connect_pair(tl, 0, up[1], down[0]);
    struct zcoll_tl_rkey *rk = writer_key(ep, down[0]);
    /* Outside the region: refused. */
    char src[PIECE];
    if (zcoll__tl_shm.put(ep, src, NULL, rk, rk->len - 1, 2, 7, 0) != ZCOLL_ERR_INVALID_ARG)
      _exit(3);
    for (int i = 0; i < NPUTS; i++) {
      memset(src, (char)i, sizeof(src));
      size_t len = i % 3 ? PIECE : 0;
      if (zcoll__tl_shm.put(ep, src, NULL, rk, (uint64_t)i * PIECE, len, (uint32_t)i,
                            (uint64_t)i) != ZCOLL_OK)
        _exit(4);
    }
    if (!ep->backlog) _exit(5); /* the ring should be full by now */
    if (write(up[1], "d", 1) != 1) _exit(6);
    /* Every put completed locally, in order; poll until the backlog drained. */
    struct zcoll_tl_event ev[64];
    int done = 0, n;
    double t0 = now();
    while ((done < NPUTS || ep->backlog) && now() - t0 < 30) {
      if (zcoll__tl_shm.poll(tl, ev, 64, &n) != ZCOLL_OK) _exit(7);
      for (int k = 0; k < n; k++)
        if (ev[k].kind != ZCOLL_TL_EV_PUT_DONE || ev[k].cookie != (uint64_t)done++) _exit(8);
    }
    int ok = done == NPUTS && !ep->backlog;
    zcoll__tl_shm.rkey_release(rk);
    zcoll__tl_shm.close(tl);
    _exit(ok ? 0 : 9);
  }
  struct zcoll_tl *tl = open_rank(0);
  void *slots = NULL;
  size_t bytes = (size_t)NPUTS * PIECE;
  struct zcoll_ep *ep = NULL;
  struct zcoll_tl_mr *mr = receiver(tl, down[1], up[0], bytes, &slots, &ep);
  char done;
  cr_assert_eq(read(up[0], &done, 1), 1, "the writer failed before it finished putting");
  int next = 0;
  double t0 = now();
  while (next < NPUTS && now() - t0 < 30) {
    struct zcoll_tl_event ev[16];
    int n;
    cr_assert_eq(zcoll__tl_shm.poll(tl, ev, 16, &n), ZCOLL_OK);
    for (int k = 0; k < n; k++, next++) {
      cr_assert_eq(ev[k].kind, ZCOLL_TL_EV_ARRIVED);
      cr_assert_eq(ev[k].peer, 1);
      cr_assert_eq(ev[k].imm, (uint32_t)next, "notification %u where %d was due", ev[k].imm, next);
      cr_assert_eq(ev[k].len, next % 3 ? PIECE : 0);
      const unsigned char *at = (const unsigned char *)slots + (size_t)next * PIECE;
      for (int b = 0; b < (int)ev[k].len; b++)
        cr_assert_eq(at[b], (unsigned char)next, "piece %d byte %d", next, b);
    }
  }
  cr_assert_eq(next, NPUTS, "only %d of %d notifications arrived", next, NPUTS);
  int status;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer: status %d", status);
  zcoll__tl_shm.mem_dereg(mr);
  zcoll__tl_shm.close(tl);
  munmap(slots, bytes);
}

/* A writer that published its last pieces and exited at once -- a clean end for it --
 * must not cost the receiver those pieces: they arrive, in order, and only then is the
 * writer's death reported. */
Test(shm, a_dead_writers_last_pieces_arrive_before_its_death, .timeout = 60) {
  enum { N = 40 };
  int down[2], up[2];
  cr_assert_eq(pipe(down), 0);
  cr_assert_eq(pipe(up), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    struct zcoll_tl *tl = open_rank(1);
    struct zcoll_ep *ep = connect_pair(tl, 0, up[1], down[0]);
    struct zcoll_tl_rkey *rk = writer_key(ep, down[0]);
    char src[PIECE];
    for (int i = 0; i < N; i++) {
      memset(src, (char)(i + 1), sizeof(src));
      if (zcoll__tl_shm.put(ep, src, NULL, rk, (uint64_t)i * PIECE, PIECE, (uint32_t)i, 0) !=
          ZCOLL_OK)
        _exit(3);
    }
    _exit(ep->backlog ? 4 : 0); /* all in the ring, none closed or released */
  }
  struct zcoll_tl *tl = open_rank(0);
  void *slots = NULL;
  size_t bytes = (size_t)N * PIECE;
  struct zcoll_ep *ep = NULL;
  struct zcoll_tl_mr *mr = receiver(tl, down[1], up[0], bytes, &slots, &ep);
  int status;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer: status %d", status);
  /* Dead before we look. An arm() (refused: pieces wait) makes the next poll look for dead
   * peers, so the death is seen with every piece still queued; small batches then. */
  cr_assert_eq(zcoll__tl_shm.arm(tl), ZCOLL_IN_PROGRESS);
  int next = 0, lost = 0;
  double t0 = now();
  while (!lost && now() - t0 < 30) {
    struct zcoll_tl_event ev[3];
    int n = 0;
    cr_assert_eq(zcoll__tl_shm.poll(tl, ev, 3, &n), ZCOLL_OK, "%s", zcoll_last_error());
    if (next == 0) { /* known dead, still draining: puts to it fail */
      cr_assert_eq(zcoll__tl_shm.put(ep, NULL, NULL, NULL, 0, 0, 1, 0), ZCOLL_ERR_PEER_FAILED);
      cr_assert(strstr(zcoll_last_error(), "died"), "%s", zcoll_last_error());
    }
    for (int k = 0; k < n; k++) {
      cr_assert(!lost, "an event after the death was reported");
      if (ev[k].kind == ZCOLL_TL_EV_PEER_LOST) { /* the instance lives on (CAP_PEER_LOSS) */
        cr_assert_eq(ev[k].peer, 1);
        cr_assert_eq(ev[k].status, ZCOLL_ERR_PEER_FAILED);
        lost = 1;
        continue;
      }
      cr_assert_eq(ev[k].kind, ZCOLL_TL_EV_ARRIVED);
      cr_assert_eq(ev[k].imm, (uint32_t)next, "notification %u where %d was due", ev[k].imm, next);
      const unsigned char *at = (const unsigned char *)slots + (size_t)next * PIECE;
      for (int b = 0; b < PIECE; b++)
        cr_assert_eq(at[b], (unsigned char)(next + 1), "piece %d byte %d", next, b);
      next++;
    }
  }
  cr_assert_eq(next, N, "only %d of %d pieces arrived before the death was reported", next, N);
  cr_assert(lost, "the death was never reported");
  /* Reported once; the instance still polls, and may sleep again (nothing is pending). */
  struct zcoll_tl_event ev[1];
  int n = -1;
  cr_assert_eq(zcoll__tl_shm.poll(tl, ev, 1, &n), ZCOLL_OK);
  cr_assert_eq(n, 0);
  cr_assert_eq(zcoll__tl_shm.arm(tl), ZCOLL_OK);
  cr_assert_eq(zcoll__tl_shm.put(ep, NULL, NULL, NULL, 0, 0, 1, 0), ZCOLL_ERR_PEER_FAILED);
  zcoll__tl_shm.mem_dereg(mr);
  zcoll__tl_shm.close(tl);
  munmap(slots, bytes);
}

/* The receiver went to sleep (its flag set) and died; a put to it must still return,
 * and must not kill the writer with SIGPIPE. */
Test(shm, writer_outlives_a_sleeping_receiver, .timeout = 60) {
  int down[2], up[2];
  cr_assert_eq(pipe(down), 0);
  cr_assert_eq(pipe(up), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    struct zcoll_tl *tl = open_rank(1);
    connect_pair(tl, 0, up[1], down[0]);
    if (zcoll__tl_shm.arm(tl) != ZCOLL_OK) _exit(2);
    char go;
    if (read(down[0], &go, 1) != 1) _exit(3);
    _exit(0); /* asleep, as far as the writer can tell */
  }
  struct zcoll_tl *tl = open_rank(0);
  struct zcoll_ep *ep = connect_pair(tl, 1, down[1], up[0]);
  cr_assert_eq(write(down[1], "g", 1), 1);
  int status;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(ep->peer_inbox->sleeping, "the receiver did not say it sleeps");
  signal(SIGPIPE, SIG_DFL); /* as in an application that never touched it */
  for (int i = 0; i < 3; i++)
    cr_assert_eq(zcoll__tl_shm.put(ep, NULL, NULL, NULL, 0, 0, 1, 0), ZCOLL_OK);
  zcoll__tl_shm.close(tl);
}

Test(shm, bad_regions_and_keys_are_errors) {
  struct zcoll_tl *tl = open_rank(0);
  char plain[64];
  struct zcoll_tl_mr *mr = NULL;
  cr_assert_eq(zcoll__tl_shm.mem_reg(tl, plain, sizeof(plain), 1, &mr), ZCOLL_ERR_INVALID_ARG);
  cr_assert(strstr(zcoll_last_error(), "mem_alloc"), "%s", zcoll_last_error());
  cr_assert_eq(zcoll__tl_shm.mem_reg(tl, plain, sizeof(plain), 0, &mr), ZCOLL_OK);
  char key[64];
  size_t kn = sizeof(key);
  cr_assert_eq(zcoll__tl_shm.rkey_pack(mr, key, &kn), ZCOLL_ERR_INVALID_ARG);
  zcoll__tl_shm.mem_dereg(mr);
  /* An address from nobody: a clear error, not a crash. */
  char junk[sizeof(struct zcoll__shm_addr)] = {0};
  const void *addrs[1] = {junk};
  size_t lens[1] = {sizeof(junk)};
  int peer = 1;
  struct zcoll_ep *ep = NULL;
  cr_assert_eq(zcoll__tl_shm.connect(tl, 1, &peer, addrs, lens, &ep), ZCOLL_ERR_TRANSPORT);
  cr_assert(strstr(zcoll_last_error(), "malformed"), "%s", zcoll_last_error());
  /* A well-formed address whose "inbox" is an ordinary file: refused, never mapped. */
  FILE *f = tmpfile();
  cr_assert(f);
  struct zcoll__shm_addr a = {.magic = ZCOLL_SHM_MAGIC,
                              .pid = (int32_t)getpid(),
                              .rank = 1,
                              .inbox_fd = fileno(f),
                              .wake_fd = fileno(f),
                              .inbox_bytes = tl->inbox_bytes};
  memcpy(a.node, tl->node, sizeof(a.node));
  addrs[0] = &a;
  lens[0] = sizeof(a);
  cr_assert_eq(zcoll__tl_shm.connect(tl, 1, &peer, addrs, lens, &ep), ZCOLL_ERR_TRANSPORT);
  cr_assert(strstr(zcoll_last_error(), "is not what it should be"), "%s", zcoll_last_error());
  fclose(f);
  zcoll__tl_shm.close(tl);
}

/* Two instances of this process, rank 0 connected to rank 1: keys can then be forged
 * against a peer that really exists. */
static struct zcoll_ep *connect_to_self(struct zcoll_tl *tl0, struct zcoll_tl *tl1) {
  char addr[256];
  size_t n = sizeof(addr);
  cr_assert_eq(zcoll__tl_shm.address(tl1, addr, &n), ZCOLL_OK);
  const void *addrs[1] = {addr};
  size_t lens[1] = {n};
  int peer = 1;
  struct zcoll_ep *ep = NULL;
  cr_assert_eq(zcoll__tl_shm.connect(tl0, 1, &peer, addrs, lens, &ep), ZCOLL_OK, "%s",
               zcoll_last_error());
  return ep;
}

static zcoll_status_t unpack_forged(struct zcoll_ep *ep, int fd, uint64_t len) {
  struct zcoll__shm_rkey_blob b = {ZCOLL_SHM_MAGIC, fd, 0, 0, len};
  struct zcoll_tl_rkey *rk = NULL;
  zcoll_status_t st = zcoll__tl_shm.rkey_unpack(ep, &b, sizeof(b), &rk);
  if (st == ZCOLL_OK) zcoll__tl_shm.rkey_release(rk);
  return st;
}

/* A peer's key must name one of its own zcoll memfds: a /dev/shm file, a memfd of
 * another name (or another instance's token) are refused; so is a region larger than
 * this host's memory. */
Test(shm, keys_must_name_the_peers_own_memfds) {
  struct zcoll_tl *tl0 = open_rank(0), *tl1 = open_rank(1);
  struct zcoll_ep *ep = connect_to_self(tl0, tl1);
  char name[64];
  snprintf(name, sizeof(name), "/zcoll-test-%d", (int)getpid());
  int shmfd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
  cr_assert_geq(shmfd, 0);
  shm_unlink(name);
  cr_assert_eq(ftruncate(shmfd, 4096), 0);
  cr_assert_eq(unpack_forged(ep, shmfd, 4096), ZCOLL_ERR_TRANSPORT);
  cr_assert(strstr(zcoll_last_error(), "is not what it should be"), "%s", zcoll_last_error());
  int other = memfd_create("zcoll-0000000000000000-slots", MFD_CLOEXEC);
  cr_assert_geq(other, 0);
  cr_assert_eq(ftruncate(other, 4096), 0);
  cr_assert_eq(unpack_forged(ep, other, 4096), ZCOLL_ERR_TRANSPORT);
  /* rank 1's own slots: accepted; claiming more than the host has: refused. */
  void *slots = NULL;
  cr_assert_eq(zcoll__tl_shm.mem_alloc(tl1, 4096, &slots), ZCOLL_OK);
  cr_assert_eq(unpack_forged(ep, tl1->allocs[0].fd, 4096), ZCOLL_OK, "%s", zcoll_last_error());
  cr_assert_eq(unpack_forged(ep, tl1->allocs[0].fd, zcoll__shm_max_region() + 1),
               ZCOLL_ERR_TRANSPORT);
  cr_assert(strstr(zcoll_last_error(), "memory"), "%s", zcoll_last_error());
  close(shmfd);
  close(other);
  zcoll__tl_shm.close(tl0);
  zcoll__tl_shm.close(tl1);
  munmap(slots, 4096);
}

/* A peer dies while we sleep on the event_fd with nothing else going on: its pidfd
 * wakes us within a second, and poll names it. */
Test(shm, a_dead_peer_wakes_the_event_fd, .timeout = 30) {
  int down[2], up[2];
  cr_assert_eq(pipe(down), 0);
  cr_assert_eq(pipe(up), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    struct zcoll_tl *tl = open_rank(1);
    connect_pair(tl, 0, up[1], down[0]);
    char go;
    if (read(down[0], &go, 1) != 1) _exit(3);
    _exit(0); /* no close, no goodbye */
  }
  struct zcoll_tl *tl = open_rank(0);
  connect_pair(tl, 1, down[1], up[0]);
  struct zcoll_tl_event ev[4];
  int n;
  cr_assert_eq(zcoll__tl_shm.poll(tl, ev, 4, &n), ZCOLL_OK);
  cr_assert_eq(zcoll__tl_shm.arm(tl), ZCOLL_OK);
  double t0 = now();
  cr_assert_eq(write(down[1], "g", 1), 1);
  struct pollfd pf = {zcoll__tl_shm.event_fd(tl), POLLIN, 0};
  cr_assert_eq(poll(&pf, 1, 1000), 1, "the event_fd stayed quiet after the peer died");
  cr_assert_lt(now() - t0, 1.0);
  cr_assert_eq(zcoll__tl_shm.poll(tl, ev, 4, &n), ZCOLL_OK);
  cr_assert_eq(n, 1);
  cr_assert_eq(ev[0].kind, ZCOLL_TL_EV_PEER_LOST);
  cr_assert_eq(ev[0].peer, 1);
  cr_assert(strstr(zcoll_last_error(), "rank 1"), "%s", zcoll_last_error());
  waitpid(pid, NULL, 0);
  zcoll__tl_shm.close(tl);
}
