/*
 * The wire protocol's collective header (lib/core/channel.c): every difference between two
 * ranks' calls is caught, whatever the count -- the 8-bit signature it replaced let one
 * mismatch in 256 through -- and ranks out of step are told so.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "core/channel.h"
#include "core/comm.h"
#include "base/log.h"
#include "rank_threads.h"

static const struct zcoll__coll_desc base = {.kind = ZCOLL_COLL_ALLREDUCE,
                                             .dtype = ZCOLL_FLOAT32,
                                             .op = ZCOLL_SUM,
                                             .algo = 1,
                                             .arity = 4,
                                             .root = -1,
                                             .count = 208};
#define FP(d) zcoll__coll_fingerprint(d)

Test(channel, header_round_trip) {
  char buf[ZCOLL_CHAN_HDR_BYTES];
  memset(buf, 0xa5, sizeof(buf));
  zcoll__chan_hdr_write(buf, 12345, &base, FP(&base));
  cr_assert_eq(zcoll__chan_hdr_check(buf, sizeof(buf), 1, 12345, &base, FP(&base)), ZCOLL_OK, "%s",
               zcoll__last_error());
  for (size_t i = sizeof(struct zcoll__chan_hdr); i < sizeof(buf); i++)
    cr_assert_eq(buf[i], 0, "padding byte %zu not cleared", i);
}

Test(channel, every_field_counts) {
  /* One field at a time, over many counts: none may pass for another. */
  for (uint64_t count = 0; count < 4096; count++) {
    struct zcoll__coll_desc mine = base, theirs;
    mine.count = count;
    char buf[ZCOLL_CHAN_HDR_BYTES];
    for (int f = 0; f < 8; f++) {
      theirs = mine;
      switch (f) {
      case 0: theirs.op = ZCOLL_MAX; break;
      case 1: theirs.dtype = ZCOLL_INT32; break;
      case 2: theirs.count = count + 1; break;
      case 3: theirs.algo = 2; break;
      case 4: theirs.arity = 2; break;
      case 5: theirs.root = 0; break;
      case 6: theirs.kind = 2; break;
      case 7: theirs.wire = ZCOLL_BFLOAT16; break;
      }
      zcoll__chan_hdr_write(buf, 7, &theirs, FP(&theirs));
      zcoll__log_mute(1);
      zcoll_status_t st = zcoll__chan_hdr_check(buf, sizeof(buf), 1, 7, &mine, FP(&mine));
      zcoll__log_mute(0);
      cr_assert_eq(st, ZCOLL_ERR_MISMATCH, "count %llu field %d passed", (unsigned long long)count,
                   f);
      cr_assert_neq(zcoll__coll_fingerprint(&theirs), zcoll__coll_fingerprint(&mine));
    }
  }
}

Test(channel, messages_say_what_differs) {
  char buf[ZCOLL_CHAN_HDR_BYTES];
  struct zcoll__coll_desc theirs = base;
  theirs.op = ZCOLL_MAX;
  zcoll__log_mute(1);
  zcoll__chan_hdr_write(buf, 3, &theirs, FP(&theirs));
  cr_assert_eq(zcoll__chan_hdr_check(buf, sizeof(buf), 5, 3, &base, FP(&base)), ZCOLL_ERR_MISMATCH);
  cr_assert(strstr(zcoll__last_error(), "rank 5 called allreduce(count 208, float32, max"), "%s",
            zcoll__last_error());
  zcoll__chan_hdr_write(buf, 4, &base, FP(&base));
  cr_assert_eq(zcoll__chan_hdr_check(buf, sizeof(buf), 5, 3, &base, FP(&base)), ZCOLL_ERR_MISMATCH);
  cr_assert(strstr(zcoll__last_error(), "out of step: rank 5 is at its collective #4"), "%s",
            zcoll__last_error());
  memset(buf, 0, sizeof(buf));
  cr_assert_eq(zcoll__chan_hdr_check(buf, sizeof(buf), 5, 3, &base, FP(&base)), ZCOLL_ERR_MISMATCH);
  cr_assert(strstr(zcoll__last_error(), "another protocol"), "%s", zcoll__last_error());
  cr_assert_eq(zcoll__chan_hdr_check(buf, 10, 5, 3, &base, FP(&base)), ZCOLL_ERR_MISMATCH);
  zcoll__log_mute(0);
}

Test(channel, fingerprint_alone_does_not_pass) {
  /* A header whose fields differ from ours but which carries our fingerprint. */
  char buf[ZCOLL_CHAN_HDR_BYTES];
  struct zcoll__coll_desc theirs = base;
  theirs.count = 209;
  zcoll__chan_hdr_write(buf, 3, &theirs, FP(&base));
  zcoll__log_mute(1);
  cr_assert_eq(zcoll__chan_hdr_check(buf, sizeof(buf), 5, 3, &base, FP(&base)), ZCOLL_ERR_MISMATCH);
  zcoll__log_mute(0);
}

Test(channel, immediate_layout) {
  uint32_t imm = zcoll__imm_piece(0x12345678ull, 0xabcdefull, ZCOLL_IMM_HDR, 0);
  cr_assert_eq(imm & ZCOLL_IMM_SEQ_MASK, 0x678u);
  cr_assert_eq(zcoll__imm_set(imm), 0u);
  cr_assert_eq(zcoll__imm_ord(imm), 0xabcdefu & ZCOLL_IMM_ORD_MASK);
  cr_assert(imm & ZCOLL_IMM_HDR);
  cr_assert_eq(imm & ZCOLL_IMM_CREDIT, 0u, "a piece must never look like a credit");
  cr_assert_eq(zcoll__imm_piece(~0ull, ~0ull, 0, 0) & ZCOLL_IMM_CREDIT, 0u);
  cr_assert_eq(zcoll__imm_piece(~0ull, ~0ull, 0, 0) & ZCOLL_IMM_HDR, 0u);
  cr_assert_eq(zcoll__imm_piece(~0ull, ~0ull, 0, 0) & ZCOLL_IMM_SAME, 0u);
  imm = zcoll__imm_piece(~0ull, ~0ull, ZCOLL_IMM_SAME, 0);
  cr_assert_eq(imm & (ZCOLL_IMM_CREDIT | ZCOLL_IMM_HDR), 0u);
  cr_assert_eq(zcoll__imm_ord(imm), ZCOLL_IMM_ORD_MASK);
  /* The fields do not overlap. */
  cr_assert_eq(ZCOLL_IMM_SEQ_MASK & (ZCOLL_IMM_ORD_MASK << ZCOLL_IMM_ORD_SHIFT), 0u);
  cr_assert_eq((ZCOLL_IMM_ORD_MASK << ZCOLL_IMM_ORD_SHIFT) &
                   (ZCOLL_IMM_CREDIT | ZCOLL_IMM_HDR | ZCOLL_IMM_SAME | ZCOLL_IMM_EXT),
               0u);
  cr_assert_eq(zcoll__imm_piece(~0ull, ~0ull, 0, 0) & ZCOLL_IMM_EXT, 0u);
  imm = zcoll__imm_piece(5, 6, ZCOLL_IMM_GRANT, 0);
  cr_assert_eq(zcoll__imm_kind(imm), ZCOLL_IMM_GRANT);
  cr_assert_eq(zcoll__imm_ord(imm), 6u);
  cr_assert_eq(zcoll__imm_kind(zcoll__imm_piece(5, ~0ull, ZCOLL_IMM_DIRECT, 0)), ZCOLL_IMM_DIRECT);
  /* The set: its own bits, in pieces and credit returns alike, at every value. */
  uint32_t setbits = ZCOLL_IMM_SET_MASK << ZCOLL_IMM_SET_SHIFT;
  cr_assert_eq(setbits & (ZCOLL_IMM_SEQ_MASK | (ZCOLL_IMM_ORD_MASK << ZCOLL_IMM_ORD_SHIFT) |
                          ZCOLL_IMM_CREDIT | ZCOLL_IMM_KIND_MASK),
               0u);
  cr_assert_eq(setbits | ZCOLL_IMM_SEQ_MASK | (ZCOLL_IMM_ORD_MASK << ZCOLL_IMM_ORD_SHIFT) |
                   ZCOLL_IMM_CREDIT | ZCOLL_IMM_KIND_MASK,
               0xffffffffu, "every bit has a use");
  for (uint32_t set = 0; set < ZCOLL_CHAN_SETS; set++) {
    uint32_t bits = set << ZCOLL_IMM_SET_SHIFT;
    imm = zcoll__imm_piece(~0ull, ~0ull, ZCOLL_IMM_SAME, bits);
    cr_assert_eq(zcoll__imm_set(imm), set);
    cr_assert_eq(zcoll__imm_ord(imm), ZCOLL_IMM_ORD_MASK);
    cr_assert_eq(imm & ZCOLL_IMM_SEQ_MASK, ZCOLL_IMM_SEQ_MASK);
    uint32_t gen = (set * 37u) & ZCOLL_IMM_GEN_MASK;
    imm = zcoll__imm_credit(256, bits, gen << ZCOLL_IMM_GEN_SHIFT);
    cr_assert(imm & ZCOLL_IMM_CREDIT);
    cr_assert_eq(zcoll__imm_set(imm), set);
    cr_assert_eq(zcoll__imm_gen(imm), gen, "a credit return carries its set's generation");
    cr_assert_eq(imm & ZCOLL_IMM_SEQ_MASK, 256u, "a full window of credits fits");
  }
  /* The generation takes the ordinal's place: a credit return has no ordinal. */
  cr_assert_eq(ZCOLL_IMM_GEN_SHIFT, ZCOLL_IMM_ORD_SHIFT);
  cr_assert_eq(ZCOLL_IMM_GEN_MASK, ZCOLL_IMM_ORD_MASK);
}

/* A notification of another set is not this channel's: refused, not counted. */
Test(channel, other_set_refused) {
  struct zcoll__slot slots[4] = {0};
  struct zcoll__chan c = {.peer = 3, .slots = slots, .imm_set = 2u << ZCOLL_IMM_SET_SHIFT};
  struct zcoll_tl_event ev = {.kind = ZCOLL_TL_EV_ARRIVED,
                              .peer = 3,
                              .imm = zcoll__imm_credit(1, 1u << ZCOLL_IMM_SET_SHIFT, 0)};
  zcoll__log_mute(1);
  cr_assert_eq(zcoll__chan_arrived(&c, 4, 4096, &ev), ZCOLL_ERR_TRANSPORT);
  ev.imm = zcoll__imm_piece(0, 0, 0, 0);
  ev.len = 8;
  cr_assert_eq(zcoll__chan_arrived(&c, 4, 4096, &ev), ZCOLL_ERR_TRANSPORT);
  zcoll__log_mute(0);
  cr_assert_eq(c.credits, 0u);
  cr_assert_eq(slots[0].arrived, 0);
  ev.imm = zcoll__imm_piece(0, 0, 0, 2u << ZCOLL_IMM_SET_SHIFT);
  cr_assert_eq(zcoll__chan_arrived(&c, 4, 4096, &ev), ZCOLL_OK);
  cr_assert_eq(slots[0].arrived, 1);
  ev.imm = zcoll__imm_credit(1, 2u << ZCOLL_IMM_SET_SHIFT, 5u << ZCOLL_IMM_GEN_SHIFT);
  cr_assert_eq(zcoll__chan_arrived(&c, 4, 4096, &ev), ZCOLL_OK);
  cr_assert_eq(c.credits, 1u);
}

/* Which pieces a channel accepts, by kind: a grant must hold a grant and its key, a
 * direct piece data written by the peer (never something the placement hook put in the
 * result), and no piece may combine kinds that mean nothing together. */
Test(channel, arrival_kinds) {
  enum { DEPTH = 4, SLOT = 4096 };
  struct zcoll__slot slots[DEPTH];
  struct {
    uint32_t flags, len;
    uint8_t placed;
    int ok;
  } cases[] = {
      {0, 100, 0, 1},
      {0, 100, 1, 1}, /* the placement hook put it in the result */
      {ZCOLL_IMM_SAME, 100, 0, 1},
      {ZCOLL_IMM_HDR, ZCOLL_CHAN_HDR_BYTES, 0, 1},
      {ZCOLL_IMM_HDR, ZCOLL_CHAN_HDR_BYTES - 1, 0, 0},
      {ZCOLL_IMM_HDR, 100, 1, 0},
      {ZCOLL_IMM_HDR | ZCOLL_IMM_SAME, 100, 0, 0},
      {ZCOLL_IMM_GRANT, sizeof(struct zcoll__chan_grant) + 16, 0, 1},
      {ZCOLL_IMM_GRANT, sizeof(struct zcoll__chan_grant) - 1, 0, 0},
      {ZCOLL_IMM_GRANT, ZCOLL_GRANT_MAX_BYTES + 1, 0, 0},
      {ZCOLL_IMM_GRANT, sizeof(struct zcoll__chan_grant) + 16, 1, 0},
      {ZCOLL_IMM_DIRECT, 100, 0, 1},
      {ZCOLL_IMM_DIRECT, 0, 0, 0},
      {ZCOLL_IMM_DIRECT, 100, 1, 0},
      {ZCOLL_IMM_EXT | ZCOLL_IMM_SAME, 100, 0, 0},
      {ZCOLL_IMM_EXT | ZCOLL_IMM_SAME | ZCOLL_IMM_HDR, 100, 0, 0},
  };
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
    memset(slots, 0, sizeof(slots));
    struct zcoll__chan c = {.peer = 1, .slots = slots};
    struct zcoll_tl_event ev = {.kind = ZCOLL_TL_EV_ARRIVED,
                                .peer = 1,
                                .imm = zcoll__imm_piece(0, 0, cases[k].flags, 0),
                                .len = cases[k].len,
                                .placed = cases[k].placed};
    zcoll_status_t st = zcoll__chan_arrived(&c, DEPTH, SLOT, &ev);
    cr_assert_eq(st == ZCOLL_OK, cases[k].ok, "case %zu (flags %08x, len %u, placed %u): %s", k,
                 cases[k].flags, cases[k].len, cases[k].placed, zcoll_strerror(st));
    if (cases[k].ok) {
      cr_assert(slots[0].arrived);
      cr_assert_eq(slots[0].placed, cases[k].placed || cases[k].flags == ZCOLL_IMM_DIRECT,
                   "case %zu: a direct piece is in place, nothing to copy", k);
    }
  }
}

Test(channel, same_as_last_needs_the_same_header) {
  struct zcoll__chan c = {.peer = 3};
  struct zcoll__coll_desc other = base;
  other.op = ZCOLL_MIN;
  zcoll__log_mute(1);
  cr_assert_eq(zcoll__chan_same_check(&c, 9, &base), ZCOLL_ERR_MISMATCH, "no header seen yet");
  c.seen_desc = other;
  c.seen_valid = 1;
  cr_assert_eq(zcoll__chan_same_check(&c, 9, &base), ZCOLL_ERR_MISMATCH);
  cr_assert(strstr(zcoll__last_error(), "rank 3 called allreduce(count 208, float32, min"), "%s",
            zcoll__last_error());
  zcoll__log_mute(0);
  c.seen_desc = base;
  cr_assert_eq(zcoll__chan_same_check(&c, 9, &base), ZCOLL_OK);
}

/* Rank 1 believes it is one collective further on (as a rank would that made a call the
 * others never saw): everyone fails, at least one rank says out of step, nobody gets OK. */
static void skew_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  float v[300], out[300];
  for (int i = 0; i < 300; i++) v[i] = (float)rank;
  if (zcoll_allreduce(comm, v, out, 300, ZCOLL_FLOAT32, ZCOLL_SUM) != ZCOLL_OK) {
    rt_fail(job, rank, "first call failed");
    return;
  }
  if (rank == 1) comm->ordinal++;
  zcoll_status_t st = zcoll_allreduce(comm, v, out, 300, ZCOLL_FLOAT32, ZCOLL_SUM);
  char msg[400];
  snprintf(msg, sizeof(msg), "%s: %.300s", zcoll_strerror(st), zcoll_comm_last_error(comm));
  rt_fail(job, rank, msg); /* every rank reports what it saw */
}

Test(channel, out_of_step_ranks_fail, .timeout = 120) {
  for (int p = 2; p <= 4; p++) {
    struct rt_job job = {.size = p, .body = skew_body};
    job.settings[0][0] = "TIMEOUT";
    job.settings[0][1] = "20";
    rt_run(&job);
    cr_assert_eq(job.failures, (unsigned long)p, "p=%d:\n%s", p, job.all);
    cr_assert_null(strstr(job.all, ": success"), "p=%d: a rank got OK:\n%s", p, job.all);
    cr_assert(strstr(job.all, "out of step"), "p=%d:\n%s", p, job.all);
  }
}
