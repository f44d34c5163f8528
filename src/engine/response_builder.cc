#include "engine/response_builder.h"

#include <algorithm>
#include <functional>
#include <map>
#include <sstream>

#include "common/ranks.h"

namespace kolo {
namespace {

std::string trailing_shape(const std::vector<int64_t>& shape) {
  std::ostringstream s;
  s << '[';
  for (size_t i = 0; i < shape.size(); ++i) {
    s << (i ? ", " : "");
    if (i == 0) {
      s << '*';
    } else {
      s << shape[i];
    }
  }
  s << ']';
  return s.str();
}

std::string format_double(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

// Groups ranks by the text of one field; more than one group is a mismatch, described in a sentence:
// "Mismatched dtype for tensor 'w' (allreduce): float32 on ranks 0-2, float64 on rank 3."
bool find_mismatch(const std::vector<Request>& by_rank, const char* field,
                   const std::function<std::string(const Request&)>& text, const RankNames& names,
                   std::string* message) {
  std::map<std::string, std::vector<int>> groups;
  std::vector<std::string> order;  // values in order of their first rank, for a stable message
  for (const Request& q : by_rank) {
    std::string v = text(q);
    auto& ranks = groups[v];
    if (ranks.empty()) order.push_back(v);
    ranks.push_back(q.rank);
  }
  if (groups.size() <= 1) return false;
  std::ostringstream m;
  m << "Mismatched " << field << " for tensor '" << by_rank[0].name << "' ("
    << op_kind_name(by_rank[0].kind) << "): ";
  for (size_t i = 0; i < order.size(); ++i) {
    m << (i ? ", " : "") << order[i] << " on " << names.ranks(groups[order[i]]);
  }
  m << '.';
  *message = m.str();
  return true;
}

}  // namespace

Response error_response(const RankNames& names, const std::string& name, OpKind kind, StatusCode code,
                        std::string message) {
  Response r;
  r.type = Response::Type::kError;
  r.error_code = code;
  r.name = name;
  r.kind = kind;
  r.error = names.prefix() + message;
  return r;
}

Response build_response(const std::vector<Request>& by_rank, const std::vector<int>& joined,
                        const RankNames& names) {
  const Request& first = by_rank.front();
  std::string error;
  auto mismatch = [&](const char* field, const std::function<std::string(const Request&)>& text) {
    return error.empty() && find_mismatch(by_rank, field, text, names, &error);
  };
  // A field is compared only where the op uses it; the first disagreement found is reported.
  mismatch("op kind", [](const Request& q) { return std::string(op_kind_name(q.kind)); });
  const OpKind kind = first.kind;
  const bool reduces = kind == OpKind::kAllreduce || kind == OpKind::kReducescatter;
  const bool whole_shape = reduces || kind == OpKind::kBroadcast;
  const bool row_shape = kind == OpKind::kAllgather || kind == OpKind::kAlltoall;
  if (kind != OpKind::kBarrier) {
    mismatch("device", [](const Request& q) {
      return std::string(q.device == DeviceType::kCPU ? "CPU" : "GPU");
    });
    mismatch("dtype", [](const Request& q) { return std::string(dtype_name(q.dtype)); });
  }
  if (whole_shape) mismatch("shape", [](const Request& q) { return shape_string(q.shape); });
  if (row_shape) {
    mismatch("shape (beyond the first dimension)",
             [](const Request& q) { return trailing_shape(q.shape); });
  }
  if (reduces) {
    mismatch("reduce op", [](const Request& q) { return std::string(reduce_op_name(q.reduce_op)); });
    mismatch("prescale factor", [](const Request& q) { return format_double(q.prescale); });
    mismatch("postscale factor", [](const Request& q) { return format_double(q.postscale); });
    mismatch("compression", [](const Request& q) { return std::string(compression_name(q.compression)); });
  }
  if (kind == OpKind::kBroadcast) {
    mismatch("root rank", [&names](const Request& q) { return std::to_string(names.job_rank(q.root)); });
  }
  if (error.empty() && row_shape && first.shape.empty()) {
    error = std::string(op_kind_name(kind)) + " of tensor '" + first.name +
            "' needs at least one dimension.";
  }
  if (!error.empty()) return error_response(names, first.name, first.kind, StatusCode::kMismatch, error);
  if (!joined.empty()) {
    const bool root_joined = kind == OpKind::kBroadcast &&
                             std::find(joined.begin(), joined.end(), first.root) != joined.end();
    if (root_joined || kind == OpKind::kAlltoall || kind == OpKind::kReducescatter) {
      const std::string why = root_joined
                                  ? "its root rank " + std::to_string(names.job_rank(first.root)) + " has joined"
                                  : std::string("it cannot run while ") + names.ranks(joined) +
                                        (joined.size() == 1 ? " has" : " have") + " joined";
      return error_response(names, first.name, kind, StatusCode::kInvalidArgument,
                            std::string(op_kind_name(kind)) + " of tensor '" + first.name + "' failed: " + why +
                                " (join() was called; every rank must join before such ops run again).");
    }
  }

  Response r;
  r.name = first.name;
  r.kind = kind;
  r.dtype = first.dtype;
  r.device = first.device;
  if (reduces) {
    r.reduce_op = first.reduce_op;
    r.prescale = first.prescale;
    r.postscale = first.postscale;
    r.compression = first.compression;
  }
  if (kind == OpKind::kBroadcast) r.root = first.root;
  r.shape = first.shape;
  if (kind == OpKind::kAllgather) {
    // Joined ranks contribute no rows.
    const size_t size = by_rank.size() + joined.size();
    int64_t rows = 0;
    r.first_dims.assign(size, 0);
    for (const Request& q : by_rank) {
      r.first_dims[static_cast<size_t>(q.rank)] = q.shape[0];
      rows += q.shape[0];
    }
    r.shape[0] = rows;
  }
  if (!joined.empty()) r.contributors = static_cast<int32_t>(by_rank.size());
  if (kind == OpKind::kAlltoall) r.shape[0] = 0;
  return r;
}

}  // namespace kolo
