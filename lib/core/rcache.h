/*
 * rcache.h -- a registration cache for user buffers, for transports that send only from
 * registered memory (verbs): a buffer a collective sends from is registered the first
 * time and found again on later calls, so its pieces go straight from it instead of
 * being copied into staging.
 *
 * A registration pins the pages that were mapped when it was made. If the application
 * unmaps the range (free of a large block, munmap, a shrinking heap) and a later
 * allocation maps new pages at the same address, the old registration would move the
 * old pages' bytes: stale data. libucm (UCX's memory-event library, loaded only when a
 * cache is made) tells us of every unmapping before it happens; the entries it touches
 * are never found again and are released at the next safe point. Without libucm there
 * is no cache (sends are staged, as without one).
 *
 * Bounded by ZCOLL_RCACHE_MAX_BYTES (registered bytes; 0 disables it). Entries a
 * collective in flight may still read from are never released: each lookup passes the
 * clock value at which the oldest collective in flight started.
 */
#ifndef ZCOLL_RCACHE_H
#define ZCOLL_RCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "tl/transport.h"

struct zcoll__rcache;

struct zcoll__rcache_stats {
  uint64_t hits, misses, evictions, invalidations, uncached; /* uncached: too big or failed */
  uint64_t reg_ns;                                           /* time spent registering */
  size_t bytes;                                              /* registered now */
};

/* NULL (and a message at info level saying why) when there can be no cache: max_bytes 0,
 * or libucm missing or refusing the event handler. */
struct zcoll__rcache *zcoll__rcache_create(const struct zcoll_tl_ops *ops, struct zcoll_tl *tl,
                                           size_t max_bytes);
/* Releases every registration (local: in a forked child, where they are the parent's). */
void zcoll__rcache_destroy(struct zcoll__rcache *rc, int local);
/* The cache's clock: a collective records it when it starts. */
uint64_t zcoll__rcache_clock(const struct zcoll__rcache *rc);
/* A registration covering [addr, addr + len), or NULL (stage the data instead). Entries
 * used at or after keep_since stay registered. */
struct zcoll_tl_mr *zcoll__rcache_get(struct zcoll__rcache *rc, const void *addr, size_t len,
                                      uint64_t keep_since);
void zcoll__rcache_stats(const struct zcoll__rcache *rc, struct zcoll__rcache_stats *st);

#endif
