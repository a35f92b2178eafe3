/* conformance/placement.c -- the placement hook */
#include "conformance.h"

#define HOOK_SLOT 131072
#define HOOK_NULL 0xdeadu /* the hook has no place for this one */

struct hook {
  char *buf;
  int calls, bad;
  char what[200];
};

static void *place(void *arg, int peer, uint32_t imm, size_t len, int *final) {
  struct hook *h = arg;
  h->calls++;
  if (peer != 1 && !h->bad) {
    h->bad = 1;
    snprintf(h->what, sizeof(h->what), "the hook was asked for rank %d's piece", peer);
  }
  if (!len && !h->bad) {
    h->bad = 1;
    snprintf(h->what, sizeof(h->what), "the hook was asked about a zero-length put");
  }
  if ((imm & 0xffffu) == HOOK_NULL) return NULL;
  *final = (imm >> 30) & 1;
  return h->buf + (size_t)(imm & 0xffffu) * HOOK_SLOT;
}

static const size_t hook_lens[] = {100, 70001, 1, 0, 4096, 3};
#define NHOOK (int)(sizeof(hook_lens) / sizeof(hook_lens[0]))

/* Rank 0 installs a hook, rank 1 aims every put at offset 0 of rank 0's region: the data
 * must land where the hook says (the writer's offset is not trusted), `placed` must carry
 * the hook's `final`, and the region stays untouched. Without the hook the writer's
 * offset counts again. A hook that answers NULL fails the transport. */
static int placement_body(struct rank *r) {
  struct hook h = {0};
  h.buf = mmap(NULL, NHOOK * HOOK_SLOT, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (conf_setup(r, 4 * HOOK_SLOT, 4 * HOOK_SLOT, SETUP_PLAIN)) goto out;
  if (r->rank == 0) r->ops->set_placement(r->tl, place, &h);
  if (conf_sync_ranks(r)) goto out;
  if (r->rank == 1) {
    for (int k = 0; k < NHOOK; k++) {
      for (size_t b = 0; b < hook_lens[k]; b++) r->src[b] = (char)conf_pattern(1, 0, k, b);
      uint32_t imm = (uint32_t)k | (k % 2 ? 1u << 30 : 0);
      zcoll_status_t st = hook_lens[k]
                              ? r->ops->put(r->ep[0], r->src, r->smr, r->rk[0], 0, hook_lens[k],
                                            imm, (uint64_t)k)
                              : r->ops->put(r->ep[0], NULL, NULL, NULL, 0, 0, imm, (uint64_t)k);
      if (st != ZCOLL_OK) {
        conf_fail(r, __LINE__, "put %d: %s (%s)", k, zcoll_strerror(st), zcoll_last_error());
        goto out;
      }
      if (conf_settle(r, 0, 1, 0)) goto out; /* one source, reused */
    }
  } else {
    double t0 = conf_now();
    int k = 0;
    while (k < NHOOK) {
      if (conf_now() - t0 > WAIT_S) {
        conf_fail(r, __LINE__, "only %d of %d pieces arrived in %.0f s", k, NHOOK, WAIT_S);
        goto out;
      }
      struct zcoll_tl_event ev[8];
      int n;
      if (conf_poll_ok(r, ev, 8, &n)) goto out;
      for (int e = 0; e < n; e++, k++) {
        if (ev[e].kind != ZCOLL_TL_EV_ARRIVED || (ev[e].imm & 0xffffu) != (uint32_t)k ||
            ev[e].len != hook_lens[k]) {
          conf_fail(r, __LINE__, "piece %d: event kind %d imm %#x len %u", k, ev[e].kind, ev[e].imm,
                    ev[e].len);
          goto out;
        }
        if (hook_lens[k] && ev[e].placed != (k % 2)) {
          conf_fail(r, __LINE__, "piece %d: placed = %d, the hook said final = %d", k, ev[e].placed,
                    k % 2);
          goto out;
        }
        const unsigned char *at = (unsigned char *)h.buf + (size_t)k * HOOK_SLOT;
        for (size_t b = 0; b < hook_lens[k]; b++)
          if (at[b] != conf_pattern(1, 0, k, b)) {
            conf_fail(r, __LINE__, "piece %d byte %zu is not where the hook said", k, b);
            goto out;
          }
      }
    }
    int expect = 0;
    for (int q = 0; q < NHOOK; q++) expect += hook_lens[q] > 0;
    if (h.bad || h.calls != expect) {
      conf_fail(r, __LINE__, "%s (%d calls of the hook for %d pieces with data)",
                h.bad ? h.what : "hook", h.calls, expect);
      goto out;
    }
    for (size_t b = 0; b < r->region_len; b++)
      if ((unsigned char)r->region[b] != CANARY) {
        conf_fail(r, __LINE__, "byte %zu of the region was written: the writer's offset won", b);
        goto out;
      }
    r->ops->set_placement(r->tl, NULL, NULL);
  }
  /* No hook: the writer's offset again. */
  if (conf_sync_ranks(r)) goto out;
  if (r->rank == 1) {
    for (size_t b = 0; b < 5000; b++) r->src[b] = (char)conf_pattern(1, 0, 0, b);
    zcoll_status_t st = r->ops->put(r->ep[0], r->src, r->smr, r->rk[0], 1000, 5000, 77, 77);
    if (st != ZCOLL_OK || conf_settle(r, 0, 1, 0)) {
      if (st != ZCOLL_OK) conf_fail(r, __LINE__, "put: %s", zcoll_strerror(st));
      goto out;
    }
  } else if (conf_settle(r, 1, 0, 1000)) {
    goto out;
  }
  /* A hook with no place for a piece: the transport fails. */
  if (r->rank == 0) r->ops->set_placement(r->tl, place, &h);
  if (conf_sync_ranks(r)) goto out;
  if (r->rank == 1) {
    zcoll_status_t st = r->ops->put(r->ep[0], r->src, r->smr, r->rk[0], 0, 64, HOOK_NULL, 1);
    if (st != ZCOLL_OK) {
      conf_fail(r, __LINE__, "put: %s", zcoll_strerror(st));
      goto out;
    }
    if (conf_settle(r, 0, 1, 0)) goto out;
  } else {
    double t0 = conf_now();
    zcoll_status_t st = ZCOLL_OK;
    while (st == ZCOLL_OK && conf_now() - t0 < WAIT_S) {
      struct zcoll_tl_event ev[8];
      int n = 0;
      st = r->ops->poll(r->tl, ev, 8, &n);
      for (int e = 0; e < n; e++)
        if (ev[e].kind == ZCOLL_TL_EV_ARRIVED) {
          conf_fail(r, __LINE__, "ARRIVED for a piece the hook had no place for");
          goto out;
        }
    }
    if (st != ZCOLL_ERR_TRANSPORT) {
      conf_fail(r, __LINE__, "a NULL from the hook: poll() said %s, the contract says TRANSPORT",
                zcoll_strerror(st));
      goto out;
    }
    r->ops->set_placement(r->tl, NULL, NULL);
  }
out:
  conf_teardown(r, 1);
  munmap(h.buf, NHOOK * HOOK_SLOT);
  return atomic_load(&r->sh->nfail) ? -1 : 0;
}

ParameterizedTestParameters(conformance, placement) { return conf_rows(1); }
ParameterizedTest(int *i, conformance, placement, .timeout = 200) {
  conf_need(*i);
  struct job j = {.tl_index = *i, .size = 2, .victim = -1, .body = placement_body};
  munmap(conf_run(&j), sizeof(struct shared));
}
