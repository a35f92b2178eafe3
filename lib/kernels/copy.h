/*
 * copy.h -- the data path's bulk copy: memcpy, except where memcpy is slow.
 *
 * On this project's CI machines (AMD EPYC, glibc 2.36) memcpy of 4 KiB .. ~512 KiB runs at
 * ~2.9 GB/s instead of ~20 when the destination's address is 1..31 bytes past the
 * source's modulo 4096: glibc's "rep movsb" path, whose stores then alias the loads that
 * follow (perf/copy_bench.c shows it). It is the common case, not a corner: malloc puts a
 * large block 16 bytes past a page boundary, and every slot and staging buffer starts on
 * one, so each piece copied out of a slot into a malloc'd result hits it; an 8 MiB
 * allreduce on shm took 2.5x as long into a malloc'd buffer as into an aligned one.
 * In that window a loop that loads 128 bytes before it stores them copies at full speed.
 */
#ifndef ZCOLL_COPY_H
#define ZCOLL_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Below this memcpy uses vector moves, not rep movsb: no penalty to avoid. */
#define ZCOLL_COPY_NEAR_MIN 1024
/* The window is 1..31 bytes here; 64 leaves room for other CPUs' line-sized variant. */
#define ZCOLL_COPY_NEAR_DIST 64

void zcoll__copy_near(void *dst, const void *src, size_t n);

/* A copy whose destination nobody reads soon (a large result, written once per call):
 * non-temporal stores on x86-64, which neither read the destination's lines first nor
 * push the inputs out of the cache -- a third less traffic than memcpy's stores. Ends
 * with a store fence, so a release store after it publishes the bytes. memcpy elsewhere. */
void zcoll__copy_stream(void *dst, const void *src, size_t n);

static inline void zcoll__copy(void *dst, const void *src, size_t n) {
  size_t dist = ((uintptr_t)dst - (uintptr_t)src) & 4095;
  if (n >= ZCOLL_COPY_NEAR_MIN && dist != 0 && dist < ZCOLL_COPY_NEAR_DIST)
    zcoll__copy_near(dst, src, n);
  else
    memcpy(dst, src, n);
}

#endif /* ZCOLL_COPY_H */
