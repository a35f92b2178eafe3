/*
 * Compressed averaging (ZCOLL_WIRE_DTYPE=bfloat16|float16): float32 sums that travel as a
 * 16-bit float.
 *
 * wire_kernels: the pack, unpack, round and reduce kernels on every instruction-set
 * variant this CPU runs, bit for bit against a reference that converts on its own
 * (reduce_ref.h: the compiler's _Float16, and bfloat16 rounded by comparing neighbours).
 *
 * wire: ranks as threads over loopback, every allreduce algorithm, persistent requests,
 * reduce_scatter, reduce and the partial allreduce, SUM, AVG and a premul sum, sampled pairwise
 * (wire type x algorithm x op x p). Every element of every result is checked against the
 * exact sum in double of inputs each rank computes itself:
 *   agreement    every rank that holds a result holds the same bits;
 *   rounding     each element is a value of the wire type (so the wire was used);
 *   error bound  |result - exact| <= ((1+u)^n (1+2^-24)^(n+1) - 1) * sum |x_i| (divided by
 *                n for AVG) + (n+1) 2^-25, n the contributors, u = 2^-8 (bfloat16) or
 *                2^-11 (float16): docs/partial.md derives it;
 *   bytes        zcoll_comm_stats counts exactly half the payload bytes of the same call
 *                without the wire type.
 * And: ranks that differ in ZCOLL_WIRE_DTYPE get ZCOLL_ERR_MISMATCH naming it, on a float32
 * sum only (an int32 sum is not compressed, so it still agrees).
 */
#include <math.h>

#include "rank_threads.h"
#include "reduce_ref.h"

/* ---- the kernels ------------------------------------------------------------------- */

static float ref_q(int wire, float f) {
  unsigned char b[2];
  ref_narrow(wire, f, b);
  return ref_widen(wire, b);
}

static int same_bits(float a, float b) {
  return (isnan(a) && isnan(b)) || !memcmp(&a, &b, sizeof(a));
}

/* Random bits (every class), and plain values of every magnitude. */
static float gen_f32(uint64_t *s) {
  uint64_t r = rng_next(s);
  float f;
  if ((r >> 60) < 6) {
    uint32_t u = (uint32_t)r;
    memcpy(&f, &u, 4);
    return f;
  }
  return ldexpf((float)((int32_t)(r & 0xffffff) - 0x800000) / 0x1p23f, (int)((r >> 24) % 40) - 20);
}

Test(wire_kernels, match_the_reference_on_every_isa) {
  enum { N = 77 }; /* vector bodies and a tail on every variant */
  static const int wires[] = {ZCOLL_BFLOAT16, ZCOLL_FLOAT16};
  static const double scalars[] = {1.0, 0.3};
  uint64_t seed = 0x5eed;
  for (int v = 0; v < NISAS; v++) {
    if (zcoll__reduce_set_isa(isas[v]) != 0) continue;
    for (int w = 0; w < 2; w++) {
      int wire = wires[w];
      float a[N], got[N];
      uint16_t h[N], hgot[N];
      for (int rep = 0; rep < 20; rep++) {
        for (int i = 0; i < N; i++) {
          a[i] = gen_f32(&seed);
          unsigned char b[2];
          ref_narrow(wire, gen_f32(&seed), b);
          memcpy(&h[i], b, 2);
        }
        for (int si = 0; si < 2; si++) {
          float sv = (float)scalars[si];
          zcoll__wire_pack((zcoll_dtype_t)wire, hgot, a, N, scalars[si]);
          for (int i = 0; i < N; i++) {
            float want = ref_q(wire, a[i] * sv), g = ref_widen(wire, (unsigned char *)&hgot[i]);
            cr_assert(same_bits(g, want), "isa=%s %s pack: %a * %g -> %a, want %a", isas[v],
                      dtype_names[wire], (double)a[i], (double)sv, (double)g, (double)want);
          }
          zcoll__wire_round((zcoll_dtype_t)wire, got, a, N, scalars[si]);
          for (int i = 0; i < N; i++)
            cr_assert(same_bits(got[i], ref_q(wire, a[i] * sv)), "isa=%s round %a", isas[v],
                      (double)a[i]);
          for (int div = 0; div <= 3; div += 3)
            for (int fin = 0; fin < 2; fin++)
              for (int alias = 0; alias < 2; alias++) {
                float acc[N];
                memcpy(acc, a, sizeof(acc));
                float *dst = alias ? acc : got;
                zcoll__wire_reduce((zcoll_dtype_t)wire, dst, acc, h, N, scalars[si], div, fin);
                for (int i = 0; i < N; i++) {
                  float r = ref_q(wire, a[i] * sv) + ref_widen(wire, (unsigned char *)&h[i]);
                  if (div) r = r / (float)div;
                  if (fin) r = ref_q(wire, r);
                  cr_assert(same_bits(dst[i], r),
                            "isa=%s %s reduce(scalar %g, divisor %d, final %d, %s) of %a and "
                            "0x%04x: %a, want %a",
                            isas[v], dtype_names[wire], (double)sv, div, fin,
                            alias ? "in place" : "apart", (double)a[i], h[i], (double)dst[i],
                            (double)r);
                }
              }
        }
        zcoll__wire_unpack((zcoll_dtype_t)wire, got, h, N);
        for (int i = 0; i < N; i++)
          cr_assert(same_bits(got[i], ref_widen(wire, (unsigned char *)&h[i])), "isa=%s unpack",
                    isas[v]);
      }
    }
  }
  zcoll__reduce_set_isa(NULL);
}

/* ---- ranks ------------------------------------------------------------------------- */

enum { K_ALLREDUCE, K_PERSISTENT, K_REDUCE_SCATTER, K_PARTIAL, K_REDUCE };
enum { O_SUM, O_AVG, O_PREMUL };
#define PREMUL_SCALAR 0.25
#define MAXP 8
#define STEPS 30 /* a partial allreduce's starts per rank */

struct wcase { /* arrays, not pointers: Criterion hands parameters to another process */
  char wire[12], algo[12];
  int p, kind, op;
  size_t count;
  int quorum; /* K_PARTIAL */
};

/* Element i of rank r's k-th input: 24 random bits at a random scale 2^-6..2^6, so that
 * rounding to 16 bits loses something and a sum of a few is exact in double. */
static float wv(int r, int k, size_t i) {
  uint64_t h = (uint64_t)(r + 1) * 0x9e3779b97f4a7c15ull ^
               (uint64_t)(k + 1) * 0xbf58476d1ce4e5b9ull ^
               (uint64_t)(i + 1) * 0x94d049bb133111ebull;
  h ^= h >> 31;
  h *= 0xd6e8feb86659fd93ull;
  h ^= h >> 32;
  return ldexpf((float)(int32_t)(h & 0xffffff) / 0x1p23f - 1.0f, (int)((h >> 24) % 13) - 6);
}

struct wrec { /* one partial round as a rank saw it */
  uint64_t round;
  int n, k;
};

struct wrun {
  const struct wcase *c;
  int plain;     /* this run without the wire type: only its byte counts matter */
  zcoll_op_t op; /* created once: ops are the process's, and the ranks are its threads */
  float *res[MAXP];
  uint64_t bytes[MAXP];
  struct wrec rec[MAXP][STEPS];
  float *pres[MAXP]; /* K_PARTIAL: STEPS results per rank */
};

static void fill(float *x, int rank, int k, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = wv(rank, k, i);
}

static int partial_run(zcoll_comm_t *comm, struct wrun *w, int rank, zcoll_op_t op, float *in,
                       float *out) {
  const struct wcase *c = w->c;
  zcoll_request_t *req;
  if (zcoll_allreduce_partial_init(comm, in, out, c->count, ZCOLL_FLOAT32, op, c->quorum, &req) !=
      ZCOLL_OK)
    return 1;
  int bad = 0;
  unsigned seed = 99u + (unsigned)rank;
  for (int k = 0; k < STEPS && !bad; k++) {
    fill(in, rank, k, c->count);
    usleep((useconds_t)(rand_r(&seed) % 300));
    int mine;
    bad = zcoll_start(req) != ZCOLL_OK || zcoll_wait(req) != ZCOLL_OK ||
          zcoll_request_partial_info(req, &w->rec[rank][k].round, &w->rec[rank][k].n, &mine) !=
              ZCOLL_OK;
    w->rec[rank][k].k = k;
    memcpy(w->pres[rank] + (size_t)k * c->count, out, c->count * sizeof(float));
  }
  bad |= !bad && zcoll_partial_flush(req) != ZCOLL_OK;
  bad |= zcoll_request_free(req) != ZCOLL_OK;
  return bad;
}

static void wire_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  struct wrun *w = job->arg;
  const struct wcase *c = w->c;
  size_t n = c->count, in_n = c->kind == K_REDUCE_SCATTER ? n * (size_t)c->p : n;
  float *in = malloc(in_n * sizeof(float)), *out = w->res[rank];
  zcoll_op_t op = w->op;
  char msg[300];
  zcoll_status_t st = ZCOLL_OK;
  fill(in, rank, 0, in_n);
  if (c->kind == K_ALLREDUCE) {
    st = zcoll_allreduce(comm, in, out, n, ZCOLL_FLOAT32, op);
  } else if (c->kind == K_REDUCE_SCATTER) {
    st = zcoll_reduce_scatter(comm, in, out, n, ZCOLL_FLOAT32, op);
  } else if (c->kind == K_REDUCE) { /* to the last rank */
    st = zcoll_reduce(comm, in, rank == c->p - 1 ? out : NULL, n, ZCOLL_FLOAT32, op, c->p - 1);
  } else if (c->kind == K_PERSISTENT) { /* two starts, the second with other data */
    zcoll_request_t *req;
    st = zcoll_allreduce_init(comm, in, out, n, ZCOLL_FLOAT32, op, &req);
    for (int k = 0; k < 2 && st == ZCOLL_OK; k++) {
      fill(in, rank, k, n);
      if ((st = zcoll_start(req)) == ZCOLL_OK) st = zcoll_wait(req);
    }
    if (zcoll_request_free(req) != ZCOLL_OK && st == ZCOLL_OK) st = ZCOLL_ERR_TRANSPORT;
  } else if (partial_run(comm, w, rank, op, in, out)) {
    st = ZCOLL_ERR_TRANSPORT;
  }
  if (st != ZCOLL_OK) {
    snprintf(msg, sizeof(msg), "%s: %s", zcoll_strerror(st), zcoll_last_error());
    rt_fail(job, rank, msg);
  }
  zcoll_comm_stats_t stats;
  if (zcoll_comm_stats(comm, &stats, sizeof(stats)) == ZCOLL_OK)
    w->bytes[rank] = stats.bytes_sent_same_host + stats.bytes_sent_other_hosts;
  free(in);
}

/* The bound on |result - exact| for n contributors (see the top of this file). */
static double bound(const struct wcase *c, int n, double abs_sum) {
  double u = strcmp(c->wire, "bfloat16") == 0 ? 0x1p-8 : 0x1p-11;
  double rel = pow(1 + u, n) * pow(1 + 0x1p-24, n + 1) - 1;
  return rel * (c->op == O_AVG ? abs_sum / n : abs_sum) + (n + 1) * 0x1p-25;
}

/* Element i of the result of the offers of `ranks` (k-th inputs, ks[j] for ranks[j]),
 * checked: a value of the wire type, within the bound of the exact value. */
static void check_elem(const struct wcase *c, float got, const int *ranks, const int *ks, int n,
                       size_t i, size_t at, const char *what) {
  double exact = 0, abs_sum = 0, sc = c->op == O_PREMUL ? PREMUL_SCALAR : 1.0;
  for (int j = 0; j < n; j++) {
    double x = (double)wv(ranks[j], ks[j], at) * sc;
    exact += x;
    abs_sum += fabs(x);
  }
  if (c->op == O_AVG) exact /= n;
  int wire = strcmp(c->wire, "bfloat16") == 0 ? ZCOLL_BFLOAT16 : ZCOLL_FLOAT16;
  if (n > 1)
    cr_assert(same_bits(got, ref_q(wire, got)), "%s element %zu = %a: not a %s value", what, i,
              (double)got, c->wire);
  double err = fabs((double)got - exact), lim = bound(c, n, abs_sum);
  cr_assert(err <= lim, "%s element %zu: %.9g, exact %.9g: error %.3g over the bound %.3g", what, i,
            (double)got, exact, err, lim);
}

static void check_partial(const struct wrun *w) {
  const struct wcase *c = w->c;
  int rounds = 0;
  for (int r = 0; r < c->p; r++)
    for (int k = 0; k < STEPS; k++) {
      const struct wrec *e = &w->rec[r][k];
      int ranks[MAXP], ks[MAXP], n = 0, first = 1;
      /* this round's members: every report of it; the lowest reporter checks it */
      for (int r2 = 0; r2 < c->p; r2++)
        for (int k2 = 0; k2 < STEPS; k2++)
          if (w->rec[r2][k2].round == e->round) {
            first &= r2 > r || (r2 == r && k2 >= k);
            ranks[n] = r2;
            ks[n++] = k2;
          }
      if (!first) continue;
      rounds++;
      cr_assert_eq(n, e->n, "round %llu: %d members report it, it holds %d offers",
                   (unsigned long long)e->round, n, e->n);
      const float *res0 = w->pres[r] + (size_t)k * c->count;
      for (int j = 1; j < n; j++)
        cr_assert(
            !memcmp(res0, w->pres[ranks[j]] + (size_t)ks[j] * c->count, c->count * sizeof(float)),
            "round %llu: rank %d and rank %d hold different results", (unsigned long long)e->round,
            r, ranks[j]);
      char what[64];
      snprintf(what, sizeof(what), "round %llu", (unsigned long long)e->round);
      for (size_t i = 0; i < c->count; i++) check_elem(c, res0[i], ranks, ks, n, i, i, what);
    }
  cr_assert_gt(rounds, STEPS / 2, "only %d rounds", rounds);
}

static void wire_case(const struct wcase *c, int plain, struct wrun *w) {
  memset(w, 0, sizeof(*w));
  w->c = c;
  w->plain = plain;
  w->op = c->op == O_AVG ? ZCOLL_AVG : ZCOLL_SUM;
  if (c->op == O_PREMUL) cr_assert_eq(zcoll_op_create_premul_sum(PREMUL_SCALAR, &w->op), ZCOLL_OK);
  size_t per = c->kind == K_PARTIAL ? c->count * STEPS : c->count;
  for (int r = 0; r < c->p; r++) {
    w->res[r] = calloc(c->count + 1, sizeof(float));
    w->pres[r] = calloc(per + 1, sizeof(float));
  }
  struct rt_job job = {.size = c->p, .body = wire_body, .arg = w};
  job.settings[0][0] = "WIRE_DTYPE";
  job.settings[0][1] = plain ? "none" : c->wire;
  job.settings[1][0] = "ALGO";
  job.settings[1][1] = c->algo;
  cr_assert_eq(rt_run(&job), 0, "%s%s", plain ? "without the wire type: " : "", job.all);
}

static void free_run(struct wrun *w) {
  for (int r = 0; r < w->c->p; r++) free(w->res[r]), free(w->pres[r]);
  if (w->c->op == O_PREMUL) zcoll_op_free(w->op);
}

ParameterizedTestParameters(wire, every_algorithm_kind_and_op) {
  static struct wcase cases[] = {
      {"bfloat16", "ring", 4, K_ALLREDUCE, O_SUM, 10000, 0},
      {"float16", "ring", 3, K_ALLREDUCE, O_AVG, 777, 0},
      {"bfloat16", "butterfly", 4, K_ALLREDUCE, O_AVG, 1000, 0},
      {"float16", "butterfly", 5, K_ALLREDUCE, O_SUM, 333, 0},
      {"bfloat16", "rhd", 6, K_ALLREDUCE, O_SUM, 5000, 0},
      {"float16", "rhd", 4, K_ALLREDUCE, O_PREMUL, 4096, 0},
      {"bfloat16", "tree", 5, K_ALLREDUCE, O_PREMUL, 1000, 0},
      {"float16", "tree", 8, K_ALLREDUCE, O_SUM, 200, 0},
      {"bfloat16", "chain", 3, K_ALLREDUCE, O_AVG, 3000, 0},
      {"bfloat16", "hier", 4, K_ALLREDUCE, O_SUM, 2000, 0},
      {"float16", "auto", 4, K_ALLREDUCE, O_AVG, 100000, 0},
      {"bfloat16", "ring", 4, K_PERSISTENT, O_AVG, 50000, 0},
      {"float16", "auto", 3, K_PERSISTENT, O_SUM, 8, 0},
      {"bfloat16", "auto", 4, K_REDUCE_SCATTER, O_SUM, 1000, 0},
      {"float16", "auto", 3, K_REDUCE_SCATTER, O_AVG, 20000, 0},
      {"bfloat16", "auto", 5, K_REDUCE_SCATTER, O_PREMUL, 10, 0},
      {"float16", "auto", 4, K_REDUCE, O_AVG, 30000, 0},
      {"bfloat16", "tree", 5, K_REDUCE, O_SUM, 300, 0},
      {"bfloat16", "auto", 4, K_PARTIAL, O_AVG, 1000, 3},
      {"float16", "auto", 3, K_PARTIAL, O_SUM, 100, 2},
  };
  return cr_make_param_array(struct wcase, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct wcase *c, wire, every_algorithm_kind_and_op, .timeout = 300) {
  static struct wrun w, plain;
  wire_case(c, 0, &w);
  int ranks[MAXP], ks[MAXP];
  for (int r = 0; r < c->p; r++) ranks[r] = r, ks[r] = c->kind == K_PERSISTENT;
  char what[64];
  if (c->kind == K_PARTIAL) {
    check_partial(&w);
  } else if (c->kind == K_REDUCE_SCATTER) {
    for (int r = 0; r < c->p; r++) {
      snprintf(what, sizeof(what), "rank %d's block", r);
      for (size_t i = 0; i < c->count; i++)
        check_elem(c, w.res[r][i], ranks, ks, c->p, i, (size_t)r * c->count + i, what);
    }
  } else if (c->kind == K_REDUCE) {
    for (size_t i = 0; i < c->count; i++)
      check_elem(c, w.res[c->p - 1][i], ranks, ks, c->p, i, i, "the root's");
  } else {
    for (int r = 1; r < c->p; r++)
      cr_assert(!memcmp(w.res[0], w.res[r], c->count * sizeof(float)),
                "ranks 0 and %d hold different results", r);
    for (size_t i = 0; i < c->count; i++) check_elem(c, w.res[0][i], ranks, ks, c->p, i, i, "");
  }
  if (c->kind == K_ALLREDUCE || c->kind == K_REDUCE_SCATTER || c->kind == K_REDUCE) {
    wire_case(c, 1, &plain);
    for (int r = 0; r < c->p; r++)
      cr_assert_eq(2 * w.bytes[r], plain.bytes[r],
                   "rank %d sent %llu bytes with the wire type, %llu without", r,
                   (unsigned long long)w.bytes[r], (unsigned long long)plain.bytes[r]);
    free_run(&plain);
  }
  free_run(&w);
}

/* Rank 1 sends float16 where the others send bfloat16 (or nothing compressed). */
static void mismatch_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  int32_t i = rank;
  float f[64];
  fill(f, rank, 0, 64);
  char msg[400];
  if (zcoll_allreduce(comm, ZCOLL_IN_PLACE, &i, 1, ZCOLL_INT32, ZCOLL_SUM) != ZCOLL_OK) {
    snprintf(msg, sizeof(msg), "an int32 sum, which nothing compresses: %s", zcoll_last_error());
    rt_fail(job, rank, msg);
    return;
  }
  zcoll_status_t st = zcoll_allreduce(comm, ZCOLL_IN_PLACE, f, 64, ZCOLL_FLOAT32, ZCOLL_SUM);
  snprintf(msg, sizeof(msg), "%s %s", st == ZCOLL_OK ? "OK" : zcoll_strerror(st),
           st == ZCOLL_OK ? "" : zcoll_last_error());
  rt_fail(job, rank, msg); /* every rank reports; the test reads them all */
}

Test(wire, ranks_that_differ_get_mismatch, .timeout = 120) {
  static const char *others[] = {"bfloat16", "none"};
  for (int v = 0; v < 2; v++) {
    struct rt_job job = {.size = 3, .body = mismatch_body};
    job.settings[0][0] = "WIRE_DTYPE";
    job.settings[0][1] = others[v];
    job.rank1_setting[0] = "WIRE_DTYPE";
    job.rank1_setting[1] = "float16";
    rt_run(&job);
    cr_assert_eq(job.failures, 3, "%s", job.all);
    cr_assert(!strstr(job.all, ": OK"), "a rank's call succeeded (others %s): %s", others[v],
              job.all);
    cr_assert(strstr(job.all, "different arguments") && strstr(job.all, "sent as float16"),
              "nobody reported a mismatch naming the wire type: %s", job.all);
  }
}
