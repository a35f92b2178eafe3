/* fsize.c -- the largest file this process may make (fsize.h says why it matters). */
#include "fsize.h"

#include <sys/resource.h>

#include "log.h"

uint64_t zcoll__fsize_limit(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  return (uint64_t)rl.rlim_cur;
}

zcoll_status_t zcoll__fsize_check(uint64_t bytes, const char *who, const char *hint) {
  uint64_t limit = zcoll__fsize_limit();
  if (bytes <= limit) return ZCOLL_OK;
  /* ulimit -f counts 1024-byte blocks (bash, dash, zsh; 512 only in bash's POSIX mode). */
  return zcoll__fail(ZCOLL_ERR_NO_MEMORY,
                     "%s needs files of up to %llu bytes, but RLIMIT_FSIZE (ulimit -f) is %llu "
                     "bytes: growing one past it would kill this process with SIGXFSZ; raise "
                     "the limit with `ulimit -f unlimited` (or `ulimit -f %llu`, in KiB)%s",
                     who, (unsigned long long)bytes, (unsigned long long)limit,
                     (unsigned long long)((bytes + 1023) / 1024), hint ? hint : "");
}
