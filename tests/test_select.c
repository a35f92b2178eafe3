/* The selection table: built-in rules, tuning files, and their errors. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/algorithms.h"
#include "algorithms/select.h"
#include "log.h"

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
      {"# ok\n1 inf 4K carrier-pigeon\n", "unknown algorithm 'carrier-pigeon'"},
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
