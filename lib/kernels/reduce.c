/*
 * reduce.c -- dispatch of the element-wise reduction kernels.
 *
 * The kernels (reduce_kernels.h) are compiled three times on x86-64: for AVX-512, for
 * AVX2 + F16C, and for the baseline ISA. The variant is picked once per process from
 * what the CPU (and the OS, for the wider register state) supports; each call then
 * costs one switch on the variant and one on the dtype, never a call per element.
 * Other architectures get the baseline variant only. Compressed averaging's kernels
 * (wire_kernels.h) are compiled and dispatched the same way.
 */
#include "reduce.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "reduce_half.h"
#include "reduce_isa.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define ZR_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define ZR_X86 0
#endif

/* Internal ops, past the public ones: dst = a / divisor (zcoll__reduce_scale), dst =
 * a * scalar + b (zcoll__reduce_premul), dst = a * scalar (zcoll__scale_copy). */
#define ZR_OP_SCALE ZCOLL_OP_COUNT
#define ZR_OP_PREMUL (ZCOLL_OP_COUNT + 1)
#define ZR_OP_MUL (ZCOLL_OP_COUNT + 2)

/* Float MIN/MAX: the forms that compile to vminps/vmaxps. Which operand wins for NaN
 * or for -0 vs +0 is this expression's answer, in every variant. */
static inline float zr_minf(float x, float y) { return x < y ? x : y; }
static inline float zr_maxf(float x, float y) { return x > y ? x : y; }

/* What wire_kernels.h's zw_run does (zcoll__wire_*). */
enum { ZW_PACK, ZW_UNPACK, ZW_ROUND, ZW_REDUCE };

#define ZR_ISA generic
#define ZR_ATTR
#define ZR_F16VEC 0
#include "reduce_kernels.h"
#include "wire_kernels.h"
#undef ZR_ISA
#undef ZR_ATTR
#undef ZR_F16VEC

#if ZR_X86
#define ZR_ISA avx2
#define ZR_ATTR __attribute__((target("avx2,f16c")))
#define ZR_F16VEC 256
#include "reduce_kernels.h"
#include "wire_kernels.h"
#undef ZR_ISA
#undef ZR_ATTR
#undef ZR_F16VEC

#define ZR_ISA avx512
#define ZR_ATTR __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,f16c")))
#define ZR_F16VEC 512
#include "reduce_kernels.h"
#include "wire_kernels.h"
#undef ZR_ISA
#undef ZR_ATTR
#undef ZR_F16VEC
#endif

enum { ZR_UNRESOLVED = -1, ZR_GENERIC, ZR_AVX2, ZR_AVX512, ZR_NVARIANTS };

static const char *const zr_isa_names[ZR_NVARIANTS] = {"generic", "avx2", "avx512"};

/* Relaxed is enough: every thread that resolves computes the same value. */
static atomic_int zr_isa_selected = ZR_UNRESOLVED;

#if ZR_X86
/* From CPUID directly: not every compiler's __builtin_cpu_supports knows "f16c". The
 * OS support it needs (YMM state) is the one "avx2" already implies. */
static int zr_has_f16c(void) {
  unsigned eax, ebx, ecx, edx;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
}
#endif

static int zr_isa_supported(int isa) {
#if ZR_X86
  /* libgcc's feature bits include the OS check (XGETBV) for the YMM/ZMM state. */
  __builtin_cpu_init();
  int avx2 = __builtin_cpu_supports("avx2") && zr_has_f16c();
  switch (isa) {
  case ZR_AVX512:
    return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  case ZR_AVX2: return avx2;
  case ZR_GENERIC: return 1;
  default: return 0;
  }
#else
  return isa == ZR_GENERIC;
#endif
}

static int zr_isa(void) {
  int isa = atomic_load_explicit(&zr_isa_selected, memory_order_relaxed);
  if (isa != ZR_UNRESOLVED) return isa;
  isa = zr_isa_supported(ZR_AVX512) ? ZR_AVX512 : zr_isa_supported(ZR_AVX2) ? ZR_AVX2 : ZR_GENERIC;
  atomic_store_explicit(&zr_isa_selected, isa, memory_order_relaxed);
  return isa;
}

static void zr_run(zcoll_dtype_t dtype, int op, void *dst, const void *a, const void *b, size_t n,
                   int divisor, double sc) {
  unsigned char *d = dst;
  const unsigned char *x = a, *y = b;
  switch (zr_isa()) {
#if ZR_X86
  case ZR_AVX512: zr_reduce_avx512(dtype, op, d, x, y, n, divisor, sc); break;
  case ZR_AVX2: zr_reduce_avx2(dtype, op, d, x, y, n, divisor, sc); break;
#endif
  default: zr_reduce_generic(dtype, op, d, x, y, n, divisor, sc); break;
  }
}

void zcoll__reduce(zcoll_dtype_t dtype, zcoll_op_t op, void *dst, const void *a, const void *b,
                   size_t n, int divisor) {
  if (n == 0 || (unsigned)op >= ZCOLL_OP_COUNT) return;
  /* Intermediate AVG steps are sums; the kernels' AVG always divides. */
  if (op == ZCOLL_AVG && divisor == 0) op = ZCOLL_SUM;
  zr_run(dtype, (int)op, dst, a, b, n, divisor, 0);
}

void zcoll__reduce_scale(zcoll_dtype_t dtype, void *dst, const void *src, size_t n, int divisor) {
  if (n == 0 || divisor == 0) return;
  zr_run(dtype, ZR_OP_SCALE, dst, src, src, n, divisor, 0);
}

void zcoll__reduce_premul(zcoll_dtype_t dtype, void *dst, const void *a, const void *b, size_t n,
                          double scalar) {
  if (n) zr_run(dtype, ZR_OP_PREMUL, dst, a, b, n, 0, scalar);
}

void zcoll__scale_copy(zcoll_dtype_t dtype, void *dst, const void *src, size_t n, double scalar) {
  if (n) zr_run(dtype, ZR_OP_MUL, dst, src, src, n, 0, scalar);
}

const char *zcoll__reduce_isa(void) { return zr_isa_names[zr_isa()]; }

void zcoll__reduce_isas_built(char *buf, size_t len) {
  size_t off = 0;
  buf[0] = '\0';
  for (int isa = 0; isa < (ZR_X86 ? ZR_NVARIANTS : 1) && off < len; isa++)
    off += (size_t)snprintf(buf + off, len - off, "%s%s", isa ? " " : "", zr_isa_names[isa]);
}

int zcoll__reduce_set_isa(const char *name) {
  if (name == NULL) {
    atomic_store_explicit(&zr_isa_selected, ZR_UNRESOLVED, memory_order_relaxed);
    return 0;
  }
  for (int isa = 0; isa < ZR_NVARIANTS; isa++) {
    if (strcmp(name, zr_isa_names[isa]) != 0) continue;
    if (!zr_isa_supported(isa)) return -1;
    atomic_store_explicit(&zr_isa_selected, isa, memory_order_relaxed);
    return 0;
  }
  return -1;
}

static void zw_dispatch(zcoll_dtype_t wire, int what, void *dst, const void *a, const void *b,
                        size_t n, double scalar, int divisor, int final) {
  unsigned char *d = dst;
  const unsigned char *x = a, *y = b;
  float sv = (float)scalar, dv = divisor ? (float)divisor : 1.0f;
  if (n == 0) return;
  switch (zr_isa()) {
#if ZR_X86
  case ZR_AVX512: zw_run_avx512(wire, what, d, x, y, n, sv, dv, final); break;
  case ZR_AVX2: zw_run_avx2(wire, what, d, x, y, n, sv, dv, final); break;
#endif
  default: zw_run_generic(wire, what, d, x, y, n, sv, dv, final); break;
  }
}

void zcoll__wire_pack(zcoll_dtype_t wire, void *dst, const void *src, size_t n, double scalar) {
  zw_dispatch(wire, ZW_PACK, dst, src, src, n, scalar, 0, 0);
}

void zcoll__wire_unpack(zcoll_dtype_t wire, void *dst, const void *src, size_t n) {
  zw_dispatch(wire, ZW_UNPACK, dst, src, src, n, 1.0, 0, 0);
}

void zcoll__wire_round(zcoll_dtype_t wire, void *dst, const void *src, size_t n, double scalar) {
  zw_dispatch(wire, ZW_ROUND, dst, src, src, n, scalar, 0, 0);
}

void zcoll__wire_reduce(zcoll_dtype_t wire, void *dst, const void *acc, const void *data, size_t n,
                        double scalar, int divisor, int final) {
  zw_dispatch(wire, ZW_REDUCE, dst, acc, data, n, scalar, divisor, final);
}
