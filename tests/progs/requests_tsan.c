/*
 * requests_tsan -- the request tests' rank-thread scenarios as a plain program, for the
 * ThreadSanitizer build (Criterion's runner cannot run under it: Snaipe/Criterion#274):
 * ranks are threads over the loopback transport, each with a progress thread
 * (ZCOLL_PROGRESS=thread) or without, so the application's calls, the progress threads
 * and the ranks all race if they can; and the vector interface's tasks (threads that
 * commit) with them. Exit status 0 when every scenario passed.
 */
#include <stdio.h>

#include "../requests_bodies.h"
#include "../vec_bodies.h"

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
  printf("requests_tsan: %s\n", bad ? "FAILED" : "all passed");
  return bad != 0;
}
