/*
 * Launching through PMIx, the parts that need no PMIx server: which source of the rank
 * wins, and that a process without a server (plain runs, a launcher's leftover
 * variables) neither loads libpmix needlessly nor fails. tests/launch_pmix.sh runs real
 * jobs under srun and mpirun.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zcoll.h"

static const char *launcher_vars[] = {"OMPI_COMM_WORLD_RANK",
                                      "OMPI_COMM_WORLD_SIZE",
                                      "PMI_RANK",
                                      "PMI_SIZE",
                                      "SLURM_PROCID",
                                      "SLURM_NTASKS",
                                      "PMIX_NAMESPACE",
                                      "PMIX_RANK",
                                      "PMIX_SERVER_URI4",
                                      "PMIX_SERVER_URI41",
                                      "PMIX_SERVER_URI3",
                                      "PMIX_SERVER_URI2",
                                      "PMIX_SERVER_URI21",
                                      "ZCOLL_RANK",
                                      "ZCOLL_SIZE",
                                      "ZCOLL_ROOT",
                                      NULL};

/* This process as if started by no launcher at all (ctest may itself run in a job). */
static void no_launcher(void) {
  for (int i = 0; launcher_vars[i]; i++) unsetenv(launcher_vars[i]);
}

/* Variables of a PMIx server that is not there. */
static void pmix_leftovers(void) {
  setenv("PMIX_NAMESPACE", "zcoll-test-no-such-job", 1);
  setenv("PMIX_RANK", "0", 1);
  setenv("PMIX_SERVER_URI41", "pmix-server.1;tcp4://127.0.0.1:1", 1);
}

static int pmix_loaded(void) {
  void *h = dlopen("libpmix.so.2", RTLD_NOW | RTLD_NOLOAD);
  if (h) dlclose(h);
  return h != NULL;
}

static const char *launcher_of(zcoll_config_t *cfg, int *size) {
  zcoll_comm_t *comm;
  zcoll_status_t st = zcoll_comm_init(&comm, cfg);
  cr_assert_eq(st, ZCOLL_OK, "%s: %s", zcoll_strerror(st), zcoll_last_error());
  static char name[32];
  snprintf(name, sizeof(name), "%s", zcoll_comm_launcher(comm));
  *size = zcoll_comm_size(comm);
  cr_assert_eq(zcoll_comm_destroy(comm), ZCOLL_OK);
  return name;
}

Test(launch_pmix, plain_run_does_not_load_libpmix) {
  no_launcher();
  int size;
  cr_expect_str_eq(launcher_of(NULL, &size), "none");
  cr_expect_eq(size, 1);
  cr_expect_not(pmix_loaded(), "libpmix was loaded without a PMIx server in sight");
}

/* A shell started from a job keeps PMIX_*: the process is a job of one, not an error. */
Test(launch_pmix, no_server_falls_back_to_a_job_of_one) {
  no_launcher();
  pmix_leftovers();
  int size;
  cr_expect_str_eq(launcher_of(NULL, &size), "none");
  cr_expect_eq(size, 1);
  /* A second communicator does not ask the absent server again, and works alike. */
  cr_expect_str_eq(launcher_of(NULL, &size), "none");
}

Test(launch_pmix, no_server_falls_back_to_the_launchers_variables) {
  no_launcher();
  pmix_leftovers();
  setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
  int size;
  cr_expect_str_eq(launcher_of(NULL, &size), "Open MPI");
}

/* Rank and size set from code win over PMIx, which is then not even loaded. */
Test(launch_pmix, explicit_rank_wins_over_pmix) {
  no_launcher();
  pmix_leftovers();
  zcoll_config_t *cfg;
  cr_assert_eq(zcoll_config_create(&cfg), ZCOLL_OK);
  cr_assert_eq(zcoll_config_set(cfg, "RANK", "0"), ZCOLL_OK);
  cr_assert_eq(zcoll_config_set(cfg, "SIZE", "1"), ZCOLL_OK);
  int size;
  cr_expect_str_eq(launcher_of(cfg, &size), "ZCOLL_RANK");
  zcoll_config_free(cfg);
  cr_expect_not(pmix_loaded(), "libpmix was loaded although ZCOLL_RANK/SIZE were given");
}
