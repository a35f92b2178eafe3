/*
 * asgd -- data-parallel averaged SGD of a linear classifier, the workload zcoll was first
 * built for: every rank trains a logistic-regression model of --dim floats on its shard
 * of a synthetic data set and, every --every mini-batches, averages the model over all
 * ranks with ZCOLL_AVG while its next mini-batches compute.
 *
 *   zcoll_run -np 4 build/asgd                  # non-blocking averaging (the default)
 *   zcoll_run -np 4 build/asgd --blocking       # the same with a blocking allreduce
 *   zcoll_run -np 4 build/asgd --partial 3 --imbalance 0.1:50   # rounds of 3, stragglers
 *   build/asgd                                  # one rank over the whole data set
 *
 * The averaging is one persistent request (zcoll_allreduce_init once, zcoll_start at
 * every averaging point), so its buffers are set up once. At an averaging point a rank
 * snapshots its model and starts the request on the snapshot; it keeps training on its
 * own copy; at the next point it waits and takes the average plus what it learned since
 * the snapshot (w = avg + (w - snap)), then starts the next averaging. Between
 * mini-batches it calls zcoll_test, which is all the progress ZCOLL_PROGRESS=caller (the
 * default) needs; ZCOLL_PROGRESS=thread moves the averaging without it.
 *
 * The data set is generated, the same for any number of ranks: sample i has --nnz
 * features at hashed positions with values in [-a, a] (a set so |x|^2 is 1 on average),
 * labelled by the sign of a hidden dense model, with 10% of the labels flipped. Sample i
 * belongs to rank i % p. The local learning rate is --lr times p: the average moves
 * each local step 1/p of its length, so the averaged model advances about as fast per
 * epoch as one rank going through all the data at --lr.
 *
 * --partial Q averages with a partial allreduce instead (docs/partial.md): each averaging
 * point offers the snapshot to the round forming when it arrives, which ends with its Q-th
 * offer, so a late rank holds up nobody; an epoch ends with a flush before the full
 * average. --imbalance P:MS makes each rank, each mini-batch, with probability P (seeded
 * by rank) compute MS ms longer: the stragglers partial rounds are for.
 *
 * Rank 0 prints, per epoch, the mean logistic loss over the whole data set (after a
 * final blocking average, every rank evaluating its shard) and the time spent inside zcoll
 * calls (the slowest rank's), then a summary line. Exit status: 0, 1 on an error.
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zcoll.h"

struct opts {
  long dim, samples, nnz, batch, every, epochs;
  double lr, flip;
  int blocking;
  uint64_t seed;
  int partial;          /* the quorum of a partial allreduce; 0: average over every rank */
  double imb_p, imb_ms; /* --imbalance P:MS */
};

/* The local shard: n samples of nnz (index, value) pairs and a 0/1 label each. */
struct shard {
  long n;
  uint32_t *idx;
  float *val, *y;
};

struct trainer {
  const struct opts *o;
  zcoll_comm_t *comm;
  int rank, size;
  float *w, *snap, *avg; /* the model, the snapshot being averaged, the average */
  double *z;             /* one mini-batch's margins */
  zcoll_request_t *req;  /* the persistent averaging */
  int in_flight;
  double comm_s, compute_s; /* time inside zcoll calls, and outside them */
  /* comm_s by call: waiting for an average, starting one, testing, blocking averages */
  double wait_s, start_s, test_s, blocking_s;
  double rounds[2]; /* --partial: rounds this rank's offers joined, full and short */
  uint64_t imb_rng; /* --imbalance's draws */
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* splitmix64: every number of the data set is a pure function of (seed, position), so
 * a rank generates its shard alone and any p sees the same data. */
static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static double unit(uint64_t h) { return (double)(h >> 11) * (1.0 / 9007199254740992.0); }

/* The hidden model's weight of feature f: uniform in [-1, 1]. */
static double hidden(const struct opts *o, uint64_t f) {
  return 2.0 * unit(mix(o->seed ^ 0x5eedf00dull ^ (f * 0x2545f4914f6cdd1dull))) - 1.0;
}

static int make_shard(const struct opts *o, int rank, int size, struct shard *s) {
  s->n = o->samples / size + (rank < o->samples % size);
  s->idx = malloc(sizeof(*s->idx) * (size_t)(s->n * o->nnz));
  s->val = malloc(sizeof(*s->val) * (size_t)(s->n * o->nnz));
  s->y = malloc(sizeof(*s->y) * (size_t)(s->n ? s->n : 1));
  if (!s->idx || !s->val || !s->y) return -1;
  const double a = sqrt(3.0 / (double)o->nnz);
  for (long k = 0; k < s->n; k++) {
    uint64_t i = (uint64_t)(k * size + rank); /* the global sample number */
    double margin = 0.0;
    for (long j = 0; j < o->nnz; j++) {
      uint64_t h = mix(o->seed ^ (i * (uint64_t)o->nnz + (uint64_t)j) * 0x9e3779b97f4a7c15ull);
      uint32_t f = (uint32_t)((h & 0xffffffffu) % (uint64_t)o->dim);
      float v = (float)((2.0 * unit(mix(h)) - 1.0) * a);
      s->idx[k * o->nnz + j] = f;
      s->val[k * o->nnz + j] = v;
      margin += hidden(o, f) * v;
    }
    int label = margin > 0.0;
    if (unit(mix(o->seed ^ 0xf1195ull ^ (i * 0x9e3779b97f4a7c15ull))) < o->flip) label = !label;
    s->y[k] = (float)label;
  }
  return 0;
}

static void free_shard(struct shard *s) {
  free(s->idx);
  free(s->val);
  free(s->y);
}

static double dot(const float *w, const uint32_t *idx, const float *val, long nnz) {
  double z = 0.0;
  for (long j = 0; j < nnz; j++) z += (double)w[idx[j]] * val[j];
  return z;
}

/* log(1 + exp(-z)) for label 1, log(1 + exp(z)) for 0, without overflow. */
static double logloss(double z, float y) {
  double m = y > 0.5f ? -z : z;
  return m > 0.0 ? m + log1p(exp(-m)) : log1p(exp(m));
}

/* One mini-batch of samples [k0, k1): margins with the model fixed, then the update. */
static void sgd_step(struct trainer *t, const struct shard *s, long k0, long k1, double lr) {
  const long nnz = t->o->nnz;
  for (long k = k0; k < k1; k++) t->z[k - k0] = dot(t->w, s->idx + k * nnz, s->val + k * nnz, nnz);
  const double scale = lr / (double)(k1 - k0);
  for (long k = k0; k < k1; k++) {
    double g = 1.0 / (1.0 + exp(-t->z[k - k0])) - s->y[k]; /* d loss / d z */
    const uint32_t *idx = s->idx + k * nnz;
    const float *val = s->val + k * nnz;
    for (long j = 0; j < nnz; j++) t->w[idx[j]] -= (float)(scale * g * val[j]);
  }
}

static int fail(struct trainer *t, const char *what, zcoll_status_t st) {
  const char *detail = t && t->comm ? zcoll_comm_last_error(t->comm) : zcoll_last_error();
  fprintf(stderr, "asgd: rank %d: %s: %s: %s\n", t ? t->rank : -1, what, zcoll_strerror(st),
          detail && *detail ? detail : "(no details)");
  return -1;
}

/* The averaging in flight, if any, ends: w = avg + (w - snap). */
static int finish_average(struct trainer *t) {
  if (!t->in_flight) return 0;
  double t0 = now_s();
  zcoll_status_t st = zcoll_wait(t->req);
  t->wait_s += now_s() - t0;
  t->comm_s += now_s() - t0;
  t->in_flight = 0;
  if (st != ZCOLL_OK) return fail(t, "zcoll_wait (model average)", st);
  for (long f = 0; f < t->o->dim; f++) t->w[f] = t->avg[f] + (t->w[f] - t->snap[f]);
  int n = 0;
  if (t->o->partial && (st = zcoll_request_partial_info(t->req, NULL, &n, NULL)) != ZCOLL_OK)
    return fail(t, "zcoll_request_partial_info", st);
  if (t->o->partial) t->rounds[n < t->o->partial] += 1;
  return 0;
}

/* An averaging point: blocking, or finish the last one and start the next. */
static int average(struct trainer *t) {
  double t0 = now_s();
  zcoll_status_t st;
  if (t->o->blocking && !t->o->partial) {
    st = zcoll_allreduce(t->comm, ZCOLL_IN_PLACE, t->w, (size_t)t->o->dim, ZCOLL_FLOAT32,
                         ZCOLL_AVG);
    t->blocking_s += now_s() - t0;
    t->comm_s += now_s() - t0;
    return st == ZCOLL_OK ? 0 : fail(t, "zcoll_allreduce (model average)", st);
  }
  if (finish_average(t)) return -1;
  memcpy(t->snap, t->w, sizeof(float) * (size_t)t->o->dim);
  t0 = now_s();
  st = zcoll_start(t->req);
  t->start_s += now_s() - t0;
  t->comm_s += now_s() - t0;
  if (st != ZCOLL_OK) return fail(t, "zcoll_start (model average)", st);
  t->in_flight = 1;
  /* --partial --blocking: the round's average at once */
  return t->o->blocking ? finish_average(t) : 0;
}

/* Progress for ZCOLL_PROGRESS=caller between mini-batches; an error shows here early. */
static int poke(struct trainer *t) {
  if (!t->in_flight) return 0;
  double t0 = now_s();
  zcoll_status_t st = zcoll_test(t->req);
  t->test_s += now_s() - t0;
  t->comm_s += now_s() - t0;
  if (st == ZCOLL_OK || st == ZCOLL_IN_PROGRESS) return 0;
  t->in_flight = 0;
  return fail(t, "zcoll_test (model average)", st);
}

/* End of an epoch: every rank holds the same model, and the mean loss over the whole
 * data set goes to *loss. */
static int epoch_end(struct trainer *t, const struct shard *s, double *loss) {
  if (finish_average(t)) return -1;
  double t0 = now_s();
  zcoll_status_t st;
  /* every rank's last offer ends in a round before the full average */
  if (t->o->partial && (st = zcoll_partial_flush(t->req)) != ZCOLL_OK)
    return fail(t, "zcoll_partial_flush", st);
  st = zcoll_allreduce(t->comm, ZCOLL_IN_PLACE, t->w, (size_t)t->o->dim, ZCOLL_FLOAT32, ZCOLL_AVG);
  t->comm_s += now_s() - t0;
  if (st != ZCOLL_OK) return fail(t, "zcoll_allreduce (end of epoch)", st);
  double sum[2] = {0.0, (double)s->n};
  for (long k = 0; k < s->n; k++)
    sum[0] += logloss(dot(t->w, s->idx + k * t->o->nnz, s->val + k * t->o->nnz, t->o->nnz),
                      s->y[k]);
  st = zcoll_allreduce(t->comm, ZCOLL_IN_PLACE, sum, 2, ZCOLL_FLOAT64, ZCOLL_SUM);
  if (st != ZCOLL_OK) return fail(t, "zcoll_allreduce (loss)", st);
  *loss = sum[0] / sum[1];
  return 0;
}

static int train(struct trainer *t, const struct shard *s) {
  const struct opts *o = t->o;
  const double lr = o->lr * t->size;
  double first = 0.0, last = 0.0, t_start = now_s();
  for (long e = 1; e <= o->epochs; e++) {
    long batches = 0;
    for (long k0 = 0; k0 < s->n; k0 += o->batch) {
      long k1 = k0 + o->batch < s->n ? k0 + o->batch : s->n;
      double t0 = now_s();
      sgd_step(t, s, k0, k1, lr);
      if (o->imb_p > 0 && unit(mix(t->imb_rng++)) < o->imb_p) {
        struct timespec d = {(time_t)(o->imb_ms / 1000), (long)(fmod(o->imb_ms, 1000.0) * 1e6)};
        nanosleep(&d, NULL);
      }
      t->compute_s += now_s() - t0;
      if (++batches % o->every == 0 ? average(t) : poke(t)) return -1;
    }
    double loss = 0.0, blocked[2] = {t->comm_s, now_s() - t_start};
    if (epoch_end(t, s, &loss)) return -1;
    zcoll_status_t st = zcoll_allreduce(t->comm, ZCOLL_IN_PLACE, blocked, 2, ZCOLL_FLOAT64,
                                        ZCOLL_MAX);
    if (st != ZCOLL_OK) return fail(t, "zcoll_allreduce (times)", st);
    if (e == 1) first = loss;
    last = loss;
    if (t->rank == 0)
      printf("epoch %ld loss %.6f blocked %.4f s elapsed %.4f s\n", e, loss, blocked[0],
             blocked[1]);
    fflush(stdout);
  }
  /* Each figure the slowest rank's: where the time inside zcoll went. */
  double spent[6] = {t->comm_s, t->wait_s, t->start_s, t->test_s, t->blocking_s, t->compute_s};
  zcoll_status_t st = zcoll_allreduce(t->comm, ZCOLL_IN_PLACE, spent, 6, ZCOLL_FLOAT64, ZCOLL_MAX);
  if (st != ZCOLL_OK) return fail(t, "zcoll_allreduce (times)", st);
  double mine[3] = {t->comm_s, t->rounds[0], t->rounds[1]},
         *all = calloc(3 * (size_t)t->size, sizeof(double));
  if (!all) return fail(t, "per-rank figures", ZCOLL_ERR_NO_MEMORY);
  if ((st = zcoll_allgather(t->comm, mine, all, 3, ZCOLL_FLOAT64)) != ZCOLL_OK) {
    free(all);
    return fail(t, "zcoll_allgather (per-rank figures)", st);
  }
  if (t->rank == 0) {
    char mode[64];
    if (o->partial)
      snprintf(mode, sizeof(mode), "partial %d%s", o->partial, o->blocking ? " blocking" : "");
    else
      snprintf(mode, sizeof(mode), "%s", o->blocking ? "blocking" : "non-blocking");
    printf("asgd: ranks %d dim %ld samples %ld %s: loss %.6f -> %.6f, blocked in zcoll %.4f s "
           "(slowest rank), compute %.4f s (slowest rank), wall %.2f s\n",
           t->size, o->dim, o->samples, mode, first, last, spent[0], spent[5], now_s() - t_start);
    for (int r = 0; o->partial && r < t->size; r++)
      printf("asgd: rank %d blocked in zcoll %.4f s, rounds joined %.0f full + %.0f short\n", r,
             all[3 * r], all[3 * r + 1], all[3 * r + 2]);
    if (o->blocking)
      printf("asgd: blocked in averages %.4f s, the rest in end-of-epoch calls\n", spent[4]);
    else
      printf("asgd: blocked in zcoll_wait %.4f s, zcoll_start %.4f s, zcoll_test %.4f s, the "
             "rest in end-of-epoch calls\n",
             spent[1], spent[2], spent[3]);
  }
  free(all);
  return 0;
}

static void usage(FILE *f) {
  fprintf(f, "usage: asgd [--dim N] [--samples N] [--nnz N] [--batch N] [--every K] [--epochs E]\n"
             "            [--lr X] [--flip P] [--seed S] [--blocking] [--partial Q]\n"
             "            [--imbalance P:MS] [-h]\n"
             "  --dim N      model size in float32 values (default 262144)\n"
             "  --samples N  samples in the whole data set, split over the ranks (default 32768)\n"
             "  --nnz N      non-zero features per sample (default 256)\n"
             "  --batch N    mini-batch size (default 32)\n"
             "  --every K    average the model every K mini-batches (default 8)\n"
             "  --epochs E   passes over the data (default 5)\n"
             "  --lr X       learning rate of one rank over all the data (default 16)\n"
             "  --flip P     fraction of labels flipped (default 0.1)\n"
             "  --seed S     data set seed (default 1)\n"
             "  --blocking   average with a blocking zcoll_allreduce instead of a persistent\n"
             "               request that runs while the next mini-batches compute\n"
             "  --partial Q  average with a partial allreduce: rounds of the first Q offers\n"
             "  --imbalance P:MS  each mini-batch, with probability P, compute MS ms longer\n");
}

/* Returns 0 to run, 1 after -h, 2 on a bad command line. */
static int parse(int argc, char **argv, struct opts *o) {
  *o = (struct opts){262144, 32768, 256, 32, 8, 5, 16.0, 0.1, 0, 1, 0, 0.0, 0.0};
  static const struct option longs[] = {
      {"dim", 1, NULL, 'd'},       {"samples", 1, NULL, 's'}, {"nnz", 1, NULL, 'z'},
      {"batch", 1, NULL, 'b'},     {"every", 1, NULL, 'k'},   {"epochs", 1, NULL, 'e'},
      {"lr", 1, NULL, 'l'},        {"flip", 1, NULL, 'f'},    {"seed", 1, NULL, 'S'},
      {"blocking", 0, NULL, 'B'},  {"help", 0, NULL, 'h'},    {"partial", 1, NULL, 'P'},
      {"imbalance", 1, NULL, 'I'}, {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
    char *end = NULL;
    long v = 0;
    double x = 0.0;
    if (c == 'l' || c == 'f')
      x = strtod(optarg, &end);
    else if (c == 'I')
      ; /* P:MS, below */
    else if (c != 'B' && c != 'h' && c != '?')
      v = strtol(optarg, &end, 10);
    if (end && (*end || end == optarg)) {
      fprintf(stderr, "asgd: bad number '%s' (try -h)\n", optarg);
      return 2;
    }
    switch (c) {
    case 'd': o->dim = v; break;
    case 's': o->samples = v; break;
    case 'z': o->nnz = v; break;
    case 'b': o->batch = v; break;
    case 'k': o->every = v; break;
    case 'e': o->epochs = v; break;
    case 'S': o->seed = (uint64_t)v; break;
    case 'l': o->lr = x; break;
    case 'f': o->flip = x; break;
    case 'B': o->blocking = 1; break;
    case 'P': o->partial = (int)v; break;
    case 'I':
      if (sscanf(optarg, "%lf:%lf", &o->imb_p, &o->imb_ms) != 2 || !(o->imb_p >= 0) ||
          !(o->imb_p <= 1) || !(o->imb_ms >= 0)) {
        fprintf(stderr, "asgd: --imbalance is P:MS, 0 <= P <= 1, MS >= 0 (try -h)\n");
        return 2;
      }
      break;
    case 'h': usage(stdout); return 1;
    default: usage(stderr); return 2;
    }
  }
  if (optind < argc || o->dim < 1 || o->dim > (1L << 30) || o->samples < 1 || o->nnz < 1 ||
      o->batch < 1 || o->every < 1 || o->epochs < 1 || o->partial < 0 || !(o->lr > 0.0) ||
      !(o->flip >= 0.0) || !(o->flip <= 0.5)) {
    fprintf(stderr, "asgd: every count must be >= 1 (--dim at most 2^30), --lr > 0 and "
                    "--flip in [0, 0.5]; try -h\n");
    return 2;
  }
  return 0;
}

int main(int argc, char **argv) {
  struct opts o;
  int rc = parse(argc, argv, &o);
  if (rc) return rc == 1 ? 0 : 2;
  struct trainer t = {.o = &o, .rank = -1};
  zcoll_config_t *cfg;
  zcoll_status_t st = zcoll_config_create(&cfg);
  if (st != ZCOLL_OK) {
    fail(NULL, "zcoll_config_create", st);
    return 1;
  }
  st = zcoll_comm_init(&t.comm, cfg);
  zcoll_config_free(cfg);
  if (st != ZCOLL_OK) {
    t.comm = NULL;
    fail(&t, "zcoll_comm_init", st);
    return 1;
  }
  t.rank = zcoll_comm_rank(t.comm);
  t.size = zcoll_comm_size(t.comm);
  struct shard s = {0};
  size_t bytes = sizeof(float) * (size_t)o.dim;
  t.w = calloc(1, bytes);
  t.snap = calloc(1, bytes);
  t.avg = calloc(1, bytes);
  t.z = malloc(sizeof(double) * (size_t)o.batch);
  rc = !t.w || !t.snap || !t.avg || !t.z || make_shard(&o, t.rank, t.size, &s);
  if (rc) fprintf(stderr, "asgd: rank %d: out of memory\n", t.rank);
  t.imb_rng = mix(o.seed ^ ((uint64_t)t.rank + 1) << 40); /* a stream per rank */
  if (!rc && o.partial &&
      (st = zcoll_allreduce_partial_init(t.comm, t.snap, t.avg, (size_t)o.dim, ZCOLL_FLOAT32,
                                         ZCOLL_AVG, o.partial, &t.req)) != ZCOLL_OK)
    rc = fail(&t, "zcoll_allreduce_partial_init", st);
  else if (!rc && !o.blocking && !o.partial &&
           (st = zcoll_allreduce_init(t.comm, t.snap, t.avg, (size_t)o.dim, ZCOLL_FLOAT32,
                                      ZCOLL_AVG, &t.req)) != ZCOLL_OK)
    rc = fail(&t, "zcoll_allreduce_init", st);
  if (!rc) rc = train(&t, &s);
  if (t.req && !t.in_flight) zcoll_request_free(t.req);
  if (rc) {
    zcoll_comm_abort(t.comm); /* tell the peers now rather than at their timeout */
  } else if ((st = zcoll_comm_destroy(t.comm)) != ZCOLL_OK) {
    t.comm = NULL;
    rc = fail(&t, "zcoll_comm_destroy", st);
  }
  free_shard(&s);
  free(t.w);
  free(t.snap);
  free(t.avg);
  free(t.z);
  return rc ? 1 : 0;
}
