/*
 * The rendezvous's setup: no key (warning or ZCOLL_REQUIRE_KEY), the key kept out of
 * zcoll_info, the listening socket (the address named, a second communicator), star
 * socket options, the descriptor limit, and the job id. 127.0.0.1 only.
 */
#include <netinet/tcp.h>
#include <sys/resource.h>

#include "rendezvous_helpers.h"

/* ---- configuration: no key, redaction ------------------------------------------- */

Test(rendezvous, require_key_without_a_key_is_an_error, .timeout = 30) {
  char err[600];
  const char *set[] = {"REQUIRE_KEY", "1", NULL};
  zcoll_status_t st = one_rank(1, 2, free_port(), -1, set, err, sizeof(err));
  cr_expect_eq(st, ZCOLL_ERR_BOOTSTRAP, "%s", zcoll_strerror(st));
  cr_expect(strstr(err, "ZCOLL_REQUIRE_KEY"), "%s", err);
  /* A job of one has no rendezvous to protect. */
  st = one_rank(0, 1, free_port(), -1, set, err, sizeof(err));
  cr_expect_eq(st, ZCOLL_OK, "%s", err);
}

/* No key: rank 0 says the rendezvous is open to anyone (and the job still runs). */
Test(rendezvous, no_key_is_a_warning_at_init, .timeout = 30) {
  char path[] = "/tmp/zcoll_rdv_warn_XXXXXX";
  int logfd = mkstemp(path);
  cr_assert(logfd >= 0);
  unlink(path);
  int saved = dup(2);
  dup2(logfd, 2);
  char err[600];
  const char *set[] = {"LOG", "warn", "TIMEOUT", "1", NULL};
  zcoll_status_t st = one_rank(0, 2, free_port(), -1, set, err, sizeof(err));
  dup2(saved, 2);
  close(saved);
  char log[8192] = "";
  ssize_t n = pread(logfd, log, sizeof(log) - 1, 0);
  log[n > 0 ? n : 0] = '\0';
  close(logfd);
  cr_expect_eq(st, ZCOLL_ERR_TIMEOUT, "%s", err); /* nobody else came */
  cr_expect(strstr(log, "the rendezvous is unauthenticated"), "%s", log);
}

Test(rendezvous, zcoll_info_does_not_print_the_key, .timeout = 30) {
  const char *argv[] = {SP_BIN("zcoll_info"), "-c", NULL};
  const char *env[] = {"ZCOLL_JOB_KEY=hush-7f3a9c-secret", NULL};
  struct sp_result r = sp_run(argv, env, 20);
  cr_assert_eq(r.status, 0, "%s", r.out);
  cr_expect_null(strstr(r.out, "hush-7f3a9c"), "%s", r.out);
  cr_expect(strstr(r.out, "ZCOLL_JOB_KEY=(set)"), "%s", r.out);
  free(r.out);
  /* Nor in the error about a bad value (this one is too long). */
  char big[300] = "ZCOLL_JOB_KEY=hush-7f3a9c-";
  memset(big + strlen(big), 'x', 200);
  const char *env2[] = {big, NULL};
  r = sp_run(argv, env2, 20);
  cr_expect_eq(r.status, 1, "%s", r.out);
  cr_expect_null(strstr(r.out, "hush-7f3a9c"), "%s", r.out);
  free(r.out);
  /* Nor through zcoll_config_get. */
  zcoll_config_t *cfg;
  char buf[64];
  cr_assert_eq(zcoll_config_create(&cfg), ZCOLL_OK);
  cr_assert_eq(zcoll_config_set(cfg, "JOB_KEY", "hush-7f3a9c"), ZCOLL_OK);
  cr_assert_eq(zcoll_config_get(cfg, "JOB_KEY", buf, sizeof(buf)), ZCOLL_OK);
  cr_expect_str_eq(buf, "(set)");
  zcoll_config_free(cfg);
}

/* ---- the listening socket ------------------------------------------------------ */

/* Second communicator in the same processes: rank 0's ZCOLL_ROOT_FD was used by the
 * first one. */
Test(rendezvous, second_init_under_zcoll_run_works, .timeout = 120) {
  const char *argv[] = {SP_BIN("zcoll_run"), "-np", "3", SP_PROG("run_twice"), NULL};
  const char *env[] = {"ZCOLL_TRANSPORT=shm", "ZCOLL_TIMEOUT=30", NULL};
  struct sp_result r = sp_run(argv, env, 100);
  cr_expect_eq(r.status, 0, "%s", r.out);
  cr_expect(strstr(r.out, "twice ok"), "%s", r.out);
  free(r.out);
}

Test(rendezvous, second_job_on_the_same_inherited_socket, .timeout = 60) {
  struct rt_job job;
  job_init(&job, 3, "k");
  cr_assert_eq(rt_run_prepared(&job), 0, "%s", job.first);
  cr_assert_eq(rt_run_prepared(&job), 0, "second: %s", job.first);
  close(job.lfd);
}

Test(rendezvous, gone_root_fd_falls_back_to_root, .timeout = 60) {
  struct rt_job job;
  job_init(&job, 2, "k");
  close(job.lfd);
  job.lfd = 987; /* not open: rank 0 must listen on ZCOLL_ROOT itself */
  cr_assert_eq(rt_run_prepared(&job), 0, "%s", job.first);
}

/* The LISTEN entry of `port` in /proc/net/tcp: its local address as hex, or "". */
static void listen_addr(int port, char *out, size_t len) {
  out[0] = '\0';
  FILE *f = fopen("/proc/net/tcp", "r");
  cr_assert_not_null(f);
  char line[512];
  while (fgets(line, sizeof(line), f)) {
    char local[64];
    unsigned st, p;
    if (sscanf(line, " %*d: %63[0-9A-Fa-f]:%x %*s %x", local, &p, &st) == 3 &&
        p == (unsigned)port && st == 0x0A)
      snprintf(out, len, "%s", local);
  }
  fclose(f);
}

struct lone_root {
  int port;
  const char *root;
  zcoll_status_t st;
};

static void *lone_root_main(void *arg) {
  struct lone_root *l = arg;
  char err[600];
  const char *set[] = {"ROOT", l->root, "TIMEOUT", "2", NULL};
  l->st = one_rank(0, 2, l->port, -1, set, err, sizeof(err));
  return NULL;
}

static void check_bind(const char *fmt, const char *want) {
  struct lone_root l = {free_port(), NULL, 0};
  char root[64], addr[64] = "";
  snprintf(root, sizeof(root), fmt, l.port);
  l.root = root;
  pthread_t th;
  pthread_create(&th, NULL, lone_root_main, &l);
  for (int i = 0; i < 100 && !addr[0]; i++) {
    usleep(20 * 1000);
    listen_addr(l.port, addr, sizeof(addr));
  }
  pthread_join(th, NULL);
  cr_expect_str_eq(addr, want, "%s", root);
  cr_expect_eq(l.st, ZCOLL_ERR_TIMEOUT, "%s", zcoll_strerror(l.st));
}

Test(rendezvous, loopback_root_binds_loopback_only, .timeout = 60) {
  check_bind("127.0.0.1:%d", "0100007F");
}

Test(rendezvous, every_interface_only_when_asked, .timeout = 60) {
  check_bind("0.0.0.0:%d", "00000000");
}

Test(rendezvous, star_sockets_have_keepalive_and_user_timeout) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  zcoll__sock_tune(fd, 30);
  int v = 0;
  socklen_t l = sizeof(v);
  cr_expect(!getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &v, &l) && v == 1);
  cr_expect(!getsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &v, &l) && v == 10, "idle %d", v);
  cr_expect(!getsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &v, &l) && v == 3, "count %d", v);
  unsigned u = 0;
  l = sizeof(u);
  cr_expect(!getsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &u, &l) && u == 30000, "user %u", u);
  close(fd);
}

Test(rendezvous, fd_limit_is_raised_or_reported) {
  struct rlimit rl;
  cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 2048) cr_skip_test("hard limit too low");
  struct rlimit low = {256, rl.rlim_max};
  cr_assert_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
  cr_expect_eq(zcoll__sock_reserve_fds(2000, "test"), ZCOLL_OK, "%s", zcoll_last_error());
  cr_assert_eq(getrlimit(RLIMIT_NOFILE, &low), 0);
  cr_expect_geq(low.rlim_cur, 2000);
  struct rlimit tight = {100, 200};
  cr_assert_eq(setrlimit(RLIMIT_NOFILE, &tight), 0);
  cr_expect_eq(zcoll__sock_reserve_fds(1000, "rank 0 of this job"), ZCOLL_ERR_BOOTSTRAP);
  cr_expect(strstr(zcoll_last_error(), "hard limit"), "%s", zcoll_last_error());
}

/* The star of 70 ranks under a soft limit it would not fit in. */
/* The rank threads share one descriptor table: ranks 1..69 wait until rank 0 has raised
 * the soft limit, or their own sockets (not rank 0's star) would hit it first. */
static void wait_for_the_raise(struct rt_job *job, int rank) {
  (void)job;
  struct rlimit rl;
  for (int i = 0; rank > 0 && i < 30000; i++) {
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > 100) return;
    usleep(1000);
  }
}

Test(rendezvous, star_grows_past_a_low_soft_fd_limit, .timeout = 120) {
  struct rlimit rl;
  cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 1024) cr_skip_test("hard limit too low");
  struct rlimit low = {100, rl.rlim_max};
  struct rt_job job;
  job_init(&job, 70, "k");
  job.settings[1][0] = "ALGO";
  job.settings[1][1] = "ring";
  job.settings[2][0] = "LOG";
  job.settings[2][1] = "none";
  job.settings[3][0] = "TIMEOUT"; /* a failure is a message, not the test's timeout */
  job.settings[3][1] = "40";
  job.before_init = wait_for_the_raise;
  cr_assert_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
  cr_expect_eq(rt_run_prepared(&job), 0, "%s", job.first);
  cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
  cr_expect_gt(rl.rlim_cur, 100, "rank 0 did not raise the soft limit");
  close(job.lfd);
}

/* The job id comes from the launcher that placed the ranks, and never from a guess
 * that could split one job in two. */
Test(rendezvous, job_id_from_the_launcher) {
  char id[160];
  unsetenv("ZCOLL_RANK");
  unsetenv("PMI_RANK");
  unsetenv("OMPI_MCA_ess_base_jobid");
  unsetenv("PMIX_NAMESPACE");
  setenv("SLURM_JOB_ID", "4242", 1);
  setenv("SLURM_STEP_ID", "3", 1);
  setenv("SLURM_PROCID", "1", 1);
  zcoll__bs_job_id("", id, sizeof(id));
  cr_expect_str_eq(id, "slurm:4242.3");
  zcoll__bs_job_id("mine", id, sizeof(id));
  cr_expect_str_eq(id, "mine");
  setenv("PMIX_NAMESPACE", "ns7", 1);
  zcoll__bs_job_id("", id, sizeof(id));
  cr_expect_str_eq(id, "pmix:ns7");
  setenv("OMPI_MCA_ess_base_jobid", "99", 1); /* mpirun inside an allocation */
  zcoll__bs_job_id("", id, sizeof(id));
  cr_expect_str_eq(id, "ompi:99");
  unsetenv("OMPI_MCA_ess_base_jobid");
  setenv("ZCOLL_RANK", "1", 1); /* placed by hand, perhaps one srun step per rank */
  zcoll__bs_job_id("", id, sizeof(id));
  cr_expect_str_eq(id, "");
}
