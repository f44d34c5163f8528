// What ranks tell each other while negotiating: a Request says "this rank has submitted this op",
// a Response says "every rank has; run it" (or "they disagree; fail it").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/op_kind.h"
#include "kolo/types.h"

namespace kolo {

struct Request {
  std::string name;
  int32_t rank = 0;
  OpKind kind = OpKind::kAllreduce;
  DataType dtype = DataType::kFloat32;
  DeviceType device = DeviceType::kCPU;
  ReduceOp reduce_op = ReduceOp::kSum;
  int32_t root = 0;
  double prescale = 1.0;
  double postscale = 1.0;
  Compression compression = Compression::kNone;
  std::vector<int64_t> shape;
  // How long this rank has already waited on the op when it reaches the coordinator (a request can
  // first sit in the response cache), so the stall inspector measures from the true start.
  double waited_seconds = 0.0;
};

struct Response {
  enum class Type : uint8_t { kOk = 0, kError = 1 };
  Type type = Type::kOk;
  std::string name;
  OpKind kind = OpKind::kAllreduce;
  DataType dtype = DataType::kFloat32;
  DeviceType device = DeviceType::kCPU;
  ReduceOp reduce_op = ReduceOp::kSum;
  int32_t root = 0;
  double prescale = 1.0;
  double postscale = 1.0;
  Compression compression = Compression::kNone;
  // Allreduce, broadcast, reducescatter: the common input shape. Allgather: the output shape.
  // Alltoall: the trailing dimensions with the first set to 0 (rows are exchanged at run time).
  std::vector<int64_t> shape;
  std::vector<int64_t> first_dims;  // allgather: rows contributed by each rank
  // Ranks that submitted the op when others had joined (those contribute the op's identity, and an
  // Average divides by this); 0: every rank. Join: root holds the last rank to join.
  int32_t contributors = 0;
  std::string error;                // kError: why, naming the tensor and the ranks
  StatusCode error_code = StatusCode::kMismatch;  // kError: what the failed op's handle reports

  bool ok() const { return type == Type::kOk; }
  int64_t num_elements() const;
  int64_t size_bytes() const;
};

// Whether a rank's new request asks for exactly what a cached response did, so it may reuse it.
bool request_matches_response(const Request& request, const Response& response);

}  // namespace kolo
