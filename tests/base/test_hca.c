/* ZCOLL_IB_HCA's lists (lib/base/hca.h): NCCL_IB_HCA's syntax, parsed strictly and matched
 * as NCCL matches -- a prefix unless '=', every port unless one is named, '^' excludes. */
#include <criterion/criterion.h>
#include <string.h>

#include "base/hca.h"

static struct zcoll__hca_spec parse_ok(const char *text) {
  struct zcoll__hca_spec s;
  char why[160] = "";
  cr_assert_eq(zcoll__hca_parse(text, &s, why, sizeof(why)), 0, "%s refused: %s", text, why);
  return s;
}

Test(hca, lists_parse) {
  struct zcoll__hca_spec s = parse_ok("mlx5_0:1,mlx5_1");
  cr_expect(!s.exclude && !s.exact && s.n == 2);
  cr_expect_str_eq(s.e[0].name, "mlx5_0");
  cr_expect_eq(s.e[0].port, 1);
  cr_expect_str_eq(s.e[1].name, "mlx5_1");
  cr_expect_eq(s.e[1].port, 0);
  s = parse_ok("^=rxe1:2");
  cr_expect(s.exclude && s.exact && s.n == 1 && s.e[0].port == 2);
  s = parse_ok("");
  cr_expect_eq(s.n, 0);
}

Test(hca, bad_lists_are_refused_with_the_reason) {
  static const struct {
    const char *text, *why;
  } bad[] = {
      {"mlx5_0:0", "port must be a number 1..255"},
      {"mlx5_0:256", "port must be a number 1..255"},
      {"mlx5_0:1x", "port must be a number 1..255"},
      {"mlx5_0:", "port must be a number 1..255"},
      {"rxe0:1.5", "port must be a number 1..255"},
      {"^", "a list of devices must follow"},
      {"=", "a list of devices must follow"},
      {"mlx5_0,,mlx5_1", "entry 2: a device name"},
      {"mlx5_0 mlx5_1", "unexpected ' '"},
      {"a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q", "more than 16 devices"},
      {"x234567890123456789012345678901234567890123456789012345678901234", "longer than 63"}};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    struct zcoll__hca_spec s;
    char why[160] = "";
    cr_expect_eq(zcoll__hca_parse(bad[i].text, &s, why, sizeof(why)), -1, "%s accepted",
                 bad[i].text);
    cr_expect(strstr(why, bad[i].why), "%s: \"%s\", not \"%s\"", bad[i].text, why, bad[i].why);
  }
}

Test(hca, matching_is_nccls) {
  struct zcoll__hca_spec s = parse_ok("");
  cr_expect(zcoll__hca_match(&s, "anything", 3), "the empty list takes every device");
  s = parse_ok("mlx5");
  cr_expect(zcoll__hca_match(&s, "mlx5_0", 1) && zcoll__hca_match(&s, "mlx5_13", 2));
  cr_expect(!zcoll__hca_match(&s, "rxe0", 1), "a name is a prefix, not a substring");
  s = parse_ok("=mlx5_1");
  cr_expect(zcoll__hca_match(&s, "mlx5_1", 1) && !zcoll__hca_match(&s, "mlx5_13", 1));
  s = parse_ok("mlx5_0:2,rxe");
  cr_expect(zcoll__hca_match(&s, "mlx5_0", 2) && !zcoll__hca_match(&s, "mlx5_0", 1));
  cr_expect(zcoll__hca_match(&s, "rxe1", 1));
  s = parse_ok("^rxe0");
  cr_expect(!zcoll__hca_match(&s, "rxe0", 1) && !zcoll__hca_match(&s, "rxe01", 1));
  cr_expect(zcoll__hca_match(&s, "rxe1", 1));
  s = parse_ok("^=rxe0:1");
  cr_expect(!zcoll__hca_match(&s, "rxe0", 1) && zcoll__hca_match(&s, "rxe0", 2));
  cr_expect(zcoll__hca_match(&s, "rxe01", 1), "exact: only that name is excluded");
}
