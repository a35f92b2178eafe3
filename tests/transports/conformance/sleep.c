/* conformance/sleep.c -- sleeping: event_fd and arm */
#include "conformance.h"

/* Waits for `want` events of `kind` the way the executor does: poll, arm, and only once
 * arm said OK, sleep on the descriptor -- which must then wake for the event. */
static int sleep_for(struct rank *r, int kind, int want, size_t at) {
  int fd = r->ops->event_fd(r->tl);
  double t0 = conf_now();
  while (want > 0) {
    CHECK(r, conf_now() - t0 < WAIT_S, "%d events still due after %.0f s", want, WAIT_S);
    struct zcoll_tl_event ev[8];
    int n;
    if (conf_poll_ok(r, ev, 8, &n)) return -1;
    for (int k = 0; k < n; k++) {
      if (ev[k].kind != kind) continue;
      for (size_t b = 0; b < ev[k].len; b++)
        CHECK(r, (unsigned char)r->region[at + b] == conf_pattern(ev[k].peer, r->rank, 0, b),
              "byte %zu not in place at ARRIVED", b);
      want--;
    }
    if (!want || n) continue;
    zcoll_status_t st = r->ops->arm(r->tl);
    if (st == ZCOLL_IN_PROGRESS) continue;
    CHECK_ST(r, st, ZCOLL_OK, "arm()");
    struct pollfd p = {fd, POLLIN, 0};
    int k = poll(&p, 1, (int)(WAIT_S * 1000));
    CHECK(r, k == 1, "arm() said OK with %s due, and event_fd %d did not turn readable in %.0f s",
          kind == ZCOLL_TL_EV_ARRIVED ? "an ARRIVED" : "a PUT_DONE", fd, WAIT_S);
  }
  return 0;
}

#define ROUNDS 6

/* Rank 0 sleeps, rank 1 writes: in even rounds the put comes after rank 0 armed (the
 * descriptor must wake it), in odd ones before (arm must say IN_PROGRESS, or the
 * descriptor turn readable once it is in). The writer sleeps for its PUT_DONE alike. */
static int event_fd_body(struct rank *r) {
  if (conf_setup(r, 131072, 131072, SETUP_PLAIN)) goto out;
  int fd = r->ops->event_fd(r->tl);
  if (fd < 0) { /* "-1 if the transport cannot block": nothing more to hold it to */
    r->sh->seconds[r->rank][0] = -1;
    goto out;
  }
  for (int round = 0; round < ROUNDS; round++) {
    size_t len = round % 3 == 2 ? 0 : round % 3 ? 70001 : 100;
    if (r->rank == 0) {
      if (round % 2 == 0) {
        zcoll_status_t st;
        double t0 = conf_now();
        while ((st = r->ops->arm(r->tl)) == ZCOLL_IN_PROGRESS) {
          struct zcoll_tl_event ev[8];
          int n;
          if (conf_poll_ok(r, ev, 8, &n)) goto out;
          if (conf_now() - t0 > WAIT_S) break;
        }
        if (st != ZCOLL_OK) {
          conf_fail(r, __LINE__, "arm() with nothing due: %s", zcoll_strerror(st));
          goto out;
        }
        atomic_store(&r->sh->flag, 2 * round + 1); /* armed: now put */
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, (int)(WAIT_S * 1000)) != 1) {
          conf_fail(r, __LINE__, "round %d: armed, a put came, event_fd stayed quiet %.0f s", round,
                    WAIT_S);
          goto out;
        }
      } else {
        if (conf_wait_flag(r, &r->sh->flag, 2 * round + 2)) goto out; /* the put is out */
      }
      if (sleep_for(r, ZCOLL_TL_EV_ARRIVED, 1, 0)) goto out;
    } else {
      if (round % 2 == 0 && conf_wait_flag(r, &r->sh->flag, 2 * round + 1)) goto out;
      if (round % 2 == 0) usleep(20000); /* let rank 0 fall asleep */
      for (size_t b = 0; b < len; b++) r->src[b] = (char)conf_pattern(1, 0, 0, b);
      zcoll_status_t st = len ? r->ops->put(r->ep[0], r->src, r->smr, r->rk[0], 0, len, 9, 9)
                              : r->ops->put(r->ep[0], NULL, NULL, NULL, 0, 0, 9, 9);
      if (st != ZCOLL_OK) {
        conf_fail(r, __LINE__, "put: %s (%s)", zcoll_strerror(st), zcoll_last_error());
        goto out;
      }
      /* Put, not done: a rendezvous completes only with the receiver's progress. */
      if (round % 2) atomic_store(&r->sh->flag, 2 * round + 2);
      if (sleep_for(r, ZCOLL_TL_EV_PUT_DONE, 1, 0)) goto out;
    }
    if (conf_sync_ranks(r)) goto out;
  }
out:
  conf_teardown(r, 1);
  return atomic_load(&r->sh->nfail) ? -1 : 0;
}

ParameterizedTestParameters(conformance, event_fd) { return conf_rows(0); }
ParameterizedTest(int *i, conformance, event_fd, .timeout = 200) {
  conf_need(*i);
  struct job j = {
      .tl_index = *i, .size = 2, .oversubscribed = 1, .victim = -1, .body = event_fd_body};
  struct shared *sh = conf_run(&j);
  if (sh->seconds[0][0] < 0)
    cr_log_info("%s: event_fd is -1 (the transport cannot block)", zcoll__transports[*i].name);
  munmap(sh, sizeof(*sh));
}
