// Alltoall of CPU tensors with per-rank split sizes along the first dimension.
#include <string>

#include "common/clock.h"
#include "comm/host/host_collectives.h"
#include "cpu/host_memory.h"

namespace kolo {
namespace {

class HostAlltoall : public Collective {
 public:
  explicit HostAlltoall(const Context& context) : context_(context), name_(collective_name(context, "ALLTOALL")) {}
  const char* name() const override { return name_.c_str(); }
  bool accepts(OpKind kind, DeviceType device) const override {
    return kind == OpKind::kAlltoall && device == DeviceType::kCPU;
  }

  Status run(CollectiveCall& call, PhaseLog& log, std::unique_ptr<Completion>*) override {
    Piece& p = call.pieces[0];
    const int size = context_.topology().size;
    const double t0 = steady_seconds();
    // Each rank learns how many rows it receives from each other rank.
    std::vector<int64_t> received(static_cast<size_t>(size));
    const std::vector<int64_t> ones(static_cast<size_t>(size), 1);
    const std::string what = "alltoall of tensor '" + p.name + "'";
    Status s = context_.data().alltoallv(p.splits.data(), ones, received.data(), ones, sizeof(int64_t),
                                         (what + " (split sizes)").c_str());
    if (!s.ok()) return s;
    std::vector<int64_t> shape = p.shape;
    int64_t rows = 0;
    for (int64_t n : received) rows += n;
    shape[0] = rows;
    s = call.allocate(0, shape, host_memory, &p.out);
    if (!s.ok()) return s;
    call.received_splits = received;

    int64_t row_elems = 1;
    for (size_t i = 1; i < shape.size(); ++i) row_elems *= shape[i];
    const int64_t row_bytes = row_elems * static_cast<int64_t>(dtype_size(call.dtype));
    if (row_bytes > 0) {
      s = context_.data().alltoallv(p.in, p.splits, p.out, received, row_bytes, what.c_str());
      if (!s.ok()) return s;
    }
    log.record(0, Phase::kCollective, t0, steady_seconds());
    return Status::OK();
  }

 private:
  const Context& context_;
  const std::string name_;
};

}  // namespace

std::unique_ptr<Collective> make_host_alltoall(const Context& context) {
  return std::make_unique<HostAlltoall>(context);
}

}  // namespace kolo
