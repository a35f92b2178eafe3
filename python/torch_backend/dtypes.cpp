// dtypes.cpp -- torch's dtypes in zcoll, and the ranks' agreement on them (dtypes.hpp).
//
// Why an agreement of its own. zcoll's fingerprints compare the zcoll dtype and count, but
// torch has more dtypes than zcoll: bool and uint8 both travel as ZCOLL_UINT8, complex64 as
// twice as many ZCOLL_FLOAT32, so a bool tensor would meet a uint8 one unseen. And where the
// fingerprints differ (float32 against int32), a broadcast's root, which only sends, may
// complete before the news reaches it. So every rank first allreduces (MAX) its description
// and the description negated: each rank learns, in one small collective, whether all agree
// (max == min everywhere), and refuses on every rank alike if not. Only then is the cost of
// naming the culprits paid: an allgather of every rank's description, shape included.
#include "dtypes.hpp"

#include <sstream>
#include <stdexcept>

#include <torch/csrc/utils/tensor_dtypes.h>

namespace zcoll_torch {

zcoll_dtype_t dtype_of(at::ScalarType s, int *per_elem) {
  *per_elem = 1;
  switch (s) {
  case at::kFloat: return ZCOLL_FLOAT32;
  case at::kDouble: return ZCOLL_FLOAT64;
  case at::kHalf: return ZCOLL_FLOAT16;
  case at::kBFloat16: return ZCOLL_BFLOAT16;
  case at::kChar: return ZCOLL_INT8;
  case at::kByte: return ZCOLL_UINT8;
  case at::kBool: return ZCOLL_UINT8;
  case at::kInt: return ZCOLL_INT32;
  case at::kLong: return ZCOLL_INT64;
  case at::kComplexFloat: *per_elem = 2; return ZCOLL_FLOAT32;
  case at::kComplexDouble: *per_elem = 2; return ZCOLL_FLOAT64;
  default: return ZCOLL_DTYPE_COUNT;
  }
}

zcoll_dtype_t moved_as(const at::Tensor &t, size_t *count) {
  int per = 1;
  const zcoll_dtype_t dt = dtype_of(t.scalar_type(), &per);
  const size_t n = static_cast<size_t>(t.numel());
  *count = dt == ZCOLL_DTYPE_COUNT ? n * t.element_size() : n * per;
  return dt == ZCOLL_DTYPE_COUNT ? ZCOLL_UINT8 : dt;
}

Moved moved(const char *call, int root, const at::Tensor &t) {
  return Moved{call, root, t.scalar_type(), t.numel(), t.sizes().vec()};
}

namespace {

const char *const kCalls[] = {"broadcast", "all_gather_into_tensor", "all_gather"};
constexpr int kNcalls = sizeof(kCalls) / sizeof(kCalls[0]);
constexpr int kCompared = 4; // call, root, dtype, numel: what must agree
constexpr int kDims = 8;     // of the shape, in the message
constexpr int kRecord = kCompared + 1 + kDims;

int64_t call_index(const char *call) {
  for (int i = 0; i < kNcalls; i++)
    if (std::string(call) == kCalls[i]) return i;
  return kNcalls;
}

void record(const Moved &m, int64_t *r) {
  r[0] = call_index(m.call);
  r[1] = m.root;
  r[2] = static_cast<int64_t>(m.dtype);
  r[3] = m.numel;
  r[4] = static_cast<int64_t>(m.shape.size());
  for (int i = 0; i < kDims; i++)
    r[kCompared + 1 + i] = i < static_cast<int>(m.shape.size()) ? m.shape[i] : 0;
}

// "float32[2, 2]", from a rank's record.
std::string tensor_of(const int64_t *r) {
  std::ostringstream o;
  const int64_t s = r[2];
  if (s >= 0 && s < static_cast<int64_t>(at::ScalarType::NumOptions))
    o << torch::utils::getDtypeNames(static_cast<at::ScalarType>(s)).first;
  else
    o << "dtype #" << s;
  o << "[";
  for (int64_t i = 0; i < r[4] && i < kDims; i++) o << (i ? ", " : "") << r[kCompared + 1 + i];
  if (r[4] > kDims) o << ", ...";
  o << "]";
  return o.str();
}

std::string call_of(const int64_t *r) {
  std::ostringstream o;
  o << (r[0] >= 0 && r[0] < kNcalls ? kCalls[r[0]] : "another call") << "(" << tensor_of(r);
  if (r[1] >= 0) o << ", root " << r[1];
  o << ")";
  return o.str();
}

} // namespace

zcoll_status_t agree(zcoll_comm_t *comm, const Moved &mine) {
  int64_t me[kRecord];
  record(mine, me);
  int64_t v[2 * kCompared];
  for (int i = 0; i < kCompared; i++) {
    v[i] = me[i];
    v[kCompared + i] = -me[i];
  }
  zcoll_status_t st = zcoll_allreduce(comm, ZCOLL_IN_PLACE, v, 2 * kCompared, ZCOLL_INT64,
                                      ZCOLL_MAX);
  if (st != ZCOLL_OK) return st;
  bool same = true;
  for (int i = 0; i < kCompared; i++) same = same && v[i] == -v[kCompared + i];
  if (same) return ZCOLL_OK;
  // Every rank is here: name the reference rank's tensor (or one that differs from it).
  const int p = zcoll_comm_size(comm);
  std::vector<int64_t> all(static_cast<size_t>(p) * kRecord);
  st = zcoll_allgather(comm, me, all.data(), kRecord, ZCOLL_INT64);
  if (st != ZCOLL_OK) return st;
  auto differs = [&](int r) {
    for (int i = 0; i < kCompared; i++)
      if (all[static_cast<size_t>(r) * kRecord + i] != me[i]) return true;
    return false;
  };
  int ref = mine.root >= 0 && mine.root < p ? mine.root : 0;
  for (int r = 0; r < p && !differs(ref); r++)
    if (differs(r)) ref = r;
  const int64_t *theirs = &all[static_cast<size_t>(ref) * kRecord];
  std::ostringstream m;
  m << "zcoll: " << mine.call << ": ";
  if (theirs[0] == me[0] && theirs[1] == me[1])
    m << "rank " << ref << "'s tensor is " << tensor_of(theirs) << ", this rank's " << tensor_of(me)
      << " (every rank must pass the same dtype and number of elements)";
  else
    m << "rank " << ref << " called " << call_of(theirs) << ", this rank " << call_of(me);
  throw std::runtime_error(m.str());
}

} // namespace zcoll_torch
