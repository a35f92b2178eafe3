/*
 * The routing of a family's shared transport instance (lib/core/family.c), over a fake
 * instance whose poll hands out events made here: each communicator gets its own events,
 * in order, another's go to that one's inbox, a credit return of an older communicator
 * on a reused set is dropped, as is anything for a set nobody has, and a lost peer is
 * news for every member it belongs to.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "core/comm.h"
#include "core/family.h"

static struct zcoll_tl_event script[16];
static int nscript;

static zcoll_status_t fake_poll(struct zcoll_tl *tl, struct zcoll_tl_event *ev, int max, int *n) {
  (void)tl;
  *n = 0;
  while (*n < max && nscript) {
    ev[(*n)++] = script[0];
    memmove(script, script + 1, sizeof(script[0]) * (size_t)--nscript);
  }
  return ZCOLL_OK;
}
static zcoll_status_t fake_arm(struct zcoll_tl *tl) {
  (void)tl;
  return nscript ? ZCOLL_IN_PROGRESS : ZCOLL_OK;
}
static int fake_fd(struct zcoll_tl *tl) {
  (void)tl;
  return -1;
}
static const struct zcoll_tl_ops fake = {.name = "fake",
                                         .caps = ZCOLL_TL_CAP_PEER_LOSS,
                                         .poll = fake_poll,
                                         .arm = fake_arm,
                                         .event_fd = fake_fd};

static struct zcoll_tl_event piece(int peer, int set, uint32_t seq) {
  return (struct zcoll_tl_event){
      .kind = ZCOLL_TL_EV_ARRIVED,
      .peer = peer,
      .imm = zcoll__imm_piece(seq, 0, 0, (uint32_t)set << ZCOLL_IMM_SET_SHIFT),
      .len = 8};
}
static struct zcoll_tl_event credit(int peer, int set, int gen) {
  return (struct zcoll_tl_event){.kind = ZCOLL_TL_EV_ARRIVED,
                                 .peer = peer,
                                 .imm = zcoll__imm_credit(1, (uint32_t)set << ZCOLL_IMM_SET_SHIFT,
                                                          (uint32_t)gen << ZCOLL_IMM_GEN_SHIFT)};
}

Test(family, routes_each_event_to_its_communicator) {
  static struct zcoll__family fam;
  static zcoll_comm_t a, b;
  int b_ranks[4] = {-1, 0, -1, 1}; /* b: engine ranks 1 and 3 */
  int tl_state;
  pthread_mutex_init(&fam.mu, NULL);
  fam.size = 4;
  fam.refs = 2;
  atomic_store(&fam.shared, 1);
  fam.tls[0] = (struct zcoll__ftl){&fake, (struct zcoll_tl *)&tl_state, 0, 2, NULL};
  fam.ntls = 1;
  a.fam = b.fam = &fam;
  a.set = 1, a.set_gen = 5;
  b.set = 2, b.set_gen = 1;
  b.crank_of = b_ranks;
  a.wake_fd = b.wake_fd = -1;
  a.tlis[0] = b.tlis[0] = (struct zcoll__tli){&fake, fam.tls[0].tl, 0, 0, NULL, NULL, &fam.tls[0]};
  a.ntlis = b.ntlis = 1;
  fam.set_comm[1] = &a;
  fam.set_comm[2] = &b;
  script[nscript++] = credit(1, 1, 4); /* a's set, an older generation: dropped */
  script[nscript++] = piece(1, 1, 0);  /* a's */
  script[nscript++] = piece(3, 2, 0);  /* b's */
  script[nscript++] = credit(3, 2, 0); /* b's set, an older generation: dropped */
  script[nscript++] = credit(1, 1, 5); /* a's */
  script[nscript++] = piece(2, 9, 0);  /* a set nobody has: dropped */
  script[nscript++] = credit(3, 2, 1); /* b's */
  script[nscript++] = (struct zcoll_tl_event){.kind = ZCOLL_TL_EV_PEER_LOST, .peer = 3};
  script[nscript++] = (struct zcoll_tl_event){
      .kind = ZCOLL_TL_EV_PUT_DONE,
      .peer = 2,
      .cookie = zcoll__cookie(2u << ZCOLL_IMM_SET_SHIFT, 0, 7)}; /* b's */
  struct zcoll_tl_event ev[16];
  int n = 0;
  cr_assert_eq(zcoll__family_poll(&a, 0, ev, 16, &n), ZCOLL_OK);
  cr_assert_eq(n, 3, "a got %d events", n);
  cr_assert_eq(ev[0].imm, piece(1, 1, 0).imm);
  cr_assert_eq(ev[1].imm, credit(1, 1, 5).imm);
  cr_assert_eq(ev[2].kind, ZCOLL_TL_EV_PEER_LOST, "a lost peer is everyone's news");
  cr_assert_eq(atomic_load(&b.inbox.lost), 4, "b has engine rank 3: it must hear");
  cr_assert_eq(atomic_load(&a.inbox.lost), 0);
  /* b's own, in order: its inbox first, then what the instance holds now. */
  script[nscript++] = piece(1, 2, 1);
  cr_assert_eq(zcoll__family_poll(&b, 0, ev, 16, &n), ZCOLL_OK);
  cr_assert_eq(n, 4, "b got %d events", n);
  cr_assert_eq(ev[0].imm, piece(3, 2, 0).imm);
  cr_assert_eq(ev[1].imm, credit(3, 2, 1).imm);
  cr_assert_eq(ev[2].kind, ZCOLL_TL_EV_PUT_DONE);
  cr_assert_eq(ev[2].cookie & 0xffffffffu, 7u);
  cr_assert_eq(ev[3].imm, piece(1, 2, 1).imm);
  /* With room for one, the inbox's oldest, and nothing taken from the instance. */
  script[nscript++] = piece(3, 2, 2);
  script[nscript++] = piece(1, 2, 2); /* for b: to its inbox when a polls */
  cr_assert_eq(zcoll__family_poll(&a, 0, ev, 16, &n), ZCOLL_OK);
  cr_assert_eq(n, 0);
  script[nscript++] = piece(3, 2, 3);
  cr_assert_eq(zcoll__family_poll(&b, 0, ev, 1, &n), ZCOLL_OK);
  cr_assert_eq(n, 1);
  cr_assert_eq(ev[0].imm, piece(3, 2, 2).imm);
  cr_assert_eq(nscript, 1, "b polled the instance before its inbox was empty");
  cr_assert_eq(zcoll__family_poll(&b, 0, ev, 16, &n), ZCOLL_OK);
  cr_assert_eq(n, 2);
  cr_assert_eq(ev[0].imm, piece(1, 2, 2).imm);
  cr_assert_eq(ev[1].imm, piece(3, 2, 3).imm);
  zcoll__evq_free(&a.inbox.q);
  zcoll__evq_free(&b.inbox.q);
  pthread_mutex_destroy(&fam.mu);
}
