/* copy.c -- the copy loops copy.h does not leave to memcpy. */
#include "copy.h"

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define ZC_X86 1
#else
#define ZC_X86 0
#endif

/* 16 bytes: one SSE2 move on x86-64 without asking for more of the CPU; memcpy of a
 * fixed 16 bytes is a single load or store, never a call. */
typedef struct {
  unsigned char b[16];
} zcoll__v16;

static size_t copy_near_16(unsigned char *d, const unsigned char *s, size_t n) {
  size_t k = 0;
  /* All eight loads before any store: the loads no longer wait behind stores whose
   * addresses look like theirs. */
  for (; k + 128 <= n; k += 128) {
    zcoll__v16 t[8];
    for (size_t i = 0; i < 8; i++) memcpy(&t[i], s + k + 16 * i, 16);
    for (size_t i = 0; i < 8; i++) memcpy(d + k + 16 * i, &t[i], 16);
  }
  return k;
}

#if ZC_X86
/* The same with 32-byte registers, 256 bytes a round, and the stores aligned: the
 * destination is first brought to a 32-byte boundary, so that no store straddles two
 * lines (the loads then do, which costs far less). Twice the 16-byte loop's speed. */
__attribute__((target("avx2"))) static size_t copy_near_32(unsigned char *d, const unsigned char *s,
                                                           size_t n) {
  size_t k = (32 - ((uintptr_t)d & 31)) & 31;
  if (k > n) return 0;
  memcpy(d, s, k);
  for (; k + 256 <= n; k += 256) {
    __m256i t[8];
    for (size_t i = 0; i < 8; i++) t[i] = _mm256_loadu_si256((const __m256i *)(s + k + 32 * i));
    for (size_t i = 0; i < 8; i++) _mm256_store_si256((__m256i *)(d + k + 32 * i), t[i]);
  }
  return k;
}

static int has_avx2(void) {
  static int known = -1; /* every thread computes the same answer: a race is harmless */
  if (known < 0) {
    __builtin_cpu_init();
    known = __builtin_cpu_supports("avx2") != 0;
  }
  return known;
}
#endif

void zcoll__copy_near(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
#if ZC_X86
  size_t k = has_avx2() ? copy_near_32(d, s, n) : copy_near_16(d, s, n);
#else
  size_t k = copy_near_16(d, s, n);
#endif
  memcpy(d + k, s + k, n - k);
}

void zcoll__copy_stream(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
#if ZC_X86
  /* SSE2 is every x86-64's, and moves a line per round as fast as wider registers:
   * streaming stores are bound by the memory, not by the core. */
  size_t k = (16 - ((uintptr_t)d & 15)) & 15;
  if (k > n) k = n;
  memcpy(d, s, k);
  for (; k + 64 <= n; k += 64) {
    __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(s + k));
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + k + 16));
    __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + k + 32));
    __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + k + 48));
    _mm_stream_si128((__m128i *)(void *)(d + k), a);
    _mm_stream_si128((__m128i *)(void *)(d + k + 16), b);
    _mm_stream_si128((__m128i *)(void *)(d + k + 32), c);
    _mm_stream_si128((__m128i *)(void *)(d + k + 48), e);
  }
  memcpy(d + k, s + k, n - k);
  _mm_sfence(); /* streaming stores are not ordered by a later release store */
#else
  memcpy(d, s, n);
#endif
}
