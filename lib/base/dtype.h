/* dtype.h -- the sizes of the dtypes, for the hot path (status.c holds the table). */
#ifndef ZCOLL_DTYPE_H
#define ZCOLL_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "zcoll.h"

/* The size of a dtype already checked to be in range; zcoll_dtype_size checks. */
extern const uint8_t zcoll__dtype_sizes[ZCOLL_DTYPE_COUNT];
static inline size_t zcoll__dsize(zcoll_dtype_t dtype) { return zcoll__dtype_sizes[dtype]; }

#endif
