/*
 * sig_dispositions -- linking and using libzcoll must leave the process's signal
 * dispositions alone: the caught-signal mask (SigCgt in /proc/self/status) is read
 * before zcoll_comm_init, after it, after an allreduce and after zcoll_comm_destroy,
 * and must be the program's own (none caught) every time.
 *
 *   sig_dispositions check   prints "sigcgt <point> <mask>" for each point (without the
 *                            C library's own signals); exits 0 if all are equal
 *   sig_dispositions hup     after init and an allreduce, sends itself SIGHUP, whose
 *                            default action must end the process
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zcoll.h"

/* Signals 32 .. SIGRTMIN-1 belong to the C library (glibc catches one of them once a
 * process has threads, for setuid across threads): no application can set them, so they
 * are not a disposition a library could change. */
static unsigned long long libc_signals(void) {
  unsigned long long m = 0;
  for (int s = 32; s < SIGRTMIN; s++) m |= 1ull << (s - 1);
  return m;
}

static unsigned long long sigcgt(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  unsigned long long mask = ~0ull;
  while (f && fgets(line, sizeof(line), f))
    if (strncmp(line, "SigCgt:", 7) == 0) mask = strtoull(line + 7, NULL, 16);
  if (f) fclose(f);
  return mask & ~libc_signals();
}

int main(int argc, char **argv) {
  int hup = argc > 1 && strcmp(argv[1], "hup") == 0;
  unsigned long long at[4];
  at[0] = sigcgt();
  zcoll_comm_t *comm;
  zcoll_status_t st = zcoll_comm_init(&comm, NULL);
  if (st != ZCOLL_OK) {
    fprintf(stderr, "sig_dispositions: init: %s\n", zcoll_last_error());
    return 2;
  }
  at[1] = sigcgt();
  float s[1024] = {1}, r[1024];
  if ((st = zcoll_allreduce(comm, s, r, 1024, ZCOLL_FLOAT32, ZCOLL_SUM)) != ZCOLL_OK) {
    fprintf(stderr, "sig_dispositions: allreduce: %s\n", zcoll_comm_last_error(comm));
    return 2;
  }
  at[2] = sigcgt();
  if (hup) {
    kill(getpid(), SIGHUP);
    sleep(5);
    return 3; /* still alive: someone caught SIGHUP */
  }
  printf("transport %s\n", zcoll_comm_transport(comm));
  if ((st = zcoll_comm_destroy(comm)) != ZCOLL_OK) {
    fprintf(stderr, "sig_dispositions: destroy: %s\n", zcoll_last_error());
    return 2;
  }
  at[3] = sigcgt();
  static const char *const point[] = {"before-init", "after-init", "after-allreduce",
                                      "after-destroy"};
  int same = 1;
  for (int i = 0; i < 4; i++) {
    printf("sigcgt %s %016llx\n", point[i], at[i]);
    same &= at[i] == at[0];
  }
  return same ? 0 : 1;
}
