// Reducescatter of CPU tensors: reduce everywhere, keep this rank's block of rows (through the host's shared
// memory where every rank is on one host).
#include <climits>
#include <string>

#include "common/clock.h"
#include "comm/host/host_collectives.h"
#include "comm/host/shm_reducer.h"
#include "cpu/kernels.h"

namespace kolo {
namespace {

class HostReducescatter : public Collective {
 public:
  explicit HostReducescatter(const Context& context)
      : context_(context), name_(collective_name(context, "REDUCE_SCATTER")) {}
  const char* name() const override { return name_.c_str(); }
  bool accepts(OpKind kind, DeviceType device) const override {
    return kind == OpKind::kReducescatter && device == DeviceType::kCPU;
  }

  Status run(CollectiveCall& call, PhaseLog& log, std::unique_ptr<Completion>*) override {
    const Piece& p = call.pieces[0];
    const int size = context_.topology().size;
    const DataType dtype = call.dtype;
    int64_t row_elems = 1;
    for (size_t i = 1; i < call.shape.size(); ++i) row_elems *= call.shape[i];
    std::vector<int64_t> counts(static_cast<size_t>(size));
    for (int q = 0; q < size; ++q) counts[static_cast<size_t>(q)] = reducescatter_rows(call.shape[0], q, size) * row_elems;
    const void* send = p.in;
    const bool prescaled = call.prescale != 1.0;
    if (prescaled) {
      // The input is the caller's: scale a copy.
      scratch_.resize(static_cast<size_t>(call.size_bytes()));
      scale_into(dtype, p.in, scratch_.data(), call.num_elements(), Scaling{call.prescale, 1});
      send = scratch_.data();
    }
    const double t0 = steady_seconds();
    ShmGroup* shm = on_one_host_shm(context_, row_elems * static_cast<int64_t>(dtype_size(dtype)));
    if (shm != nullptr) {
      // Rows as the group's elements: its blocks are reducescatter_rows' (common/blocks.h).
      const HostReduceInto reduce(dtype, call.reduce_op);
      Status s = shm->reduce_scatter(static_cast<const char*>(send), static_cast<char*>(p.out), call.shape[0],
                                     static_cast<size_t>(row_elems) * dtype_size(dtype), reduce);
      if (!s.ok()) return s;
    } else {
      const std::string what = "reducescatter of tensor '" + p.name + "'";
      Status s = context_.data().reduce_scatter(send, p.out, counts, dtype, call.reduce_op, what.c_str());
      if (!s.ok()) return s;
    }
    const Scaling post = post_scaling(dtype, call.reduce_op, call.postscale, size);
    const int me = context_.topology().rank;
    scale_into(dtype, p.out, p.out, counts[me], post);
    log.record(0, Phase::kCollective, t0, steady_seconds());
    return Status::OK();
  }

 private:
  const Context& context_;
  const std::string name_;
  std::vector<char> scratch_;
};

}  // namespace

std::unique_ptr<Collective> make_host_reducescatter(const Context& context) {
  return std::make_unique<HostReducescatter>(context);
}

}  // namespace kolo
