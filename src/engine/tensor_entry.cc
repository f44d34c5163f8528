#include "engine/tensor_entry.h"

#include <cstdlib>
#include <memory>

#include "cpu/kernels.h"

namespace kolo {

Status allocate_output(TensorEntry& e, const std::vector<int64_t>& shape) {
  const std::string& name = e.request.name;
  TensorView out;
  out.dtype = e.input.dtype;
  out.device = e.input.device;
  out.shape = shape;
  if (e.allocate) {
    Status s = e.allocate(shape, &out);
    if (!s.ok()) {
      s = Status(s.code(), "allocating the output of tensor '" + name + "': " + s.message());
    } else if (out.shape != shape || out.dtype != e.input.dtype || out.device != e.input.device ||
               !out.is_contiguous() || (out.data == nullptr && out.size_bytes() > 0)) {
      s = Status::InvalidArgument("the output allocator of tensor '" + name +
                                  "' returned memory that is not a contiguous " + dtype_name(e.input.dtype) +
                                  " tensor of shape " + shape_string(shape) + " on the input's device");
    }
    if (s.ok()) {
      e.output = out;
      e.result.view = out;
      return Status::OK();
    }
    // The other ranks run the collective regardless: this rank takes part into memory of kolo's
    // own and fails the op afterwards, so the ranks' collectives stay in step.
    if (e.input.device.type != DeviceType::kCPU) return s;
    e.deferred_error = s;
    out = TensorView{};
    out.dtype = e.input.dtype;
    out.device = e.input.device;
    out.shape = shape;
  } else if (e.input.device.type != DeviceType::kCPU) {
    return Status::Unsupported("tensor '" + name + "': kolo allocates outputs on the CPU only; "
                               "pass an OutputAllocator for device tensors");
  }
  // 64-byte aligned, never null, so even an empty result has a valid pointer.
  const size_t bytes = (static_cast<size_t>(out.size_bytes()) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, bytes == 0 ? 64 : bytes);
  if (p == nullptr) {
    return Status::Internal("out of memory allocating " + std::to_string(out.size_bytes()) +
                            " bytes for the output of tensor '" + name + "'");
  }
  e.result.storage = std::shared_ptr<void>(p, std::free);
  out.data = p;
  e.output = out;
  e.result.view = out;
  return Status::OK();
}

Status make_stand_in(const Response& r, int rank, std::unique_ptr<TensorEntry>* out) {
  auto e = std::make_unique<TensorEntry>();
  e->request.name = r.name;
  e->request.rank = rank;
  e->request.kind = r.kind;
  e->request.dtype = r.dtype;
  e->request.device = r.device;
  e->input.dtype = r.dtype;
  e->input.device.type = r.device;
  if (r.device != DeviceType::kCPU) {
    return Status::Unsupported("a joined rank cannot take part in GPU op '" + r.name + "' yet");
  }
  switch (r.kind) {
    case OpKind::kAllreduce:
    case OpKind::kBroadcast: {
      e->input.shape = r.shape;
      Status s = allocate_output(*e, r.shape);
      if (!s.ok()) return s;
      e->input.data = e->output.data;
      if (r.kind == OpKind::kAllreduce) fill_identity(r.dtype, r.reduce_op, e->input.data, r.num_elements());
      break;
    }
    case OpKind::kAllgather:
      e->input.shape = r.shape;
      e->input.shape[0] = 0;
      break;
    case OpKind::kBarrier:
      break;
    default:
      return Status::Internal(std::string("a joined rank cannot take part in ") + op_kind_name(r.kind));
  }
  *out = std::move(e);
  return Status::OK();
}

}  // namespace kolo
