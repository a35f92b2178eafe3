/*
 * requests_tsan -- the request tests' rank-thread scenarios as a plain program, for the
 * ThreadSanitizer build (Criterion's runner cannot run under it: Snaipe/Criterion#274):
 * ranks are threads over the loopback transport, each with a progress thread
 * (ZCOLL_PROGRESS=thread) or without, so the application's calls, the progress threads
 * and the ranks all race if they can; and the vector interface's tasks (threads that
 * commit) with them; a split's child on a thread of its own beside its parent, over the
 * transport instances they share; a partial allreduce's rounds, decided on the shared
 * ticket counter while the progress threads move them; and a thread that dumps the flight
 * recorder while its rank runs them. Exit status 0 when every scenario passed.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "../requests_bodies.h"
#include "../vec_bodies.h"
#include "../split_bodies.h"
#include "../partial_bodies.h"

static int run(const char *what, int p, rt_body body, void *arg, const char *progress,
               const char *algo) {
  struct rt_job job = {.size = p, .body = body, .arg = arg};
  job.settings[0][0] = "PROGRESS";
  job.settings[0][1] = progress;
  job.settings[1][0] = "ALGO";
  job.settings[1][1] = algo;
  job.settings[2][0] = "CHUNK_BYTES";
  job.settings[2][1] = "4096";
  job.settings[3][0] = "TIMEOUT";
  job.settings[3][1] = "120";
  unsigned long f = rt_run(&job);
  printf("%-10s p=%d %-7s %-9s %s%s\n", what, p, progress, algo, f ? "FAILED: " : "ok",
         f ? job.first : "");
  return f != 0;
}

/* A thread dumping the rank's flight recorder over and over while the rank runs many_body:
 * with 4 entries, the dumps read entries being rewritten (zcoll_comm_dump skips those). */
struct dumper {
  zcoll_comm_t *comm;
  atomic_int stop, bad;
};

static void *dump_loop(void *arg) {
  struct dumper *d = arg;
  while (!atomic_load(&d->stop)) {
    if (zcoll_comm_dump(d->comm) != ZCOLL_OK) atomic_store(&d->bad, 1);
    usleep(200); /* the ranks need the cores more */
  }
  return NULL;
}

static void dump_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  struct dumper d = {.comm = comm};
  pthread_t t;
  if (pthread_create(&t, NULL, dump_loop, &d)) {
    rt_fail(job, rank, "pthread_create failed");
    return;
  }
  many_body(job, rank, comm);
  atomic_store(&d.stop, 1);
  pthread_join(t, NULL);
  if (atomic_load(&d.bad)) rt_fail(job, rank, "zcoll_comm_dump failed during collectives");
}

static void partial_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  struct pb_args a = {2, 40, 2, 1, 100, ZCOLL_SUM};
  char msg[400];
  if (pb_run(comm, &a, msg, sizeof(msg))) rt_fail(job, rank, msg);
}

static int run_dump(int p, const char *progress) {
  struct rt_job job = {.size = p, .body = dump_body};
  static const char *const set[][2] = {
      {"FLIGHT_RECORDER", "4"}, {"LOG", "error"}, {"CHUNK_BYTES", "4096"}};
  for (int i = 0; i < 3; i++) {
    job.settings[i][0] = set[i][0];
    job.settings[i][1] = set[i][1];
  }
  job.settings[3][0] = "PROGRESS";
  job.settings[3][1] = progress;
  unsigned long f = rt_run(&job);
  printf("%-10s p=%d %-7s %-9s %s%s\n", "dump", p, progress, "auto", f ? "FAILED: " : "ok",
         f ? job.first : "");
  return f != 0;
}

int main(void) {
  int bad = 0;
  static const char *const algos[] = {"ring", "butterfly", "tree"};
  for (int a = 0; a < 3; a++) {
    bad += run("many", 3, many_body, NULL, "thread", algos[a]);
    bad += run("persistent", 2, persistent_body, NULL, "thread", algos[a]);
  }
  bad += run("many", 2, many_body, NULL, "caller", "auto");
  bad += run("overlap", 3, overlap_body, (void *)1, "thread", "ring");
  bad += run("error", 3, poison_body, NULL, "thread", "auto");
  /* task threads commit while the rank's thread gets and the progress thread pumps */
  bad += run("vec", 3, two_keys_body, NULL, "thread", "auto");
  bad += run("vec", 2, two_keys_body, NULL, "caller", "auto");
  /* a parent and its child over the instances they share, from two threads per rank */
  bad += run("split", 3, concurrent_body, NULL, "caller", "auto");
  bad += run("split", 2, concurrent_body, NULL, "thread", "auto");
  bad += run("splitvec", 3, vec_child_body, NULL, "caller", "auto");
  bad += run("partial", 3, partial_body, NULL, "thread", "auto");
  bad += run("partial", 3, partial_body, NULL, "caller", "auto");
  bad += run_dump(3, "thread");
  bad += run_dump(2, "caller");
  printf("requests_tsan: %s\n", bad ? "FAILED" : "all passed");
  return bad != 0;
}
