/* copy.c -- the copy loop for a destination just past its source (see copy.h). */
#include "copy.h"

/* 16 bytes: one SSE2 move on x86-64 without asking for more of the CPU; memcpy of a
 * fixed 16 bytes is a single load or store, never a call. */
typedef struct {
  unsigned char b[16];
} zcoll__v16;

void zcoll__copy_near(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  size_t k = 0;
  /* All eight loads before any store: the loads no longer wait behind stores whose
   * addresses look like theirs. */
  for (; k + 128 <= n; k += 128) {
    zcoll__v16 t[8];
    for (int i = 0; i < 8; i++) memcpy(&t[i], s + k + 16 * i, 16);
    for (int i = 0; i < 8; i++) memcpy(d + k + 16 * i, &t[i], 16);
  }
  memcpy(d + k, s + k, n - k);
}
