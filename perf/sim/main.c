/*
 * main.c -- zcoll_sim, the command line of the scale model (sim.h).
 *
 *   zcoll_sim [options] point ALGO P BYTES      one allreduce: slowest and mean rank, us
 *   zcoll_sim [options] batch < lines           "ALGO P K BYTES" per line (fit.py's feed)
 *   zcoll_sim [options] table                   latency and busbw per algorithm, p x size
 *   zcoll_sim [options] arity                   the tree's arity 2..16 against size
 *   zcoll_sim [options] traffic                 bytes between hosts per algorithm, at -e
 *   zcoll_sim selftest                          closed forms the model must reproduce
 *
 * Options: -m FILE (model, "key value" lines), -s key=value (one parameter), -k RANKS
 * per host, -c CHUNK bytes, -d DEPTH, -a ARITY, -i N (time per call of N back-to-back
 * blocking calls, as zcoll_perf -z 1 measures; default one call's latency),
 * -O reverse (what-if: a step visits the peers in the reverse of the schedule's order,
 * which the executor follows), -p "P list", -b MIN -e MAX -f FACTOR
 * (sizes in bytes, K/M/G), -o FILE (table: the winners as a ZCOLL_TUNING_FILE;
 * its size limits are grid points), -A "algorithm list" (default: every one the table has but
 * chain, which the selector keeps for non-commutative ops). ALGO "onehost" is the
 * mailbox exchange of a small call on one host (lib/core/onehost.h), not a schedule;
 * "alltoall:pairwise", "alltoall:bruck", "gather:binomial", "gather:direct",
 * "scatter:binomial", "scatter:direct" are the exchanges (BYTES one rank's total, root 0;
 * the table's busbw then (p-1)/p, and no -o: a tuning file holds allreduce rules).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/algorithms.h"
#include "sim.h"

int zsim_selftest(void);

struct opts {
  struct zsim_model m;
  int k, depth, arity, np, nalgo, iters, reverse;
  size_t chunk, minb, maxb;
  int factor;
  int plist[64];
  int algos[32];
};

static size_t parse_size(const char *s) {
  char *end;
  double v = strtod(s, &end);
  if (*end == 'K') v *= 1024;
  if (*end == 'M') v *= 1024 * 1024;
  if (*end == 'G') v *= 1024.0 * 1024 * 1024;
  return (size_t)v;
}

static int parse_list(const char *s, int *out, int max) {
  int n = 0;
  char *end;
  while (*s && n < max) {
    long v = strtol(s, &end, 10);
    if (end == s) {
      s++;
      continue;
    }
    out[n++] = (int)v;
    s = end;
  }
  return n;
}

static int parse_algos(const char *s, int *out, int max) {
  char buf[256];
  int n = 0;
  snprintf(buf, sizeof(buf), "%s", s);
  for (char *t = strtok(buf, " ,"); t && n < max; t = strtok(NULL, " ,")) {
    int a = zsim_algo_find(t);
    if (a == -1) {
      fprintf(stderr, "zcoll_sim: unknown algorithm '%s'\n", t);
      exit(2);
    }
    out[n++] = a;
  }
  return n;
}

static struct zsim_result run_job(const struct opts *o, int algo, int p, int k, size_t bytes,
                                  int arity) {
  struct zsim_job job = {algo, p, k, bytes / 4, 4, o->chunk, o->depth, arity, o->iters, o->reverse};
  struct zsim_result res;
  if (zsim_run(&o->m, &job, &res)) exit(1);
  return res;
}

static double run1(const struct opts *o, int algo, int p, int k, size_t bytes, int arity,
                   double *mean) {
  struct zsim_result res = run_job(o, algo, p, k, bytes, arity);
  if (mean) *mean = res.mean_time * 1e6;
  return res.time * 1e6;
}

/* What crosses hosts, from the schedules (exact, and cheap where a simulation is not):
 * per rank, as zcoll_perf's "Bytes sent" line, and per host, which is what its NIC
 * sends; both in units of the vector. */
static void cmd_traffic(const struct opts *o) {
  size_t n = o->maxb;
  printf("# bytes put between hosts per allreduce of n = %zu bytes, k = %d ranks per host, "
         "tree arity %d:\n# per host (its NIC's outgoing) / n, and per rank in bytes\n"
         "# %6s %6s",
         n, o->k, o->arity, "ranks", "hosts");
  for (int a = 0; a < o->nalgo; a++) printf(" %10s", zsim_algo_name(o->algos[a]));
  printf("  | per rank, bytes\n");
  for (int pi = 0; pi < o->np; pi++) {
    int p = o->plist[pi], hosts = (p + o->k - 1) / o->k;
    double per_rank[32];
    printf("  %6d %6d", p, hosts);
    for (int a = 0; a < o->nalgo; a++) {
      struct zsim_job job = {o->algos[a], p, o->k, n / 4, 4, o->chunk, o->depth, o->arity};
      double net, shm;
      if (zsim_traffic(&job, &net, &shm)) exit(1);
      per_rank[a] = net / p;
      printf(" %10.4f", net / hosts / (double)n);
    }
    printf("  |");
    for (int a = 0; a < o->nalgo; a++) printf(" %.0f", per_rank[a]);
    printf("\n");
    fflush(stdout);
  }
}

static double busbw(int algo, size_t bytes, int p, double us) {
  return us > 0 ? (double)bytes / (us * 1e3) * zsim_bus_factor(algo, p) : 0;
}

static void fmt_size(size_t b, char *out, size_t n) {
  if (b >= (1u << 20) && b % (1u << 20) == 0)
    snprintf(out, n, "%zuM", b >> 20);
  else if (b >= 1024 && b % 1024 == 0)
    snprintf(out, n, "%zuK", b >> 10);
  else
    snprintf(out, n, "%zu", b);
}

static void tune_header(FILE *f, const struct opts *o);
static void write_rules(FILE *f, const struct opts *o, int pi, const int *best, int nb);

static void cmd_table(const struct opts *o, FILE *tune) {
  printf("# predicted allreduce (KIND:ALGO: that exchange) of float32, k = %d ranks per host, "
         "chunk %zu, depth %d, "
         "tree arity %d\n# %6s %10s",
         o->k, o->chunk, o->depth, o->arity, "ranks", "bytes");
  for (int a = 0; a < o->nalgo; a++) printf(" %12s", zsim_algo_name(o->algos[a]));
  printf("   (time us / busbw GB/s)  best\n");
  if (tune) tune_header(tune, o);
  for (int pi = 0; pi < o->np; pi++) {
    int winners[64], nb = 0;
    for (size_t b = o->minb; b <= o->maxb; b *= (size_t)o->factor) {
      int p = o->plist[pi], best = -1;
      double t[32], bt = 0;
      printf("  %6d %10zu", p, b);
      for (int a = 0; a < o->nalgo; a++) {
        t[a] = run1(o, o->algos[a], p, o->k, b, o->arity, NULL);
        printf(" %12.2f", t[a]);
        if (best < 0 || t[a] < bt) best = a, bt = t[a];
      }
      printf("  |");
      for (int a = 0; a < o->nalgo; a++) printf(" %7.3f", busbw(o->algos[a], b, p, t[a]));
      printf("  %s\n", zsim_algo_name(o->algos[best]));
      fflush(stdout);
      if (nb < 64) winners[nb++] = o->algos[best];
    }
    if (tune) write_rules(tune, o, pi, winners, nb);
  }
}

static void tune_header(FILE *f, const struct opts *o) {
  fprintf(f,
          "# ZCOLL_TUNING_FILE from the scale model (perf/sim): ranks_min ranks_max "
          "max_bytes algorithm\n# k = %d ranks per host, chunk %zu, depth %d, tree arity "
          "%d; each group simulated at its ranks_min\n",
          o->k, o->chunk, o->depth, o->arity);
}

/* One rule group per simulated p, covering ranks up to the next one; within it, the
 * winner of each size, merged where it does not change. First match wins in select.c. */
static void write_rules(FILE *f, const struct opts *o, int pi, const int *best, int nb) {
  char top[16] = "inf";
  if (pi + 1 < o->np) snprintf(top, sizeof(top), "%d", o->plist[pi + 1] - 1);
  int lo = pi == 0 ? 1 : o->plist[pi];
  size_t b = o->minb;
  for (int i = 0; i < nb; i++, b *= (size_t)o->factor)
    if (i + 1 < nb && best[i + 1] != best[i]) {
      char s[32];
      fmt_size(b, s, sizeof(s));
      fprintf(f, "%d %s %s %s\n", lo, top, s, zsim_algo_name(best[i]));
    }
  fprintf(f, "%d %s inf %s\n", lo, top, zsim_algo_name(best[nb - 1]));
  fflush(f);
}

static void cmd_arity(const struct opts *o) {
  int tree = zsim_algo_find("tree");
  for (int pi = 0; pi < o->np; pi++) {
    int p = o->plist[pi];
    printf("# tree allreduce on %d ranks (k = %d per host): time us per arity; best arity\n"
           "# %10s",
           p, o->k, "bytes");
    for (int a = 2; a <= 16; a++) printf(" %8d", a);
    printf("  best  ring  rhd\n");
    for (size_t b = o->minb; b <= o->maxb; b *= (size_t)o->factor) {
      printf("  %10zu", b);
      int best = 0;
      double bt = 0;
      for (int a = 2; a <= 16; a++) {
        double t = run1(o, tree, p, o->k, b, a, NULL);
        printf(" %8.1f", t);
        if (!best || t < bt) best = a, bt = t;
      }
      printf("  %4d %.1f %.1f\n", best, run1(o, zsim_algo_find("ring"), p, o->k, b, 4, NULL),
             run1(o, zsim_algo_find("rhd"), p, o->k, b, 4, NULL));
      fflush(stdout);
    }
  }
}

static void cmd_batch(const struct opts *o) {
  char line[256], name[64];
  int p, k;
  double bytes;
  while (fgets(line, sizeof(line), stdin)) {
    if (sscanf(line, "%63s %d %d %lf", name, &p, &k, &bytes) != 4) continue;
    int a = zsim_algo_find(name);
    if (a == -1) {
      fprintf(stderr, "zcoll_sim: unknown algorithm '%s'\n", name);
      exit(2);
    }
    struct zsim_result res = run_job(o, a, p, k, (size_t)bytes, o->arity);
    printf("%s %d %d %.0f %.3f %.3f %.0f\n", name, p, k, bytes, res.time * 1e6, res.mean_time * 1e6,
           res.net_bytes);
  }
}

static void usage(void) {
  fprintf(stderr, "usage: zcoll_sim [-m MODEL] [-s key=value]... [-k K] [-c CHUNK] [-d DEPTH] "
                  "[-a ARITY] [-i ITERS] [-O ORDER] [-o TUNING] [-p \"P...\"]\n"
                  "                 [-b MIN -e MAX -f F] [-A \"ALGO...\"] "
                  "point ALGO P BYTES | batch | table | arity | traffic | "
                  "selftest | model\n");
  exit(2);
}

int main(int argc, char **argv) {
  struct opts o = {
      .k = 1, .depth = 8, .arity = 4, .chunk = 256 << 10, .minb = 8, .maxb = 16 << 20, .factor = 4};
  zsim_model_default(&o.m);
  o.np = parse_list("2 4 8 16 64 256 1024 4096", o.plist, 64);
  for (int a = 0; a < zcoll__nalgos; a++)
    if (strcmp(zsim_algo_name(a), "chain") != 0) o.algos[o.nalgo++] = a;
  const char *tune_path = NULL;
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) usage();
    i++;
    if (!strcmp(f, "-m")) {
      if (zsim_model_load(&o.m, v)) return 2;
    } else if (!strcmp(f, "-s")) {
      if (zsim_model_set(&o.m, v)) return 2;
    } else if (!strcmp(f, "-k"))
      o.k = atoi(v);
    else if (!strcmp(f, "-c"))
      o.chunk = parse_size(v);
    else if (!strcmp(f, "-d"))
      o.depth = atoi(v);
    else if (!strcmp(f, "-a"))
      o.arity = atoi(v);
    else if (!strcmp(f, "-i"))
      o.iters = atoi(v);
    else if (!strcmp(f, "-O"))
      o.reverse = !strcmp(v, "reverse");
    else if (!strcmp(f, "-p"))
      o.np = parse_list(v, o.plist, 64);
    else if (!strcmp(f, "-b"))
      o.minb = parse_size(v);
    else if (!strcmp(f, "-e"))
      o.maxb = parse_size(v);
    else if (!strcmp(f, "-f"))
      o.factor = atoi(v);
    else if (!strcmp(f, "-A"))
      o.nalgo = parse_algos(v, o.algos, 32);
    else if (!strcmp(f, "-o"))
      tune_path = v;
    else
      usage();
  }
  if (i >= argc || o.factor < 2 || o.minb < 4 || o.k < 1) usage();
  const char *cmd = argv[i];
  if (!strcmp(cmd, "selftest")) return zsim_selftest();
  if (!strcmp(cmd, "model")) {
    zsim_model_print(&o.m, "");
    return 0;
  }
  if (!strcmp(cmd, "point")) {
    if (i + 3 >= argc) usage();
    int a = zsim_algo_find(argv[i + 1]);
    if (a == -1) usage();
    int p = atoi(argv[i + 2]);
    struct zsim_result res = run_job(&o, a, p, o.k, parse_size(argv[i + 3]), o.arity);
    /* the slowest and the mean rank (us); bytes put between, within hosts per rank */
    printf("%.3f %.3f %.0f %.0f\n", res.time * 1e6, res.mean_time * 1e6, res.net_bytes / p,
           res.shm_bytes / p);
  } else if (!strcmp(cmd, "batch"))
    cmd_batch(&o);
  else if (!strcmp(cmd, "table")) {
    FILE *tune = NULL;
    for (int a = 0; tune_path && a < o.nalgo; a++)
      if (o.algos[a] >= ZSIM_XCHG) {
        fprintf(stderr, "zcoll_sim: -o %s: a tuning file holds allreduce rules, not %s\n",
                tune_path, zsim_algo_name(o.algos[a]));
        return 2;
      }
    if (tune_path && !(tune = fopen(tune_path, "w"))) {
      perror(tune_path);
      return 1;
    }
    cmd_table(&o, tune);
    if (tune) fclose(tune);
  } else if (!strcmp(cmd, "arity"))
    cmd_arity(&o);
  else if (!strcmp(cmd, "traffic"))
    cmd_traffic(&o);
  else
    usage();
  return 0;
}
