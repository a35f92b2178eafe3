/*
 * test_algorithms.c -- every algorithm, twice over (the allgather, reduce-scatter and
 * reduce schedules symbolically too).
 *
 * Statically, with no transport: every rank's schedule for p = 1..17 is built and run
 * symbolically, in program order with unbounded buffers (the order the executor's
 * dependency tracking makes every schedule equivalent to). Elements carry the sum of
 * random per-rank tags and the number of divisions applied, so a lost or doubled
 * contribution, a missing or second AVG division, a divided value reduced further, a
 * read of an unwritten result element, a send that no receive matches in order and
 * size, an op on a rank outside peers() or a cycle of receives are all caught.
 *
 * Then for real: the full correctness matrix as threads over the loopback transport
 * with each algorithm forced, p = 1..9, small chunks and a shallow pipeline, so that
 * bounded buffering (credits) would expose an order that only unbounded buffers save.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdint.h>

#include "algorithms/algorithms.h"
#include "check_matrix.h"
#include "rank_threads.h"
#include "sample.h"

/* ---- the schedules, symbolically ---------------------------------------------------- */

#define SIM_MAXP 17
#define SIM_POISON 100 /* divisions: a divided value was reduced again */

struct val {
  uint64_t sum; /* sum of the contributing ranks' tags, mod 2^64 */
  int divs;     /* AVG divisions applied; SIM_POISON once a divided value is reduced */
  int valid;    /* written (the result buffer starts as garbage out of place) */
};

struct msg {
  struct msg *next;
  size_t count;
  struct val v[];
};

struct sim {
  int p;
  size_t count;
  struct zcoll__sched s[SIM_MAXP];
  struct val *src[SIM_MAXP], *dst[SIM_MAXP], *tmp[SIM_MAXP];
  struct msg *head[SIM_MAXP][SIM_MAXP], *tail[SIM_MAXP][SIM_MAXP]; /* [from][to] */
  int pc[SIM_MAXP];
  char why[300];
};

static uint64_t tag(int r, size_t i) {
  uint64_t x = ((uint64_t)r << 40) ^ (i * 0x9e3779b97f4a7c15ull) ^ 0x5bd1e995ull;
  x ^= x >> 31, x *= 0xbf58476d1ce4e5b9ull, x ^= x >> 29, x *= 0x94d049bb133111ebull;
  return x ^ (x >> 32);
}

static struct val combine(struct val a, struct val b, int final) {
  struct val c = {a.sum + b.sum, a.divs || b.divs ? SIM_POISON : final, a.valid && b.valid};
  return c;
}

/* Rank r's buffer k, indexed by coordinate (the bases only place coordinates in memory). */
static struct val *buf_of(struct sim *m, int r, int k) {
  return k == ZCOLL_BUF_SRC ? m->src[r] : k == ZCOLL_BUF_TMP ? m->tmp[r] : m->dst[r];
}

/* Runs rank r until it blocks on an empty channel. Returns -1 on error, else the
 * number of ops executed. */
static int sim_step(struct sim *m, int r) {
  const struct zcoll__sched *s = &m->s[r];
  int done = 0;
  for (; m->pc[r] < s->nops; m->pc[r]++, done++) {
    const struct zcoll__sop *o = &s->ops[m->pc[r]];
    struct val *buf = buf_of(m, r, o->buf), *acc = buf_of(m, r, o->acc);
    if (o->off + o->count > m->count) {
      snprintf(m->why, sizeof(m->why), "rank %d op %d: range past the end", r, m->pc[r]);
      return -1;
    }
    if (o->kind == ZCOLL_SOP_COPY) {
      for (size_t i = 0; i < o->count; i++) buf[o->off + i] = acc[o->off + i];
      continue;
    }
    int q = o->peer;
    if (q < 0 || q >= m->p || q == r) {
      snprintf(m->why, sizeof(m->why), "rank %d op %d: bad peer %d", r, m->pc[r], q);
      return -1;
    }
    if (o->kind == ZCOLL_SOP_SEND) {
      struct msg *g = malloc(sizeof(*g) + o->count * sizeof(struct val));
      g->next = NULL;
      g->count = o->count;
      for (size_t i = 0; i < o->count; i++) {
        g->v[i] = buf[o->off + i];
        if (!g->v[i].valid) {
          snprintf(m->why, sizeof(m->why), "rank %d op %d sends unwritten element %zu", r, m->pc[r],
                   o->off + i);
          free(g);
          return -1;
        }
      }
      if (m->tail[r][q])
        m->tail[r][q]->next = g;
      else
        m->head[r][q] = g;
      m->tail[r][q] = g;
      continue;
    }
    struct msg *g = m->head[q][r];
    if (!g) return done; /* blocked */
    if (g->count != o->count) {
      snprintf(m->why, sizeof(m->why),
               "rank %d op %d receives %zu elements from %d, which sent %zu", r, m->pc[r], o->count,
               q, g->count);
      return -1;
    }
    if (!(m->head[q][r] = g->next)) m->tail[q][r] = NULL;
    for (size_t i = 0; i < o->count; i++) {
      struct val *d = &buf[o->off + i];
      *d = o->kind == ZCOLL_SOP_RECV_COPY ? g->v[i] : combine(acc[o->off + i], g->v[i], o->final);
      if (!d->valid) {
        snprintf(m->why, sizeof(m->why), "rank %d op %d reduces unwritten element %zu", r, m->pc[r],
                 o->off + i);
        free(g);
        return -1;
      }
    }
    free(g);
  }
  return done;
}

static int in_list(const int *l, int n, int x) {
  for (int i = 0; i < n; i++)
    if (l[i] == x) return 1;
  return 0;
}

/* Peers are in range, distinct, symmetric, respect `max`, and cover every op. */
static int check_peers(struct sim *m, const struct zcoll__algo *a,
                       const struct zcoll__algo_params *pa) {
  int lists[SIM_MAXP][SIM_MAXP], n[SIM_MAXP];
  for (int r = 0; r < m->p; r++) {
    n[r] = a->peers(r, m->p, pa, lists[r], SIM_MAXP);
    int one[1] = {-1};
    if (a->peers(r, m->p, pa, one, 1) > 1 || (m->p > 1 && n[r] == 0) || n[r] > m->p - 1) {
      snprintf(m->why, sizeof(m->why), "rank %d: peers() ignores max or has %d", r, n[r]);
      return -1;
    }
    for (int i = 0; i < n[r]; i++)
      if (lists[r][i] < 0 || lists[r][i] >= m->p || lists[r][i] == r ||
          in_list(lists[r], i, lists[r][i])) {
        snprintf(m->why, sizeof(m->why), "rank %d: bad or repeated peer %d", r, lists[r][i]);
        return -1;
      }
  }
  for (int r = 0; r < m->p; r++) {
    for (int i = 0; i < n[r]; i++)
      if (!in_list(lists[lists[r][i]], n[lists[r][i]], r)) {
        snprintf(m->why, sizeof(m->why), "%d lists %d as a peer, not vice versa", r, lists[r][i]);
        return -1;
      }
    for (int i = 0; i < m->s[r].nops; i++)
      if (m->s[r].ops[i].peer >= 0 && !in_list(lists[r], n[r], m->s[r].ops[i].peer)) {
        snprintf(m->why, sizeof(m->why), "rank %d talks to %d, not in its peers()", r,
                 m->s[r].ops[i].peer);
        return -1;
      }
  }
  return 0;
}

/* The k-th send from r to q and the k-th receive on q from r move the same count. */
static int check_pairs(struct sim *m) {
  for (int r = 0; r < m->p; r++)
    for (int q = 0; q < m->p; q++) {
      const struct zcoll__sched *a = &m->s[r], *b = &m->s[q];
      int i = 0, j = 0, k = 0;
      for (;; i++, j++, k++) {
        while (i < a->nops && !(a->ops[i].peer == q && a->ops[i].kind == ZCOLL_SOP_SEND)) i++;
        while (j < b->nops && !(b->ops[j].peer == r && b->ops[j].kind != ZCOLL_SOP_SEND)) j++;
        if (i == a->nops && j == b->nops) break;
        if (i == a->nops || j == b->nops || a->ops[i].count != b->ops[j].count) {
          snprintf(m->why, sizeof(m->why), "send %d from %d to %d (%zu elements) vs receive (%zu)",
                   k, r, q, i < a->nops ? a->ops[i].count : 0, j < b->nops ? b->ops[j].count : 0);
          return -1;
        }
      }
    }
  return 0;
}

/* Every send matched in order and size, then every rank run to its end: 0, or -1 (why). */
static int sim_drive(struct sim *m) {
  int rc = check_pairs(m), p = m->p;
  for (int progress = 1; !rc && progress;) {
    progress = 0;
    for (int r = 0; r < p && !rc; r++) {
      int k = sim_step(m, r);
      if (k < 0) rc = -1;
      progress |= k > 0;
    }
  }
  for (int r = 0; r < p && !rc; r++) {
    if (m->pc[r] < m->s[r].nops) {
      snprintf(m->why, sizeof(m->why), "deadlock: rank %d stuck at op %d of %d", r, m->pc[r],
               m->s[r].nops);
      rc = -1;
    }
    for (int q = 0; q < p && !rc; q++)
      if (m->head[r][q]) {
        snprintf(m->why, sizeof(m->why), "%d sent %d a message nobody received", r, q);
        rc = -1;
      }
  }
  return rc;
}

static void sim_free(struct sim *m, int in_place) {
  for (int r = 0; r < m->p; r++) {
    zcoll__sched_free(&m->s[r]);
    if (!in_place) free(m->src[r]);
    free(m->dst[r]);
    free(m->tmp[r]);
    for (int q = 0; q < m->p; q++)
      for (struct msg *g = m->head[r][q], *nx; g; g = nx) nx = g->next, free(g);
  }
}

/* Builds and runs one allreduce of every rank; 0 if it is right. */
static int sim_run(struct sim *m, const struct zcoll__algo *a, const struct zcoll__algo_params *pa,
                   int p, size_t count, int in_place) {
  memset(m, 0, sizeof(*m));
  m->p = p;
  m->count = count;
  int rc = 0;
  for (int r = 0; r < p; r++) {
    zcoll__sched_init(&m->s[r], r, p, count, in_place);
    a->build(&m->s[r], pa);
    if (zcoll__sched_finish(&m->s[r]) != ZCOLL_OK) {
      snprintf(m->why, sizeof(m->why), "rank %d: building failed", r);
      rc = -1;
    }
    m->dst[r] = calloc(count + 1, sizeof(struct val));
    m->tmp[r] = calloc(count + 1, sizeof(struct val));
    /* In place the input is the result buffer (the builder never names SRC then). */
    m->src[r] = in_place ? m->dst[r] : calloc(count + 1, sizeof(struct val));
    for (size_t i = 0; i < count; i++) m->src[r][i] = (struct val){tag(r, i), 0, 1};
  }
  if (!rc) rc = check_peers(m, a, pa);
  if (!rc) rc = sim_drive(m);
  for (int r = 0; r < p && !rc; r++) {
    for (size_t i = 0; i < count && !rc; i++) {
      uint64_t want = 0;
      for (int q = 0; q < p; q++) want += tag(q, i);
      struct val v = m->dst[r][i];
      if (!v.valid || v.sum != want || v.divs != (p > 1)) {
        snprintf(m->why, sizeof(m->why),
                 "rank %d element %zu: %s, %s, divided %d times (expected %d)", r, i,
                 v.valid ? "written" : "never written", v.sum == want ? "right sum" : "wrong sum",
                 v.divs, p > 1);
        rc = -1;
      }
    }
  }
  sim_free(m, in_place);
  return rc;
}

Test(algorithms, schedules) {
  static const int arities[] = {4, 2, 3, 5, 64}; /* the first is the default */
  static struct sim m;
  for (int a = 0; a < zcoll__nalgos; a++) {
    int tree = strcmp(zcoll__algos[a]->name, "tree") == 0;
    for (int ar = 0; ar < (tree ? 5 : 1); ar++) {
      struct zcoll__algo_params pa = {arities[ar]};
      for (int p = 1; p <= SIM_MAXP; p++) {
        size_t counts[] = {0, 1, 2, (size_t)p - 1, (size_t)p + 1, 2 * (size_t)p + 3, 1001};
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
          for (int in_place = 0; in_place < 2; in_place++)
            cr_assert(!sim_run(&m, zcoll__algos[a], &pa, p, counts[c], in_place),
                      "%s (arity %d) p=%d count %zu %s: %s", zcoll__algos[a]->name, pa.tree_arity,
                      p, counts[c], in_place ? "in place" : "out of place", m.why);
      }
    }
  }
}

/* The hierarchical schedule over host layouts: contiguous even hosts, uneven ones (a host
 * of 1 makes one slice), interleaved (a host's ranks not adjacent), a host per rank. */
Test(algorithms, hier_host_layouts) {
  static struct sim m;
  const struct zcoll__algo *a = zcoll__algos[zcoll__algo_find("hier")];
  static const int uneven[] = {2, 3, 1};
  for (int p = 1; p <= SIM_MAXP; p++)
    for (int layout = 0; layout < 5; layout++) {
      int host_of[SIM_MAXP], nhosts = 0;
      for (int r = 0, h = 0, left = uneven[0]; r < p; r++) {
        switch (layout) {
        case 0: host_of[r] = r / 2; break;
        case 1: host_of[r] = r / 3; break;
        case 2: /* 2, 3, 1, 2, 3, 1, ... ranks per host */
          if (!left) left = uneven[++h % 3];
          host_of[r] = h;
          left--;
          break;
        case 3: host_of[r] = r % 3 < p ? r % (p < 3 ? p : 3) : 0; break;
        default: host_of[r] = r; break;
        }
        if (host_of[r] + 1 > nhosts) nhosts = host_of[r] + 1;
      }
      struct zcoll__algo_params pa = {2, host_of, nhosts};
      size_t counts[] = {0, 1, 2, (size_t)p + 1, 2 * (size_t)p + 3, 1001};
      for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
        for (int in_place = 0; in_place < 2; in_place++)
          cr_assert(!sim_run(&m, a, &pa, p, counts[c], in_place),
                    "hier layout %d p=%d (%d hosts) count %zu %s: %s", layout, p, nhosts, counts[c],
                    in_place ? "in place" : "out of place", m.why);
    }
}

/* ---- allgather, reduce-scatter, reduce, symbolically ---- */

enum { SIM_AG, SIM_RS, SIM_REDUCE };

/* Rank r's schedule of kind over n elements per rank (a reduce: of n elements, to root). */
static void build_kind(struct zcoll__sched *s, int kind, int a, int root,
                       const struct zcoll__algo_params *pa) {
  s->root = root;
  if (kind == SIM_AG)
    zcoll__ag_algos[a]->build(s, pa);
  else if (kind == SIM_RS)
    zcoll__rs_algos[a]->build(s, pa);
  else
    zcoll__reduce_build(s, a < 0 ? &zcoll__reduce_tree : zcoll__algos[a], pa);
}

/* What rank r must hold at coordinate i afterwards (*need 0: nothing -- a reduce-scatter's
 * other blocks, scratch; a non-root's result must then never have been written). */
static struct val expect(int kind, int r, int p, size_t n, size_t i, int root, int *need) {
  uint64_t all = 0;
  for (int q = 0; q < p; q++) all += tag(q, i);
  *need = kind == SIM_AG || (kind == SIM_RS && i / n == (size_t)r) ||
          (kind == SIM_REDUCE && r == root);
  if (kind == SIM_AG) return (struct val){tag((int)(i / n), i), 0, 1};
  return (struct val){all, p > 1, 1};
}

/* The talk of every op stays on channels some allreduce algorithm opened (the union of
 * their peers(): what a communicator connects). */
static int check_channels(struct sim *m, const struct zcoll__algo_params *pa) {
  for (int r = 0; r < m->p; r++)
    for (int i = 0; i < m->s[r].nops; i++) {
      int q = m->s[r].ops[i].peer, ok = q < 0;
      for (int a = 0; a < zcoll__nalgos && !ok; a++) {
        int l[SIM_MAXP], n = zcoll__algos[a]->peers(r, m->p, pa, l, SIM_MAXP);
        ok = in_list(l, n, q);
      }
      if (!ok) {
        snprintf(m->why, sizeof(m->why), "rank %d talks to %d: no algorithm's channel", r, q);
        return -1;
      }
    }
  return 0;
}

static int sim_kind(struct sim *m, int kind, int a, const struct zcoll__algo_params *pa, int p,
                    size_t n, int in_place, int root) {
  memset(m, 0, sizeof(*m));
  size_t count = kind == SIM_REDUCE ? n : n * (size_t)p;
  m->p = p;
  m->count = count;
  int rc = 0;
  for (int r = 0; r < p; r++) {
    zcoll__sched_init(&m->s[r], r, p, count, in_place && (kind != SIM_REDUCE || r == root));
    build_kind(&m->s[r], kind, a, root, pa);
    if (zcoll__sched_finish(&m->s[r]) != ZCOLL_OK) {
      snprintf(m->why, sizeof(m->why), "rank %d: building failed", r);
      rc = -1;
    }
    m->dst[r] = calloc(count + 1, sizeof(struct val));
    m->tmp[r] = calloc(count + 1, sizeof(struct val));
    m->src[r] = m->s[r].in_place ? m->dst[r] : calloc(count + 1, sizeof(struct val));
    for (size_t i = 0; i < count; i++) /* an allgather's input: its own block only */
      if (kind != SIM_AG || i / n == (size_t)r) m->src[r][i] = (struct val){tag(r, i), 0, 1};
  }
  if (!rc) rc = check_channels(m, pa);
  if (!rc) rc = sim_drive(m);
  for (int r = 0; r < p && !rc; r++)
    for (size_t i = 0; i < count && !rc; i++) {
      int need;
      struct val w = expect(kind, r, p, n, i, root, &need), v = m->dst[r][i];
      if (need ? !v.valid || v.sum != w.sum || v.divs != w.divs : kind == SIM_REDUCE && v.valid) {
        snprintf(m->why, sizeof(m->why), "rank %d coordinate %zu: %s%s, divided %d times", r, i,
                 need ? (v.valid ? "written" : "never written") : "written, but not its to write",
                 need && v.valid && v.sum != w.sum ? ", wrong sum" : "", v.divs);
        rc = -1;
      }
    }
  for (int r = 0; r < p; r++) { /* sim_free's in-place rule, rank by rank */
    if (!m->s[r].in_place) free(m->src[r]);
    m->src[r] = m->dst[r];
  }
  sim_free(m, 1);
  return rc;
}

Test(algorithms, allgather_reduce_scatter_reduce_schedules) {
  static struct sim m;
  struct zcoll__algo_params pa = {4};
  for (int p = 1; p <= SIM_MAXP; p++) {
    size_t counts[] = {0, 1, 2, 3, 7, 64};
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
      for (int in_place = 0; in_place < 2; in_place++) {
        for (int a = 0; a < zcoll__nag_algos; a++)
          cr_assert(!sim_kind(&m, SIM_AG, a, &pa, p, counts[c], in_place, -1),
                    "allgather %s p=%d count %zu%s: %s", zcoll__ag_algos[a]->name, p, counts[c],
                    in_place ? " in place" : "", m.why);
        for (int a = 0; a < zcoll__nrs_algos; a++)
          cr_assert(!sim_kind(&m, SIM_RS, a, &pa, p, counts[c], in_place, -1),
                    "reduce_scatter %s p=%d count %zu%s: %s", zcoll__rs_algos[a]->name, p,
                    counts[c], in_place ? " in place" : "", m.why);
        for (int a = -1; a < zcoll__nalgos; a++) { /* -1: the tree folded toward the root */
          if (a >= 0 && !strcmp(zcoll__algos[a]->name, "hier")) continue; /* needs hosts */
          for (int root = 0; root < p; root += (p > 3 ? p / 3 : 1))
            cr_assert(!sim_kind(&m, SIM_REDUCE, a, &pa, p, counts[c], in_place, root),
                      "reduce %s p=%d count %zu root %d%s: %s", zcoll__reduce_algo_name(a), p,
                      counts[c], root, in_place ? " in place" : "", m.why);
        }
      }
  }
}

Test(algorithms, names) {
  static const char *const want[] = {"ring", "butterfly", "rhd", "tree"};
  cr_assert_str_eq(zcoll__algos[0]->name, "ring", "ring must stay first (ids are on the wire)");
  for (int i = 0; i < 4; i++) cr_assert_geq(zcoll__algo_find(want[i]), 0, "%s missing", want[i]);
}

/* ---- the matrix, over the loopback transport ---------------------------------------- */

/* Plain values only: Criterion runs each test in a fresh process. */
struct algo_case {
  char algo[16];
  int arity, size, chunk, depth;
  int big; /* a 3 MiB vector on a few dtype x op pairs instead of the matrix */
};

#define MATRIX_LARGE ((size_t)256 << 10)
#define BIG_BYTES ((size_t)3 << 20)

static void matrix_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  struct chk_stats st = {0, 0, ""};
  chk_run_matrix(comm, MATRIX_LARGE, &st);
  if (st.failures) rt_fail(job, rank, st.first);
}

/* Long vectors stress the pipeline and the credits: every op once, both placements,
 * rather than the whole matrix at 3 MiB, which would take minutes. */
static void big_body(struct rt_job *job, int rank, zcoll_comm_t *comm) {
  static const struct {
    zcoll_dtype_t dt;
    zcoll_op_t op;
    int in_place;
  } cases[] = {{ZCOLL_FLOAT32, ZCOLL_SUM, 0}, {ZCOLL_BFLOAT16, ZCOLL_AVG, 1},
               {ZCOLL_INT64, ZCOLL_AVG, 0},   {ZCOLL_UINT8, ZCOLL_MAX, 1},
               {ZCOLL_FLOAT16, ZCOLL_MIN, 0}, {ZCOLL_INT32, ZCOLL_PROD, 1},
               {ZCOLL_FLOAT64, ZCOLL_AVG, 1}};
  struct chk_stats st = {0, 0, ""};
  for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    if (chk_one(comm, cases[i].dt, cases[i].op, BIG_BYTES / zcoll_dtype_size(cases[i].dt) + 5,
                cases[i].in_place, i % 8, i, &st))
      break;
  if (st.failures) rt_fail(job, rank, st.first);
}

#define NCASES_MAX 128

/* ZCOLL_TEST_SAMPLE=1 (CI's sanitizer pass): 24 of the 84 cases -- every rank count with
 * two of the six algorithm variants (a == p % 6 and a == (p + 3) % 6), so each variant at
 * three rank counts, and the 3 MiB vectors where (a + b) % 5 == 0, so each variant at one
 * size, each size met. CI's plain pass runs the other 60 (sample.h). */
ParameterizedTestParameters(algorithms, loopback) {
  static struct algo_case cases[NCASES_MAX];
  static const struct {
    const char *name;
    int arity;
  } algos[] = {{"ring", 4}, {"butterfly", 4}, {"rhd", 4}, {"tree", 2}, {"tree", 3}, {"tree", 4}};
  static const int chunks[] = {4096, 1024, 4096, 16384};
  int n = 0;
  for (unsigned a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
    for (int p = 1; p <= 9; p++) {
      if (!zt_keep((int)a == p % 6 || (int)a == (p + 3) % 6)) continue;
      struct algo_case c = {"", algos[a].arity, p, chunks[(p + (int)a) % 4], 2 + (p + (int)a) % 3,
                            0};
      snprintf(c.algo, sizeof(c.algo), "%s", algos[a].name);
      cases[n++] = c;
    }
    static const int big_sizes[] = {2, 3, 4, 5, 8};
    for (int b = 0; b < 5; b++) {
      if (!zt_keep(((int)a + b) % 5 == 0)) continue;
      struct algo_case c = {"", algos[a].arity, big_sizes[b], 4096, 2 + b % 3, 1};
      snprintf(c.algo, sizeof(c.algo), "%s", algos[a].name);
      cases[n++] = c;
    }
  }
  return cr_make_param_array(struct algo_case, cases, (size_t)n);
}

ParameterizedTest(struct algo_case *c, algorithms, loopback, .timeout = 300) {
  struct rt_job job = {.size = c->size, .body = c->big ? big_body : matrix_body};
  char chunk[16], depth[16], arity[16];
  snprintf(chunk, sizeof(chunk), "%d", c->chunk);
  snprintf(depth, sizeof(depth), "%d", c->depth);
  snprintf(arity, sizeof(arity), "%d", c->arity);
  const char *set[][2] = {
      {"ALGO", c->algo}, {"TREE_ARITY", arity}, {"CHUNK_BYTES", chunk}, {"PIPELINE_DEPTH", depth}};
  for (int i = 0; i < 4; i++) job.settings[i][0] = set[i][0], job.settings[i][1] = set[i][1];
  double t0 = sp_now_();
  unsigned long f = rt_run(&job);
  cr_assert_eq(f, 0, "%s (arity %d) p=%d chunk=%d depth=%d%s: %lu failures; first: %s", c->algo,
               c->arity, c->size, c->chunk, c->depth, c->big ? " 3 MiB" : "", f, job.first);
  cr_log_info("%s arity %d p=%d%s: %.2f s", c->algo, c->arity, c->size, c->big ? " big" : "",
              sp_now_() - t0);
}
