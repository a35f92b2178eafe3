/*
 * zcoll.h -- the public C API of libzcoll, an RDMA-accelerated allreduce runtime.
 *
 * Every call returns a zcoll_status_t; nothing in the library aborts or exits the
 * process. A failed call leaves its output arguments untouched and records a detailed
 * message that zcoll_comm_last_error() returns (zcoll_last_error() for calls that have
 * no communicator yet).
 *
 * Threading: a communicator is used by one thread at a time; a call made while another
 * thread is inside a call on the same communicator returns ZCOLL_ERR_INVALID_ARG ("used
 * concurrently") at once and changes nothing. Distinct communicators may be used
 * concurrently from distinct threads. The exceptions are zcoll_comm_revoke (any thread,
 * and async-signal-safe) and zcoll_comm_abort (any thread, not a signal handler), which
 * exist to interrupt a call blocked on another thread.
 *
 * What an error means for a communicator: ZCOLL_ERR_INVALID_ARG for a concurrent call
 * leaves it as it was. Any other error from a collective -- an argument error included,
 * because the other ranks have made that collective call and cannot finish it -- breaks
 * it for good: the peers are told (ZCOLL_ERR_MISMATCH, ZCOLL_ERR_TRANSPORT when the
 * network failed, else ZCOLL_ERR_PEER_FAILED, naming this rank), every later call returns
 * the error, and the only thing left to do is zcoll_comm_destroy (or zcoll_comm_abort).
 * Once a call has returned an error, zcoll writes nothing more into that call's buffers.
 *
 * fork(): a communicator belongs to the process that created it. In a child forked
 * afterwards every call on it returns ZCOLL_ERR_INVALID_ARG, and zcoll_comm_destroy
 * (or abort) only frees the child's copy of the memory, without talking to anyone.
 */
#ifndef ZCOLL_H
#define ZCOLL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ZCOLL_VERSION_MAJOR 0
#define ZCOLL_VERSION_MINOR 1
#define ZCOLL_VERSION_PATCH 0

#if defined(__GNUC__)
#define ZCOLL_API __attribute__((visibility("default")))
#else
#define ZCOLL_API
#endif

/* One list generates the status enum and its strings (zcoll_strerror). */
#define ZCOLL_STATUS_MAP(XX)                                               \
  XX(OK, "success")                                                        \
  XX(ERR_INVALID_ARG, "invalid argument")                                  \
  XX(ERR_NO_MEMORY, "out of memory")                                       \
  XX(ERR_UNSUPPORTED, "not supported by this build or machine")            \
  XX(ERR_BOOTSTRAP, "bootstrap (rendezvous) failed")                       \
  XX(ERR_TRANSPORT, "transport error")                                     \
  XX(ERR_TIMEOUT, "timed out waiting for a peer")                          \
  XX(ERR_PEER_FAILED, "a peer failed or aborted")                          \
  XX(ERR_MISMATCH, "ranks called the collective with different arguments") \
  XX(IN_PROGRESS, "operation in progress")

typedef enum {
#define ZCOLL_STATUS_ENUM_(name, str) ZCOLL_##name,
  ZCOLL_STATUS_MAP(ZCOLL_STATUS_ENUM_)
#undef ZCOLL_STATUS_ENUM_
} zcoll_status_t;

typedef enum {
  ZCOLL_INT8,
  ZCOLL_UINT8,
  ZCOLL_INT32,
  ZCOLL_UINT32,
  ZCOLL_INT64,
  ZCOLL_UINT64,
  ZCOLL_FLOAT16,  /* IEEE 754 binary16; reduced in float32, rounded once per step */
  ZCOLL_BFLOAT16, /* bfloat16; reduced in float32, rounded once per step */
  ZCOLL_FLOAT32,
  ZCOLL_FLOAT64,
  ZCOLL_DTYPE_COUNT
} zcoll_dtype_t;

/* Integer sum and prod wrap modulo 2^bits (no undefined behaviour). AVG is the sum
 * divided by the number of ranks (a partial round's: its contributors); for integers the
 * wrapped sum is divided as C divides, truncating toward zero, not rounding: int32 AVG of
 * {-3, 0} is -1 and of {3, 0} is 1 (docs/collectives.md).
 * MIN/MAX on floating point: if either operand is NaN the result is unspecified. */
typedef enum { ZCOLL_SUM, ZCOLL_PROD, ZCOLL_MIN, ZCOLL_MAX, ZCOLL_AVG, ZCOLL_OP_COUNT } zcoll_op_t;

/* As sendbuf: the input is taken from recvbuf, which receives the result. */
#define ZCOLL_IN_PLACE ((const void *)1)

typedef struct zcoll_comm zcoll_comm_t;       /* opaque */
typedef struct zcoll_request zcoll_request_t; /* opaque: a non-blocking or persistent op */
typedef struct zcoll_mr zcoll_mr_t;           /* opaque: a registered (pinned) region */
typedef struct zcoll_config zcoll_config_t;   /* opaque: configuration set from code */

/* ---- status and versions ------------------------------------------------------- */

ZCOLL_API const char *zcoll_strerror(zcoll_status_t st);
/* "0.1.0" */
ZCOLL_API const char *zcoll_version_string(void);
/* The detailed message of the last failed call made by this thread: of any call, those
 * that have no communicator to record it in (zcoll_comm_init, zcoll_config_*) included.
 * A call refused because another thread is inside one on the same communicator ("used
 * concurrently") records its message here only: zcoll_comm_last_error is the thread's
 * inside. */
ZCOLL_API const char *zcoll_last_error(void);

/* ---- configuration --------------------------------------------------------------
 * Every knob is an environment variable ZCOLL_<NAME> and a field of zcoll_config_t.
 * zcoll_config_create() starts from the defaults overridden by the environment;
 * zcoll_config_set() overrides one field from code ("ALGO" or "ZCOLL_ALGO").
 * Bad values are an error (ZCOLL_ERR_INVALID_ARG), never ignored. */

ZCOLL_API zcoll_status_t zcoll_config_create(zcoll_config_t **cfg);
ZCOLL_API zcoll_status_t zcoll_config_set(zcoll_config_t *cfg, const char *name, const char *value);
/* Copies the current value of a field as text into buf (always NUL-terminated). */
ZCOLL_API zcoll_status_t zcoll_config_get(const zcoll_config_t *cfg, const char *name, char *buf,
                                          size_t len);
ZCOLL_API void zcoll_config_free(zcoll_config_t *cfg);

typedef struct {
  const char *name;          /* "ZCOLL_ALGO" */
  const char *value;         /* current value as text (valid until the config changes) */
  const char *default_value; /* built-in default */
  const char *doc;           /* one line */
} zcoll_config_entry_t;
/* Fills up to max entries, returns how many fields exist (call with max 0 to count). */
ZCOLL_API int zcoll_config_entries(const zcoll_config_t *cfg, zcoll_config_entry_t *entries,
                                   int max);

/* ---- communicator ---------------------------------------------------------------- */

/* Rendezvous security model. Ranks meet at rank 0's TCP port (ZCOLL_ROOT; rank 0
 * listens on that address only, every interface only for "*:port" or "0.0.0.0:port").
 * - ZCOLL_JOB_KEY decides who may join: each rank and rank 0 prove to each other,
 *   with HMAC-SHA256 over fresh nonces, that they know it. The key itself is never
 *   sent, so a process squatting the port learns nothing and is not trusted; it is
 *   never printed either (zcoll_info and zcoll_config_get show "(set)"/"(unset)").
 * - Connections that do not authenticate are dropped and logged, never fatal; only
 *   an authenticated rank that contradicts the job (a rank twice, another size) is.
 * - Without a key anyone who can reach the port may join: init logs a warning, and
 *   ZCOLL_REQUIRE_KEY=1 makes it a ZCOLL_ERR_BOOTSTRAP error instead.
 * - The job id (ZCOLL_JOB_ID, else the launcher's job id) is not a secret: it only
 *   lets two jobs that share a port tell each other's ranks apart.
 * - Not protected: nothing is encrypted, neither the rendezvous nor the data plane;
 *   the transports trust every member of the job, and the key does not stop anyone
 *   who can read or alter traffic on the network in between.
 *
 * cfg NULL: everything from the environment (ZCOLL_RANK/ZCOLL_SIZE/ZCOLL_ROOT, or the
 * variables of Open MPI's mpirun, Slurm's srun or a PMI launcher, with ZCOLL_ROOT; none
 * of them: a job of one). WORLD_SIZE above 1 (torchrun's) with none of them is
 * ZCOLL_ERR_INVALID_ARG naming it, not a job of one: torchrun gives no rendezvous zcoll
 * can use (docs/launching.md). Collective over all ranks. */
ZCOLL_API zcoll_status_t zcoll_comm_init(zcoll_comm_t **comm, const zcoll_config_t *cfg);

/* A communicator from an id the application moves itself (NCCL's ncclGetUniqueId and
 * ncclCommInitRank): the process that will be rank 0 makes the id, the application sends
 * it to every process (MPI_Bcast, a file, a key-value store), and each inits with its
 * rank and the size. The id is 128 opaque bytes: rank 0's rendezvous address (ZCOLL_ROOT's
 * host if set, else this host's first address other hosts reach, else 127.0.0.1; a fresh
 * port) and a fresh secret key, the job key that every rank proves it knows; treat it
 * as a secret. Making it already listens there. zcoll_comm_init_rank ignores
 * ZCOLL_RANK, ZCOLL_SIZE, ZCOLL_ROOT and ZCOLL_JOB_KEY (and cfg's); everything else
 * applies. Rank 0 must init in the process that made the id. Single use: once every rank
 * has joined, or after ZCOLL_TIMEOUT, the rendezvous closes; a rank that comes later, an
 * id used twice, and a forged one get an error saying so (ZCOLL_ERR_BOOTSTRAP,
 * ZCOLL_ERR_INVALID_ARG). Collective over the size ranks. */
/* MPI_Comm_split: collective over comm; the ranks that pass the same color (>= 0) form a
 * new communicator, ranked by key, then by rank in comm; ZCOLL_UNDEFINED gets NULL (and
 * ZCOLL_OK). The new one is a communicator like any other: its own collectives, numbers,
 * failures (a member's failure breaks the communicators it is in, not the others) and
 * lifetime (destroy it, collectively, before or after comm); it and comm may be used at
 * once from different threads. One whose ranks are all on one host (a split per host)
 * runs over comm's shm connections, and its control over socket pairs its rank 0 takes
 * from the others (no rendezvous, no listening socket); otherwise it starts as a job of
 * its own from a unique id its rank 0 makes, with connections of its own. Its settings
 * are comm's. A color < 0 other than ZCOLL_UNDEFINED on any rank is
 * ZCOLL_ERR_INVALID_ARG on every rank. */
#define ZCOLL_UNDEFINED (-1)
ZCOLL_API zcoll_status_t zcoll_comm_split(zcoll_comm_t *comm, int color, int key,
                                          zcoll_comm_t **newcomm);

typedef struct {
  unsigned char bytes[128];
} zcoll_unique_id_t;
ZCOLL_API zcoll_status_t zcoll_get_unique_id(zcoll_unique_id_t *id);
ZCOLL_API zcoll_status_t zcoll_comm_init_rank(zcoll_comm_t **comm, const zcoll_unique_id_t *id,
                                              int rank, int size, const zcoll_config_t *cfg);
/* Several communicators in one process: create them one at a time, in the same order on
 * every rank. While one thread of this process creates a communicator as rank r of a job
 * (the same ZCOLL_ROOT and ZCOLL_JOB_ID), a second creation as that rank of that job is
 * refused with ZCOLL_ERR_INVALID_ARG ("another thread of this process is creating a
 * communicator ..."): which thread of another process it would pair with is undefined,
 * and nothing could tell (its allreduces would be OK with the other thread's data).
 * Threads that are distinct ranks of one job (rank r and rank s) may create at once. */
ZCOLL_API int zcoll_comm_rank(const zcoll_comm_t *comm);
ZCOLL_API int zcoll_comm_size(const zcoll_comm_t *comm);
/* Collective: waits for every rank, then releases everything. NULL is accepted. Every rank
 * must have made the same collectives: a rank still in a collective the destroying rank
 * did not make fails at once (ZCOLL_ERR_PEER_FAILED naming it and how many it made), and
 * ranks that destroy after different numbers get ZCOLL_ERR_MISMATCH. A zcoll_comm_revoke
 * or zcoll_comm_abort while destroy waits for the others ends it within ~10 ms with
 * ZCOLL_ERR_PEER_FAILED (the others' destroy fails too); it still frees everything.
 * A handle already destroyed or aborted is refused (ZCOLL_ERR_INVALID_ARG), not read. */
ZCOLL_API zcoll_status_t zcoll_comm_destroy(zcoll_comm_t *comm);
/* Local: tells every peer to give up (they see ZCOLL_ERR_PEER_FAILED naming this rank
 * within about a second), then releases this rank's resources. May be called from a
 * thread other than one blocked in a call on comm (a watchdog): that call returns
 * ZCOLL_ERR_PEER_FAILED within ~10 ms, and abort frees the communicator only after it
 * has left (if it has not within 10 s, abort returns ZCOLL_ERR_TIMEOUT and frees
 * nothing). During a zcoll_comm_destroy on another thread, abort revokes: destroy ends
 * with ZCOLL_ERR_PEER_FAILED and frees the communicator itself, and abort returns
 * ZCOLL_OK once it has. After destroy (or another abort) has freed it, abort returns
 * ZCOLL_ERR_INVALID_ARG without reading it: a watchdog may call abort at any time.
 * The communicator must not be used, nor a new call started on it, once abort
 * may have begun; not async-signal-safe (use zcoll_comm_revoke in a signal handler). */
ZCOLL_API zcoll_status_t zcoll_comm_abort(zcoll_comm_t *comm);
/* Async-signal-safe, from any thread: marks comm revoked and wakes the call blocked on
 * it, which returns ZCOLL_ERR_PEER_FAILED within ~10 ms and tells the peers; every later
 * call fails too; a zcoll_comm_destroy waiting for the other ranks returns it too. Frees
 * nothing: destroy (or abort) comm afterwards, from a thread where no call on it is
 * running. Once destroy (or abort) has begun freeing comm, it touches nothing and
 * returns ZCOLL_ERR_INVALID_ARG (a communicator's address is never reused).
 * Over UCX two cases take up to 1 s, for abort too, because UCX can neither cancel them
 * nor cut them off on one host: a piece this rank is receiving through UCX's rendezvous
 * (pieces above its threshold, some KiB) from a peer on the same host that stopped
 * mid-transfer (waited for so that nothing lands in your buffers after the error), and
 * a piece sent before UCX finished connecting to its peer (UCX 1.13 crashes if released
 * then) -- in practice only in the first call after init. */
ZCOLL_API zcoll_status_t zcoll_comm_revoke(zcoll_comm_t *comm);
/* The flight recorder (ZCOLL_FLIGHT_RECORDER=N, default 64): comm's last N collectives,
 * oldest first, one "zcoll flight rank=R seq=S kind=... state=... awaiting=..." line each
 * after a header line "zcoll flight rank=R size=P next_seq=S last_done=S state=...", to the
 * log at warn level and appended to ZCOLL_FLIGHT_RECORDER_FILE.<rank> if set. From any
 * thread at any time, also while another thread is blocked in a call on comm (not from a
 * signal handler); it changes nothing, and a destroy or abort on another thread waits for
 * it (a handle already freed is refused). The same dump is made by itself,
 * once, when comm breaks (timeout, peer failure, mismatch) or is aborted.
 * docs/flight-recorder.md says how to read a hung job's dumps. The file must be a regular
 * file (or not exist yet): a symbolic link is not followed, a FIFO, device or socket is
 * refused, without waiting; ZCOLL_ERR_INVALID_ARG naming the path and why if it cannot be
 * written (a dump made on a failure logs that error instead: the call returns its own). */
ZCOLL_API zcoll_status_t zcoll_comm_dump(zcoll_comm_t *comm);
ZCOLL_API const char *zcoll_comm_last_error(const zcoll_comm_t *comm);
/* The transports chosen at init, joined by '+' when peers use different ones:
 * "shm", "verbs", "shm+verbs", "shm+ucx", ... (ZCOLL_LOG=info says which peer uses what). */
ZCOLL_API const char *zcoll_comm_transport(const zcoll_comm_t *comm);
/* The device under each of those transports, joined by '+' in the same order: "rxe0:1"
 * (verbs: device and port), what UCX may choose from ("all", or UCX_NET_DEVICES and
 * UCX_TLS as set), "-" where there is none to name (shm): "-+rxe0:1" for shm+verbs. */
ZCOLL_API const char *zcoll_comm_device(const zcoll_comm_t *comm);
/* Where this process's rank came from: "ZCOLL_RANK" (the variables or the config),
 * "PMIx" (a PMIx server: srun --mpi=pmix, mpirun, PRRTE; the rendezvous then needs no
 * ZCOLL_* variable), "Open MPI", "PMI" or "Slurm" (their variables), or "none" (a job
 * of one). */
ZCOLL_API const char *zcoll_comm_launcher(const zcoll_comm_t *comm);

/* Counters of a communicator, for tools and operators (zcoll_perf prints them). Fields
 * are only ever added at the end: pass sizeof(zcoll_comm_stats_t) as the caller was
 * compiled with, and fields the library does not know stay 0. The rcache_* counters are
 * the registration cache's (over verbs; 0 elsewhere, or with ZCOLL_RCACHE_MAX_BYTES=0). */
typedef struct zcoll_comm_stats {
  uint64_t collectives;          /* collectives issued on comm (blocking or not) */
  uint64_t rcache_hits;          /* sends from a user buffer found registered */
  uint64_t rcache_misses;        /* ... not found: registered then (or staged) */
  uint64_t rcache_evictions;     /* registrations dropped for room */
  uint64_t rcache_invalidations; /* registrations dropped because memory was unmapped */
  uint64_t rcache_reg_ns;        /* time spent registering user buffers */
  uint64_t rcache_bytes;         /* bytes registered now */
  /* Pieces of results received from peers: delivered straight into the result buffer
   * (shared memory, or a persistent request's buffer over RDMA), or copied into it from
   * the communicator's receive slots. */
  uint64_t result_pieces_placed;
  uint64_t result_pieces_copied;
  /* Payload bytes this rank put to peers on its own host, and to peers on other hosts
   * (what crosses the network; headers and credits aside). */
  uint64_t bytes_sent_same_host;
  uint64_t bytes_sent_other_hosts;
  /* Payload bytes this rank put over each rail of its RDMA transport, in the order
   * zcoll_comm_device() names them: verbs stripes its puts over every port ZCOLL_IB_HCA
   * lists; one port is rail 0 alone; all 0 without verbs. */
  uint64_t rail_bytes[4];
  /* Allreduces that read every rank's vector where it lies instead of moving it: every
   * rank on one host, every vector in zcoll_mem_alloc memory, 1 MiB and up. */
  uint64_t mapped_collectives;
  /* Point-to-point payload bytes received: written by the sender straight into the receive
   * buffer (a rendezvous into zcoll_mem_register or zcoll_mem_alloc memory, over RDMA),
   * or copied into it from the communicator's slots. */
  uint64_t message_bytes_placed;
  uint64_t message_bytes_copied;
} zcoll_comm_stats_t;
ZCOLL_API zcoll_status_t zcoll_comm_stats(zcoll_comm_t *comm, zcoll_comm_stats_t *stats,
                                          size_t size);

/* ---- allreduce --------------------------------------------------------------------
 * Semantics follow MPI_Allreduce: every rank passes the same count, dtype and op;
 * sendbuf may be ZCOLL_IN_PLACE; buffers may have any alignment; count may be 0.
 * Every collective carries its number on the communicator and a 64-bit fingerprint of
 * what it is (count, dtype, op, algorithm and its parameters), checked by every receiver
 * before it reduces or delivers any data from that peer. Ranks that disagree on a call,
 * or are out of step (one skipped a call), get ZCOLL_ERR_MISMATCH where they notice and
 * an error (ZCOLL_ERR_MISMATCH or ZCOLL_ERR_PEER_FAILED) where the news reaches them; a
 * rank whose own exchanges all agreed may complete that call (its data is right), but
 * fails from its next call on -- a mismatch never yields silently wrong data. An
 * argument error (ZCOLL_ERR_INVALID_ARG, e.g. recvbuf NULL) counts as this rank's call of
 * that collective and breaks the communicator: the others get ZCOLL_ERR_MISMATCH naming
 * this rank and the reason, rather than pairing their call with this rank's next one. */
ZCOLL_API zcoll_status_t zcoll_allreduce(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                         size_t count, zcoll_dtype_t dtype, zcoll_op_t op);

/* The algorithm zcoll_allreduce would use for these arguments ("ring", ...). Local. */
ZCOLL_API zcoll_status_t zcoll_allreduce_algorithm(zcoll_comm_t *comm, size_t count,
                                                   zcoll_dtype_t dtype, zcoll_op_t op,
                                                   const char **name);

/* The algorithms of this build (valid values of ZCOLL_ALGO besides "auto"): fills up to
 * max names, returns how many there are. */
ZCOLL_API int zcoll_algorithm_names(const char **names, int max);

/* The transports zcoll knows (valid values of ZCOLL_TRANSPORT besides "auto"), in the
 * order auto prefers them, with whether this build has each: fills up to max names (and
 * built[i], if built is not NULL), returns how many there are. */
ZCOLL_API int zcoll_transport_names(const char **names, int *built, int max);

/* Non-blocking and persistent allreduce.
 *
 * zcoll_iallreduce issues the collective and returns at once with *req in flight;
 * zcoll_allreduce_init checks the arguments and plans the collective (local: nothing is
 * issued, and an argument error there breaks nothing) and returns an inactive request
 * that each zcoll_start issues anew, with whatever the buffers hold then.
 * - Order: collectives start in the order a rank issues them -- blocking, non-blocking
 *   and persistent starts alike -- and every rank must issue them in the same order.
 *   Requests may be completed in any order. As in MPI, every rank must make the same form
 *   of a given collective: a blocking allreduce does not match a peer's non-blocking or
 *   persistent one -- on one host the blocking call takes paths requests do not (the
 *   mailboxes, memory read where it lies), and the ranks get ZCOLL_ERR_MISMATCH.
 * - Progress: ZCOLL_PROGRESS=caller (the default): a request moves while this thread is
 *   inside a call on the communicator (zcoll_test, zcoll_wait, any collective); call
 *   zcoll_test now and then during long computations. ZCOLL_PROGRESS=thread: a thread
 *   per communicator moves it meanwhile (and sleeps when nothing is in flight); the
 *   application's calls and that thread take turns on a lock, so a call may wait for
 *   one pass of it -- except zcoll_test, which never waits: while the thread is inside
 *   a pass it answers ZCOLL_IN_PROGRESS for a request that has not ended.
 * - zcoll_test returns ZCOLL_OK when the request has completed, ZCOLL_IN_PROGRESS, or its
 *   error; zcoll_wait blocks until it ends and returns the same. Both may be called again
 *   on an ended request (same answer) and on an inactive one (ZCOLL_OK).
 * - Buffers belong to the request while it is in flight: do not read the result or write
 *   the input until test or wait says it ended.
 * - Freeing: zcoll_request_free frees an ended or inactive request (non-blocking ones
 *   too: completion does not free them); on one in flight it returns
 *   ZCOLL_ERR_INVALID_ARG and changes nothing. zcoll_comm_destroy refuses while requests
 *   are in flight, and frees requests left behind (their handles are then invalid), as
 *   does zcoll_comm_abort.
 * - Errors: an argument error of zcoll_iallreduce breaks the communicator as in
 *   zcoll_allreduce. When the communicator breaks (a peer fails, a mismatch, a revoke),
 *   every request in flight ends with the error, and the transport has stopped touching
 *   their buffers before test or wait reports it.
 * - Persistent requests over verbs register the result buffer for the peers' RDMA writes
 *   at init, until zcoll_request_free (or destroy, or a failure): pieces the result only
 *   copies then arrive in place. The buffers must stay valid (not freed or unmapped)
 *   while the request exists -- as MPI asks of persistent requests. Peers write into it
 *   only during a start, and only ranges this rank granted for that start, once its own
 *   use of them is over; the registration (and its pinning) stays between starts.
 * - Threads: requests obey the communicator's one-thread-at-a-time rule. */
ZCOLL_API zcoll_status_t zcoll_iallreduce(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                          size_t count, zcoll_dtype_t dtype, zcoll_op_t op,
                                          zcoll_request_t **req);
ZCOLL_API zcoll_status_t zcoll_allreduce_init(zcoll_comm_t *comm, const void *sendbuf,
                                              void *recvbuf, size_t count, zcoll_dtype_t dtype,
                                              zcoll_op_t op, zcoll_request_t **req);
ZCOLL_API zcoll_status_t zcoll_start(zcoll_request_t *req);
/* ZCOLL_OK when done, ZCOLL_IN_PROGRESS, or an error. */
ZCOLL_API zcoll_status_t zcoll_test(zcoll_request_t *req);
ZCOLL_API zcoll_status_t zcoll_wait(zcoll_request_t *req);
/* zcoll_wait that gives up after timeout_ms milliseconds without progress and returns
 * ZCOLL_IN_PROGRESS: the request goes on, call again (ZCOLL_TIMEOUT counts the whole
 * wait across the calls). For callers that must look at something else meanwhile, such
 * as a language runtime's pending signals (Python's binding waits in 50 ms slices). */
ZCOLL_API zcoll_status_t zcoll_wait_timeout(zcoll_request_t *req, int timeout_ms);
ZCOLL_API zcoll_status_t zcoll_request_free(zcoll_request_t *req);

/* ---- broadcast ----------------------------------------------------------------------
 * Semantics follow MPI_Bcast: root's count elements of buf reach every rank's buf; every
 * rank passes the same count, dtype and root (checked like an allreduce's arguments:
 * ZCOLL_ERR_MISMATCH, and an argument error breaks the communicator). Small vectors go
 * down the k-nomial tree of the "tree" allreduce entered at the root, large ones along a
 * pipelined chain around the ring (ZCOLL_BCAST_ALGO=auto|tree|chain); both use the
 * channels the allreduce has, so a broadcast adds no connection. The non-blocking and
 * persistent forms obey every rule of zcoll_iallreduce and zcoll_allreduce_init (order,
 * progress, buffers, freeing, errors; a persistent one's buffer is registered over verbs
 * and gets the pieces in place). */
ZCOLL_API zcoll_status_t zcoll_broadcast(zcoll_comm_t *comm, void *buf, size_t count,
                                         zcoll_dtype_t dtype, int root);
/* The algorithm zcoll_broadcast would use for these arguments ("tree", "chain"). Local. */
ZCOLL_API zcoll_status_t zcoll_broadcast_algorithm(zcoll_comm_t *comm, size_t count,
                                                   zcoll_dtype_t dtype, int root,
                                                   const char **name);
ZCOLL_API zcoll_status_t zcoll_ibroadcast(zcoll_comm_t *comm, void *buf, size_t count,
                                          zcoll_dtype_t dtype, int root, zcoll_request_t **req);
ZCOLL_API zcoll_status_t zcoll_broadcast_init(zcoll_comm_t *comm, void *buf, size_t count,
                                              zcoll_dtype_t dtype, int root, zcoll_request_t **req);

/* ---- barrier -------------------------------------------------------------------------
 * MPI_Barrier: no rank returns from zcoll_barrier before every rank of comm has called
 * it. ceil(log2 p) rounds of one small message each, over the channels the allreduce has
 * (no connection of its own); each message is checked like an allreduce's piece, so a
 * rank in a barrier while another is in any other collective gets ZCOLL_ERR_MISMATCH.
 * zcoll_ibarrier is its non-blocking form (every rule of zcoll_iallreduce: order,
 * progress, freeing, errors): its request completes once every rank has entered. */
ZCOLL_API zcoll_status_t zcoll_barrier(zcoll_comm_t *comm);
ZCOLL_API zcoll_status_t zcoll_ibarrier(zcoll_comm_t *comm, zcoll_request_t **req);

/* ---- allgather, reduce-scatter, reduce -------------------------------------------------
 * MPI's semantics (MPI_Allgather, MPI_Reduce_scatter_block, MPI_Reduce), over the
 * allreduce's channels, executor and checks: every rank passes the same count, dtype, op
 * (and root), or gets ZCOLL_ERR_MISMATCH, as between any two kinds of collective; an
 * argument error breaks the communicator; counts are per rank.
 * - zcoll_allgather: recvbuf gets size * sendcount elements, rank r's sendbuf at element
 *   r * sendcount. ZCOLL_IN_PLACE as sendbuf: rank r's block is already there.
 * - zcoll_reduce_scatter: sendbuf holds size * recvcount elements; rank r gets block r of
 *   their reduction (op, every rank's block r) in recvbuf's recvcount elements.
 *   ZCOLL_IN_PLACE: the input is recvbuf's size * recvcount elements, and block r goes to
 *   its start. Every op, created ones included; a non-commutative one combines in rank
 *   order (the chain), ZCOLL_AVG divides by size.
 * - zcoll_reduce: the reduction of every rank's count elements into the root's recvbuf;
 *   elsewhere recvbuf is not used (NULL is fine). ZCOLL_IN_PLACE is the root's only: its
 *   input is then in recvbuf. Where the allreduce would be latency-bound (small vectors)
 *   it runs the k-nomial tree toward the root: a rank folds its subtrees in, sends the sum
 *   up and returns (a leaf that only sends may return before a mismatch is seen at the
 *   root; the failure then reaches it at its next call). Where the allreduce is the ring,
 *   it runs the ring's reduce-scatter and a gather along the ring to the root (half the
 *   allreduce's bytes); elsewhere the allreduce's schedule (halving-doubling, rank order for
 *   non-commutative ops) with the non-roots' result in scratch.
 * Algorithms: recursive doubling (allgather) or halving (reduce-scatter) for a power-of-two
 * size up to 256 KiB of result (input), the ring otherwise. The i-forms obey every rule of
 * zcoll_iallreduce (order, progress, buffers, freeing, errors). */
ZCOLL_API zcoll_status_t zcoll_allgather(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                         size_t sendcount, zcoll_dtype_t dtype);
ZCOLL_API zcoll_status_t zcoll_iallgather(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                          size_t sendcount, zcoll_dtype_t dtype,
                                          zcoll_request_t **req);
ZCOLL_API zcoll_status_t zcoll_reduce_scatter(zcoll_comm_t *comm, const void *sendbuf,
                                              void *recvbuf, size_t recvcount, zcoll_dtype_t dtype,
                                              zcoll_op_t op);
ZCOLL_API zcoll_status_t zcoll_ireduce_scatter(zcoll_comm_t *comm, const void *sendbuf,
                                               void *recvbuf, size_t recvcount, zcoll_dtype_t dtype,
                                               zcoll_op_t op, zcoll_request_t **req);
ZCOLL_API zcoll_status_t zcoll_reduce(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                      size_t count, zcoll_dtype_t dtype, zcoll_op_t op, int root);
/* The algorithm comm would run for a collective of these arguments (count per rank, as in
 * the call; op and root where the collective has them): coll is "allreduce", "broadcast",
 * "reduce", "allgather", "reduce_scatter", "barrier", or one of the rest of MPI's set
 * ("alltoall", "gather", "scatter": count is a block, out of place; "alltoallv",
 * "allgatherv", "gatherv", "scatterv"). Local. */
ZCOLL_API zcoll_status_t zcoll_collective_algorithm(zcoll_comm_t *comm, const char *coll,
                                                    size_t count, zcoll_dtype_t dtype,
                                                    zcoll_op_t op, int root, const char **name);
ZCOLL_API zcoll_status_t zcoll_ireduce(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                       size_t count, zcoll_dtype_t dtype, zcoll_op_t op, int root,
                                       zcoll_request_t **req);

/* ---- the rest of MPI's set: alltoall(v), allgatherv, gather(v), scatter(v) -----------------
 * MPI's semantics (MPI_Alltoall, MPI_Alltoallv, MPI_Allgatherv, MPI_Gather(v), MPI_Scatter(v)):
 * counts and displacements in elements of dtype, blocks in rank order; over the allreduce's
 * executor and checks (a rank in one of these while another is in any other collective, or
 * the same one with another count, dtype or root, gets ZCOLL_ERR_MISMATCH). Counts two ranks
 * disagree on -- what rank i sends rank j (sendcounts[j] on i, or i's sendcount) against
 * what j expects from i (recvcounts[i] on j) -- are ZCOLL_ERR_MISMATCH on both of them, never
 * a truncation: every pair that exchanges anything checks both directions' counts, zero
 * counts included. Displacements may leave gaps: nothing is written into them. NULL is fine
 * where a buffer has no element to hold; the counts and displacement arrays a rank uses
 * must be there. An argument error (a NULL buffer with elements to move, a root outside
 * comm, overlapping send and receive regions, a displacement plus count past the address
 * space) is ZCOLL_ERR_INVALID_ARG naming it, and breaks the communicator as for the others.
 * - zcoll_alltoall: block j (count elements at j * count) of sendbuf goes to rank j, whose
 *   recvbuf gets it at i * count. ZCOLL_IN_PLACE as sendbuf: recvbuf is both.
 * - zcoll_alltoallv: sendcounts[j] elements at sdispls[j] go to rank j; recvcounts[i]
 *   elements from rank i land at rdispls[i]. ZCOLL_IN_PLACE as sendbuf: recvbuf, with
 *   recvcounts and rdispls, is both (sendcounts and sdispls are not read).
 * - zcoll_allgatherv: every rank's sendcount elements to every rank, rank i's at displs[i]
 *   (recvcounts[i] elements). ZCOLL_IN_PLACE as sendbuf: rank r's block is already at
 *   displs[r] (sendcount is not read).
 * - zcoll_gather / zcoll_gatherv: every rank's count (sendcount) elements into the root's
 *   recvbuf, rank i's at i * count (displs[i], recvcounts[i] elements); recvbuf, recvcounts
 *   and displs are read at the root only. ZCOLL_IN_PLACE is the root's sendbuf only: its
 *   block is already in place.
 * - zcoll_scatter / zcoll_scatterv: the root's sendbuf block i (count elements at i * count;
 *   sendcounts[i] at displs[i]) into rank i's recvbuf; sendbuf, sendcounts and displs are
 *   read at the root only. ZCOLL_IN_PLACE is the root's recvbuf only: its block stays where
 *   it is in sendbuf.
 * Algorithms (zcoll_collective_explain says which, and why): alltoall by pairwise exchange
 * (step k: to rank + k, from rank - k), or Bruck's log2 p steps for small blocks at larger
 * sizes; alltoallv pairwise; allgatherv a ring with uneven blocks; gather and scatter
 * straight to or from the root (pipelined), or a binomial tree for small blocks;
 * gatherv and scatterv straight. The i-forms obey every rule of zcoll_iallreduce (order,
 * progress, buffers, freeing, errors); the counts and displacement arrays are read during
 * the call and may be reused once it returns. */
ZCOLL_API zcoll_status_t zcoll_alltoall(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                        size_t count, zcoll_dtype_t dtype);
ZCOLL_API zcoll_status_t zcoll_ialltoall(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                         size_t count, zcoll_dtype_t dtype, zcoll_request_t **req);
ZCOLL_API zcoll_status_t zcoll_alltoallv(zcoll_comm_t *comm, const void *sendbuf,
                                         const size_t *sendcounts, const size_t *sdispls,
                                         void *recvbuf, const size_t *recvcounts,
                                         const size_t *rdispls, zcoll_dtype_t dtype);
ZCOLL_API zcoll_status_t zcoll_ialltoallv(zcoll_comm_t *comm, const void *sendbuf,
                                          const size_t *sendcounts, const size_t *sdispls,
                                          void *recvbuf, const size_t *recvcounts,
                                          const size_t *rdispls, zcoll_dtype_t dtype,
                                          zcoll_request_t **req);
ZCOLL_API zcoll_status_t zcoll_allgatherv(zcoll_comm_t *comm, const void *sendbuf, size_t sendcount,
                                          void *recvbuf, const size_t *recvcounts,
                                          const size_t *displs, zcoll_dtype_t dtype);
ZCOLL_API zcoll_status_t zcoll_iallgatherv(zcoll_comm_t *comm, const void *sendbuf,
                                           size_t sendcount, void *recvbuf,
                                           const size_t *recvcounts, const size_t *displs,
                                           zcoll_dtype_t dtype, zcoll_request_t **req);
ZCOLL_API zcoll_status_t zcoll_gather(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                      size_t count, zcoll_dtype_t dtype, int root);
ZCOLL_API zcoll_status_t zcoll_igather(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                       size_t count, zcoll_dtype_t dtype, int root,
                                       zcoll_request_t **req);
ZCOLL_API zcoll_status_t zcoll_gatherv(zcoll_comm_t *comm, const void *sendbuf, size_t sendcount,
                                       void *recvbuf, const size_t *recvcounts,
                                       const size_t *displs, zcoll_dtype_t dtype, int root);
ZCOLL_API zcoll_status_t zcoll_igatherv(zcoll_comm_t *comm, const void *sendbuf, size_t sendcount,
                                        void *recvbuf, const size_t *recvcounts,
                                        const size_t *displs, zcoll_dtype_t dtype, int root,
                                        zcoll_request_t **req);
ZCOLL_API zcoll_status_t zcoll_scatter(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                       size_t count, zcoll_dtype_t dtype, int root);
ZCOLL_API zcoll_status_t zcoll_iscatter(zcoll_comm_t *comm, const void *sendbuf, void *recvbuf,
                                        size_t count, zcoll_dtype_t dtype, int root,
                                        zcoll_request_t **req);
ZCOLL_API zcoll_status_t zcoll_scatterv(zcoll_comm_t *comm, const void *sendbuf,
                                        const size_t *sendcounts, const size_t *displs,
                                        void *recvbuf, size_t recvcount, zcoll_dtype_t dtype,
                                        int root);
ZCOLL_API zcoll_status_t zcoll_iscatterv(zcoll_comm_t *comm, const void *sendbuf,
                                         const size_t *sendcounts, const size_t *displs,
                                         void *recvbuf, size_t recvcount, zcoll_dtype_t dtype,
                                         int root, zcoll_request_t **req);

/* ---- point to point -------------------------------------------------------------------
 * Semantics follow MPI_Send/MPI_Recv on one communicator: a message is matched by (peer,
 * tag) in the order posted -- messages from one sender with one tag arrive in the order
 * sent, while a receive for another tag may take its message first. A send to, or a
 * receive from, this rank itself works. count elements of dtype; the receive's count and
 * dtype must be the message's: a longer, shorter or other-typed message is
 * ZCOLL_ERR_MISMATCH on both sides (never a truncation), and neither buffer is written
 * past. A peer outside the communicator, a negative tag, an unknown dtype or a NULL buffer
 * with a count: ZCOLL_ERR_INVALID_ARG (that call alone; the communicator stays usable).
 * - Completion: a receive when its data is in buf; a send when the receiver has matched
 *   it, so zcoll_send waits for the receive (MPI's synchronous mode, which its standard
 *   mode may be): post with zcoll_isend/zcoll_irecv where both sides send first. A
 *   blocking send to oneself needs the receive posted first (zcoll_irecv), else it is
 *   ZCOLL_ERR_INVALID_ARG instead of a wait that could never end.
 * - Requests: zcoll_test, zcoll_wait, zcoll_wait_timeout, zcoll_request_free, as for the
 *   collectives' (not zcoll_start: they are not persistent); progress as there.
 * - Small messages go eagerly into the receiver's slots; one that comes before its
 *   receive is copied aside (at most 1 MiB a communicator; past that the sender waits for
 *   the receiver), larger ones by rendezvous once the receive is posted.
 * - Reach: the peers the allreduce algorithms connect (every rank up to 4 ranks, and every
 *   rank on one host over shm); a message to another is ZCOLL_ERR_UNSUPPORTED for now.
 * - Failure: a peer lost, zcoll_comm_abort, a revoke, or ZCOLL_TIMEOUT with nothing moving
 *   ends every message in flight with the error (ZCOLL_ERR_PEER_FAILED, ZCOLL_ERR_TIMEOUT)
 *   and breaks the communicator, as for a collective. */
ZCOLL_API zcoll_status_t zcoll_send(zcoll_comm_t *comm, const void *buf, size_t count,
                                    zcoll_dtype_t dtype, int peer, int tag);
ZCOLL_API zcoll_status_t zcoll_recv(zcoll_comm_t *comm, void *buf, size_t count,
                                    zcoll_dtype_t dtype, int peer, int tag);
ZCOLL_API zcoll_status_t zcoll_isend(zcoll_comm_t *comm, const void *buf, size_t count,
                                     zcoll_dtype_t dtype, int peer, int tag, zcoll_request_t **req);
ZCOLL_API zcoll_status_t zcoll_irecv(zcoll_comm_t *comm, void *buf, size_t count,
                                     zcoll_dtype_t dtype, int peer, int tag, zcoll_request_t **req);

/* ---- groups ------------------------------------------------------------------------
 * Groups (NCCL's shape): between start and end, collectives and point-to-point calls on comm
 * are queued and return ZCOLL_OK at once; end issues them together (small allreduces fused,
 * sends and receives posted at once, so any order of them in the group cannot deadlock) and
 * returns when all are done, with the first error.
 * - Queued: every blocking call on comm (allreduce, broadcast, reduce, allgather,
 *   reduce_scatter, barrier, alltoall(v), allgatherv, gather(v), scatter(v), send, recv)
 *   and their i-forms. A call records its arguments, not its data: its buffers are read and
 *   written only during zcoll_group_end, as in NCCL, so they must stay valid (and the data
 *   to send in place) until end returns, and a call must not read another call's result in
 *   the same group. A v-form's count and displacement arrays are copied at the call.
 * - Checked at the call: what needs no peer (NULL buffers, unknown dtype or op, a root,
 *   peer or tag out of range) fails the call at once, with what that error does outside a
 *   group (a collective's argument error poisons the communicator).
 * - An i-form inside a group hands back a request that ends once zcoll_group_end has
 *   issued and ended its call; zcoll_wait or zcoll_test on it before the end is
 *   ZCOLL_ERR_INVALID_ARG (it would never end), and so is freeing it; after the end it
 *   reports its own call's outcome, and zcoll_request_free frees it.
 * - End issues the calls in the order they were made, each as its i-form, and then waits
 *   for all of them; consecutive allreduces of a built-in op with the same dtype and op,
 *   each up to 4 KiB and together up to 32 KiB, go as one allreduce of a packed copy,
 *   unpacked when it ends (in place or not alike). What is fused follows from the calls
 *   alone, so every rank that made the same calls does the same. A group whose calls come
 *   to one runs it as the blocking call.
 * - Errors: end returns the first failed call's error (zcoll_comm_last_error says it);
 *   every call has then ended, and the communicator is as after that error outside a group
 *   (broken, revoked). An empty group is OK.
 * - Nesting: start inside a group only deepens it; the matching end returns ZCOLL_OK, and
 *   the outermost issues everything. End with no group open is ZCOLL_ERR_INVALID_ARG.
 *   zcoll_comm_destroy inside a group drops what is queued (nothing is issued) and frees the
 *   group's requests.
 * - Threads: a group belongs to the communicator, used by one thread at a time like every
 *   other call: start, the calls and end come from that thread. */
ZCOLL_API zcoll_status_t zcoll_group_start(zcoll_comm_t *comm);
ZCOLL_API zcoll_status_t zcoll_group_end(zcoll_comm_t *comm);

/* ---- the task-based vector interface ------------------------------------------------
 * A key names a vector that tasks on every rank contribute to: zcoll_vec_init(comm, key,
 * local_tasks, ...) on each rank that takes part (every rank of comm; ranks may host
 * different numbers of tasks, at least 1 each; the global count is their sum), then each
 * task calls zcoll_vec_commit(vec, its vector) -- from any thread, without blocking: the
 * vector is folded (op) into the key's local buffer at once, so the caller may reuse it
 * when the call returns -- and zcoll_vec_get(vec, out) blocks until the reduction over
 * every task of every rank is in out. The rank's last commit of a round makes the key
 * ready; the global allreduce starts when every rank's is: rank 0 orders the keys'
 * allreduces as they become ready everywhere (small messages on the rendezvous
 * connections), so keys complete in any order, independently of each other. The
 * reduction moves while a thread is in zcoll_vec_commit or zcoll_vec_get, or on the
 * progress thread (ZCOLL_PROGRESS=thread).
 * - op: any commutative op (tasks commit in any order); ZCOLL_AVG divides by the global
 *   number of tasks; a premul sum scales this rank's sum of its tasks.
 * - Rounds: a key is reused round after round. The n-th zcoll_vec_get on a rank returns
 *   round n's result (waiting for it): one thread per rank takes each round's result.
 *   Once a round is done the next round's commits come in, even before its result is
 *   taken; a commit while all of the rank's tasks of the round are in and the round is
 *   not done, or two rounds ahead of zcoll_vec_get, is an error (ZCOLL_ERR_INVALID_ARG:
 *   more commits than tasks). A key holds two buffers of count elements.
 * - Keys: up to 63 bytes; several live at once; every rank must use the same count,
 *   dtype and op for a key (else zcoll_vec_get returns ZCOLL_ERR_MISMATCH naming both).
 *   A key a rank never initializes, or tasks that never commit, make zcoll_vec_get
 *   return ZCOLL_ERR_TIMEOUT after ZCOLL_TIMEOUT seconds, saying what is missing (rank
 *   0's names the ranks).
 * - The keys' allreduces start at moments that differ from rank to rank: a communicator
 *   with keys in use carries no other collective (give the vectors a communicator of
 *   their own); a collective issued meanwhile fails with ZCOLL_ERR_MISMATCH, never
 *   with wrong data.
 * - zcoll_vec_free (local) refuses while the key's round is being reduced; the key's
 *   name may be used again once every rank has freed it. zcoll_comm_destroy frees the
 *   keys left behind. */
typedef struct zcoll_vec zcoll_vec_t;
ZCOLL_API zcoll_status_t zcoll_vec_init(zcoll_comm_t *comm, const char *key, int local_tasks,
                                        size_t count, zcoll_dtype_t dtype, zcoll_op_t op,
                                        zcoll_vec_t **vec);
ZCOLL_API zcoll_status_t zcoll_vec_commit(zcoll_vec_t *vec, const void *buf);
ZCOLL_API zcoll_status_t zcoll_vec_get(zcoll_vec_t *vec, void *out);
ZCOLL_API zcoll_status_t zcoll_vec_free(zcoll_vec_t *vec);

/* Explicit registration (local, not collective). Over verbs, pieces sent from inside a
 * registered region go straight from it, with no copy into staging; elsewhere it is
 * accepted and changes nothing. The region must stay registered and valid while
 * collectives use it; zcoll_comm_destroy releases registrations left behind. Over verbs
 * the region is also opened to the peers' RDMA writes: a result buffer inside it gets,
 * for blocking and non-blocking calls alike, what persistent requests get -- the pieces
 * it only copies arrive in place (zcoll_comm_stats: result_pieces_placed).
 * zcoll_mem_deregister refuses (ZCOLL_ERR_INVALID_ARG) while a collective in flight
 * delivers its result into the region. */
ZCOLL_API zcoll_status_t zcoll_mem_register(zcoll_comm_t *comm, void *addr, size_t len,
                                            zcoll_mr_t **mr);
ZCOLL_API zcoll_status_t zcoll_mem_deregister(zcoll_mr_t *mr);

/* Memory this host's ranks can map (local, not collective): len bytes (rounded up to
 * whole pages), zero-filled, page-aligned, in a memfd of the shared-memory transport's
 * where the communicator has it (elsewhere anonymous memory). Collectives take it like any
 * other memory. zcoll_mem_free returns it; it refuses (ZCOLL_ERR_INVALID_ARG) a pointer
 * zcoll_mem_alloc of this communicator did not return, and memory any byte of which a
 * collective in flight uses, on any communicator (the message names the collective). Memory still allocated when the communicator is destroyed stays mapped (ordinary
 * memory from then on, returned with the process): an array that outlives its
 * communicator is never left dangling. */
ZCOLL_API zcoll_status_t zcoll_mem_alloc(zcoll_comm_t *comm, size_t len, void **ptr);
ZCOLL_API zcoll_status_t zcoll_mem_free(zcoll_comm_t *comm, void *ptr);

/* ---- datatypes and ops ------------------------------------------------------------ */

/* User-defined and weighted ops. They live in the process (not in a communicator) and
 * are passed as the op of any allreduce, like the built-in ones. An op's value is
 * carried in each collective's fingerprint with its kind and commutativity: every rank
 * must pass the "same" op, i.e. create its ops in the same order (the n-th op created
 * and still alive has the same value on every rank); ranks that pass different ops get
 * ZCOLL_ERR_MISMATCH. At most ZCOLL_OP_MAX_USER ops exist at once.
 *
 * zcoll_op_create: fn combines two vectors, inout[i] = in[i] (op) inout[i], for count
 * elements of the collective's dtype. It must be associative; it may be called on any
 * piece of the vector, never splitting an element of elem_bytes bytes (0: the dtype's
 * size; else a power of two up to 4096 -- e.g. 8 for a {float value; int32 index}
 * pair carried as ZCOLL_UINT8, whose count must then be a multiple of 8). It runs on
 * the thread that moves the collective (the caller's, or the progress thread's with
 * ZCOLL_PROGRESS=thread), must not call zcoll, and must not fail.
 * - commutative != 0: every algorithm may run it, combining in any order.
 * - commutative == 0: the result is in[0] (op) in[1] (op) ... (op) in[p-1] in rank
 *   order, as MPI defines it: such an op always runs on the "chain" algorithm (whatever
 *   ZCOLL_ALGO says), a pipelined chain 0 -> 1 -> ... -> p-1 and back, in which rank r
 *   calls fn with in = the combination of ranks 0..r-1 and inout = its own input.
 *
 * zcoll_op_create_premul_sum: a sum in which each rank's input is first multiplied by
 * that rank's own scalar (NCCL's ncclRedOpCreatePreMulSum): with scalar = w_r / sum(w)
 * it is a weighted average in one call. The multiplication is fused into the first use
 * of each input element (the reduction, or the copy into a send buffer): no extra pass.
 * Floating-point dtypes only (scaled in float32 for 16-bit floats, as they are summed);
 * the scalar may differ from rank to rank.
 *
 * zcoll_op_free refuses (ZCOLL_ERR_INVALID_ARG) while a request made with the op
 * exists, and for built-in or unknown ops. */
#define ZCOLL_OP_MAX_USER 128
typedef void (*zcoll_user_fn_t)(const void *in, void *inout, size_t count, zcoll_dtype_t dtype,
                                void *user);
ZCOLL_API zcoll_status_t zcoll_op_create(zcoll_user_fn_t fn, void *user, int commutative,
                                         size_t elem_bytes, zcoll_op_t *op);
ZCOLL_API zcoll_status_t zcoll_op_create_premul_sum(double scalar, zcoll_op_t *op);
ZCOLL_API zcoll_status_t zcoll_op_free(zcoll_op_t op);
/* Called by an op's function (only there, on the thread that runs it) that cannot
 * combine what it was given: nothing it wrote leaves this rank, the collective fails
 * (ZCOLL_ERR_INVALID_ARG here, "rank R: why (the function of op N failed)"; the peers
 * are told, as after any error) and the communicator is broken. An allreduce with a
 * function -- blocking, a request, a persistent request's every start, a vector's round --
 * ends with a one-byte agreement among the ranks (it takes the next collective number),
 * so that no rank completes it OK once a function failed anywhere: the peers get
 * ZCOLL_ERR_PEER_FAILED. In zcoll_vec_commit's local fold the commit fails and so does
 * the key. */
ZCOLL_API void zcoll_op_fail(const char *why);

/* Size in bytes of one element; 0 for an unknown dtype. */
ZCOLL_API size_t zcoll_dtype_size(zcoll_dtype_t dtype);
/* "float32", ...; NULL for unknown values. */
ZCOLL_API const char *zcoll_dtype_name(zcoll_dtype_t dtype);
/* "sum", ...; "user" and "premul_sum" for created ops; NULL for unknown values. */
ZCOLL_API const char *zcoll_op_name(zcoll_op_t op);

#ifdef __cplusplus
}
#endif

#include "zcoll_info.h"    /* diagnostics: what zcoll_info shows */
#include "zcoll_partial.h" /* partial (quorum) allreduce */

#endif /* ZCOLL_H */
