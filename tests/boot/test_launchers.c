/*
 * Rank and size from the launcher in use: Open MPI's, Slurm's and PMI's variables (with
 * ZCOLL_ROOT naming rank 0's rendezvous, which rank 0 then binds itself), and a real
 * `mpirun`; torchrun's variables without a zcoll launcher are an error, not a job of one. Each job runs the correctness matrix on every rank.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "spawn.h"
#include "zcoll.h"

/* A port that was free a moment ago (rank 0 binds it itself here, as under mpirun). */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof(a);
  cr_assert(fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
            !getsockname(fd, (struct sockaddr *)&a, &len));
  close(fd);
  return ntohs(a.sin_port);
}

static void run_with(const char *rank_var, const char *size_var, int np) {
  char root[64], size[64];
  snprintf(root, sizeof(root), "ZCOLL_ROOT=127.0.0.1:%d", free_port());
  snprintf(size, sizeof(size), "%s=%d", size_var, np);
  struct sp_async jobs[8];
  const char *argv[] = {SP_PROG("allreduce_check"), "65536", NULL};
  for (int r = 0; r < np; r++) {
    char rank[64];
    snprintf(rank, sizeof(rank), "%s=%d", rank_var, r);
    const char *env[] = {rank, size, root, "ZCOLL_TIMEOUT=60", NULL};
    jobs[r] = sp_start(argv, env);
  }
  int ok = 0;
  for (int r = 0; r < np; r++) {
    struct sp_result x = sp_finish(&jobs[r], 120);
    cr_expect_eq(x.status, 0, "%s rank %d: exit %d\n%s", rank_var, r, x.status, x.out);
    if (r == 0 && x.out && strstr(x.out, "every element exact on every rank")) ok = 1;
    free(x.out);
  }
  cr_expect(ok, "%s: rank 0 did not report an exact job", rank_var);
}

Test(launchers, open_mpi_variables, .timeout = 200) {
  run_with("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", 3);
}

Test(launchers, slurm_variables, .timeout = 200) { run_with("SLURM_PROCID", "SLURM_NTASKS", 3); }

Test(launchers, pmi_variables, .timeout = 200) { run_with("PMI_RANK", "PMI_SIZE", 2); }

Test(launchers, real_mpirun, .timeout = 200) {
  if (access("/usr/bin/mpirun", X_OK) != 0) cr_skip_test("Open MPI's mpirun is not installed");
  char root[64];
  snprintf(root, sizeof(root), "ZCOLL_ROOT=127.0.0.1:%d", free_port());
  const char *argv[] = {"/usr/bin/mpirun",
                        "--allow-run-as-root",
                        "--oversubscribe",
                        "-np",
                        "3",
                        "-x",
                        root,
                        SP_PROG("allreduce_check"),
                        "65536",
                        NULL};
  struct sp_result r = sp_run(argv, NULL, 180);
  cr_assert_eq(r.status, 0, "%s", r.out);
  cr_assert(strstr(r.out, "3 ranks over") && strstr(r.out, "every element exact"), "%s", r.out);
  free(r.out);
}

/* torchrun gives RANK and WORLD_SIZE but no rendezvous of zcoll's: init made a job of one,
 * each rank averaging only itself. Now an error naming what it found and what to do; a
 * WORLD_SIZE of 1 is still a job of one. (Criterion runs each test in its own process.) */
Test(launchers, torchrun_world_size_is_refused, .timeout = 30) {
  const char *zvars[] = {"ZCOLL_RANK",           "ZCOLL_SIZE", "ZCOLL_ROOT",  "PMIX_NAMESPACE",
                         "OMPI_COMM_WORLD_RANK", "PMI_RANK",   "SLURM_PROCID"};
  for (size_t i = 0; i < sizeof(zvars) / sizeof(zvars[0]); i++) unsetenv(zvars[i]);
  setenv("RANK", "1", 1);
  setenv("LOCAL_RANK", "1", 1);
  setenv("WORLD_SIZE", "3", 1);
  zcoll_comm_t *comm = NULL;
  cr_expect_eq(zcoll_comm_init(&comm, NULL), ZCOLL_ERR_INVALID_ARG);
  const char *msg = zcoll_last_error();
  cr_expect(strstr(msg, "WORLD_SIZE=3") && strstr(msg, "zcoll_run") && strstr(msg, "unique id"),
            "the message: %s", msg);
  cr_expect_null(comm);
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "1", 1);
  cr_assert_eq(zcoll_comm_init(&comm, NULL), ZCOLL_OK, "%s", zcoll_last_error());
  cr_expect_eq(zcoll_comm_size(comm), 1);
  cr_expect_eq(zcoll_comm_destroy(comm), ZCOLL_OK);
}
