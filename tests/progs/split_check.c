/*
 * split_check -- zcoll_comm_split between processes.
 *
 *   split_check          parity groups ranked by descending parent rank (key -rank), each
 *                        checked by an allreduce and an allgather, made and destroyed three
 *                        times, then once more; then the parent is
 *                        destroyed and the child used again. "split_check: rank R ok",
 *                        after "split_check: rank R: N shm instances, +M network sockets"
 *                        (open in this process once the child exists: 1 shm instance where
 *                        it shares its parent's, +0 sockets where it needed no rendezvous).
 *   split_check nofetch  the same with pidfd_getfd denied (seccomp): the child's control
 *                        falls back to a rendezvous of its own (+1 or more sockets).
 *   split_check pairs    groups of consecutive ranks (0-1, 2-3, ...) instead of parities:
 *                        with ZCOLL_TEST_SPLIT_NODES=2,2,... a split per host of a job on
 *                        several hosts (shm inside them, UCX between).
 *   split_check kill     parent rank 1 dies (exits without a word) just after the split:
 *                        its child (the odd ranks) must fail with ZCOLL_ERR_PEER_FAILED,
 *                        the even ranks' child must go on working. Each survivor prints
 *                        "split_check: rank R: odd child failed: ..." or
 *                        "split_check: rank R: even child ok after rank 1 died".
 *   split_check killlead the same with parent rank 3, the odd child's leader, the victim.
 */
#include <dirent.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "zcoll.h"

/* The groups: by parity, or (pairs) of consecutive ranks, as hosts of two ranks each
 * (ZCOLL_TEST_SPLIT_NODES=2,2,...). */
static int pairs;
static int color_of(int r) { return pairs ? r / 2 : r % 2; }

static int child_check(zcoll_comm_t *child, int rank, int p) {
  /* members: parent ranks of rank's group, by descending parent rank */
  int want[64], n = 0;
  for (int r = p - 1; r >= 0; r--)
    if (color_of(r) == color_of(rank)) want[n++] = r;
  int64_t sum = rank, want_sum = 0;
  int32_t mine = rank, got[64];
  for (int i = 0; i < n; i++) want_sum += want[i];
  if (zcoll_comm_size(child) != n || want[zcoll_comm_rank(child)] != rank ||
      zcoll_allreduce(child, ZCOLL_IN_PLACE, &sum, 1, ZCOLL_INT64, ZCOLL_SUM) != ZCOLL_OK ||
      zcoll_allgather(child, &mine, got, 1, ZCOLL_INT32) != ZCOLL_OK || sum != want_sum) {
    fprintf(stderr, "split_check: rank %d: child wrong: %s\n", rank, zcoll_comm_last_error(child));
    return 1;
  }
  for (int i = 0; i < n; i++)
    if (got[i] != want[i]) return 1;
  return 0;
}

/* The shm transport instances this process has open: one memfd inbox each. A child that
 * shares its parent's instances (core/family.h) opens none. */
static int shm_inboxes(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    char path[300], target[256];
    snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
    ssize_t len = readlink(path, target, sizeof(target) - 1);
    if (len <= 0) continue;
    target[len] = '\0';
    if (strstr(target, "memfd:zcoll-") && strstr(target, "-inbox")) n++;
  }
  if (d) closedir(d);
  return n;
}

/* Network sockets this process holds: a child with a rendezvous of its own adds one per
 * member (and its leader one per member); one whose control runs over socket pairs none. */
static int inet_sockets(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    int fd = atoi(e->d_name), domain = 0;
    socklen_t len = sizeof(domain);
    if (fd != dirfd(d) && !getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) &&
        (domain == AF_INET || domain == AF_INET6))
      n++;
  }
  if (d) closedir(d);
  return n;
}

/* Denies pidfd_getfd to this process (seccomp): the shm transport then reaches its peers'
 * memory through /proc, and a split's leader cannot take its members' socket pairs. */
static int deny_pidfd_getfd(void) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_getfd, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {sizeof(f) / sizeof(f[0]), f};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
         prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

int main(int argc, char **argv) {
  /* kill: rank 1, a member of the odd child; killlead: rank 3, that child's leader */
  int kill_mode = argc > 1 && !strncmp(argv[1], "kill", 4);
  int victim = argc > 1 && !strcmp(argv[1], "killlead") ? 3 : 1;
  pairs = argc > 1 && !strcmp(argv[1], "pairs");
  if (argc > 1 && !strcmp(argv[1], "nofetch") && deny_pidfd_getfd()) {
    perror("split_check: seccomp");
    return 1;
  }
  zcoll_comm_t *comm, *child = NULL;
  if (zcoll_comm_init(&comm, NULL) != ZCOLL_OK) return 1;
  int rank = zcoll_comm_rank(comm), p = zcoll_comm_size(comm);
  /* Children made and destroyed in turn: each reuses the channel set (and maybe the
   * addresses) of the one before, which must leave nothing behind that the next could take
   * for its own. */
  for (int i = 0; !kill_mode && i < 3; i++)
    if (zcoll_comm_split(comm, color_of(rank), -rank, &child) != ZCOLL_OK || !child ||
        child_check(child, rank, p) || zcoll_comm_destroy(child) != ZCOLL_OK) {
      fprintf(stderr, "split_check: rank %d: child %d: %s\n", rank, i, zcoll_last_error());
      return 1;
    }
  int sockets = inet_sockets();
  if (zcoll_comm_split(comm, color_of(rank), -rank, &child) != ZCOLL_OK || !child) {
    fprintf(stderr, "split_check: rank %d: split: %s\n", rank, zcoll_last_error());
    return 1;
  }
  if (!kill_mode) {
    printf("split_check: rank %d: %d shm instance%s, %+d network sockets\n", rank, shm_inboxes(),
           shm_inboxes() == 1 ? "" : "s", inet_sockets() - sockets);
    if (child_check(child, rank, p) || zcoll_comm_destroy(comm) != ZCOLL_OK ||
        child_check(child, rank, p) || zcoll_comm_destroy(child) != ZCOLL_OK)
      return 1;
    printf("split_check: rank %d ok\n", rank);
    return 0;
  }
  if (rank == victim) _exit(0); /* no goodbye to anyone */
  zcoll_status_t st = ZCOLL_OK;
  for (int i = 0; i < 20 && st == ZCOLL_OK; i++) {
    float v = 1.0f;
    st = zcoll_allreduce(child, ZCOLL_IN_PLACE, &v, 1, ZCOLL_FLOAT32, ZCOLL_SUM);
    if (st == ZCOLL_OK && v != (float)zcoll_comm_size(child))
      st = ZCOLL_ERR_MISMATCH; /* a wrong sum */
    usleep(20000);             /* time for the news of the death to reach every survivor */
  }
  if (rank % 2)
    printf("split_check: rank %d: odd child failed: %s: %s\n", rank, zcoll_strerror(st),
           zcoll_comm_last_error(child));
  else if (st == ZCOLL_OK)
    printf("split_check: rank %d: even child ok after rank %d died\n", rank, victim);
  else
    printf("split_check: rank %d: even child FAILED: %s\n", rank, zcoll_comm_last_error(child));
  fflush(stdout);
  zcoll_comm_abort(child);
  zcoll_comm_abort(comm); /* it lost the victim too */
  return 0;
}
