/* config_fields.c -- base's table of ZCOLL_* variables: each one's name, default, the line
 * zcoll_info shows, where it lands in struct zcoll_config, and the parser that checks its
 * text (config.c sets and reads fields through the table). */
#include "config_fields.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hostport.h"
#include "log.h"

static int parse_int(const char *text, void *dst, size_t size, char *why, size_t why_len,
                     const struct zcoll__config_names *nm) {
  (void)nm;
  (void)size;
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || end == text || *end || v < INT_MIN || v > INT_MAX) {
    snprintf(why, why_len, "not an integer");
    return -1;
  }
  *(int *)dst = (int)v;
  return 0;
}

static int parse_nonneg_int(const char *text, void *dst, size_t size, char *why, size_t why_len,
                            const struct zcoll__config_names *nm) {
  if (parse_int(text, dst, size, why, why_len, nm)) return -1;
  if (*(int *)dst < 0) {
    snprintf(why, why_len, "must be >= 0");
    return -1;
  }
  return 0;
}

int zcoll__config_parse_range(const char *text, void *dst, long lo, long hi, char *why,
                              size_t why_len) {
  if (parse_int(text, dst, sizeof(int), why, why_len, NULL) || *(int *)dst < lo ||
      *(int *)dst > hi) {
    snprintf(why, why_len, "must be an integer from %ld to %ld", lo, hi);
    return -1;
  }
  return 0;
}

static int parse_rank(const char *text, void *dst, size_t size, char *why, size_t why_len,
                      const struct zcoll__config_names *nm) {
  if (parse_int(text, dst, size, why, why_len, nm)) return -1;
  if (*(int *)dst < -1) {
    snprintf(why, why_len, "must be >= 0 (or -1: unset)");
    return -1;
  }
  return 0;
}

/* "65536", "64K", "1M", "1G" (binary multiples). */
static int parse_bytes(const char *text, void *dst, size_t size, char *why, size_t why_len,
                       const struct zcoll__config_names *nm) {
  (void)nm;
  (void)size;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno || end == text || text[0] == '-') {
    snprintf(why, why_len, "not a byte count");
    return -1;
  }
  unsigned shift = 0;
  switch (toupper((unsigned char)*end)) {
  case 'K':
    shift = 10;
    end++;
    break;
  case 'M':
    shift = 20;
    end++;
    break;
  case 'G':
    shift = 30;
    end++;
    break;
  default: break;
  }
  if ((*end == 'B' || *end == 'b') && shift) end++;
  if (*end || (shift && v > (ULLONG_MAX >> shift))) {
    snprintf(why, why_len, "not a byte count (e.g. 65536, 64K, 1M)");
    return -1;
  }
  *(size_t *)dst = (size_t)(v << shift);
  return 0;
}

static int parse_seconds(const char *text, void *dst, size_t size, char *why, size_t why_len,
                         const struct zcoll__config_names *nm) {
  (void)nm;
  (void)size;
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (errno || end == text || *end || !(v >= 0) || v > 1e9) {
    snprintf(why, why_len, "not a number of seconds >= 0");
    return -1;
  }
  *(double *)dst = v;
  return 0;
}

static int parse_bool(const char *text, void *dst, size_t size, char *why, size_t why_len,
                      const struct zcoll__config_names *nm) {
  (void)nm;
  (void)size;
  static const char *const names[] = {"0", "1", "no", "yes", "false", "true", "off", "on"};
  for (int i = 0; i < 8; i++)
    if (strcasecmp(text, names[i]) == 0) {
      *(int *)dst = i & 1;
      return 0;
    }
  snprintf(why, why_len, "must be 0 or 1");
  return -1;
}

int zcoll__config_parse_string(const char *text, void *dst, size_t size, char *why, size_t why_len,
                               const struct zcoll__config_names *nm) {
  (void)nm;
  if (strlen(text) >= size) {
    snprintf(why, why_len, "longer than %zu characters", size - 1);
    return -1;
  }
  memcpy(dst, text, strlen(text) + 1);
  return 0;
}

static int parse_enum(const char *text, void *dst, const char *const *names, int n, char *why,
                      size_t why_len) {
  for (int i = 0; i < n; i++)
    if (strcasecmp(text, names[i]) == 0) {
      *(int *)dst = i;
      return 0;
    }
  size_t off = (size_t)snprintf(why, why_len, "must be one of");
  for (int i = 0; i < n && off < why_len; i++)
    off += (size_t)snprintf(why + off, why_len - off, "%s%s", i ? "|" : " ", names[i]);
  return -1;
}

/* The names are the transport table's (comm/transports.c), handed in. */
static int parse_transport(const char *text, void *dst, size_t size, char *why, size_t why_len,
                           const struct zcoll__config_names *nm) {
  (void)size;
  if (strcasecmp(text, "auto") == 0) {
    *(int *)dst = ZCOLL_TL_AUTO;
    return 0;
  }
  for (int i = 0; i < nm->ntransports; i++)
    if (strcasecmp(text, nm->transports[i]) == 0) {
      *(int *)dst = i;
      return 0;
    }
  size_t off = (size_t)snprintf(why, why_len, "must be one of auto");
  for (int i = 0; i < nm->ntransports && off < why_len; i++)
    off += (size_t)snprintf(why + off, why_len - off, "|%s", nm->transports[i]);
  return -1;
}

static int parse_progress(const char *text, void *dst, size_t size, char *why, size_t why_len,
                          const struct zcoll__config_names *nm) {
  (void)nm;
  (void)size;
  static const char *const names[] = {"caller", "thread"};
  return parse_enum(text, dst, names, 2, why, why_len);
}

static int parse_log(const char *text, void *dst, size_t size, char *why, size_t why_len,
                     const struct zcoll__config_names *nm) {
  (void)nm;
  (void)size;
  int v = zcoll__log_parse_level(text);
  if (v < 0) {
    snprintf(why, why_len, "must be one of none|error|warn|info|debug|trace");
    return -1;
  }
  *(int *)dst = v;
  return 0;
}

static int parse_subsys(const char *text, void *dst, size_t size, char *why, size_t why_len,
                        const struct zcoll__config_names *nm) {
  (void)nm;
  (void)size;
  return zcoll__log_parse_subsys(text, dst, why, why_len);
}

static int parse_log_file(const char *text, void *dst, size_t size, char *why, size_t why_len,
                          const struct zcoll__config_names *nm) {
  if (zcoll__log_check_file(text, why, why_len)) return -1;
  return zcoll__config_parse_string(text, dst, size, why, why_len, nm);
}

static int parse_algo(const char *text, void *dst, size_t size, char *why, size_t why_len,
                      const struct zcoll__config_names *nm) {
  if (strcmp(text, "auto") != 0 && !nm->algo_valid(text)) {
    snprintf(why, why_len, "unknown algorithm (zcoll_info lists them)");
    return -1;
  }
  return zcoll__config_parse_string(text, dst, size, why, why_len, nm);
}

static int parse_bcast_algo(const char *text, void *dst, size_t size, char *why, size_t why_len,
                            const struct zcoll__config_names *nm) {
  if (strcmp(text, "auto") != 0 && !nm->bcast_algo_valid(text)) {
    snprintf(why, why_len, "unknown broadcast algorithm (auto, chain or tree)");
    return -1;
  }
  return zcoll__config_parse_string(text, dst, size, why, why_len, nm);
}

static int parse_arity(const char *text, void *dst, size_t size, char *why, size_t why_len,
                       const struct zcoll__config_names *nm) {
  if (parse_int(text, dst, size, why, why_len, nm)) return -1;
  if (*(int *)dst < 2 || *(int *)dst > 64) {
    snprintf(why, why_len, "must be in 2..64");
    return -1;
  }
  return 0;
}

static int parse_wire(const char *text, void *dst, size_t size, char *why, size_t why_len,
                      const struct zcoll__config_names *nm) {
  (void)nm;
  (void)size;
  static const char *const names[] = {"none", "bfloat16", "float16"};
  static const int dtypes[] = {0, ZCOLL_BFLOAT16, ZCOLL_FLOAT16};
  int i = 0;
  if (parse_enum(text, &i, names, 3, why, why_len)) return -1;
  *(int *)dst = dtypes[i];
  return 0;
}

static int parse_depth(const char *text, void *dst, size_t size, char *why, size_t why_len,
                       const struct zcoll__config_names *nm) {
  if (parse_int(text, dst, size, why, why_len, nm)) return -1;
  if (*(int *)dst < 2 || *(int *)dst > 256) {
    snprintf(why, why_len, "must be in 2..256");
    return -1;
  }
  return 0;
}

/* "" (unset), or host:port with a port the other ranks can connect to: a bad one would
 * otherwise show only as a job that times out. */
static int parse_root(const char *text, void *dst, size_t size, char *why, size_t why_len,
                      const struct zcoll__config_names *nm) {
  char host[256], port[16];
  if (text[0] &&
      zcoll__hostport_split(text, 0, host, sizeof(host), port, sizeof(port), why, why_len))
    return -1;
  return zcoll__config_parse_string(text, dst, size, why, why_len, nm);
}

/* Bounded: an entry is 64 bytes, and a dump prints every one. */
#define FLIGHT_MAX (1 << 20)
static int parse_flight(const char *text, void *dst, size_t size, char *why, size_t why_len,
                        const struct zcoll__config_names *nm) {
  if (parse_int(text, dst, size, why, why_len, nm)) return -1;
  if (*(int *)dst < 0 || *(int *)dst > FLIGHT_MAX) {
    snprintf(why, why_len, "must be in 0..%d", FLIGHT_MAX);
    return -1;
  }
  return 0;
}

static int parse_chunk(const char *text, void *dst, size_t size, char *why, size_t why_len,
                       const struct zcoll__config_names *nm) {
  if (parse_bytes(text, dst, size, why, why_len, nm)) return -1;
  size_t v = *(size_t *)dst;
  if (v != 0 && (v < 64 || v > ((size_t)1 << 30))) {
    snprintf(why, why_len, "must be 0 (automatic) or between 64 and 1G");
    return -1;
  }
  return 0;
}

/* Short names for the rows below only (undefined after them), so that each reads on a line
 * or two. */
#define F ZCOLL_CONFIG_FIELD
#define FS ZCOLL_CONFIG_SECRET

// The table reads as one field per entry; clang-format would spread each over five lines.
// clang-format off
const struct zcoll__config_field zcoll__config_fields_job[ZCOLL_CONFIG_NJOB] = {
    F("RANK", "-1", "this process's rank; -1: from the launcher (PMIx, Open MPI, Slurm, PMI)",
      rank, parse_rank),
    F("SIZE", "-1", "number of ranks; -1: from the launcher", size, parse_rank),
    F("LOCAL_RANK", "-1", "rank among the ranks on this host (set by launchers)", local_rank,
      parse_rank),
    F("LOCAL_SIZE", "-1", "ranks on this host (set by launchers)", local_size, parse_rank),
    F("ROOT", "", "host:port (port 1..65535) where rank 0 serves the rendezvous; rank 0 "
      "listens on that address only (127.0.0.1: this host only); *:port or 0.0.0.0:port: "
      "every interface; "
      "empty under PMIx: rank 0 picks one and shares it through PMIx", root, parse_root),
    F("ROOT_FD", "-1", "rank 0: an inherited listening socket for ROOT (set by zcoll_run)",
      root_fd, parse_rank),
    FS("JOB_KEY", "", "shared secret of the job: ranks and rank 0 prove to each other that "
       "they know it (it is never sent); empty: under PMIx rank 0 makes one and shares it "
       "through PMIx, else anyone who reaches ZCOLL_ROOT may join", job_key, zcoll__config_parse_string),
    F("REQUIRE_KEY", "0", "1: an empty ZCOLL_JOB_KEY is an error (else a warning)", require_key,
      parse_bool),
    F("JOB_ID", "", "public job id that keeps two jobs on one port apart (not a secret); "
      "empty: the launcher's (OMPI_MCA_ess_base_jobid, PMIX_NAMESPACE, "
      "SLURM_JOB_ID.SLURM_STEP_ID; none for ranks placed by hand)", job_id, zcoll__config_parse_string),
    F("TRANSPORT", "auto", "auto, or one of the transports zcoll_info lists, for every peer "
      "(auto: per peer, shm to ranks on this host, else verbs where both ends have an RDMA "
      "device up, else ucx)",
      transport, parse_transport),
};

/* Here come the transports' tables (transports/<name>/config.c), in zcoll_info's list. */

const struct zcoll__config_field zcoll__config_fields_run[ZCOLL_CONFIG_NRUN] = {
    F("ALGO", "auto", "allreduce algorithm: auto or one of the algorithms zcoll_info lists", algo,
      parse_algo),
    F("BCAST_ALGO", "auto", "broadcast algorithm: auto, chain (large vectors) or tree (small)",
      bcast_algo, parse_bcast_algo),
    F("TREE_ARITY", "4", "fan-out k of the k-nomial tree algorithm", tree_arity, parse_arity),
    F("CHUNK_BYTES", "0", "pipeline chunk size in bytes (64..1G); 0: the transport's default",
      chunk_bytes, parse_chunk),
    F("WIRE_DTYPE", "none", "none|bfloat16|float16: float32 data of SUM, AVG and premul-sum "
      "allreduce (partial too), reduce_scatter and reduce travels as this 16-bit type, halving "
      "the bytes; reduced in float32 at every step, the result rounded to it, alike on every "
      "rank (docs/partial.md); ranks must agree",
      wire_dtype, parse_wire),
    F("PIPELINE_DEPTH", "8", "staging slots (chunks in flight) per peer and direction",
      pipeline_depth, parse_depth),
    F("TUNING_FILE", "", "algorithm selection table written by perf/tune.py", tuning_file,
      zcoll__config_parse_string),
    F("TIMEOUT", "120", "seconds without progress before a silent peer is an error; 0: never",
      timeout, parse_seconds),
    F("PROGRESS", "caller", "caller|thread: who drives communication progress", progress,
      parse_progress),
    F("LOG", "warn", "none|error|warn|info|debug|trace", log_level, parse_log),
    F("LOG_SUBSYS", "all", "subsystems logged: all, or a list of init,boot,net,coll,tune,mem; "
      "a leading ^ logs all but the list (^net,mem)", log_subsys, parse_subsys),
    F("LOG_FILE", "", "file to log to (appended), with %h the host, %p the pid and %r the rank "
      "(a file per rank); empty: stderr, which is also where lines go if it cannot be opened",
      log_file, parse_log_file),
    F("TRACE", "", "file prefix for a per-rank Chrome-trace timeline of the pipeline stages",
      trace, zcoll__config_parse_string),
    F("SPIN_US", "20", "at most microseconds to busy-poll while waiting, before yielding the "
                       "core; unless set, it adapts to whether spinning pays",
      spin_us, parse_nonneg_int),
    F("YIELD_US", "2000", "then microseconds to poll yielding the core, before sleeping",
      yield_us, parse_nonneg_int),
    F("RCACHE_MAX_BYTES", "1G", "verbs: bytes of user buffers kept registered between calls "
      "(sent without staging; invalidated through libucm); 0: stage every send",
      rcache_max_bytes, parse_bytes),
    /* 64: a training step's gradient buckets and the calls in flight, back far enough to
     * hold the call the slowest rank has not made; 4 KiB a communicator. */
    F("FLIGHT_RECORDER", "64", "collectives each communicator remembers (number, kind, count, "
      "dtype, op, algorithm, state, peers awaited, times) and dumps on a timeout, a peer "
      "failure, a mismatch, an abort or zcoll_comm_dump; 0: off",
      flight_n, parse_flight),
    F("FLIGHT_RECORDER_FILE", "", "file prefix: each rank appends its flight recorder dumps "
      "to <prefix>.<rank> (else they go to the log only: at info level after a failure, at "
      "warn for zcoll_comm_dump)", flight_file, zcoll__config_parse_string),
};
// clang-format on
#undef F
#undef FS
