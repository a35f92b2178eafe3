/* test_copy.c -- zcoll__copy, the data path's bulk copy (lib/kernels/copy.h): every byte where
 * it belongs and none elsewhere, for every placement of the destination relative to the
 * source that picks one loop or the other, and lengths around the loop's block. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/copy.h"

static void check_one(unsigned char *arena, size_t arena_len, size_t n, size_t src_off, long dist) {
  /* The destination lies past the source by a whole number of pages plus dist, so
   * (dst - src) mod 4096 == dist mod 4096, and they never overlap. */
  size_t gap = ((n + 4095) / 4096 + 1) * 4096;
  unsigned char *src = arena + src_off;
  unsigned char *dst = src + gap + dist;
  cr_assert(dst + n + 64 <= arena + arena_len && dst >= src + n);
  for (size_t i = 0; i < arena_len; i++) arena[i] = (unsigned char)(i * 131 + 7);
  for (size_t i = 0; i < n; i++) src[i] = (unsigned char)(i * 17 + n + (size_t)dist);
  unsigned char before = dst[-1], after = dst[n];
  zcoll__copy(dst, src, n);
  for (size_t i = 0; i < n; i++)
    if (dst[i] != (unsigned char)(i * 17 + n + (size_t)dist))
      cr_assert_fail("n %zu, src offset %zu, distance %ld: byte %zu is %u", n, src_off, dist, i,
                     dst[i]);
  cr_assert_eq(dst[-1], before, "n %zu, distance %ld: wrote before the destination", n, dist);
  cr_assert_eq(dst[n], after, "n %zu, distance %ld: wrote past the destination", n, dist);
}

Test(copy, every_byte_in_place_for_near_and_far_destinations) {
  static const size_t lens[] = {0,    1,    15,   127,       128,   129,  1023,
                                1024, 1025, 1151, 4096 + 17, 65536, 70001};
  static const long dists[] = {-33, -16, -1, 0, 1, 8, 16, 31, 32, 63, 64, 65, 200, 4095};
  /* aligned_alloc wants a multiple of the alignment (ASan checks). */
  size_t arena_len = (3 * 70001 + 3 * 4096 + 8192 + 4095) / 4096 * 4096;
  unsigned char *arena = aligned_alloc(4096, arena_len);
  cr_assert_not_null(arena);
  for (size_t l = 0; l < sizeof lens / sizeof *lens; l++)
    for (size_t d = 0; d < sizeof dists / sizeof *dists; d++)
      for (size_t so = 0; so < 4096; so += 1000)
        check_one(arena, arena_len, lens[l], 64 + so, dists[d]);
  free(arena);
}

Test(copy, the_near_loop_alone_copies_any_length) {
  unsigned char src[700], dst[702];
  for (size_t n = 0; n <= sizeof src; n++) {
    for (size_t i = 0; i < sizeof src; i++) src[i] = (unsigned char)(i ^ n);
    memset(dst, 0xee, sizeof dst);
    zcoll__copy_near(dst + 1, src, n);
    cr_assert_eq(memcmp(dst + 1, src, n), 0, "n %zu", n);
    cr_assert(dst[0] == 0xee && dst[n + 1] == 0xee, "n %zu: wrote outside", n);
  }
}
