/*
 * zcoll_info says what ZCOLL_PROGRESS will do on this host before a job runs: the
 * progress thread per rank against the cores.
 */
#include <criterion/criterion.h>

#include "spawn.h"

static char *info(const char *const *env) {
  const char *argv[] = {SP_BIN("zcoll_info"), "-c", NULL};
  struct sp_result r = sp_run(argv, env, 20);
  cr_assert_eq(r.status, 0, "%s", r.out);
  return r.out;
}

Test(info, progress_thread_against_the_cores) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  char many[64];
  snprintf(many, sizeof(many), "ZCOLL_LOCAL_SIZE=%ld", cores);
  const char *crowded[] = {"ZCOLL_PROGRESS=thread", many, NULL};
  char *out = info(crowded);
  cr_expect(strstr(out, "more threads than cores"), "%s", out);
  free(out);
  if (cores >= 2) {
    const char *roomy[] = {"ZCOLL_PROGRESS=thread", "ZCOLL_LOCAL_SIZE=1", NULL};
    out = info(roomy);
    cr_expect(strstr(out, "cores: fits"), "%s", out);
    free(out);
  }
  const char *caller[] = {"ZCOLL_PROGRESS=caller", NULL};
  out = info(caller);
  cr_expect(strstr(out, "no thread: requests move only inside zcoll calls"), "%s", out);
  free(out);
}
