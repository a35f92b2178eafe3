// process_group.cpp -- the "zcoll" backend's collectives (process_group.hpp says the model).
#include <Python.h> // first, as Python asks: the destructor lets go of the GIL

#include "process_group.hpp"

#include "dtypes.hpp"

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace zcoll_torch {

namespace {

// What a zcoll call failed with, on the worker: zcoll's own message for this thread.
std::runtime_error failure(const char *call, zcoll_status_t st) {
  const char *why = zcoll_last_error();
  std::ostringstream m;
  m << "zcoll: " << call << " failed: " << zcoll_strerror(st);
  if (why && *why) m << ": " << why;
  return std::runtime_error(m.str());
}

// Tensors are used where they lie: a strided, dense, contiguous CPU tensor (Gloo 1.13 reduces
// a non-contiguous one wrong without a word).
void check_tensor(const at::Tensor &t, const char *call) {
  TORCH_CHECK(t.defined(), "zcoll: ", call, ": an undefined tensor");
  TORCH_CHECK(t.device().is_cpu(), "zcoll: ", call, ": a tensor on ", t.device(),
              "; the zcoll backend takes CPU tensors only");
  TORCH_CHECK(t.layout() == at::kStrided, "zcoll: ", call, ": a ", t.layout(),
              " tensor; the zcoll backend takes dense (strided) tensors only");
  TORCH_CHECK(t.is_contiguous() && t.is_non_overlapping_and_dense(), "zcoll: ", call,
              ": a non-contiguous or expanded tensor (sizes ", t.sizes(), ", strides ", t.strides(),
              "); pass .contiguous() -- zcoll reduces tensors where they lie");
}

const at::Tensor &single(const std::vector<at::Tensor> &ts, const char *call) {
  TORCH_CHECK(ts.size() == 1, "zcoll: ", call, ": ", ts.size(),
              " tensors; the zcoll backend takes one tensor per call (one CPU device)");
  check_tensor(ts[0], call);
  return ts[0];
}

size_t nbytes(const at::Tensor &t) { return static_cast<size_t>(t.numel()) * t.element_size(); }

// The job of a call that moves t (broadcast, the all_gathers), any dtype: the ranks first
// agree on what they move (dtypes.hpp), then move(comm, count, dtype) moves it, in t's own
// zcoll dtype where zcoll has one.
template <class Move>
std::function<zcoll_status_t(zcoll_comm_t *)> agreed(const char *call, int root,
                                                     const at::Tensor &t, Move move) {
  size_t count = 0;
  const zcoll_dtype_t dt = moved_as(t, &count);
  return [m = moved(call, root, t), count, dt, move](zcoll_comm_t *c) {
    zcoll_status_t st = agree(c, m);
    return st != ZCOLL_OK ? st : move(c, count, dt);
  };
}

// A reduction's zcoll type: count is in zcoll elements (a complex number is two).
struct Reduction {
  zcoll_dtype_t dtype;
  size_t count;
  zcoll_op_t op;
  bool created; // op is a premul-sum zcoll_op_create made: freed after the call
};

const char *op_name(c10d::ReduceOp::RedOpType op) {
  switch (op) {
  case c10d::ReduceOp::SUM: return "SUM";
  case c10d::ReduceOp::AVG: return "AVG";
  case c10d::ReduceOp::PRODUCT: return "PRODUCT";
  case c10d::ReduceOp::MIN: return "MIN";
  case c10d::ReduceOp::MAX: return "MAX";
  case c10d::ReduceOp::BAND: return "BAND";
  case c10d::ReduceOp::BOR: return "BOR";
  case c10d::ReduceOp::BXOR: return "BXOR";
  case c10d::ReduceOp::PREMUL_SUM: return "PREMUL_SUM";
  default: return "?";
  }
}

Reduction reduction(const at::Tensor &t, const c10d::ReduceOp &rop, const char *call) {
  int per = 1;
  const at::ScalarType s = t.scalar_type();
  const zcoll_dtype_t dt = dtype_of(s, &per);
  const c10d::ReduceOp::RedOpType op = rop.op_;
  TORCH_CHECK(dt != ZCOLL_DTYPE_COUNT, "zcoll: ", call, ": dtype ", s,
              " cannot be reduced (zcoll reduces float16, bfloat16, float32, float64, int8, "
              "uint8, int32, int64, bool, complex64 and complex128)");
  Reduction r{dt, static_cast<size_t>(t.numel()) * per, ZCOLL_SUM, false};
  const bool complex = per == 2, floating = at::isFloatingType(s) || complex;
  // bool as NCCL treats it: SUM is OR (MAX over 0/1), PRODUCT is AND (MIN).
  if (s == at::kBool && (op == c10d::ReduceOp::SUM || op == c10d::ReduceOp::PRODUCT)) {
    r.op = op == c10d::ReduceOp::SUM ? ZCOLL_MAX : ZCOLL_MIN;
    return r;
  }
  switch (op) {
  case c10d::ReduceOp::SUM: r.op = ZCOLL_SUM; break;
  case c10d::ReduceOp::AVG: r.op = ZCOLL_AVG; break;
  case c10d::ReduceOp::PRODUCT: r.op = ZCOLL_PROD; break;
  case c10d::ReduceOp::MIN: r.op = ZCOLL_MIN; break;
  case c10d::ReduceOp::MAX: r.op = ZCOLL_MAX; break;
  case c10d::ReduceOp::PREMUL_SUM: {
    TORCH_CHECK(floating, "zcoll: ", call, ": PREMUL_SUM of a ", s,
                " tensor (it takes floating-point tensors)");
    auto *sup = dynamic_cast<c10d::NCCLPreMulSumSupplement *>(rop.supplement_.get());
    TORCH_CHECK(sup, "zcoll: ", call,
                ": PREMUL_SUM without its factor (make it with "
                "torch.distributed._make_nccl_premul_sum)");
    double f = sup->double_factor;
    if (!sup->tensor_factors.empty()) {
      TORCH_CHECK(sup->tensor_factors.size() == 1 && sup->tensor_factors[0].numel() == 1,
                  "zcoll: ", call, ": PREMUL_SUM takes one scalar factor");
      f = sup->tensor_factors[0].item<double>();
    }
    zcoll_status_t st = zcoll_op_create_premul_sum(f, &r.op);
    TORCH_CHECK(st == ZCOLL_OK, "zcoll: ", call, ": PREMUL_SUM: ", zcoll_last_error());
    r.created = true;
    return r;
  }
  default:
    TORCH_CHECK(false, "zcoll: ", call, ": op ", op_name(op),
                " is not supported (zcoll has SUM, PRODUCT, MIN, MAX, AVG and PREMUL_SUM)");
  }
  TORCH_CHECK(!(s == at::kBool && op == c10d::ReduceOp::AVG), "zcoll: ", call,
              ": AVG of a bool tensor");
  TORCH_CHECK(!complex || op == c10d::ReduceOp::SUM || op == c10d::ReduceOp::AVG, "zcoll: ", call,
              ": ", op_name(op), " of a complex tensor (SUM, AVG and PREMUL_SUM only)");
  return r;
}

// Frees a created op once the call is over, whatever happened. Made in place (make_shared):
// a copy's destructor would free the op under the call.
struct OpHolder {
  Reduction r;
  explicit OpHolder(Reduction x) : r(x) {}
  OpHolder(const OpHolder &) = delete;
  OpHolder &operator=(const OpHolder &) = delete;
  ~OpHolder() {
    if (r.created) zcoll_op_free(r.op);
  }
};

} // namespace

ProcessGroupZcoll::ProcessGroupZcoll(const c10::intrusive_ptr<c10d::Store> &store, int rank,
                                     int size, std::chrono::milliseconds timeout)
    : ProcessGroup(rank, size) {
  // The group's store is torch's PrefixStore: the key is the group's own. The id holds the
  // rendezvous's secret key, so it is as private as torch's store (docs/torch.md).
  static const char *const kKey = "zcoll/unique_id";
  zcoll_unique_id_t id;
  if (rank == 0) {
    zcoll_status_t st = zcoll_get_unique_id(&id);
    if (st != ZCOLL_OK) throw failure("init (zcoll_get_unique_id)", st);
    store->set(kKey, std::vector<uint8_t>(id.bytes, id.bytes + sizeof(id.bytes)));
  } else {
    std::vector<uint8_t> v = store->get(kKey);
    TORCH_CHECK(v.size() == sizeof(id.bytes), "zcoll: init: the store's ", kKey, " has ", v.size(),
                " bytes, not ", sizeof(id.bytes));
    std::memcpy(id.bytes, v.data(), sizeof(id.bytes));
  }
  zcoll_config_t *cfg = nullptr;
  zcoll_status_t st = zcoll_config_create(&cfg);
  // torch's timeout is zcoll's unless ZCOLL_TIMEOUT says otherwise.
  if (st == ZCOLL_OK && !std::getenv("ZCOLL_TIMEOUT") && timeout.count() > 0)
    st = zcoll_config_set(cfg, "TIMEOUT", std::to_string(timeout.count() / 1000.0).c_str());
  if (st == ZCOLL_OK) st = zcoll_comm_init_rank(&comm_, &id, rank, size, cfg);
  std::memset(&id, 0, sizeof(id));
  zcoll_config_free(cfg);
  if (st != ZCOLL_OK) throw failure("init (zcoll_comm_init_rank)", st);
  // Every rank has joined: the id is spent, and a later group on the same store makes its own.
  if (rank == 0) store->deleteKey(kKey);
  alive_ = std::make_shared<Alive>();
  alive_->pg = this;
  worker_ = std::thread([this] { loop(); });
}

ProcessGroupZcoll::~ProcessGroupZcoll() {
  // Python drops the last reference holding the GIL, while the worker may be completing a
  // future whose callbacks (a DDP comm hook in Python) need it, and the destroy waits for
  // the other ranks: let go of it meanwhile.
  PyThreadState *saved = Py_IsInitialized() && PyGILState_Check() ? PyEval_SaveThread() : nullptr;
  if (alive_) { // from here a tensor's memory stays mapped until the process ends
    std::lock_guard<std::mutex> g(alive_->mu);
    alive_->pg = nullptr;
  }
  shutdown();
  zcoll_status_t st = zcoll_comm_destroy(comm_);
  const char *last = st != ZCOLL_OK ? zcoll_last_error() : nullptr;
  std::string why = last ? last : "";
  if (saved) PyEval_RestoreThread(saved);
  if (st != ZCOLL_OK)
    TORCH_WARN("zcoll: destroying the process group: ", zcoll_strerror(st), ": ", why);
}

void ProcessGroupZcoll::shutdown() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (worker_.joinable() && !on_worker()) worker_.join();
}

std::string ProcessGroupZcoll::transport() const {
  const char *t = zcoll_comm_transport(comm_);
  return t ? t : "";
}

namespace {
thread_local const ProcessGroupZcoll *worker_of = nullptr; // the group whose worker this is
} // namespace

bool ProcessGroupZcoll::on_worker() const { return worker_of == this; }

void ProcessGroupZcoll::loop() {
  worker_of = this;
  for (;;) {
    Item it;
    spin_until([this] { return queued_.load(std::memory_order_acquire) > 0; });
    {
      std::unique_lock<std::mutex> g(mu_);
      cv_.wait(g, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return; // stopping, and everything queued has run
      it = std::move(queue_.front());
      queue_.pop_front();
      queued_.fetch_sub(1, std::memory_order_release);
    }
    run(it);
  }
}

void ProcessGroupZcoll::run(Item &it) {
  std::exception_ptr error;
  try {
    zcoll_status_t st = it.job(comm_);
    if (st != ZCOLL_OK) throw failure(it.call, st);
    if (it.after) it.after();
  } catch (...) {
    error = std::current_exception();
  }
  it.job = nullptr; // the tensors it holds go before the work completes
  if (it.work) {
    it.work->complete(error);
  } else if (error) { // a free: nobody to tell but the log
    try {
      std::rethrow_exception(error);
    } catch (const std::exception &e) {
      TORCH_WARN(e.what());
    }
  }
}

at::Tensor ProcessGroupZcoll::alloc(int64_t nbytes) {
  TORCH_CHECK(nbytes >= 0, "zcoll: empty: ", nbytes, " bytes");
  auto ptr = std::make_shared<void *>(nullptr);
  const size_t len = nbytes > 0 ? static_cast<size_t>(nbytes) : 1; // a 0-byte tensor has a home
  // After what is queued (from a callback, at once: enqueue says why); raises its error.
  enqueue(c10d::OpType::UNKNOWN, "empty (zcoll_mem_alloc)", {}, [ptr, len](zcoll_comm_t *c) {
    return zcoll_mem_alloc(c, len, ptr.get());
  })->wait();
  std::shared_ptr<Alive> alive = alive_;
  return at::from_blob(
      *ptr, {nbytes},
      [alive](void *p) {
        std::lock_guard<std::mutex> g(alive->mu);
        if (alive->pg) alive->pg->release(p);
      },
      at::TensorOptions().dtype(at::kByte));
}

std::map<std::string, uint64_t> ProcessGroupZcoll::stats() {
  auto s = std::make_shared<zcoll_comm_stats_t>();
  enqueue(c10d::OpType::UNKNOWN, "stats (zcoll_comm_stats)", {}, [s](zcoll_comm_t *c) {
    return zcoll_comm_stats(c, s.get(), sizeof(*s));
  })->wait();
  return {{"collectives", s->collectives},
          {"mapped_collectives", s->mapped_collectives},
          {"result_pieces_placed", s->result_pieces_placed},
          {"result_pieces_copied", s->result_pieces_copied},
          {"bytes_sent_same_host", s->bytes_sent_same_host},
          {"bytes_sent_other_hosts", s->bytes_sent_other_hosts}};
}

void ProcessGroupZcoll::release(void *p) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (stop_) return; // the worker may be gone: the memory stays mapped
    queue_.push_back(Item{c10::intrusive_ptr<ZcollWork>(),
                          [p](zcoll_comm_t *c) { return zcoll_mem_free(c, p); }, nullptr,
                          "freeing a tensor's memory (zcoll_mem_free)"});
    queued_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_one();
}

c10::intrusive_ptr<c10d::Work> ProcessGroupZcoll::enqueue(c10d::OpType type, const char *call,
                                                          std::vector<at::Tensor> outputs, Job job,
                                                          std::function<void()> after) {
  std::shared_ptr<Alive> alive = alive_;
  auto work = c10::make_intrusive<ZcollWork>(rank_, type, std::move(outputs), [alive] {
    std::lock_guard<std::mutex> g(alive->mu);
    if (alive->pg) zcoll_comm_revoke(alive->pg->comm_);
  });
  Item it{work, std::move(job), std::move(after), call};
  if (on_worker()) { // a callback: at once (the header says why)
    run(it);
    return work;
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    TORCH_CHECK(!stop_, "zcoll: ", call, ": the process group is being destroyed");
    queue_.push_back(std::move(it));
    queued_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_one();
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupZcoll::broadcast(std::vector<at::Tensor> &tensors,
                                                            const c10d::BroadcastOptions &opts) {
  const char *call = "broadcast";
  at::Tensor t = single(tensors, call);
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < size_, "zcoll: broadcast: root ", opts.rootRank,
              " is not a rank of this group of ", size_);
  const int root = static_cast<int>(opts.rootRank);
  return enqueue(c10d::OpType::BROADCAST, call, tensors,
                 agreed(call, root, t, [t, root](zcoll_comm_t *c, size_t n, zcoll_dtype_t dt) {
                   return zcoll_broadcast(c, t.data_ptr(), n, dt, root);
                 }));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupZcoll::allreduce(std::vector<at::Tensor> &tensors,
                                                            const c10d::AllreduceOptions &opts) {
  const char *call = "all_reduce";
  at::Tensor t = single(tensors, call);
  auto op = std::make_shared<OpHolder>(reduction(t, opts.reduceOp, call));
  return enqueue(c10d::OpType::ALLREDUCE, call, tensors, [t, op](zcoll_comm_t *c) {
    return zcoll_allreduce(c, ZCOLL_IN_PLACE, t.data_ptr(), op->r.count, op->r.dtype, op->r.op);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupZcoll::reduce(std::vector<at::Tensor> &tensors,
                                                         const c10d::ReduceOptions &opts) {
  const char *call = "reduce";
  at::Tensor t = single(tensors, call);
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < size_, "zcoll: reduce: root ", opts.rootRank,
              " is not a rank of this group of ", size_);
  auto op = std::make_shared<OpHolder>(reduction(t, opts.reduceOp, call));
  const int root = static_cast<int>(opts.rootRank), me = rank_;
  return enqueue(c10d::OpType::REDUCE, call, tensors, [t, op, root, me](zcoll_comm_t *c) {
    // The root reduces in place; the others' tensors are only read.
    return zcoll_reduce(c, me == root ? ZCOLL_IN_PLACE : t.data_ptr(),
                        me == root ? t.data_ptr() : nullptr, op->r.count, op->r.dtype, op->r.op,
                        root);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupZcoll::_allgather_base(at::Tensor &output,
                                                                  at::Tensor &input,
                                                                  const c10d::AllgatherOptions &) {
  const char *call = "all_gather_into_tensor";
  check_tensor(output, call);
  check_tensor(input, call);
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "zcoll: ", call, ": output is ",
              output.scalar_type(), ", input ", input.scalar_type());
  TORCH_CHECK(output.numel() == input.numel() * size_, "zcoll: ", call, ": output has ",
              output.numel(), " elements; it needs the group's size (", size_,
              ") times the input's ", input.numel());
  const size_t n = nbytes(input);
  // The input may be this rank's block of the output (zcoll's in place).
  const bool in_place = static_cast<char *>(input.data_ptr()) ==
                        static_cast<char *>(output.data_ptr()) + n * rank_;
  at::Tensor out = output, in = input;
  return enqueue(
      c10d::OpType::_ALLGATHER_BASE, call, {output},
      agreed(call, -1, in, [out, in, in_place](zcoll_comm_t *c, size_t n, zcoll_dtype_t dt) {
        return zcoll_allgather(c, in_place ? ZCOLL_IN_PLACE : in.data_ptr(), out.data_ptr(), n, dt);
      }));
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupZcoll::allgather(std::vector<std::vector<at::Tensor>> &outputs,
                             std::vector<at::Tensor> &inputs, const c10d::AllgatherOptions &) {
  const char *call = "all_gather";
  at::Tensor in = single(inputs, call);
  TORCH_CHECK(outputs.size() == 1 && outputs[0].size() == static_cast<size_t>(size_),
              "zcoll: ", call, ": the output list must hold one tensor per rank (", size_, ")");
  for (const at::Tensor &o : outputs[0]) {
    check_tensor(o, call);
    TORCH_CHECK(o.numel() == in.numel() && o.scalar_type() == in.scalar_type(), "zcoll: ", call,
                ": every output must be like the input (", in.numel(), " ", in.scalar_type(),
                "), not ", o.numel(), " ", o.scalar_type());
  }
  // The list's tensors are separate: the blocks arrive in one buffer and are copied out.
  at::Tensor flat = at::empty({size_ * in.numel()}, in.options());
  std::vector<at::Tensor> outs = outputs[0];
  return enqueue(c10d::OpType::ALLGATHER, call, outs,
                 agreed(call, -1, in,
                        [in, flat](zcoll_comm_t *c, size_t n, zcoll_dtype_t dt) {
                          return zcoll_allgather(c, in.data_ptr(), flat.data_ptr(), n, dt);
                        }),
                 [flat, outs, in]() {
                   for (size_t r = 0; r < outs.size(); r++)
                     outs[r].view(-1).copy_(
                         flat.narrow(0, static_cast<int64_t>(r) * in.numel(), in.numel()));
                 });
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupZcoll::_reduce_scatter_base(at::Tensor &output, at::Tensor &input,
                                        const c10d::ReduceScatterOptions &opts) {
  const char *call = "reduce_scatter_tensor";
  check_tensor(output, call);
  check_tensor(input, call);
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "zcoll: ", call, ": output is ",
              output.scalar_type(), ", input ", input.scalar_type());
  TORCH_CHECK(input.numel() == output.numel() * size_, "zcoll: ", call, ": input has ",
              input.numel(), " elements; it needs the group's size (", size_,
              ") times the output's ", output.numel());
  auto op = std::make_shared<OpHolder>(reduction(output, opts.reduceOp, call));
  at::Tensor out = output, in = input;
  return enqueue(c10d::OpType::_REDUCE_SCATTER_BASE, call, {output},
                 [out, in, op](zcoll_comm_t *c) {
                   return zcoll_reduce_scatter(c, in.data_ptr(), out.data_ptr(), op->r.count,
                                               op->r.dtype, op->r.op);
                 });
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupZcoll::reduce_scatter(std::vector<at::Tensor> &outputs,
                                  std::vector<std::vector<at::Tensor>> &inputs,
                                  const c10d::ReduceScatterOptions &opts) {
  const char *call = "reduce_scatter";
  at::Tensor out = single(outputs, call);
  TORCH_CHECK(inputs.size() == 1 && inputs[0].size() == static_cast<size_t>(size_), "zcoll: ", call,
              ": the input list must hold one tensor per rank (", size_, ")");
  for (const at::Tensor &i : inputs[0]) {
    check_tensor(i, call);
    TORCH_CHECK(i.numel() == out.numel() && i.scalar_type() == out.scalar_type(), "zcoll: ", call,
                ": every input must be like the output (", out.numel(), " ", out.scalar_type(),
                "), not ", i.numel(), " ", i.scalar_type());
  }
  auto op = std::make_shared<OpHolder>(reduction(out, opts.reduceOp, call));
  // The list's tensors are separate: they are copied into one buffer, here, in order.
  std::vector<at::Tensor> flat_in;
  for (const at::Tensor &i : inputs[0]) flat_in.push_back(i.view(-1));
  at::Tensor flat = at::cat(flat_in);
  return enqueue(c10d::OpType::REDUCE_SCATTER, call, outputs, [out, flat, op](zcoll_comm_t *c) {
    return zcoll_reduce_scatter(c, flat.data_ptr(), out.data_ptr(), op->r.count, op->r.dtype,
                                op->r.op);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupZcoll::barrier(const c10d::BarrierOptions &) {
  return enqueue(c10d::OpType::BARRIER, "barrier", {},
                 [](zcoll_comm_t *c) { return zcoll_barrier(c); });
}

namespace {
// NotImplementedError in Python.
[[noreturn]] void unsupported(const char *call, const char *instead) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, "zcoll: ", call, " is not supported by the zcoll backend",
                              instead);
  std::abort(); // not reached: the check throws
}
} // namespace

c10::intrusive_ptr<c10d::Work>
ProcessGroupZcoll::allreduce_coalesced(std::vector<at::Tensor> &,
                                       const c10d::AllreduceCoalescedOptions &) {
  unsupported("all_reduce_coalesced", " (all_reduce one flattened tensor instead)");
}
c10::intrusive_ptr<c10d::Work>
ProcessGroupZcoll::allgather_coalesced(std::vector<std::vector<at::Tensor>> &,
                                       std::vector<at::Tensor> &, const c10d::AllgatherOptions &) {
  unsupported("all_gather_coalesced", " (all_gather_into_tensor one flattened tensor instead)");
}
c10::intrusive_ptr<c10d::Work> ProcessGroupZcoll::gather(std::vector<std::vector<at::Tensor>> &,
                                                         std::vector<at::Tensor> &,
                                                         const c10d::GatherOptions &) {
  unsupported("gather", " (all_gather is)");
}
c10::intrusive_ptr<c10d::Work> ProcessGroupZcoll::scatter(std::vector<at::Tensor> &,
                                                          std::vector<std::vector<at::Tensor>> &,
                                                          const c10d::ScatterOptions &) {
  unsupported("scatter", " (broadcast is)");
}
c10::intrusive_ptr<c10d::Work> ProcessGroupZcoll::alltoall_base(at::Tensor &, at::Tensor &,
                                                                std::vector<int64_t> &,
                                                                std::vector<int64_t> &,
                                                                const c10d::AllToAllOptions &) {
  unsupported("all_to_all_single", "");
}
c10::intrusive_ptr<c10d::Work> ProcessGroupZcoll::alltoall(std::vector<at::Tensor> &,
                                                           std::vector<at::Tensor> &,
                                                           const c10d::AllToAllOptions &) {
  unsupported("all_to_all", "");
}
c10::intrusive_ptr<c10d::Work> ProcessGroupZcoll::send(std::vector<at::Tensor> &, int, int) {
  unsupported("send", " (zcoll has collectives only; use a gloo group for point-to-point)");
}
c10::intrusive_ptr<c10d::Work> ProcessGroupZcoll::recv(std::vector<at::Tensor> &, int, int) {
  unsupported("recv", " (zcoll has collectives only; use a gloo group for point-to-point)");
}
c10::intrusive_ptr<c10d::Work> ProcessGroupZcoll::recvAnysource(std::vector<at::Tensor> &, int) {
  unsupported("recv", " (zcoll has collectives only; use a gloo group for point-to-point)");
}

} // namespace zcoll_torch
