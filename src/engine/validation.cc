#include "engine/validation.h"

#include <cmath>

namespace kolo {
namespace {

constexpr size_t kMaxDims = 64;  // the wire format's limit

std::string where(const CallSite& c) {
  return std::string(op_kind_name(c.kind)) + " of tensor '" + c.name + "' on rank " +
         std::to_string(c.job_rank >= 0 ? c.job_rank : c.rank) + ": ";
}

Status invalid(const CallSite& c, const std::string& what) { return Status::InvalidArgument(where(c) + what); }

Status check_view(const CallSite& c, const char* role, const TensorView& v) {
  if (!dtype_is_valid(v.dtype)) {
    return invalid(c, std::string(role) + " has an unsupported dtype (" + std::to_string(static_cast<int>(v.dtype)) +
                          "); kolo supports uint8, int8, uint16, int16, int32, int64, float16, bfloat16, float32, float64, bool");
  }
  if (v.shape.size() > kMaxDims) return invalid(c, std::string(role) + " has more than 64 dimensions");
  for (int64_t d : v.shape) {
    if (d < 0) return invalid(c, std::string(role) + " has a negative dimension in shape " + shape_string(v.shape));
  }
  if (!v.is_contiguous()) {
    return invalid(c, std::string(role) + " is not contiguous (shape " + shape_string(v.shape) + ", strides " +
                          shape_string(v.strides) + "); make a contiguous copy first");
  }
  if (v.data == nullptr && v.num_elements() > 0) {
    return invalid(c, std::string(role) + " has a null data pointer but " + std::to_string(v.num_elements()) +
                          " elements");
  }
  if (v.device.type == DeviceType::kCUDA && (c.collectives == nullptr || !c.collectives->supports(c.kind, v.device.type))) {
    const std::string why = c.collectives == nullptr ? "this kolo has no GPU support"
                                                     : c.collectives->unsupported_reason(v.device.type);
    return Status::Unsupported(where(c) + std::string(role) + " is on cuda:" + std::to_string(v.device.index) +
                               ", but " + why + "; use CPU tensors");
  }
  if (v.device.type != DeviceType::kCPU && v.device.type != DeviceType::kCUDA) {
    return invalid(c, std::string(role) + " has an unknown device type");
  }
  return Status::OK();
}

Status check_reduction(const CallSite& c, DataType dtype, ReduceOp op, double prescale, double postscale) {
  const int o = static_cast<int>(op);
  if (o < 0 || o >= kNumReduceOps) {
    return invalid(c, "unknown reduce op " + std::to_string(o));
  }
  if (op == ReduceOp::kAdasum && !dtype_is_floating(dtype)) {
    return invalid(c, std::string("Adasum combines floating-point tensors (float16, bfloat16, float32, float64), not ") +
                          dtype_name(dtype));
  }
  if (!std::isfinite(prescale) || !std::isfinite(postscale)) {
    return invalid(c, "scale factors must be finite numbers");
  }
  if (dtype == DataType::kBool && (prescale != 1.0 || postscale != 1.0)) {
    return invalid(c, "prescale and postscale factors do not apply to bool tensors (their reductions are logical)");
  }
  return Status::OK();
}

bool overlaps_partly(const TensorView& a, const TensorView& b) {
  if (a.data == b.data || a.data == nullptr || b.data == nullptr) return false;
  const char* a0 = static_cast<const char*>(a.data);
  const char* b0 = static_cast<const char*>(b.data);
  return a0 < b0 + b.size_bytes() && b0 < a0 + a.size_bytes();
}

Status check_output_like_input(const CallSite& c, const TensorView& in, const TensorView& out) {
  if (out.dtype != in.dtype) {
    return invalid(c, std::string("output dtype ") + dtype_name(out.dtype) + " differs from input dtype " +
                          dtype_name(in.dtype));
  }
  if (out.shape != in.shape) {
    return invalid(c, "output shape " + shape_string(out.shape) + " differs from input shape " + shape_string(in.shape));
  }
  if (out.device != in.device) return invalid(c, "output and input are on different devices");
  if (overlaps_partly(in, out)) {
    return invalid(c, "output overlaps the input without being the same memory; pass the same view for in place");
  }
  return Status::OK();
}

}  // namespace

Status validate_allreduce(const CallSite& c, const TensorView& in, const TensorView& out, ReduceOp op,
                          double prescale, double postscale, Compression compression) {
  Status s = check_view(c, "input", in);
  // In place with the same view (the usual in-place call): nothing more to check of the output.
  const bool same = &out == &in || (out.data == in.data && out.dtype == in.dtype && out.device == in.device &&
                                    out.shape == in.shape && out.strides == in.strides);
  if (!same) {
    if (s.ok()) s = check_view(c, "output", out);
    if (s.ok()) s = check_output_like_input(c, in, out);
  }
  if (s.ok()) s = check_reduction(c, in.dtype, op, prescale, postscale);
  const int k = static_cast<int>(compression);
  if (s.ok() && (k < 0 || k >= kNumCompressions)) s = invalid(c, "unknown compression " + std::to_string(k));
  if (s.ok() && op == ReduceOp::kAdasum) {
    if (compression != Compression::kNone) {
      return invalid(c, "compression does not apply to Adasum (it combines the tensors in their own dtype); "
                        "compress the tensor itself, e.g. to float16");
    }
    if (in.device.type == DeviceType::kCUDA && !c.collectives->supports(c.kind, in.device.type, op)) {
      return Status::Unsupported(where(c) + "Adasum on GPU tensors: " + c.collectives->unsupported_reason(in.device.type));
    }
  }
  return s;
}

Status validate_allgather(const CallSite& c, const TensorView& in) {
  Status s = check_view(c, "input", in);
  if (s.ok() && in.shape.empty()) return invalid(c, "input needs at least one dimension (rows to gather)");
  return s;
}

Status validate_broadcast(const CallSite& c, const TensorView& in, const TensorView& out, int root) {
  if (root < 0 || root >= c.size) {
    return invalid(c, "root rank " + std::to_string(root) + " is outside 0.." + std::to_string(c.size - 1));
  }
  Status s = check_view(c, "input", in);
  if (s.ok()) s = check_view(c, "output", out);
  if (s.ok()) s = check_output_like_input(c, in, out);
  return s;
}

Status validate_alltoall(const CallSite& c, const TensorView& in, std::vector<int64_t>* splits) {
  Status s = check_view(c, "input", in);
  if (!s.ok()) return s;
  if (in.shape.empty()) return invalid(c, "input needs at least one dimension (rows to send)");
  const int64_t rows = in.shape[0];
  if (splits->empty()) {
    if (rows % c.size != 0) {
      return invalid(c, "without splits the first dimension (" + std::to_string(rows) +
                            ") must divide by the number of ranks (" + std::to_string(c.size) + ")");
    }
    splits->assign(static_cast<size_t>(c.size), rows / c.size);
    return Status::OK();
  }
  if (splits->size() != static_cast<size_t>(c.size)) {
    return invalid(c, "got " + std::to_string(splits->size()) + " split sizes for " + std::to_string(c.size) + " ranks");
  }
  int64_t sum = 0;
  for (int64_t n : *splits) {
    if (n < 0) return invalid(c, "split sizes must not be negative");
    sum += n;
  }
  if (sum != rows) {
    return invalid(c, "split sizes add up to " + std::to_string(sum) + ", but the first dimension is " +
                          std::to_string(rows));
  }
  return Status::OK();
}

Status validate_reducescatter(const CallSite& c, const TensorView& in, const TensorView& out, ReduceOp op,
                              double prescale, double postscale, Compression compression) {
  if (compression != Compression::kNone) return invalid(c, "compression applies to allreduce only");
  if (op == ReduceOp::kAdasum) return invalid(c, "Adasum applies to allreduce only");
  Status s = check_view(c, "input", in);
  if (s.ok()) s = check_view(c, "output", out);
  if (s.ok()) s = check_reduction(c, in.dtype, op, prescale, postscale);
  if (!s.ok()) return s;
  if (in.shape.empty()) return invalid(c, "input needs at least one dimension (rows to scatter)");
  std::vector<int64_t> expected = in.shape;
  expected[0] = reducescatter_rows(in.shape[0], c.rank, c.size);
  if (out.dtype != in.dtype) return invalid(c, "output dtype differs from input dtype");
  if (out.device != in.device) return invalid(c, "output and input are on different devices");
  if (out.shape != expected) {
    return invalid(c, "output shape " + shape_string(out.shape) + " should be " + shape_string(expected) +
                          " (this rank's block of rows)");
  }
  if (out.data != nullptr && out.data == in.data && out.size_bytes() > 0) {
    return invalid(c, "reducescatter cannot run in place: give a separate output");
  }
  if (overlaps_partly(in, out)) return invalid(c, "output overlaps the input");
  return Status::OK();
}

}  // namespace kolo
