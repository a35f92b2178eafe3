// module.cpp -- the Python module zcoll._zcoll_torch: ProcessGroupZcoll for torch.distributed
// (zcoll/torch.py registers it as the backend "zcoll").
#include <pybind11/chrono.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "process_group.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_zcoll_torch, m) {
  m.doc() = "torch.distributed's backend \"zcoll\" (import zcoll.torch to register it)";
  // c10d::ProcessGroup's Python class comes from torch.distributed: it must exist first.
  py::module::import("torch.distributed");
  // The Works the group returns (pybind11 finds the most derived class): Python's wait lets
  // Ctrl-C through within a slice (50 ms), C++'s (DDP's reducer) is c10d::Work's.
  py::class_<zcoll_torch::ZcollWork, c10d::Work, c10::intrusive_ptr<zcoll_torch::ZcollWork>>(
      m, "ZcollWork")
      .def("wait", &zcoll_torch::ZcollWork::wait_interruptibly, py::arg("timeout") = ::kNoTimeout);
  py::class_<zcoll_torch::ProcessGroupZcoll, c10d::ProcessGroup,
             c10::intrusive_ptr<zcoll_torch::ProcessGroupZcoll>>(m, "ProcessGroupZcoll")
      // Blocks until every member joined: without the GIL, so the process's other threads go on.
      .def(py::init<const c10::intrusive_ptr<c10d::Store> &, int, int, std::chrono::milliseconds>(),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("transport", &zcoll_torch::ProcessGroupZcoll::transport)
      // zcoll.torch.empty's memory: blocks on the group's worker, without the GIL.
      .def("_alloc", &zcoll_torch::ProcessGroupZcoll::alloc, py::arg("nbytes"),
           py::call_guard<py::gil_scoped_release>())
      // zcoll_comm_stats' counters, as a dict (zcoll.torch.stats).
      .def("_stats", &zcoll_torch::ProcessGroupZcoll::stats,
           py::call_guard<py::gil_scoped_release>())
      // zcoll/torch.py's atexit: the worker stopped while Python still runs.
      .def("_shutdown", &zcoll_torch::ProcessGroupZcoll::shutdown,
           py::call_guard<py::gil_scoped_release>());
}
