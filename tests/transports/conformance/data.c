/* conformance/data.c -- data, notifications and completions */
#include "conformance.h"

#define NPUTS 200
#define INFLIGHT 32 /* per peer: the executor keeps at most 256 (transport.h) */

static size_t put_len(int i) {
  if (i % 9 == 0) return 0;      /* a bare notification */
  if (i % 40 == 3) return 70001; /* past eager protocols and inline limits */
  return 1 + (size_t)(i * 97) % 3000;
}
static size_t put_off(int i) { /* puts from one sender never overlap */
  size_t off = 0;
  for (int k = 0; k < i; k++) off += put_len(k);
  return off;
}
static size_t seg_bytes(void) { return (put_off(NPUTS) + 4095) & ~(size_t)4095; }
static uint32_t imm_of(int s, int i) { return 0x80000000u | (uint32_t)s << 20 | (uint32_t)i; }
static uint64_t cookie_of(int d, int i) {
  return 0xc0ffee0000000000ull | (uint64_t)d << 32 | (uint64_t)i;
}

/* Every rank puts NPUTS pieces to every other, a few in flight per peer, and checks what
 * it receives as each notification comes: its (imm, len) in put order per sender, its
 * bytes already in place. Sources are scribbled over at their PUT_DONE, so a transport
 * that still reads a source after reporting it free delivers the scribble. */
static int data_body(struct rank *r) {
  size_t seg = seg_bytes();
  if (conf_setup(r, seg * (size_t)r->size, seg * (size_t)r->size, SETUP_PLAIN)) goto out;
  int next_out[MAXR] = {0}, next_in[MAXR] = {0}, inflight[MAXR] = {0}, done = 0, arrived = 0;
  static _Thread_local unsigned char seen[MAXR][NPUTS];
  memset(seen, 0, sizeof(seen));
  int want = NPUTS * (r->size - 1);
  double t0 = conf_now();
  while (done < want || arrived < want) {
    if (conf_now() - t0 > 2 * WAIT_S) {
      conf_fail(r, __LINE__, "after %.0f s: %d of %d puts done, %d of %d arrived", 2 * WAIT_S, done,
                want, arrived, want);
      goto out;
    }
    for (int d = 0; d < r->size; d++) {
      if (d == r->rank || next_out[d] == NPUTS || inflight[d] >= INFLIGHT) continue;
      int i = next_out[d]++;
      size_t len = put_len(i), off = (size_t)r->rank * seg + put_off(i);
      char *src = r->src + (size_t)d * seg + put_off(i);
      for (size_t b = 0; b < len; b++) src[b] = (char)conf_pattern(r->rank, d, i, b);
      zcoll_status_t st = len ? r->ops->put(r->ep[d], src, r->smr, r->rk[d], off, len,
                                            imm_of(r->rank, i), cookie_of(d, i))
                              : r->ops->put(r->ep[d], NULL, NULL, NULL, 0, 0, imm_of(r->rank, i),
                                            cookie_of(d, i));
      if (st != ZCOLL_OK) {
        conf_fail(r, __LINE__, "put %d of %zu bytes to rank %d: %s (%s)", i, len, d,
                  zcoll_strerror(st), zcoll_last_error());
        goto out;
      }
      inflight[d]++;
    }
    struct zcoll_tl_event ev[16];
    int n;
    if (conf_poll_ok(r, ev, 16, &n)) goto out;
    for (int k = 0; k < n; k++) {
      const struct zcoll_tl_event *e = &ev[k];
      int p = e->peer;
      if (p < 0 || p >= r->size || p == r->rank) {
        conf_fail(r, __LINE__, "an event names rank %d", p);
        goto out;
      }
      if (e->kind == ZCOLL_TL_EV_PUT_DONE) {
        int i = (int)(e->cookie & 0xffffffffu);
        if ((e->cookie & ~0xffffffffull) != (cookie_of(p, 0)) || i >= next_out[p] || seen[p][i]) {
          conf_fail(r, __LINE__,
                    "PUT_DONE from rank %d with cookie %#llx: not a put of ours, or twice", p,
                    (unsigned long long)e->cookie);
          goto out;
        }
        if (e->status != ZCOLL_OK) {
          conf_fail(r, __LINE__, "put %d to rank %d completed with %s", i, p,
                    zcoll_strerror(e->status));
          goto out;
        }
        seen[p][i] = 1;
        memset(r->src + (size_t)p * seg + put_off(i), SCRIBBLE, put_len(i));
        inflight[p]--;
        done++;
      } else if (e->kind == ZCOLL_TL_EV_ARRIVED) {
        int i = next_in[p];
        if (i >= NPUTS || e->imm != imm_of(p, i) || e->len != put_len(i)) {
          conf_fail(r, __LINE__,
                    "from rank %d: ARRIVED(imm %#x, len %u) where put %d (imm %#x, "
                    "len %zu) was due: notifications out of put order, or wrong",
                    p, e->imm, e->len, i, imm_of(p, i), put_len(i));
          goto out;
        }
        const unsigned char *at = (unsigned char *)r->region + (size_t)p * seg + put_off(i);
        for (size_t b = 0; b < e->len; b++)
          if (at[b] != conf_pattern(p, r->rank, i, b)) {
            conf_fail(r, __LINE__,
                      "put %d from rank %d: byte %zu of %u is %#x, not %#x, when its "
                      "ARRIVED came%s",
                      i, p, b, e->len, at[b], conf_pattern(p, r->rank, i, b),
                      at[b] == SCRIBBLE ? " (the writer's scribble: PUT_DONE came before the "
                                          "source was read)"
                                        : "");
            goto out;
          }
        next_in[p]++;
        arrived++;
      } else {
        conf_fail(r, __LINE__, "an event of kind %d", e->kind);
        goto out;
      }
    }
  }
  /* Nothing landed anywhere it was not sent. */
  for (int s = 0; s < r->size; s++) {
    const unsigned char *base = (unsigned char *)r->region + (size_t)s * seg;
    size_t from = s == r->rank ? 0 : put_off(NPUTS);
    for (size_t b = from; b < seg; b++)
      if (base[b] != CANARY) {
        conf_fail(r, __LINE__, "byte %zu of rank %d's part of the region was written", b, s);
        goto out;
      }
  }
out:
  conf_teardown(r, 1);
  return atomic_load(&r->sh->nfail) ? -1 : 0;
}

ParameterizedTestParameters(conformance, data) { return conf_rows(0); }
ParameterizedTest(int *i, conformance, data, .timeout = 300) {
  conf_need(*i);
  struct job j = {.tl_index = *i, .size = 3, .victim = -1, .body = data_body};
  munmap(conf_run(&j), sizeof(struct shared));
}
