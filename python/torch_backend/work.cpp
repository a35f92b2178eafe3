// work.cpp -- the "zcoll" backend's Work: completed by the group's worker, waited for by
// C++ (DDP's reducer) and by Python, whose wait lets Ctrl-C through (process_group.hpp).
#include <Python.h> // first, as Python asks

#include <pybind11/pybind11.h>

#include "process_group.hpp"

#include <algorithm>

namespace zcoll_torch {

ZcollWork::ZcollWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
                     std::function<void()> revoke)
    : Work(rank, type), outputs_(std::move(outputs)),
      future_(
          c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))),
      revoke_(std::move(revoke)) {}

bool ZcollWork::wait(std::chrono::milliseconds timeout) {
  spin_until([this] { return done_.load(std::memory_order_acquire); });
  return Work::wait(timeout);
}

bool ZcollWork::ended_within(std::chrono::milliseconds d) {
  if (spin_until([this] { return done_.load(std::memory_order_acquire); })) return true;
  std::unique_lock<std::mutex> lock(mutex_);
  return cv_.wait_for(lock, d, [this] { return completed_; });
}

bool ZcollWork::wait_interruptibly(std::chrono::milliseconds timeout) {
  namespace py = pybind11;
  using std::chrono::milliseconds;
  const auto start = std::chrono::steady_clock::now();
  bool ended = false;
  while (!ended) {
    milliseconds slice = kSlice;
    if (timeout != ::kNoTimeout) {
      const auto left = timeout - std::chrono::duration_cast<milliseconds>(
                                      std::chrono::steady_clock::now() - start);
      if (left <= milliseconds(0)) break; // Work::wait below says it timed out
      slice = std::min(slice, left);
    }
    {
      py::gil_scoped_release nogil;
      ended = ended_within(slice);
    }
    // On the main thread, Python's handlers run here (elsewhere this is a no-op).
    if (!ended && PyErr_CheckSignals() != 0) {
      revoke_(); // the peers fail the collective rather than wait for this rank
      throw py::error_already_set();
    }
  }
  py::gil_scoped_release nogil;
  return wait(ended ? timeout : milliseconds(1)); // the collective's error, or the timeout's
}

void ZcollWork::complete(std::exception_ptr error) {
  if (error)
    future_->setError(error);
  else
    future_->markCompleted(c10::IValue(outputs_));
  finish(error);
  done_.store(true, std::memory_order_release);
}

} // namespace zcoll_torch
