#include "engine/message.h"

namespace kolo {

int64_t Response::num_elements() const { return kolo::num_elements(shape); }

int64_t Response::size_bytes() const {
  return num_elements() * static_cast<int64_t>(dtype_size(dtype));
}

namespace {

bool same_trailing_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  if (a.size() != b.size() || a.empty()) return false;
  for (size_t i = 1; i < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

}  // namespace

bool request_matches_response(const Request& q, const Response& r) {
  if (!r.ok() || q.name != r.name || q.kind != r.kind || q.dtype != r.dtype || q.device != r.device) {
    return false;
  }
  switch (q.kind) {
    case OpKind::kAllreduce:
    case OpKind::kReducescatter:
      return q.shape == r.shape && q.reduce_op == r.reduce_op && q.prescale == r.prescale &&
             q.postscale == r.postscale && q.compression == r.compression;
    case OpKind::kBroadcast:
      return q.shape == r.shape && q.root == r.root;
    case OpKind::kAllgather:
      return same_trailing_dims(q.shape, r.shape) && q.rank >= 0 &&
             static_cast<size_t>(q.rank) < r.first_dims.size() && r.first_dims[q.rank] == q.shape[0];
    case OpKind::kAlltoall:
      return same_trailing_dims(q.shape, r.shape);
    case OpKind::kBarrier:
      return true;
    case OpKind::kJoin:
      return false;  // a join is never cached: it changes who takes part
  }
  return false;
}

}  // namespace kolo
