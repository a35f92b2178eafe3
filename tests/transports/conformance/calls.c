/* conformance/calls.c -- the caller's mistakes */
#include "conformance.h"

#define BAD_REGION 65536

static int bad_calls_body(struct rank *r) {
  if (conf_setup(r, BAD_REGION, BAD_REGION, SETUP_BAD_CALLS)) goto out;
  int peer = (r->rank + 1) % r->size;
  struct zcoll_ep *ep = r->ep[peer];
  struct zcoll_tl_rkey *rk = r->rk[peer];
  const struct zcoll_tl_ops *o = r->ops;
  /* A malformed key: empty, or a byte short (copied to its exact size, so that a
   * transport reading past the length it was given shows under ASan). */
  size_t kl = r->sh->key_len[peer];
  unsigned char *shortkey = malloc(kl);
  memcpy(shortkey, r->sh->key[peer], kl);
  struct zcoll_tl_rkey *out = (void *)&kl;
  zcoll_status_t st0 = o->rkey_unpack(ep, shortkey, 0, &out);
  zcoll_status_t st1 = o->rkey_unpack(ep, shortkey, kl - 1, &out);
  free(shortkey);
  CHECK_ST(r, st0, ZCOLL_ERR_TRANSPORT, "rkey_unpack() of an empty key");
  CHECK_ST(r, st1, ZCOLL_ERR_TRANSPORT, "rkey_unpack() of a key one byte short");
  CHECK(r, out == (void *)&kl, "a failed rkey_unpack() wrote its output");
  /* Puts outside the key's region, or over 4 GiB. */
  struct {
    uint64_t roff;
    size_t len;
    int null_key;
    const char *what;
  } bad[] = {
      {BAD_REGION - 1, 2, 0, "a put one byte past the region's end"},
      {BAD_REGION + 1, 1, 0, "a put that starts past the region's end"},
      {UINT64_MAX, 1, 0, "a put at offset 2^64 - 1 (the sum wraps)"},
      {0, BAD_REGION + 1, 0, "a put longer than the region"},
      {0, ((size_t)1 << 32) + 1, 0, "a put over 4 GiB"},
      {0, 1, 1, "a put of data with no key"},
  };
  for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
    CHECK_ST(r,
             o->put(ep, r->src, r->smr, bad[k].null_key ? NULL : rk, bad[k].roff, bad[k].len, 1, 1),
             ZCOLL_ERR_INVALID_ARG, bad[k].what);
  if (!(o->caps & ZCOLL_TL_CAP_PUT_ANY)) {
    /* Larger than any inline limit: the NIC would have to read it through lmr. */
    static char outside[8192];
    CHECK_ST(r, o->put(ep, outside, r->smr, rk, 0, sizeof(outside), 1, 1), ZCOLL_ERR_INVALID_ARG,
             "a put from a source outside lmr (no CAP_PUT_ANY)");
    CHECK_ST(r, o->put(ep, r->src, NULL, rk, 0, 8192, 1, 1), ZCOLL_ERR_INVALID_ARG,
             "a put from a source with no lmr (no CAP_PUT_ANY)");
  }
  if (o->mem_alloc && !(o->caps & ZCOLL_TL_CAP_REMOTE_USER)) {
    struct zcoll_tl_mr *mr = (void *)&kl;
    CHECK_ST(r, o->mem_reg(r->tl, r->src, 4096, 1, &mr), ZCOLL_ERR_INVALID_ARG,
             "mem_reg(remote = 1) of memory not from mem_alloc (no CAP_REMOTE_USER)");
    CHECK(r, mr == (void *)&kl, "a failed mem_reg() wrote its output");
  }
  /* None of that broke the instance: a put with data and a bare one still go through. */
  for (size_t b = 0; b < 1000; b++) r->src[b] = (char)conf_pattern(r->rank, peer, 0, b);
  CHECK_ST(r, o->put(ep, r->src, r->smr, rk, 100, 1000, 7, 1), ZCOLL_OK, "a put after bad ones");
  CHECK_ST(r, o->put(ep, NULL, NULL, NULL, 0, 0, 8, 2), ZCOLL_OK, "a bare put after bad ones");
  if (conf_settle(r, 2, 2, 100) || conf_sync_ranks(r)) goto out;
  /* An address that is not one: empty, or a byte short, each on an instance of its own
   * (a failed connect may leave an instance fit only for close). */
  for (int k = 0; k < 2; k++) {
    struct zcoll_tl *tl2 = NULL;
    if (conf_open_tl(r, &tl2) || conf_peer_address(r, tl2, 1, &peer, 0)) goto out;
    unsigned char *blob = malloc(BLOB + PART);
    size_t al = conf_addr_for(r, peer, blob);
    const void *a[1] = {blob};
    size_t len[1] = {k ? al - 1 : 0};
    struct zcoll_ep *e2 = NULL;
    zcoll_status_t st = o->connect(tl2, 1, &peer, a, len, &e2);
    o->close(tl2);
    free(blob);
    CHECK_ST(r, st, ZCOLL_ERR_TRANSPORT,
             k ? "connect() with an address one byte short" : "connect() with an empty address");
  }
out:
  conf_teardown(r, 1);
  return atomic_load(&r->sh->nfail) ? -1 : 0;
}

ParameterizedTestParameters(conformance, bad_calls) { return conf_rows(0); }
ParameterizedTest(int *i, conformance, bad_calls, .timeout = 200) {
  conf_need(*i);
  struct job j = {.tl_index = *i, .size = 2, .victim = -1, .body = bad_calls_body};
  munmap(conf_run(&j), sizeof(struct shared));
}
