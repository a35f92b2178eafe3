// process_group.hpp -- torch.distributed's backend "zcoll": a c10d::ProcessGroup over one
// zcoll communicator (torch 1.13's c10d API, the way torch_ucc and ProcessGroupGloo plug in).
//
// Every call checks its tensors on the caller's thread (a bad one raises there, naming the
// call) and queues the collective; one worker thread per group runs the queue in order with
// zcoll's blocking calls, so the communicator has one owner, as zcoll asks, and the caller
// goes on (async_op, DDP's buckets overlapping backward). The Work's future completes with
// the output tensors, or with the error, so that DDP's get_future() chains and wait() raises.
#pragma once

#include <chrono>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "zcoll.h"

namespace zcoll_torch {

// How long a thread spins for its next event before it sleeps: about what a wake-up costs.
constexpr auto kSpin = std::chrono::microseconds(50);

template <class Ready> bool spin_until(Ready ready) {
  const auto end = std::chrono::steady_clock::now() + kSpin;
  do {
    if (ready()) return true;
    std::this_thread::yield(); // the peer's thread may need this core (oversubscribed hosts)
  } while (std::chrono::steady_clock::now() < end);
  return ready();
}

// One queued collective's handle: completed by the worker thread (work.cpp).
class ZcollWork : public c10d::Work {
public:
  // revoke breaks the group's communicator (zcoll_comm_revoke), if the group is still there.
  ZcollWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
            std::function<void()> revoke);
  std::vector<at::Tensor> result() override { return outputs_; }
  // Spins briefly before blocking: a small collective ends within microseconds, sooner than
  // a sleeping thread is woken.
  bool wait(std::chrono::milliseconds timeout) override;
  // Python's Work.wait (module.cpp), called holding the GIL: waits without it in slices of
  // kSlice, between which Python's signal handlers run (one blocking wait would hold
  // Ctrl-C back until the collective ended or timed out). A handler's exception
  // (KeyboardInterrupt) revokes the communicator, so that the peers fail this collective
  // instead of waiting for this rank, and propagates (pybind11::error_already_set).
  bool wait_interruptibly(std::chrono::milliseconds timeout);
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  // The future first, as ProcessGroupGloo does: wait() returns after its callbacks ran.
  void complete(std::exception_ptr error);

  static constexpr auto kSlice = std::chrono::milliseconds(50);

private:
  bool ended_within(std::chrono::milliseconds d); // Work's own completion, without the GIL

  std::atomic<bool> done_{false};
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::function<void()> revoke_;
};

class ProcessGroupZcoll : public c10d::ProcessGroup {
public:
  // Collective over the group's members: rank 0 makes a unique id and puts it in store,
  // the others take it from there; every rank then joins (zcoll_comm_init_rank).
  ProcessGroupZcoll(const c10::intrusive_ptr<c10d::Store> &store, int rank, int size,
                    std::chrono::milliseconds timeout);
  // Runs what is queued, then destroys the communicator (collective, as zcoll's destroy).
  ~ProcessGroupZcoll() override;

  const std::string getBackendName() const override { return "zcoll"; }
  // What zcoll_comm_transport says ("shm", "ucx", "verbs", ...).
  std::string transport() const;
  // nbytes of memory this host's members can map (zcoll_mem_alloc, run by the worker, as
  // every call on the communicator is), as a uint8 tensor: the one-host allreduce reduces
  // such tensors straight from the peers' memory. Its storage hands it back (zcoll_mem_free,
  // queued to the worker) when the last tensor on it goes; if the group went first, it stays
  // mapped until the process ends (zcoll's contract). Blocks until allocated: after the
  // collectives queued before it (a future's callback, on the worker, allocates at once).
  at::Tensor alloc(int64_t nbytes);
  // At the interpreter's exit (zcoll/torch.py's atexit): runs what is queued and stops the
  // worker while Python still runs, since the last reference to a tensor or a Work it drops
  // may need the GIL, which a thread cannot take once the interpreter is finalizing (it
  // would be ended there, through a noexcept destructor: std::terminate). Later calls
  // raise; the communicator stays until the group is destroyed.
  void shutdown();
  // The communicator's counters (zcoll_comm_stats, on the worker, after what is queued).
  std::map<std::string, uint64_t> stats();

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor> &tensors,
                                           const c10d::BroadcastOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor> &tensors,
                                           const c10d::AllreduceOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor> &tensors,
                                        const c10d::ReduceOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>> &outputs,
                                           std::vector<at::Tensor> &inputs,
                                           const c10d::AllgatherOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor &output, at::Tensor &input,
                                                 const c10d::AllgatherOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor> &outputs,
                                                std::vector<std::vector<at::Tensor>> &inputs,
                                                const c10d::ReduceScatterOptions &opts) override;
  c10::intrusive_ptr<c10d::Work>
  _reduce_scatter_base(at::Tensor &output, at::Tensor &input,
                       const c10d::ReduceScatterOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions &opts) override;

  // What zcoll has no collective for: a clear error naming the call.
  c10::intrusive_ptr<c10d::Work>
  allreduce_coalesced(std::vector<at::Tensor> &tensors,
                      const c10d::AllreduceCoalescedOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>> &outputs,
                                                     std::vector<at::Tensor> &inputs,
                                                     const c10d::AllgatherOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>> &outputs,
                                        std::vector<at::Tensor> &inputs,
                                        const c10d::GatherOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor> &outputs,
                                         std::vector<std::vector<at::Tensor>> &inputs,
                                         const c10d::ScatterOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor &output, at::Tensor &input,
                                               std::vector<int64_t> &output_split_sizes,
                                               std::vector<int64_t> &input_split_sizes,
                                               const c10d::AllToAllOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor> &outputs,
                                          std::vector<at::Tensor> &inputs,
                                          const c10d::AllToAllOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor> &tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor> &tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor> &tensors, int tag) override;

private:
  using Job = std::function<zcoll_status_t(zcoll_comm_t *)>;
  struct Item {
    c10::intrusive_ptr<ZcollWork> work; // none for a free: nobody waits for it
    Job job;
    std::function<void()> after; // on success, on the worker (copies out of scratch)
    const char *call;
  };
  // Queues the job for the worker; from the worker itself (a future's callback: then(), a
  // DDP comm hook such as PowerSGD's, which waits for what it starts) runs it at once,
  // ahead of what other threads queued meanwhile: queued, it would wait for the worker,
  // which waits for it. A callback that runs on every rank's worker so runs its collectives
  // right after the one it follows, in the same order everywhere.
  c10::intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, const char *call,
                                         std::vector<at::Tensor> outputs, Job job,
                                         std::function<void()> after = nullptr);
  void loop();
  bool on_worker() const; // the caller is this group's worker thread
  // One item's job, then its Work's completion (the future's callbacks), on the worker.
  void run(Item &it);
  // A storage's deleter hands its memory back through here: queued, never throws.
  void release(void *p);
  // What a storage's deleter reaches the group through: cleared when the group goes, so a
  // tensor that outlives it never calls into a destroyed one.
  struct Alive {
    std::mutex mu;
    ProcessGroupZcoll *pg;
  };
  std::shared_ptr<Alive> alive_;

  zcoll_comm_t *comm_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  std::atomic<int> queued_{0}; // queue_.size(), read without the lock by the spinning worker
  bool stop_ = false;
  std::thread worker_;
};

} // namespace zcoll_torch
