/*
 * gloo_allreduce_perf: Gloo's allreduce, measured like zcoll_perf and mpi_allreduce_perf
 * (the same options, nccl-tests table, timing statistic and element check), so that
 * perf/compare can put the three side by side.
 *
 *   mpirun -np 4 -x GLOO_PERF_STORE=/tmp/store perf/build/gloo_allreduce_perf -A hd -e 64M
 *
 * -A ring  gloo::AllreduceRingChunked (default)    -A hd  gloo::AllreduceHalvingDoubling
 *          (or --algo, --algorithm, as zcoll_perf's)
 * -S       synchronous pairs (default: Gloo's default, asynchronous: a device thread per
 *          process does the socket I/O and wakes the caller)
 * Gloo has no non-blocking allreduce: -z is 1 here (-z 0 and --overlap are refused).
 *
 * Ranks: OMPI_COMM_WORLD_RANK/SIZE (mpirun only starts the processes: no MPI is used),
 * else RANK/SIZE, else ZCOLL_RANK/ZCOLL_SIZE. Rendezvous: a gloo FileStore in the
 * directory GLOO_PERF_STORE (it must be fresh for every job: the compare script makes one
 * per run; default /tmp/gloo_allreduce_perf.<mpirun job id or parent pid>). Transport: Gloo's
 * TCP device on GLOO_PERF_HOST (default 127.0.0.1, loopback). GLOO_PERF_TIMEOUT: seconds
 * before a silent peer is an error (default 120).
 *
 * Datatypes: Gloo's algorithms are templates, reduced with gloo::sum/product/min/max over
 * the element type: int8, uint8, int32, uint32, int64, uint64, half (gloo::float16, each
 * addition rounded to half), float, double; no bfloat16. Ops: sum, prod, min, max; avg is
 * sum then a division (see gloo_perf_driver.c, which holds the benchmark loop in C so that
 * it can share the harness, tools/harness/, with the other two programs).
 *
 * Build: cmake -S perf -B perf/build && cmake --build perf/build --target gloo_allreduce_perf
 */
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <chrono>
#include <cstdio>
#include <map>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/config.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/buffer.h>
#include <gloo/transport/pair.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

#include "gloo_perf_driver.h"

#define PROG "gloo_allreduce_perf"

namespace {

/* perf_table.h's enum values (that header is C only; gloo_perf_driver.c checks them) */
enum { INT8, UINT8, INT32, UINT32, INT64, UINT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64 };
enum { SUM, PROD, MIN, MAX, AVG };

enum class Algo { ring, hd };

/* Gloo's objects are built to live long: a tcp send that could not be written at once
 * stays queued in the pair, pointing at its transport::Buffer, and nothing waits for the
 * last notification an algorithm sends. Destroying an algorithm (or a barrier) right after
 * its run() can therefore free a Buffer the pair still has to write from (seen as
 * "Connection closed by peer" under load). So everything here is made once and kept, and
 * an algorithm is only dropped after a FlushBarrier: it waits until this rank's own
 * barrier messages are written, and a pair writes in order, so by then nothing of the
 * algorithm is left in any queue. */
class FlushBarrier {
public:
  explicit FlushBarrier(const std::shared_ptr<gloo::Context> &c) : rdata_(c->size) {
    int slot = c->nextSlot();
    for (int i = 0; i < c->size; i++) {
      if (i == c->rank) continue;
      auto &pair = c->getPair(i);
      send_.push_back(pair->createSendBuffer(slot, &sdata_, sizeof sdata_));
      recv_.push_back(pair->createRecvBuffer(slot, &rdata_[i], sizeof(int)));
    }
  }
  void run() {
    for (auto &b : send_) b->send();
    for (auto &b : recv_) b->waitRecv();
    for (auto &b : send_) b->waitSend();
  }

private:
  int sdata_ = 0;
  std::vector<int> rdata_;
  std::vector<std::unique_ptr<gloo::transport::Buffer>> send_, recv_;
};

/* A persistent allreduce of a few values (the times, the wrong counts). */
template <typename T> class Small {
public:
  Small(const std::shared_ptr<gloo::Context> &c, size_t n, const gloo::ReductionFunction<T> *fn)
      : v_(n), algo_(new gloo::AllreduceRing<T>(c, {v_.data()}, (int)n, fn)) {}
  void run(T *x) {
    std::memcpy(v_.data(), x, v_.size() * sizeof(T));
    algo_->run();
    std::memcpy(x, v_.data(), v_.size() * sizeof(T));
  }

private:
  std::vector<T> v_;
  std::unique_ptr<gloo::AllreduceRing<T>> algo_;
};

struct Ctx {
  Algo algo = Algo::ring;
  bool sync = false;   /* -S: Gloo's synchronous pair mode (the caller's thread reads the socket) */
  bool failed = false; /* a Gloo call threw: leave without tearing down */
  std::shared_ptr<gloo::rendezvous::Context> context;
  std::unique_ptr<FlushBarrier> barrier;
  std::map<size_t, std::unique_ptr<Small<double>>> max_double, sum_double;
  std::map<size_t, std::unique_ptr<Small<uint64_t>>> sum_u64;
  std::unique_ptr<gloo::Algorithm> prepared;
  std::string describe, host;
};

Ctx *g_ctx;

int fail(const char *what, const std::exception &e) {
  std::fprintf(stderr, PROG ": rank %d: %s: %s\n",
               g_ctx && g_ctx->context ? g_ctx->context->rank : -1, what, e.what());
  if (g_ctx) g_ctx->failed = true;
  return -1;
}

template <typename T> const gloo::ReductionFunction<T> *reduction(int op) {
  switch (op) {
  case PROD: return gloo::ReductionFunction<T>::product;
  case MIN: return gloo::ReductionFunction<T>::min;
  case MAX: return gloo::ReductionFunction<T>::max;
  default: return gloo::ReductionFunction<T>::sum;
  }
}

template <typename T>
std::unique_ptr<gloo::Algorithm> make(Ctx &c, void *buf, size_t count, int op) {
  std::vector<T *> ptrs{static_cast<T *>(buf)};
  if (c.algo == Algo::ring)
    return std::unique_ptr<gloo::Algorithm>(
        new gloo::AllreduceRingChunked<T>(c.context, ptrs, (int)count, reduction<T>(op)));
  return std::unique_ptr<gloo::Algorithm>(
      new gloo::AllreduceHalvingDoubling<T>(c.context, ptrs, (int)count, reduction<T>(op)));
}

int has_dtype(void *, int t) { return t != BFLOAT16; }
int has_op(void *, int op) { return op == SUM || op == PROD || op == MIN || op == MAX; }

const char *describe(void *ctx) { return static_cast<Ctx *>(ctx)->describe.c_str(); }

const char *algorithm(void *ctx) {
  return static_cast<Ctx *>(ctx)->algo == Algo::ring ? "ring_chunked" : "halving_doubling";
}

int env_int(const char *const names[], int n, int *out) {
  for (int i = 0; i < n; i++) {
    const char *v = std::getenv(names[i]);
    if (v && *v) {
      char *end;
      long x = std::strtol(v, &end, 10);
      if (*end != '\0' || x < 0 || x > 1 << 20) {
        std::fprintf(stderr, PROG ": %s='%s' is not a rank number\n", names[i], v);
        return -1;
      }
      *out = (int)x;
      return 1;
    }
  }
  return 0;
}

int connect(void *ctx, int *rank, int *nranks) {
  Ctx &c = *static_cast<Ctx *>(ctx);
  static const char *const rank_names[] = {"OMPI_COMM_WORLD_RANK", "RANK", "ZCOLL_RANK"};
  static const char *const size_names[] = {"OMPI_COMM_WORLD_SIZE", "SIZE", "ZCOLL_SIZE"};
  int r = 0, p = 1;
  int hr = env_int(rank_names, 3, &r), hp = env_int(size_names, 3, &p);
  if (hr < 0 || hp < 0) return -1;
  if (hr != hp || p < 1 || r >= p) {
    std::fprintf(stderr,
                 PROG ": rank %d of %d: set OMPI_COMM_WORLD_RANK/SIZE (mpirun) or RANK/SIZE\n", r,
                 p);
    return -1;
  }
  std::string store;
  if (const char *s = std::getenv("GLOO_PERF_STORE")) store = s;
  if (store.empty()) {
    const char *job = std::getenv("OMPI_MCA_ess_base_jobid");
    store = "/tmp/gloo_allreduce_perf." +
            (job ? std::string(job) : std::to_string((long)getppid()));
  }
  int timeout_s = 120;
  if (const char *s = std::getenv("GLOO_PERF_TIMEOUT"))
    timeout_s = std::atoi(s) > 0 ? std::atoi(s) : 120;
  const char *host = std::getenv("GLOO_PERF_HOST");
  c.host = host && *host ? host : "127.0.0.1";
  try {
    if (mkdir(store.c_str(), 0700) != 0 && errno != EEXIST) { /* FileStore needs it */
      std::fprintf(stderr, PROG ": cannot create the store directory %s: %s\n", store.c_str(),
                   std::strerror(errno));
      return -1;
    }
    gloo::transport::tcp::attr attr;
    attr.hostname = c.host;
    attr.ai_family = AF_INET;
    auto dev = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore fs(store);
    gloo::rendezvous::PrefixStore ps("gloo_allreduce_perf", fs);
    c.context = std::make_shared<gloo::rendezvous::Context>(r, p);
    c.context->setTimeout(std::chrono::seconds(timeout_s));
    c.context->connectFullMesh(ps, dev);
    if (c.sync)
      for (int i = 0; i < p; i++)
        if (i != r) c.context->getPair(i)->setSync(true, false);
    c.barrier.reset(new FlushBarrier(c.context));
    c.describe = "Gloo " + std::to_string(GLOO_VERSION_MAJOR) + "." +
                 std::to_string(GLOO_VERSION_MINOR) + "." + std::to_string(GLOO_VERSION_PATCH) +
                 ", " +
                 (c.algo == Algo::ring ? "AllreduceRingChunked" : "AllreduceHalvingDoubling") +
                 (c.sync ? ", sync pairs" : ", async pairs") + ", " + dev->str();
  } catch (const std::exception &e) {
    std::fprintf(stderr, PROG ": rank %d of %d: rendezvous in %s: %s\n", r, p, store.c_str(),
                 e.what());
    c.failed = true;
    return -1;
  }
  *rank = r;
  *nranks = p;
  return 0;
}

int prepare(void *ctx, void *buf, size_t count, int t, int op) {
  Ctx &c = *static_cast<Ctx *>(ctx);
  if (count > (size_t)INT32_MAX) {
    std::fprintf(stderr, PROG ": %zu elements is more than Gloo's int count\n", count);
    return -1;
  }
  try {
    switch (t) {
    case INT8: c.prepared = make<int8_t>(c, buf, count, op); break;
    case UINT8: c.prepared = make<uint8_t>(c, buf, count, op); break;
    case INT32: c.prepared = make<int32_t>(c, buf, count, op); break;
    case UINT32: c.prepared = make<uint32_t>(c, buf, count, op); break;
    case INT64: c.prepared = make<int64_t>(c, buf, count, op); break;
    case UINT64: c.prepared = make<uint64_t>(c, buf, count, op); break;
    case FLOAT16: c.prepared = make<gloo::float16>(c, buf, count, op); break;
    case FLOAT32: c.prepared = make<float>(c, buf, count, op); break;
    case FLOAT64: c.prepared = make<double>(c, buf, count, op); break;
    default: std::fprintf(stderr, PROG ": datatype %d: not in Gloo\n", t); return -1;
    }
  } catch (const std::exception &e) {
    return fail("building the allreduce", e);
  }
  return 0;
}

int run(void *ctx) {
  try {
    static_cast<Ctx *>(ctx)->prepared->run();
  } catch (const std::exception &e) {
    return fail("allreduce", e);
  }
  return 0;
}

int barrier(void *ctx) {
  try {
    static_cast<Ctx *>(ctx)->barrier->run();
  } catch (const std::exception &e) {
    return fail("barrier", e);
  }
  return 0;
}

int release(void *ctx) {
  if (barrier(ctx)) return -1; /* see FlushBarrier */
  try {
    static_cast<Ctx *>(ctx)->prepared.reset();
  } catch (const std::exception &e) { /* Algorithm's destructor is noexcept(false) */
    return fail("releasing the allreduce", e);
  }
  return 0;
}

template <typename T>
int small(Ctx &c, std::map<size_t, std::unique_ptr<Small<T>>> &m, T *v, size_t n,
          const gloo::ReductionFunction<T> *fn, const char *what) {
  try {
    auto &s = m[n]; /* every rank asks for the same n in the same order */
    if (!s) s.reset(new Small<T>(c.context, n, fn));
    s->run(v);
  } catch (const std::exception &e) {
    return fail(what, e);
  }
  return 0;
}

int max_double(void *ctx, double *v, size_t n) {
  Ctx &c = *static_cast<Ctx *>(ctx);
  return small(c, c.max_double, v, n, gloo::ReductionFunction<double>::max,
               "allreduce (max of the times)");
}

int sum_double(void *ctx, double *v, size_t n) {
  Ctx &c = *static_cast<Ctx *>(ctx);
  return small(c, c.sum_double, v, n, gloo::ReductionFunction<double>::sum,
               "allreduce (sum of the times)");
}

int sum_u64(void *ctx, uint64_t *v, size_t n) {
  Ctx &c = *static_cast<Ctx *>(ctx);
  return small(c, c.sum_u64, v, n, gloo::ReductionFunction<uint64_t>::sum,
               "allreduce (sum of the wrong counts)");
}

int set_algo(void *ctx, const char *a) {
  Ctx &c = *static_cast<Ctx *>(ctx);
  if (std::strcmp(a, "ring") == 0 || std::strcmp(a, "ring_chunked") == 0) {
    c.algo = Algo::ring;
  } else if (std::strcmp(a, "hd") == 0 || std::strcmp(a, "halving_doubling") == 0) {
    c.algo = Algo::hd;
  } else {
    std::fprintf(stderr, PROG ": -A: unknown algorithm '%s' (ring or hd) (try -h)\n", a);
    return -1;
  }
  return 0;
}

const char kAlgoDoc[] = "Gloo's algorithm: ring (AllreduceRingChunked, default) or hd\n"
                        "                          (AllreduceHalvingDoubling)";

const char kExtraUsage[] =
    "  -S                      Gloo's synchronous mode: the calling thread reads and writes\n"
    "                          the sockets itself (pair->setSync(true, false)), no hand-off\n"
    "                          to the device thread (default: asynchronous)\n"
    "Gloo reduces in place: the out-of-place columns time that run; the in-place columns are N/A.\n"
    "Environment: OMPI_COMM_WORLD_RANK/SIZE or RANK/SIZE; GLOO_PERF_STORE (a fresh directory\n"
    "for the FileStore rendezvous), GLOO_PERF_HOST (127.0.0.1), GLOO_PERF_TIMEOUT (120 s).\n";

} // namespace

int main(int argc, char **argv) {
  Ctx ctx;
  g_ctx = &ctx;
  /* take -S out of argv (perf_opts.h's parser knows the shared options only) */
  std::vector<char *> args{argv[0]};
  for (int i = 1; i < argc; i++) {
    if (std::strcmp(argv[i], "--") == 0) {
      for (; i < argc; i++) args.push_back(argv[i]);
      break;
    }
    if (std::strcmp(argv[i], "-S") == 0)
      ctx.sync = true;
    else
      args.push_back(argv[i]);
  }
  args.push_back(nullptr);

  gp_backend be{};
  be.prog = PROG;
  be.ctx = &ctx;
  be.has_dtype = has_dtype;
  be.has_op = has_op;
  be.connect = connect;
  be.describe = describe;
  be.algorithm = algorithm;
  be.prepare = prepare;
  be.run = run;
  be.release = release;
  be.barrier = barrier;
  be.max_double = max_double;
  be.sum_double = sum_double;
  be.sum_u64 = sum_u64;
  be.set_algo = set_algo;
  int rc = gp_main((int)args.size() - 1, args.data(), &be, kAlgoDoc, kExtraUsage);
  std::fflush(stdout);
  /* a peer may be stuck or gone: tearing the connections down could block or throw */
  if (ctx.failed || (ctx.context && barrier(&ctx) != 0)) _exit(rc ? rc : 1);
  try {
    ctx.prepared.reset();
    ctx.max_double.clear();
    ctx.sum_double.clear();
    ctx.sum_u64.clear();
    ctx.barrier.reset();
    ctx.context.reset();
  } catch (const std::exception &e) {
    fail("closing", e);
    _exit(rc ? rc : 1);
  }
  return rc;
}
