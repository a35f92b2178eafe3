/* mr.c -- shared-memory transport: regions peers write into, and their keys. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "shm.h"

/* Receive slots must be memory that peers can map: a memfd of our own. */
zcoll_status_t zcoll__shm_mem_alloc(struct zcoll_tl *tl, size_t len, void **addr) {
  struct zcoll__shm_alloc *a = realloc(tl->allocs, sizeof(*a) * (size_t)(tl->nallocs + 1));
  if (!a) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "shm: out of memory");
  tl->allocs = a;
  int fd;
  zcoll_status_t st = zcoll__shm_memfd(tl->token, "slots", len, &fd);
  if (st != ZCOLL_OK) return st;
  void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    close(fd);
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "shm: cannot map %zu bytes of slots: %m", len);
  }
  tl->allocs[tl->nallocs++] = (struct zcoll__shm_alloc){m, len, fd};
  *addr = m;
  return ZCOLL_OK;
}

void zcoll__shm_mem_free(struct zcoll_tl *tl, void *addr, size_t len) {
  for (int i = 0; i < tl->nallocs; i++) {
    struct zcoll__shm_alloc *a = &tl->allocs[i];
    if (a->base != addr) continue;
    /* Forgotten before the address can be mapped anew: a later region there must not
     * be taken for this one (mem_reg looks regions up by address). */
    munmap(a->base, len);
    close(a->fd);
    *a = tl->allocs[--tl->nallocs];
    return;
  }
  munmap(addr, len); /* not ours: as the core would */
}

void zcoll__shm_mem_forget(struct zcoll_tl *tl, void *addr) {
  for (int i = 0; i < tl->nallocs; i++) {
    if (tl->allocs[i].base != addr) continue;
    close(tl->allocs[i].fd); /* peers that mapped it keep their mappings, as we keep ours */
    tl->allocs[i] = tl->allocs[--tl->nallocs];
    return;
  }
}

zcoll_status_t zcoll__shm_mem_reg(struct zcoll_tl *tl, void *addr, size_t len, int remote,
                                  struct zcoll_tl_mr **out) {
  struct zcoll_tl_mr *mr = calloc(1, sizeof(*mr));
  if (!mr) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "shm: out of memory");
  *mr = (struct zcoll_tl_mr){tl, addr, len, -1, 0, remote};
  if (remote) {
    /* Only memory we allocated has a memfd behind it for peers to map. */
    char *p = addr;
    for (int i = 0; i < tl->nallocs && mr->fd < 0; i++) {
      struct zcoll__shm_alloc *a = &tl->allocs[i];
      if (p >= a->base && len <= a->len && (size_t)(p - a->base) <= a->len - len) {
        mr->fd = a->fd;
        mr->off = (size_t)(p - a->base);
      }
    }
    if (mr->fd < 0) {
      free(mr);
      return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                         "shm: peers can only write into memory from the transport's mem_alloc");
    }
  }
  *out = mr;
  return ZCOLL_OK;
}

void zcoll__shm_mem_dereg(struct zcoll_tl_mr *mr) { free(mr); }

zcoll_status_t zcoll__shm_rkey_pack(struct zcoll_tl_mr *mr, void *buf, size_t *len) {
  if (!mr->remote) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "shm: a source region has no key");
  struct zcoll__shm_rkey_blob b = {ZCOLL_SHM_MAGIC, mr->fd, 0, mr->off, mr->len};
  if (*len < sizeof(b)) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "shm: key buffer short");
  memcpy(buf, &b, sizeof(b));
  *len = sizeof(b);
  return ZCOLL_OK;
}

zcoll_status_t zcoll__shm_rkey_unpack(struct zcoll_ep *ep, const void *buf, size_t len,
                                      struct zcoll_tl_rkey **out) {
  struct zcoll__shm_rkey_blob b;
  if (len < sizeof(b))
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "shm: rank %d's key is short", ep->peer);
  memcpy(&b, buf, sizeof(b));
  if (b.magic != ZCOLL_SHM_MAGIC || b.off > SIZE_MAX - b.len)
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "shm: rank %d sent a malformed key", ep->peer);
  uint64_t cap = zcoll__shm_max_region();
  if (b.off > cap || b.len > cap - b.off)
    return zcoll__fail(ZCOLL_ERR_TRANSPORT,
                       "shm: rank %d advertises a %llu-byte receive region at offset %llu, more "
                       "than this host's %llu bytes of memory",
                       ep->peer, (unsigned long long)b.len, (unsigned long long)b.off,
                       (unsigned long long)cap);
  int fd;
  zcoll_status_t st = zcoll__shm_open_peer_fd(ep, b.fd, 0, "slots", &fd);
  if (st != ZCOLL_OK) return st;
  /* Map from the file's start (offsets need page alignment) through the region's end;
   * a region that claims more than the file holds would fault on access: refuse it. */
  size_t need = (size_t)(b.off + b.len);
  struct stat sb;
  if (fstat(fd, &sb) != 0 || sb.st_size < 0 || (uint64_t)sb.st_size < need) {
    close(fd);
    return zcoll__fail(ZCOLL_ERR_TRANSPORT, "shm: rank %d's slots are smaller than its key says",
                       ep->peer);
  }
  struct zcoll_tl_rkey *k = calloc(1, sizeof(*k));
  void *m = k && need ? mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : NULL;
  close(fd);
  if (!k || m == MAP_FAILED) {
    free(k);
    return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "shm: cannot map rank %d's slots", ep->peer);
  }
  k->map = m;
  k->maplen = need;
  k->base = need ? (char *)m + b.off : NULL;
  k->len = (size_t)b.len;
  *out = k;
  return ZCOLL_OK;
}

void *zcoll__shm_rkey_ptr(struct zcoll_tl_rkey *rkey, uint64_t roff, size_t len) {
  if (!rkey || !rkey->base || roff > rkey->len || len > rkey->len - roff) return NULL;
  return rkey->base + roff;
}

void zcoll__shm_rkey_release(struct zcoll_tl_rkey *rkey) {
  if (!rkey) return;
  if (rkey->map) munmap(rkey->map, rkey->maplen);
  free(rkey);
}
