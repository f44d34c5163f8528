#include "engine/tensor_entry.h"

#include <cstdlib>
#include <memory>

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
      return Status(s.code(), "allocating the output of tensor '" + name + "': " + s.message());
    }
    if (out.shape != shape || out.dtype != e.input.dtype || out.device != e.input.device ||
        !out.is_contiguous() || (out.data == nullptr && out.size_bytes() > 0)) {
      return Status::InvalidArgument("the output allocator of tensor '" + name +
                                     "' returned memory that is not a contiguous " +
                                     dtype_name(e.input.dtype) + " tensor of shape " +
                                     shape_string(shape) + " on the input's device");
    }
  } else {
    if (e.input.device.type != DeviceType::kCPU) {
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
  }
  e.output = out;
  e.result.view = out;
  return Status::OK();
}

}  // namespace kolo
