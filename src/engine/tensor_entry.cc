#include "engine/tensor_entry.h"

#include "common/reuse.h"

namespace kolo {

void reset_for_reuse(TensorEntry* e) {
  // Member by member, not a fresh TensorEntry moved in: this runs once per op.
  reset_keeping(e->request, &Request::name, &Request::shape);
  reset_keeping(e->input, &TensorView::shape, &TensorView::strides);
  reset_keeping(e->output, &TensorView::shape, &TensorView::strides);
  e->splits.clear();
  e->allocate = nullptr;
  e->handle = 0;
  e->enqueued_at = 0.0;
  e->ready_event = nullptr;
  e->ready_owner.reset();
  e->result = Output();
  e->deferred_error = Status();
}

Status allocate_output(TensorEntry& e, const std::vector<int64_t>& shape, const OwnMemory& own) {
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
    e.deferred_error = s;
    out = TensorView{};
    out.dtype = e.input.dtype;
    out.device = e.input.device;
    out.shape = shape;
  }
  std::shared_ptr<void> storage;
  Status s = own(out.size_bytes(), &storage);
  if (!s.ok()) return Status(s.code(), "allocating the output of tensor '" + name + "': " + s.message());
  e.result.storage = storage;
  out.data = storage.get();
  e.output = out;
  e.result.view = out;
  return Status::OK();
}

}  // namespace kolo
