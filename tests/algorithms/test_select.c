/* The selection table: built-in rules, tuning files, and their errors. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/algorithms.h"
#include "algorithms/select.h"
#include "base/log.h"

static const char *write_file(const char *text) {
  static char path[64];
  snprintf(path, sizeof(path), "/tmp/zcoll-select-XXXXXX");
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fputs(text, f);
  fclose(f);
  return path;
}

Test(select, builtin_table_covers_everything) {
  struct zcoll__selector sel;
  cr_assert_eq(zcoll__selector_init(&sel, ""), ZCOLL_OK);
  for (int p = 1; p <= 1024; p *= 3)
    for (size_t b = 0; b < ((size_t)1 << 34); b = b * 4 + 1) {
      char why[256];
      int a = zcoll__select(&sel, p, b, why, sizeof(why));
      cr_assert(a >= 0 && a < zcoll__nalgos, "p=%d bytes=%zu", p, b);
      cr_assert(strstr(why, "built-in table"), "%s", why);
    }
  /* Huge vectors are bandwidth-bound: the ring. */
  cr_assert_eq(zcoll__select(&sel, 64, (size_t)1 << 30, NULL, 0), zcoll__algo_find("ring"));
  zcoll__selector_free(&sel);
}

Test(select, first_matching_rule_wins) {
  const char *path = write_file("# measured\n"
                                "2 2 4K ring   # two ranks, tiny\n"
                                "\n"
                                "1 inf 1M ring\n");
  struct zcoll__selector sel;
  cr_assert_eq(zcoll__selector_init(&sel, path), ZCOLL_OK, "%s", zcoll__last_error());
  char why[256];
  zcoll__select(&sel, 2, 4096, why, sizeof(why));
  cr_assert(strstr(why, "line 2") && strstr(why, "ranks 2..2"), "%s", why);
  zcoll__select(&sel, 2, 4097, why, sizeof(why));
  cr_assert(strstr(why, "line 4") && strstr(why, "ranks 1..any"), "%s", why);
  zcoll__select(&sel, 3, (size_t)2 << 20, why, sizeof(why));
  cr_assert(strstr(why, "no rule"), "%s", why);
  zcoll__selector_free(&sel);
  remove(path);
}

Test(select, bad_files_name_the_line) {
  static const char *const bad[][2] = {
      {"1 inf 4K ring\n2 1 4K ring\n", "line 2"},
      {"1 inf 4X ring\n", "line 1"},
      {"1 inf 4K\n", "line 1"},
      {"1 inf 4K ring extra\n", "line 1"},
      {"# ok\n1 inf 4K carrier-pigeon\n", "unknown allreduce algorithm 'carrier-pigeon'"},
      /* a broadcast rule names a broadcast algorithm, and has all four fields */
      {"broadcast 1 inf 4K ring\n", "line 1: unknown broadcast algorithm 'ring'"},
      {"1 inf 4K ring\nbroadcast\n", "line 2"},
      {"broadcast 1 inf tree\n", "line 1"},
      {"broadcasts 1 inf 4K tree\n", "line 1"},
      {"0 4 4K ring\n", "line 1"},
  };
  zcoll__log_set_level(ZCOLL_LOG_NONE);
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    const char *path = write_file(bad[i][0]);
    struct zcoll__selector sel;
    cr_assert_eq(zcoll__selector_init(&sel, path), ZCOLL_ERR_INVALID_ARG, "case %zu", i);
    cr_assert(strstr(zcoll__last_error(), bad[i][1]), "case %zu: %s", i, zcoll__last_error());
    remove(path);
  }
  struct zcoll__selector sel;
  cr_assert_eq(zcoll__selector_init(&sel, "/nonexistent/tuning"), ZCOLL_ERR_INVALID_ARG);
  cr_assert(strstr(zcoll__last_error(), "No such file"), "%s", zcoll__last_error());
}

/* The broadcast's rules: the built-in tree below 256 KiB and chain from there, a tuning
 * file's own broadcast rules (first match, each collective its own list), and the
 * built-in ones where a file has none -- a file measured for the allreduce alone. */
Test(select, broadcast_rules) {
  const int tree = zcoll__bcast_algo_find("tree"), chain = zcoll__bcast_algo_find("chain");
  cr_assert(tree >= 0 && chain >= 0);
  struct zcoll__selector sel;
  char why[256];
  cr_assert_eq(zcoll__selector_init(&sel, ""), ZCOLL_OK);
  for (int p = 1; p <= 1024; p *= 4) {
    cr_assert_eq(zcoll__select_bcast(&sel, p, 0, why, sizeof(why)), tree);
    cr_assert_eq(zcoll__select_bcast(&sel, p, (256 << 10) - 1, why, sizeof(why)), tree);
    cr_assert(strstr(why, "built-in table rule 1"), "%s", why);
    cr_assert_eq(zcoll__select_bcast(&sel, p, 256 << 10, why, sizeof(why)), chain);
    cr_assert(strstr(why, "built-in table rule 2"), "%s", why);
    cr_assert_eq(zcoll__select_bcast(&sel, p, SIZE_MAX, NULL, 0), chain);
  }
  /* the allreduce's rules are numbered as before, untouched by the broadcast's */
  zcoll__select(&sel, 4, 8, why, sizeof(why));
  cr_assert(strstr(why, "built-in table rule 1: ranks 1..any, up to 16384 bytes"), "%s", why);
  zcoll__selector_free(&sel);

  const char *path = write_file("broadcast 2 2 inf chain  # two ranks: always the chain\n"
                                "allreduce 1 inf 1K butterfly\n"
                                "  broadcast 1 inf 1M tree\n"
                                "1 inf inf ring\n");
  cr_assert_eq(zcoll__selector_init(&sel, path), ZCOLL_OK, "%s", zcoll__last_error());
  cr_assert_eq(zcoll__select_bcast(&sel, 2, 8, why, sizeof(why)), chain);
  cr_assert(strstr(why, "line 1: ranks 2..2, any size"), "%s", why);
  cr_assert_eq(zcoll__select_bcast(&sel, 3, 1 << 20, why, sizeof(why)), tree);
  cr_assert(strstr(why, "line 3"), "%s", why);
  cr_assert_eq(zcoll__select_bcast(&sel, 3, (1 << 20) + 1, why, sizeof(why)), chain);
  cr_assert(strstr(why, "no broadcast rule of") && strstr(why, "built-in chain"), "%s", why);
  cr_assert_eq(zcoll__select(&sel, 3, 1024, why, sizeof(why)), zcoll__algo_find("butterfly"));
  cr_assert(strstr(why, "line 2"), "%s", why);
  cr_assert_eq(zcoll__select(&sel, 3, 1025, why, sizeof(why)), zcoll__algo_find("ring"));
  cr_assert(strstr(why, "line 4"), "%s", why);
  zcoll__selector_free(&sel);
  remove(path);

  path = write_file("1 inf inf ring\n"); /* the allreduce's only */
  cr_assert_eq(zcoll__selector_init(&sel, path), ZCOLL_OK, "%s", zcoll__last_error());
  cr_assert_eq(zcoll__select_bcast(&sel, 4, 100, why, sizeof(why)), tree);
  cr_assert(strstr(why, "no broadcast rule of") && strstr(why, "built-in tree below 256 KiB"), "%s",
            why);
  cr_assert_eq(zcoll__select_bcast(&sel, 4, 1 << 20, NULL, 0), chain);
  zcoll__selector_free(&sel);
  remove(path);
}
