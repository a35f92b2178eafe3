/*
 * zcoll_info.h -- diagnostics: what this machine offers and what the library will choose,
 * computed by the code that chooses, so that a tool's answer (zcoll_info) is the
 * communicator's. Included by zcoll.h.
 */
#ifndef ZCOLL_INFO_H_PUBLIC
#define ZCOLL_INFO_H_PUBLIC

#include "zcoll.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether the named transport can run here, by its own probe: ZCOLL_OK, or
 * ZCOLL_ERR_UNSUPPORTED with the reason in why; ZCOLL_ERR_INVALID_ARG for an unknown name. */
ZCOLL_API zcoll_status_t zcoll_transport_usable(const zcoll_config_t *cfg, const char *name,
                                                char *why, size_t why_len);

/* One thing a transport finds or needs here: a device port, a transport of the library it
 * loads, a system facility. */
typedef struct {
  char what[64];    /* "rxe0 port 1", "tcp/eth0", "memfd_create" */
  int ok;           /* 1: present and usable (met); 0: not; -1: for information */
  char detail[256]; /* "ACTIVE, Ethernet, MTU 1024, ...", or why not */
} zcoll_transport_detail_t;
/* Fills up to max entries for the named transport, returns how many there are (0 for a
 * transport with nothing to describe or not built), -1 for an unknown name or a NULL
 * argument. */
ZCOLL_API int zcoll_transport_details(const zcoll_config_t *cfg, const char *name,
                                      zcoll_transport_detail_t *out, int max);

/* What an allreduce of `bytes` on `ranks` ranks of this host would use with cfg: the
 * communicator's own choice (zcoll_allreduce_algorithm says the same of a live one). */
typedef struct {
  const char *algorithm; /* "ring", ... */
  size_t chunk_bytes;    /* the pipeline's piece */
  int depth;             /* pieces in flight per peer and direction */
  char reason[256];      /* the rule that chose it: "built-in table rule 2: ...", "forced by
                            ZCOLL_ALGO", a tuning file's line */
} zcoll_allreduce_plan_t;
ZCOLL_API zcoll_status_t zcoll_allreduce_explain(const zcoll_config_t *cfg, int ranks, size_t bytes,
                                                 zcoll_allreduce_plan_t *plan);
/* The same for any collective: coll is "allreduce", "broadcast", "reduce", "allgather",
 * "reduce_scatter", "barrier", "alltoall", "alltoallv", "allgatherv", "gather", "gatherv",
 * "scatter" or "scatterv"; bytes are the allreduce's, the broadcast's and the reduce's
 * vector, the allgather's result and the reduce-scatter's input (all ranks' blocks, as
 * zcoll_perf's sizes are), and one block of alltoall, gather and scatter (out of place; the
 * v-forms have one algorithm each). ZCOLL_ERR_INVALID_ARG for another name. */
ZCOLL_API zcoll_status_t zcoll_collective_explain(const zcoll_config_t *cfg, const char *coll,
                                                  int ranks, size_t bytes,
                                                  zcoll_allreduce_plan_t *plan);

/* The reduction kernels of this build and the one picked on this CPU. */
typedef struct {
  char kernels_built[64]; /* instruction sets, by space: "generic avx2 avx512" */
  char kernel[16];        /* the one this CPU runs: "avx2" */
} zcoll_build_info_t;
ZCOLL_API void zcoll_build_info(zcoll_build_info_t *info);
/* What the named transport runs on, as text: the library it was built against and the one
 * loaded ("libibverbs 1.14.44.0 (built against 1.14.44.0)"), or the kernel's release for
 * shm. ZCOLL_ERR_UNSUPPORTED with the reason for a transport this build lacks,
 * ZCOLL_ERR_INVALID_ARG for an unknown name. */
ZCOLL_API zcoll_status_t zcoll_transport_version(const char *name, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* ZCOLL_INFO_H_PUBLIC */
