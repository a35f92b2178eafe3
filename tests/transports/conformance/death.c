/* conformance/death.c -- a peer that dies */
#include "conformance.h"

#define VICTIM 2

/* Rank 2 dies once connected (SIGKILL, or as a thread its instance closed abruptly).
 * Ranks 0 and 1 keep putting to it and polling: the first error must be PEER_FAILED
 * naming rank 2 -- from put or poll, or as a PEER_LOST event (ZCOLL_TL_CAP_PEER_LOSS);
 * verbs, which leaves a peer's death to the job (transport.h), TRANSPORT naming rank 2
 * once its writes' retries run out (made short here);
 * a broken instance keeps failing, one with CAP_PEER_LOSS keeps working with the live
 * peer; either still says INVALID_ARG first to a caller's mistake, and closes in bounded
 * time. */
static int dead_peer_body(struct rank *r) {
  if (conf_setup(r, 65536, 65536, SETUP_SHORT_RETRIES)) goto out;
  if (r->rank == VICTIM) {
    atomic_store(&r->sh->victim_ready, 1);
    if (!r->threads) pause(); /* until killed */
    r->ops->close(r->tl);
    r->tl = NULL;
    atomic_store(&r->sh->victim_dead, 1);
    conf_teardown(r, 0);
    return 0;
  }
  r->live = r->size - 1;
  if (conf_wait_flag(r, &r->sh->victim_dead, 1)) goto out;
  struct zcoll_ep *ep = r->ep[VICTIM];
  double t0 = conf_now();
  zcoll_status_t st = ZCOLL_OK;
  int from_poll = 0, inflight = 0, lost_event = 0;
  while (st == ZCOLL_OK) {
    if (conf_now() - t0 > WAIT_S) {
      conf_fail(r, __LINE__, "rank %d died %.0f s ago; put and poll still say OK", VICTIM, WAIT_S);
      goto out;
    }
    if (inflight < 16) {
      st = r->ops->put(ep, r->src, r->smr, r->rk[VICTIM], 0, 64, 1, 1);
      if (st != ZCOLL_OK) break;
      inflight++;
    }
    struct zcoll_tl_event ev[8];
    int n = 0;
    st = r->ops->poll(r->tl, ev, 8, &n);
    from_poll = st != ZCOLL_OK;
    for (int k = 0; k < n && st == ZCOLL_OK; k++)
      if (ev[k].kind == ZCOLL_TL_EV_PUT_DONE) {
        inflight--;
        if (ev[k].status != ZCOLL_OK) st = ev[k].status;
      } else if (ev[k].kind == ZCOLL_TL_EV_PEER_LOST) {
        CHECK(r, r->ops->caps & ZCOLL_TL_CAP_PEER_LOSS, "a PEER_LOST event without the cap");
        CHECK(r, ev[k].peer == VICTIM, "PEER_LOST names rank %d, not %d", ev[k].peer, VICTIM);
        st = ev[k].status;
        lost_event = 1;
      }
    if (st == ZCOLL_OK && !n) usleep(1000);
  }
  double found = conf_now() - t0;
  char words[512];
  snprintf(words, sizeof(words), "%s", zcoll_last_error());
  char name[32];
  snprintf(name, sizeof(name), "rank %d", VICTIM);
  int by_retries = !strcmp(r->ops->name, "verbs");
  CHECK(r,
        st == ZCOLL_ERR_PEER_FAILED ||
            (by_retries && st == ZCOLL_ERR_TRANSPORT && strstr(words, "retry counter exceeded")),
        "the dead peer showed as %s (%s)", zcoll_strerror(st), words);
  CHECK(r, strstr(words, name), "%s without naming %s: \"%s\"", zcoll_strerror(st), name, words);
  if (from_poll) {
    struct zcoll_tl_event ev[8];
    int n;
    CHECK(r, !(r->ops->caps & ZCOLL_TL_CAP_PEER_LOSS),
          "poll() failed with CAP_PEER_LOSS: a lost peer must be an event");
    CHECK(r, r->ops->poll(r->tl, ev, 8, &n) != ZCOLL_OK, "poll() said OK after an error");
    CHECK(r, r->ops->put(ep, r->src, r->smr, r->rk[VICTIM], 0, 64, 1, 1) != ZCOLL_OK,
          "put() said OK after poll() failed");
  }
  if (lost_event) { /* only the lost peer is gone: the instance, and the other peer, work */
    CHECK(r, r->ops->put(ep, r->src, r->smr, r->rk[VICTIM], 0, 64, 1, 1) == ZCOLL_ERR_PEER_FAILED,
          "a put to the lost peer did not fail with PEER_FAILED");
    int other = 1 - r->rank;
    CHECK_ST(r, r->ops->put(r->ep[other], r->src, r->smr, r->rk[other], 0, 64, 1, 2), ZCOLL_OK,
             "a put to the live peer after another was lost");
    struct zcoll_tl_event ev[8];
    int n;
    CHECK_ST(r, r->ops->poll(r->tl, ev, 8, &n), ZCOLL_OK, "poll() after a PEER_LOST event");
  }
  CHECK_ST(r, r->ops->put(ep, r->src, r->smr, r->rk[VICTIM], 65536, 64, 1, 1),
           ZCOLL_ERR_INVALID_ARG, "a put outside the region on a broken instance");
  if (r->ops->quiesce) r->ops->quiesce(r->tl);
  r->sh->seconds[r->rank][0] = found;
out:;
  double took = conf_teardown(r, 1);
  r->sh->seconds[r->rank][1] = took;
  if (took > 10) conf_fail(r, __LINE__, "close() took %.1f s after the peer died", took);
  return atomic_load(&r->sh->nfail) ? -1 : 0;
}

ParameterizedTestParameters(conformance, dead_peer) { return conf_rows(0); }
ParameterizedTest(int *i, conformance, dead_peer, .timeout = 300) {
  conf_need(*i);
  struct job j = {.tl_index = *i, .size = 3, .victim = VICTIM, .body = dead_peer_body};
  struct shared *sh = conf_run(&j);
  for (int k = 0; k < VICTIM; k++)
    cr_log_info("%s: rank %d saw the death in %.2f s, closed in %.2f s", zcoll__transports[*i].name,
                k, sh->seconds[k][0], sh->seconds[k][1]);
  munmap(sh, sizeof(*sh));
}
