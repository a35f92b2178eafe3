/*
 * config.h -- the configuration tables: every knob is a ZCOLL_* variable and a field of
 * struct zcoll_config, parsed by a table row (name, default, doc, offset, parser) that
 * also feeds zcoll_info. The rows sit with what they configure: base's own
 * (config_fields.c) and each transport's (transports/<name>/config.c), gathered into the
 * one list zcoll_info -c prints by the layer that knows them all (comm/config_api.c),
 * which hands it in with the other layers' names (struct zcoll__config_names).
 */
#ifndef ZCOLL_CONFIG_H
#define ZCOLL_CONFIG_H

#include <stddef.h>
#include "zcoll.h"

enum { ZCOLL_PROGRESS_CALLER, ZCOLL_PROGRESS_THREAD };

/* ZCOLL_TRANSPORT's value: ZCOLL_TL_AUTO or an index into the table of transports. */
#define ZCOLL_TL_AUTO (-1)

/* Every table's rows together: base's (config_fields.h) and the transports' (checked where
 * they are gathered, comm/config_api.c). */
#define ZCOLL_CONFIG_NFIELDS 37

struct zcoll_config {
  int rank, size;             /* -1: from the launcher's variables */
  int local_rank, local_size; /* informational, set by launchers */
  char root[256];             /* host:port of rank 0's rendezvous */
  int root_fd;                /* rank 0: an already listening socket (zcoll_run) */
  /* Not settings: what a partial allreduce's communicator needs (lib/comm/partial_init.c): a
   * channel to every rank, and remote atomics from transports that must be asked for them
   * (UCX: its atomics lanes cost wireup where a peer dies, transports/ucx/iface.c). */
  int all_peers, atomics;
  char job_key[128]; /* secret: never printed, logged or sent */
  int require_key;   /* 1: no job key is an error */
  char job_id[128];  /* public: tells jobs sharing a port apart */
  int transport;     /* ZCOLL_TL_AUTO, or an index into zcoll__transports */
  char ib_dev[64];   /* the old name of ib_hca's single device (an alias) */
  char ib_hca[256];  /* ZCOLL_IB_HCA: devices and ports (hca.h); "": ib_dev, else any */
  int ib_gid_index;  /* -1: chosen as NCCL does (transports/verbs/port.c) */
  int ib_tc;         /* traffic class (RoCE: the IP TOS byte); -1: 0 */
  int ib_sl;         /* service level (IB; RoCE: the VLAN priority) */
  int ib_pkey;       /* partition key; -1: the port's first P_Key table entry */
  int ib_timeout;    /* the local ack timeout's exponent: 4.096 us * 2^t per try */
  int ib_retry_cnt;  /* transport retries before a send fails */
  int ib_qp_depth; /* work requests per queue pair and direction; 0: ZCOLL_IB_QP_DEPTH_MIN (verbs) */
  char algo[32];
  char bcast_algo[32];
  int tree_arity;
  size_t chunk_bytes; /* 0: the transport's default */
  int wire_dtype;     /* ZCOLL_BFLOAT16 or ZCOLL_FLOAT16: float32 sums travel so; 0: as they are */
  int pipeline_depth; /* staging slots per peer and direction */
  char tuning_file[512];
  double timeout; /* seconds without progress before a peer is an error; 0 = never */
  int progress;
  int log_level;
  unsigned log_subsys; /* a bit per subsystem (log.h) */
  char log_file[512];  /* "": stderr; else a pattern with %h, %p, %r */
  char trace[512];
  int spin_us;
  int yield_us;
  size_t rcache_max_bytes;          /* registration cache bound (verbs); 0: no cache */
  int flight_n;                     /* flight recorder entries per communicator; 0: off */
  char flight_file[512];            /* "": dumps to the log only; else <prefix>.<rank> too */
  char *text[ZCOLL_CONFIG_NFIELDS]; /* current value of each field, as text */
  unsigned char explicit_[ZCOLL_CONFIG_NFIELDS]; /* set from the environment or code */
};

struct zcoll__config_names;

/* nm: the names of other layers' things that some fields take (below). */
typedef int (*zcoll__config_parse_fn)(const char *text, void *dst, size_t dst_size, char *why,
                                      size_t why_len, const struct zcoll__config_names *nm);

/* One row of a table: one ZCOLL_* variable. */
struct zcoll__config_field {
  const char *name; /* without the ZCOLL_ prefix */
  const char *deflt;
  const char *doc;
  size_t offset;
  size_t size;
  zcoll__config_parse_fn parse;
  int secret; /* its value is never shown: zcoll_info, zcoll_config_get, messages */
};

/* A row for member of struct zcoll_config; ZCOLL_CONFIG_SECRET: one whose value is redacted
 * wherever fields are shown. */
#define ZCOLL_CONFIG_FIELD(name, deflt, doc, member, parser)  \
  {                                                           \
    name, deflt, doc, offsetof(struct zcoll_config, member),  \
        sizeof(((struct zcoll_config *)0)->member), parser, 0 \
  }
#define ZCOLL_CONFIG_SECRET(name, deflt, doc, member, parser) \
  {                                                           \
    name, deflt, doc, offsetof(struct zcoll_config, member),  \
        sizeof(((struct zcoll_config *)0)->member), parser, 1 \
  }

/* A table's rows, as gathered into the one list. */
struct zcoll__config_section {
  const struct zcoll__config_field *fields;
  int n;
};

/* What some fields name is other layers' (an algorithm, a transport), and so are some
 * tables (a transport's): they hand them in, so that configuration knows none of them
 * (comm/config_api.c, the public calls). */
struct zcoll__config_names {
  int (*algo_valid)(const char *name);       /* ZCOLL_ALGO: "auto" or one it accepts */
  int (*bcast_algo_valid)(const char *name); /* ZCOLL_BCAST_ALGO: the same */
  const char *const *transports;             /* ZCOLL_TRANSPORT: "auto" or an index here */
  int ntransports;
  /* Every table, in the order zcoll_info and zcoll_config_entries list the fields: their
   * rows add up to ZCOLL_CONFIG_NFIELDS. */
  const struct zcoll__config_section *sections;
  int nsections;
};

/* The public calls of the same names, with the names and tables (comm/config_api.c). */
zcoll_status_t zcoll__config_create(zcoll_config_t **out, const struct zcoll__config_names *nm);
zcoll_status_t zcoll__config_set(zcoll_config_t *cfg, const char *name, const char *value,
                                 const struct zcoll__config_names *nm);
zcoll_status_t zcoll__config_get(const zcoll_config_t *cfg, const char *name, char *buf, size_t len,
                                 const struct zcoll__config_names *nm);
int zcoll__config_entries(const zcoll_config_t *cfg, zcoll_config_entry_t *entries, int max,
                          const struct zcoll__config_names *nm);

/* Was the field set from the environment or code (not left at its default)? */
int zcoll__config_is_explicit(const zcoll_config_t *cfg, const char *name,
                              const struct zcoll__config_names *nm);

/* Parsers other tables' rows share (config_fields.c): text of fewer than size bytes; an
 * integer in [lo, hi] (why names the range). */
int zcoll__config_parse_string(const char *text, void *dst, size_t size, char *why, size_t why_len,
                               const struct zcoll__config_names *nm);
int zcoll__config_parse_range(const char *text, void *dst, long lo, long hi, char *why,
                              size_t why_len);

/* A private deep copy (communicators keep their own). */
zcoll_status_t zcoll__config_dup(const zcoll_config_t *src, zcoll_config_t **out);

#endif
