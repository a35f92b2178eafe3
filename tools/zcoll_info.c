/* zcoll_info: the library version and every configuration variable with its current
 * value (defaults overridden by the ZCOLL_* environment), its default and its doc, in
 * the manner of `ucx_info -c`. The variable lines are `NAME=value`, ready to paste
 * into a shell. Only the public API (zcoll.h) is used.
 *
 *   zcoll_info        version and configuration
 *   zcoll_info -v     version only
 *   zcoll_info -c     configuration only
 *
 * Exit status: 0; 1 if the configuration cannot be created (e.g. a bad ZCOLL_* value
 * in the environment); 2 on a bad command line. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zcoll.h"

#define PROG "zcoll_info"

static void usage(FILE *f)
{
  fprintf(f,
          "usage: " PROG " [-v] [-c] [-h]\n"
          "  -v   print the library version\n"
          "  -c   print every configuration variable: current value, default and doc\n"
          "  -h   print this help\n"
          "With no option, prints both.\n");
}

static void print_algorithms(void)
{
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
static void print_launcher(void)
{
  const char *ns = getenv("PMIX_NAMESPACE"), *rank = getenv("PMIX_RANK");
  if (!ns || !*ns || !rank || !*rank || getenv("ZCOLL_RANK") || getenv("ZCOLL_SIZE")) return;
  printf("#\n# launcher: a PMIx server (namespace %s, rank %s): rank, size, rank 0's address "
         "and\n#   the job key come through PMIx\n", ns, rank);
}

/* What ZCOLL_PROGRESS will do here: a progress thread per rank must not outnumber the
 * cores silently (the library warns at init too; this says it before the job). */
static void print_progress(zcoll_config_t *cfg)
{
  char mode[32] = "?", spin[32] = "?", local[32] = "-1";
  zcoll_config_get(cfg, "PROGRESS", mode, sizeof mode);
  zcoll_config_get(cfg, "SPIN_US", spin, sizeof spin);
  zcoll_config_get(cfg, "LOCAL_SIZE", local, sizeof local);
  long cores = sysconf(_SC_NPROCESSORS_ONLN), ranks = strtol(local, NULL, 10);
  printf("#\n# progress: ZCOLL_PROGRESS=%s on a host with %ld cores\n", mode, cores);
  if (strcmp(mode, "thread") == 0) {
    printf("#   each rank starts one progress thread: it spins up to %s us after work, then\n"
           "#   sleeps on the transport's descriptors (no CPU while idle)\n", spin);
    if (ranks > 0)
      printf("#   %ld ranks here (ZCOLL_LOCAL_SIZE): %ld threads with the application's on %ld "
             "cores: %s\n", ranks, 2 * ranks, cores,
             2 * ranks > cores ? "more threads than cores, progress waits for a core "
                                 "(init warns; ZCOLL_PROGRESS=caller avoids it)"
                               : "fits");
    else
      printf("#   at most %ld rank%s per host keep%s the threads within the cores; more and "
             "init warns\n", cores / 2, cores / 2 == 1 ? "" : "s", cores / 2 == 1 ? "s" : "");
  } else {
    printf("#   no thread: requests move only inside zcoll calls (zcoll_test, zcoll_wait, any\n"
           "#   collective); waits spin up to %s us, then sleep\n", spin);
  }
}

static int print_config(void)
{
  zcoll_config_t *cfg = NULL;
  zcoll_status_t st = zcoll_config_create(&cfg);
  if (st != ZCOLL_OK) {
    const char *detail = zcoll_last_error();
    fprintf(stderr, PROG ": zcoll_config_create: %s: %s\n", zcoll_strerror(st),
            detail && *detail ? detail : "(no details)");
    return 1;
  }
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
    printf("#\n# %s\n# default: %s\n%s=%s\n", e[i].doc ? e[i].doc : "", e[i].default_value
           ? e[i].default_value : "", name, e[i].value ? e[i].value : "");
  }
  free(e); /* its strings are only valid until the config changes */
  print_algorithms();
  print_progress(cfg);
  print_launcher();
  printf("#\n");
  zcoll_config_free(cfg);
  return 0;
}

int main(int argc, char **argv)
{
  int show_version = 0, show_config = 0, c;
  opterr = 0;
  while ((c = getopt(argc, argv, "vch")) != -1) {
    switch (c) {
    case 'v': show_version = 1; break;
    case 'c': show_config = 1; break;
    case 'h': usage(stdout); return 0;
    default:
      fprintf(stderr, PROG ": unknown option -%c (try -h)\n", optopt);
      return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, PROG ": unexpected argument '%s' (try -h)\n", argv[optind]);
    return 2;
  }
  if (!show_version && !show_config) show_version = show_config = 1;
  if (show_version)
    printf("# zcoll version %s (api %d.%d.%d)\n", zcoll_version_string(), ZCOLL_VERSION_MAJOR,
           ZCOLL_VERSION_MINOR, ZCOLL_VERSION_PATCH);
  fflush(stdout);
  return show_config ? print_config() : 0;
}
