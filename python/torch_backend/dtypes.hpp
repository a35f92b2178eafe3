// dtypes.hpp -- torch's dtypes as zcoll reduces and moves them, and what the ranks of a call
// that moves bytes (broadcast, the all_gathers) agree on before any byte moves.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

#include "zcoll.h"

namespace zcoll_torch {

// The zcoll dtype of a torch one, *per_elem zcoll elements to one of torch's (a complex
// number is two floats); ZCOLL_DTYPE_COUNT where zcoll has none (bool is ZCOLL_UINT8).
zcoll_dtype_t dtype_of(at::ScalarType s, int *per_elem);

// How a moved tensor's bytes travel: in its own zcoll dtype where zcoll has one, else as
// bytes (int16, quantized, ...); *count is in the returned dtype's elements.
zcoll_dtype_t moved_as(const at::Tensor &t, size_t *count);

// What the ranks of a call that moves bytes compare: the call, its root (-1: none), the
// tensor's dtype and element count. The shape rides along for the message only: ranks may
// pass different shapes of the same count, as Gloo lets them.
struct Moved {
  const char *call; // "broadcast", "all_gather_into_tensor" or "all_gather"
  int root;
  at::ScalarType dtype;
  int64_t numel;
  std::vector<int64_t> shape;
};

Moved moved(const char *call, int root, const at::Tensor &t);

// Collective, on the group's worker, before the call moves anything: returns ZCOLL_OK when
// every rank's Moved is the same and throws std::runtime_error on every rank when not,
// naming the reference rank's (the root's, else rank 0's) tensor and this rank's:
// "zcoll: broadcast: rank 0's tensor is float32[4], this rank's int32[4] ...". Every rank
// makes the same calls either way, so the group goes on after a refusal. Another status
// is a zcoll call's failure.
zcoll_status_t agree(zcoll_comm_t *comm, const Moved &mine);

} // namespace zcoll_torch
