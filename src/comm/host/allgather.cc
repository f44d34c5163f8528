// Allgather of CPU tensors whose first dimension may differ per rank (through the host's shared memory where
// every rank is on one host and each holds its block of the rows).
#include <string>

#include "common/blocks.h"
#include "common/clock.h"
#include "comm/host/host_collectives.h"
#include "comm/host/shm_reducer.h"
#include "cpu/host_memory.h"

namespace kolo {
namespace {

// Whether every rank's rows are its block of the whole (common/blocks.h), as a reducescatter leaves them
// (a sharded optimizer's parameters): the shared-memory group gathers those.
bool rows_are_blocks(const std::vector<int64_t>& rows, int64_t total) {
  const int size = static_cast<int>(rows.size());
  for (int i = 0; i < size; ++i) {
    if (rows[static_cast<size_t>(i)] != block_count(total, size, i)) return false;
  }
  return true;
}

class HostAllgather : public Collective {
 public:
  explicit HostAllgather(const Context& context)
      : context_(context), name_(collective_name(context, "ALLGATHER")) {}
  const char* name() const override { return name_.c_str(); }
  bool accepts(OpKind kind, DeviceType device) const override {
    return kind == OpKind::kAllgather && device == DeviceType::kCPU;
  }

  Status run(CollectiveCall& call, PhaseLog& log, std::unique_ptr<Completion>*) override {
    Piece& p = call.pieces[0];
    Status s = call.allocate(0, call.shape, host_memory, &p.out);
    if (!s.ok()) return s;
    const int64_t total_rows = call.shape[0];
    const int64_t row_bytes = total_rows == 0 ? 0 : call.size_bytes() / total_rows;
    if (call.size_bytes() == 0) return Status::OK();
    const double t0 = steady_seconds();
    ShmGroup* shm = on_one_host_shm(context_, row_bytes);
    if (shm != nullptr && rows_are_blocks(call.first_dims, total_rows)) {
      s = shm->allgather(static_cast<const char*>(p.in), static_cast<char*>(p.out), total_rows,
                         static_cast<size_t>(row_bytes));
    } else {
      const std::string what = "allgather of tensor '" + p.name + "'";
      s = context_.data().allgatherv(p.in, p.out, call.first_dims, row_bytes, what.c_str());
    }
    if (!s.ok()) return s;
    log.record(0, Phase::kCollective, t0, steady_seconds());
    return Status::OK();
  }

 private:
  const Context& context_;
  const std::string name_;
};

}  // namespace

std::unique_ptr<Collective> make_host_allgather(const Context& context) {
  return std::make_unique<HostAllgather>(context);
}

}  // namespace kolo
