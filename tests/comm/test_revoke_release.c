/*
 * A revoke from a signal handler while zcoll_comm_destroy frees the communicator
 * (review of 00c85ad). zcoll.h lets a handler call zcoll_comm_revoke until destroy has
 * returned; the handler cannot know how far destroy got. Here it comes right after
 * destroy closed the communicator's eventfd, and a file (another thread's, in an
 * application) got the descriptor's number meanwhile: the revoke must not write into it.
 */
#include <criterion/criterion.h>

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/comm.h"
#include "zcoll.h"

static zcoll_comm_t *volatile g_comm;
static volatile int g_target = -1, g_reused = -1;
static char g_path[64];

static void on_usr1(int sig) {
  (void)sig;
  zcoll_comm_revoke(g_comm); /* destroy has not returned: zcoll.h allows it */
}

/* Interposes libc's close for this test program (the library is linked in statically). */
int close(int fd) {
  int rc = (int)syscall(SYS_close, fd);
  if (fd >= 0 && fd == g_target) {
    g_target = -1;
    g_reused = open(g_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600); /* lowest free fd */
    raise(SIGUSR1);
  }
  return rc;
}

Test(revoke_release, revoke_in_destroy_does_not_write_a_reused_descriptor) {
  snprintf(g_path, sizeof(g_path), "/tmp/zcoll_revoke_release.%d", (int)getpid());
  struct sigaction sa = {.sa_handler = on_usr1};
  sigemptyset(&sa.sa_mask);
  cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
  zcoll_comm_t *comm; /* a job of one: no launcher, no ZCOLL_RANK */
  cr_assert_eq(zcoll_comm_init(&comm, NULL), ZCOLL_OK, "%s", zcoll_last_error());
  cr_assert_eq(zcoll_comm_size(comm), 1);
  g_comm = comm;
  int wake = comm->wake_fd;
  g_target = wake;
  zcoll_comm_destroy(comm);
  cr_assert_geq(g_reused, 0, "the eventfd was not closed by destroy");
  struct stat st;
  cr_assert_eq(fstat(g_reused, &st), 0);
  cr_log_info("eventfd %d, reused as %d; the file has %lld bytes", wake, g_reused,
              (long long)st.st_size);
  cr_expect_eq(st.st_size, 0, "the revoke wrote %lld bytes into the file that reused fd %d",
               (long long)st.st_size, wake);
  syscall(SYS_close, g_reused);
  unlink(g_path);
}
