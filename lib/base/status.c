/* status.c -- status strings, version, datatype and op names. */
#include <stdint.h>

#include "dtype.h"
#include "zcoll.h"

#define ZCOLL_STR_(x) #x
#define ZCOLL_XSTR_(x) ZCOLL_STR_(x)

const char *zcoll_strerror(zcoll_status_t st) {
  switch (st) {
#define ZCOLL_STATUS_STR_(name, str) \
  case ZCOLL_##name: return str;
    ZCOLL_STATUS_MAP(ZCOLL_STATUS_STR_)
#undef ZCOLL_STATUS_STR_
  }
  return "unknown status";
}

const char *zcoll_version_string(void) {
  return ZCOLL_XSTR_(ZCOLL_VERSION_MAJOR) "." ZCOLL_XSTR_(ZCOLL_VERSION_MINOR) "." ZCOLL_XSTR_(
      ZCOLL_VERSION_PATCH);
}

static const struct {
  const char *name;
} dtypes[ZCOLL_DTYPE_COUNT] = {
    [ZCOLL_INT8] = {"int8"},       [ZCOLL_UINT8] = {"uint8"},       [ZCOLL_INT32] = {"int32"},
    [ZCOLL_UINT32] = {"uint32"},   [ZCOLL_INT64] = {"int64"},       [ZCOLL_UINT64] = {"uint64"},
    [ZCOLL_FLOAT16] = {"float16"}, [ZCOLL_BFLOAT16] = {"bfloat16"}, [ZCOLL_FLOAT32] = {"float32"},
    [ZCOLL_FLOAT64] = {"float64"},
};

/* Inline for the hot path (comm.h); the public function checks the range. */
const uint8_t zcoll__dtype_sizes[ZCOLL_DTYPE_COUNT] = {
    [ZCOLL_INT8] = 1,    [ZCOLL_UINT8] = 1,  [ZCOLL_INT32] = 4,   [ZCOLL_UINT32] = 4,
    [ZCOLL_INT64] = 8,   [ZCOLL_UINT64] = 8, [ZCOLL_FLOAT16] = 2, [ZCOLL_BFLOAT16] = 2,
    [ZCOLL_FLOAT32] = 4, [ZCOLL_FLOAT64] = 8};

size_t zcoll_dtype_size(zcoll_dtype_t dtype) {
  return (unsigned)dtype < ZCOLL_DTYPE_COUNT ? zcoll__dtype_sizes[dtype] : 0;
}

const char *zcoll_dtype_name(zcoll_dtype_t dtype) {
  return (unsigned)dtype < ZCOLL_DTYPE_COUNT ? dtypes[dtype].name : NULL;
}
