/*
 * uid_init -- a job started from a unique id (zcoll_get_unique_id, zcoll_comm_init_rank)
 * moved through a file, as an application moves it through MPI_Bcast or a store.
 *
 *   uid_init DIR          under zcoll_run: this process is rank (ZCOLL_RANK + 1) % ZCOLL_SIZE
 *                         of the job -- not what the environment says, which init_rank must
 *                         ignore; that rank 0 makes the id into DIR/id, the others wait for
 *                         it; then an allreduce and an allgather of the ranks are checked.
 *                         Prints "uid_init: rank R of P ok over TRANSPORT".
 *   uid_init DIR as R P   rank R of P (R 0 makes the id into DIR/id), whatever the
 *                         environment says; the same checks.
 *   uid_init DIR late     after such a job: joins DIR/id's job as rank 1 of 2, which must
 *                         fail at once (the rendezvous closed). Prints "uid_init: late: ..."
 *   uid_init DIR forged   rank 1 of 2 with DIR/id's key altered: must fail.
 *   uid_init - reuse      one process: an id inits a job of one, then again (refused), and
 *                         bytes that are no id (refused).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zcoll.h"

static int read_id(const char *dir, zcoll_unique_id_t *id) {
  char path[512];
  snprintf(path, sizeof(path), "%s/id", dir);
  for (int tries = 0; tries < 3000; tries++) { /* 30 s */
    FILE *f = fopen(path, "rb");
    if (f) {
      size_t n = fread(id, 1, sizeof(*id), f);
      fclose(f);
      if (n == sizeof(*id)) return 0;
    }
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  fprintf(stderr, "uid_init: no id in %s\n", path);
  return -1;
}

static int write_id(const char *dir, const zcoll_unique_id_t *id) {
  char tmp[512], path[512];
  snprintf(tmp, sizeof(tmp), "%s/id.tmp", dir);
  snprintf(path, sizeof(path), "%s/id", dir);
  FILE *f = fopen(tmp, "wb");
  if (!f || fwrite(id, 1, sizeof(*id), f) != sizeof(*id) || fclose(f) != 0) return -1;
  return rename(tmp, path); /* whole, or not there */
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A join that must fail: how long it took and what it said. */
static int must_fail(const char *what, const zcoll_unique_id_t *id, int rank, int size) {
  zcoll_comm_t *comm = NULL;
  double t0 = now();
  zcoll_status_t st = zcoll_comm_init_rank(&comm, id, rank, size, NULL);
  if (st == ZCOLL_OK) {
    fprintf(stderr, "uid_init: %s: init_rank succeeded\n", what);
    zcoll_comm_abort(comm);
    return 1;
  }
  printf("uid_init: %s: %s after %.1f s: %s\n", what, zcoll_strerror(st), now() - t0,
         zcoll_last_error());
  return 0;
}

static int reuse(void) {
  zcoll_unique_id_t id, junk;
  zcoll_comm_t *comm = NULL;
  if (zcoll_get_unique_id(&id) != ZCOLL_OK ||
      zcoll_comm_init_rank(&comm, &id, 0, 1, NULL) != ZCOLL_OK) {
    fprintf(stderr, "uid_init: a job of one: %s\n", zcoll_last_error());
    return 1;
  }
  float x = 2.5f;
  if (zcoll_allreduce(comm, ZCOLL_IN_PLACE, &x, 1, ZCOLL_FLOAT32, ZCOLL_SUM) != ZCOLL_OK ||
      x != 2.5f || zcoll_comm_destroy(comm) != ZCOLL_OK) {
    fprintf(stderr, "uid_init: a job of one's allreduce: %s\n", zcoll_last_error());
    return 1;
  }
  memset(&junk, 0x42, sizeof(junk));
  return must_fail("reused by rank 0", &id, 0, 1) || must_fail("not an id", &junk, 0, 2) ||
         must_fail("rank 2 of 2", &id, 2, 2);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  const char *dir = argv[1], *mode = argc > 2 ? argv[2] : "";
  if (!strcmp(mode, "reuse")) return reuse();
  zcoll_unique_id_t id;
  if (!strcmp(mode, "late") || !strcmp(mode, "forged")) {
    if (read_id(dir, &id)) return 1;
    if (!strcmp(mode, "forged")) id.bytes[40] ^= 0x5a; /* inside the key */
    return must_fail(mode, &id, 1, 2);
  }
  int p, rank;
  if (!strcmp(mode, "as") && argc > 4) {
    rank = atoi(argv[3]);
    p = atoi(argv[4]);
  } else {
    const char *er = getenv("ZCOLL_RANK"), *es = getenv("ZCOLL_SIZE");
    if (!er || !es) return 2;
    p = atoi(es);
    rank = (atoi(er) + 1) % p;
  }
  if (rank == 0 && (zcoll_get_unique_id(&id) != ZCOLL_OK || write_id(dir, &id))) {
    fprintf(stderr, "uid_init: making the id: %s (%s)\n", zcoll_last_error(), strerror(errno));
    return 1;
  }
  if (rank != 0 && read_id(dir, &id)) return 1;
  zcoll_comm_t *comm = NULL;
  if (zcoll_comm_init_rank(&comm, &id, rank, p, NULL) != ZCOLL_OK) {
    fprintf(stderr, "uid_init: rank %d: init_rank: %s\n", rank, zcoll_last_error());
    return 1;
  }
  int64_t sum = rank;
  int32_t mine = rank * 3 + 1, got[64];
  if (zcoll_comm_rank(comm) != rank || zcoll_comm_size(comm) != p || p > 64 ||
      zcoll_allreduce(comm, ZCOLL_IN_PLACE, &sum, 1, ZCOLL_INT64, ZCOLL_SUM) != ZCOLL_OK ||
      zcoll_allgather(comm, &mine, got, 1, ZCOLL_INT32) != ZCOLL_OK) {
    fprintf(stderr, "uid_init: rank %d: %s\n", rank, zcoll_comm_last_error(comm));
    return 1;
  }
  int bad = sum != (int64_t)p * (p - 1) / 2;
  for (int r = 0; r < p; r++) bad |= got[r] != r * 3 + 1;
  if (bad) {
    fprintf(stderr, "uid_init: rank %d: wrong results\n", rank);
    return 1;
  }
  printf("uid_init: rank %d of %d ok over %s, launcher %s\n", rank, p, zcoll_comm_transport(comm),
         zcoll_comm_launcher(comm));
  fflush(stdout);
  return zcoll_comm_destroy(comm) == ZCOLL_OK ? 0 : 1;
}
