/* zcoll_info: what zcoll will use on this machine and why, in the manner of `ucx_info`.
 * Only the public API (zcoll.h) is used: every answer is the library's own, computed by
 * the code a communicator runs (the transports' probes, the selector).
 *
 *   zcoll_info        version and configuration (-v -c)
 *   zcoll_info -v     version only
 *   zcoll_info -c     every configuration variable with its current value (defaults
 *                     overridden by the ZCOLL_* environment), its default and its doc;
 *                     the variable lines are `NAME=value`, ready to paste into a shell
 *   zcoll_info -d     devices: each transport's findings (RDMA ports, UCX's transports
 *                     and devices, shm's prerequisites), then per transport "usable" or
 *                     "not usable: <reason>"
 *   zcoll_info -s -np P [-t COLL] [-b MIN] [-e MAX] [-f FACTOR]
 *                     the allreduce's (or COLL's) algorithm, chunk, depth and deciding rule
 *                     per size
 *   zcoll_info -b     build: transports, reduction kernels, library versions
 *
 * Exit status: 0; 1 if the configuration cannot be created (e.g. a bad ZCOLL_* value
 * in the environment); 2 on a bad command line. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf_opts.h"
#include "zcoll.h"

#define PROG "zcoll_info"

static void usage(FILE *f) {
  fprintf(f, "usage: " PROG
             " [-v] [-c] [-d] [-b] [-s -np P [-t COLL] [-b MIN] [-e MAX] [-f FACTOR]] [-h]\n"
             "  -v          print the library version\n"
             "  -c          print every configuration variable: current value, default and doc\n"
             "  -d          print what each transport finds here (RDMA devices and ports, UCX's\n"
             "              transports and devices, shm's prerequisites) and whether it is usable\n"
             "  -b          print the build: transports, reduction kernels, library versions\n"
             "              (with -s, -b is the smallest size instead, as in zcoll_perf)\n"
             "  -s -np P    print, for P ranks on this host, the allreduce's algorithm, chunk\n"
             "              bytes, pipeline depth and the rule that chose it for each size from\n"
             "              -b MIN to -e MAX bytes (default 8 and 64M; K, M, G suffixes),\n"
             "              multiplying by -f FACTOR (default 2), as zcoll_perf's sizes go;\n"
             "              -t COLL explains another collective instead: broadcast, reduce,\n"
             "              allgather, reduce_scatter (sizes: all ranks' blocks), barrier,\n"
             "              alltoall, gather, scatter (sizes: one block), alltoallv,\n"
             "              allgatherv, gatherv or scatterv\n"
             "  -h, --help  print this help\n"
             "With no option, prints the version and the configuration (-v -c).\n"
             "The ZCOLL_* environment applies throughout (ZCOLL_ALGO, ZCOLL_TUNING_FILE,\n"
             "ZCOLL_CHUNK_BYTES, ZCOLL_TRANSPORT, ZCOLL_IB_DEV, ...).\n");
}

static void print_algorithms(void) {
  const char *names[32];
  int n = zcoll_algorithm_names(names, 32);
  printf("#\n# algorithms this build accepts for ZCOLL_ALGO: auto");
  for (int i = 0; i < n && i < 32; i++) printf(" %s", names[i]);
  printf("\n");
  int built[16];
  n = zcoll_transport_names(names, built, 16);
  printf("# transports this build knows for ZCOLL_TRANSPORT: auto");
  for (int i = 0; i < n && i < 16; i++) printf(" %s%s", names[i], built[i] ? "" : "(not built)");
  printf("\n");
}

/* Under srun or mpirun: that the job needs no ZCOLL_* variable (the library's rule:
 * ZCOLL_RANK/SIZE win, else a PMIx server's). */
static void print_launcher(void) {
  const char *ns = getenv("PMIX_NAMESPACE"), *rank = getenv("PMIX_RANK");
  if (!ns || !*ns || !rank || !*rank || getenv("ZCOLL_RANK") || getenv("ZCOLL_SIZE")) return;
  printf("#\n# launcher: a PMIx server (namespace %s, rank %s): rank, size, rank 0's address "
         "and\n#   the job key come through PMIx\n",
         ns, rank);
}

/* What ZCOLL_PROGRESS will do here: a progress thread per rank must not outnumber the
 * cores silently (the library warns at init too; this says it before the job). */
static void print_progress(zcoll_config_t *cfg) {
  char mode[32] = "?", spin[32] = "?", local[32] = "-1";
  zcoll_config_get(cfg, "PROGRESS", mode, sizeof mode);
  zcoll_config_get(cfg, "SPIN_US", spin, sizeof spin);
  zcoll_config_get(cfg, "LOCAL_SIZE", local, sizeof local);
  long cores = sysconf(_SC_NPROCESSORS_ONLN), ranks = strtol(local, NULL, 10);
  printf("#\n# progress: ZCOLL_PROGRESS=%s on a host with %ld cores\n", mode, cores);
  if (strcmp(mode, "thread") == 0) {
    printf("#   each rank starts one progress thread: it spins up to %s us after work, then\n"
           "#   sleeps on the transport's descriptors (no CPU while idle)\n",
           spin);
    if (ranks > 0)
      printf("#   %ld ranks here (ZCOLL_LOCAL_SIZE): %ld threads with the application's on %ld "
             "cores: %s\n",
             ranks, 2 * ranks, cores,
             2 * ranks > cores ? "more threads than cores, progress waits for a core "
                                 "(init warns; ZCOLL_PROGRESS=caller avoids it)"
                               : "fits");
    else
      printf("#   at most %ld rank%s per host keep%s the threads within the cores; more and "
             "init warns\n",
             cores / 2, cores / 2 == 1 ? "" : "s", cores / 2 == 1 ? "s" : "");
  } else {
    printf("#   no thread: requests move only inside zcoll calls (zcoll_test, zcoll_wait, any\n"
           "#   collective); waits spin up to %s us, then sleep\n",
           spin);
  }
}

/* The configuration from the environment; NULL (and said why) if a ZCOLL_* value is bad. */
static zcoll_config_t *make_config(void) {
  zcoll_config_t *cfg = NULL;
  zcoll_status_t st = zcoll_config_create(&cfg);
  if (st != ZCOLL_OK) {
    const char *detail = zcoll_last_error();
    fprintf(stderr, PROG ": zcoll_config_create: %s: %s\n", zcoll_strerror(st),
            detail && *detail ? detail : "(no details)");
    return NULL;
  }
  return cfg;
}

static int print_config(void) {
  zcoll_config_t *cfg = make_config();
  if (!cfg) return 1;
  int n = zcoll_config_entries(cfg, NULL, 0);
  zcoll_config_entry_t *e = n > 0 ? calloc((size_t)n, sizeof *e) : NULL;
  if (n > 0 && e == NULL) {
    fprintf(stderr, PROG ": out of memory\n");
    zcoll_config_free(cfg);
    return 1;
  }
  if (n > 0) n = zcoll_config_entries(cfg, e, n);
  printf("#\n# zcoll configuration: %d variables (current value; default and doc above each)\n",
         n < 0 ? 0 : n);
  for (int i = 0; i < n; i++) {
    const char *name = e[i].name ? e[i].name : "?";
    printf("#\n# %s\n# default: %s\n%s=%s\n", e[i].doc ? e[i].doc : "",
           e[i].default_value ? e[i].default_value : "", name, e[i].value ? e[i].value : "");
  }
  free(e); /* its strings are only valid until the config changes */
  print_algorithms();
  print_progress(cfg);
  print_launcher();
  printf("#\n");
  zcoll_config_free(cfg);
  return 0;
}

struct opts {
  int version, config, devices, build, select;
  int ranks;
  int sweep;        /* -np, -e, -f or -t given */
  const char *coll; /* -t: the collective -s explains (allreduce) */
  size_t min_bytes, max_bytes, factor;
};

#define MAX_TL 16
#define MAX_DETAILS 256

/* Per transport, what it finds here -- devices, a library's resources, prerequisites --
 * then whether it can run, both from the transport itself. */
static int print_devices(zcoll_config_t *cfg, const void *arg) {
  (void)arg;
  static const struct {
    const char *name, *title;
  } titles[] = {{"shm", "prerequisites, tried on this process"},
                {"verbs", "RDMA devices and ports"},
                {"ucx", "UCX's transports and devices (UCX_TLS, UCX_NET_DEVICES narrow them)"}};
  const char *names[MAX_TL];
  int built[MAX_TL];
  int ntl = zcoll_transport_names(names, built, MAX_TL);
  if (ntl > MAX_TL) ntl = MAX_TL;
  zcoll_transport_detail_t *d = calloc(MAX_DETAILS, sizeof(*d));
  if (!d) {
    fprintf(stderr, PROG ": out of memory\n");
    return 1;
  }
  for (int t = 0; t < ntl; t++) {
    int n = zcoll_transport_details(cfg, names[t], d, MAX_DETAILS);
    if (n <= 0) continue;
    const char *title = "what it finds here";
    for (size_t k = 0; k < sizeof(titles) / sizeof(titles[0]); k++)
      if (!strcmp(titles[k].name, names[t])) title = titles[k].title;
    printf("#\n# %s: %s\n", names[t], title);
    for (int i = 0; i < n && i < MAX_DETAILS; i++)
      printf("%-8s %-4s %-24s %s\n", names[t],
             d[i].ok > 0    ? "ok"
             : d[i].ok == 0 ? "no"
                            : "-",
             d[i].what, d[i].detail);
    if (n > MAX_DETAILS) printf("%-8s %d more not shown\n", names[t], n - MAX_DETAILS);
  }
  free(d);
  printf("#\n# zcoll transports, in the order ZCOLL_TRANSPORT=auto prefers them\n");
  for (int t = 0; t < ntl; t++) {
    char why[512];
    zcoll_status_t st = zcoll_transport_usable(cfg, names[t], why, sizeof(why));
    if (st == ZCOLL_OK)
      printf("%-8s usable\n", names[t]);
    else
      printf("%-8s not usable: %s\n", names[t], why);
  }
  return 0;
}

static void print_build(void) {
  const char *names[MAX_TL];
  int built[MAX_TL];
  int ntl = zcoll_transport_names(names, built, MAX_TL);
  if (ntl > MAX_TL) ntl = MAX_TL;
  printf("# zcoll build\ntransports built:");
  for (int t = 0; t < ntl; t++)
    if (built[t]) printf(" %s", names[t]);
  printf("\n");
  for (int t = 0; t < ntl; t++) {
    char v[512];
    zcoll_status_t st = zcoll_transport_version(names[t], v, sizeof(v));
    if (st != ZCOLL_OK)
      printf("transport %s: not built: %s\n", names[t], v);
    else if (v[0])
      printf("transport %s: %s\n", names[t], v);
  }
  zcoll_build_info_t b;
  zcoll_build_info(&b);
  printf("kernels built: %s\nkernel picked: %s (for this CPU)\n", b.kernels_built, b.kernel);
}

/* Which rule decides, size by size, as zcoll_perf's sweep goes (-b, -e, -f). */
static int print_selection(zcoll_config_t *cfg, const void *arg) {
  const struct opts *o = arg;
  char algo[64] = "", tuning[512] = "";
  zcoll_config_get(cfg, "ALGO", algo, sizeof algo);
  zcoll_config_get(cfg, "TUNING_FILE", tuning, sizeof tuning);
  zcoll_allreduce_plan_t first; /* an unknown -t: the error, before any heading */
  if (zcoll_collective_explain(cfg, o->coll, o->ranks, o->min_bytes, &first) != ZCOLL_OK) {
    fprintf(stderr, PROG ": %s\n", zcoll_last_error());
    return 2;
  }
  printf("#\n# %s of %d ranks on this host: ZCOLL_ALGO=%s, %s\n", o->coll, o->ranks, algo,
         tuning[0] ? tuning : "built-in table");
  printf("# %12s  %-18s %10s %6s  %s\n", "bytes", "algorithm", "chunk", "depth", "rule");
  for (size_t b = o->min_bytes;; b *= o->factor) {
    zcoll_allreduce_plan_t p;
    zcoll_status_t st = zcoll_collective_explain(cfg, o->coll, o->ranks, b, &p);
    if (st != ZCOLL_OK) {
      fprintf(stderr, PROG ": %s: %s\n", zcoll_strerror(st), zcoll_last_error());
      return 1;
    }
    printf("  %12zu  %-18s %10zu %6d  %s\n", b, p.algorithm, p.chunk_bytes, p.depth, p.reason);
    if (b > o->max_bytes / o->factor || b == 0) break;
  }
  return 0;
}

static int with_config(int (*fn)(zcoll_config_t *, const void *), const void *arg) {
  zcoll_config_t *cfg = make_config();
  if (!cfg) return 1;
  int rc = fn(cfg, arg);
  zcoll_config_free(cfg);
  fflush(stdout);
  return rc;
}

/* -b is the build listing, or -s's smallest size: with -s anywhere, the latter. */
static int parse_args(int argc, char **argv, struct opts *o) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "-s")) o->select = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *next = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      exit(0);
    } else if (!strcmp(a, "-v")) {
      o->version = 1;
    } else if (!strcmp(a, "-c")) {
      o->config = 1;
    } else if (!strcmp(a, "-d")) {
      o->devices = 1;
    } else if (!strcmp(a, "-s")) {
      continue;
    } else if (!strcmp(a, "-b") && !o->select) {
      o->build = 1;
    } else if (!strcmp(a, "-np") || !strcmp(a, "-f")) {
      long v;
      if (pt_parse_long(next, a[1] == 'f' ? 2 : 1, 1 << 20, &v)) {
        fprintf(stderr, PROG ": %s needs a whole number from %d to %d\n", a, a[1] == 'f' ? 2 : 1,
                1 << 20);
        return 2;
      }
      if (a[1] == 'f')
        o->factor = (size_t)v;
      else
        o->ranks = (int)v;
      o->sweep = 1;
      i++;
    } else if (!strcmp(a, "-t") && next) {
      o->coll = next;
      o->sweep = 1;
      i++;
    } else if (!strcmp(a, "-b") || !strcmp(a, "-e")) {
      /* Sizes as zcoll_perf reads them, so that one sweep means the same to both. */
      if (pt_parse_size(next, a[1] == 'b' ? &o->min_bytes : &o->max_bytes)) {
        fprintf(stderr, PROG ": %s needs a size in bytes (8, 64K, 1M, ...)\n", a);
        return 2;
      }
      o->sweep = 1;
      i++;
    } else {
      fprintf(stderr, PROG ": unknown %s '%s' (try -h)\n", a[0] == '-' ? "option" : "argument", a);
      return 2;
    }
  }
  if (o->select && !o->ranks) {
    fprintf(stderr, PROG ": -s needs -np P, the number of ranks (try -h)\n");
    return 2;
  }
  if (!o->select && o->sweep) {
    fprintf(stderr, PROG ": -np, -e and -f only go with -s (try -h)\n");
    return 2;
  }
  if (o->min_bytes > o->max_bytes) {
    fprintf(stderr, PROG ": -b MIN must not exceed -e MAX\n");
    return 2;
  }
  return 0;
}

int main(int argc, char **argv) {
  struct opts o = {0, 0, 0, 0, 0, 0, 0, "allreduce", 8, (size_t)64 << 20, 2};
  int rc = parse_args(argc, argv, &o);
  if (rc) return rc;
  if (!o.devices && !o.build && !o.select && !o.version && !o.config) o.version = o.config = 1;
  if (o.version)
    printf("# zcoll version %s (api %d.%d.%d)\n", zcoll_version_string(), ZCOLL_VERSION_MAJOR,
           ZCOLL_VERSION_MINOR, ZCOLL_VERSION_PATCH);
  fflush(stdout);
  if (o.build) print_build();
  if (o.devices && (rc = with_config(print_devices, &o))) return rc;
  if (o.select && (rc = with_config(print_selection, &o))) return rc;
  return o.config ? print_config() : 0;
}
