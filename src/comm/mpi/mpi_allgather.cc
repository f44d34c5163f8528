// Allgather of CPU tensors whose first dimension may differ per rank.
#include "common/clock.h"
#include "comm/mpi/mpi_collectives.h"
#include "comm/mpi/mpi_status.h"

namespace kolo {
namespace {

class MpiAllgather : public Collective {
 public:
  explicit MpiAllgather(const MpiContext& mpi) : mpi_(mpi) {}
  const char* name() const override { return "MPI_ALLGATHER"; }
  bool accepts(const Response& r) const override {
    return r.kind == OpKind::kAllgather && r.device == DeviceType::kCPU;
  }

  Status run(const std::vector<Task>& tasks, PhaseLog& log) override {
    const Response& r = *tasks[0].response;
    TensorEntry& e = *tasks[0].entry;
    Status s = allocate_output(e, r.shape);
    if (!s.ok()) return s;
    const int64_t total_rows = r.shape[0];
    const int64_t row_bytes = total_rows == 0 ? 0 : r.size_bytes() / total_rows;
    if (r.size_bytes() == 0) return Status::OK();
    VectorLayout layout;
    s = make_vector_layout(r.first_dims, row_bytes, r.name, &layout);
    if (!s.ok()) return s;
    const int me = mpi_.topology().rank;
    const double t0 = steady_seconds();
    KOLO_MPI_RETURN_IF_ERROR(MPI_Allgatherv(e.input.data, layout.counts[me], layout.type, e.output.data,
                                            layout.counts.data(), layout.displs.data(), layout.type,
                                            mpi_.data()),
                             "MPI_Allgatherv");
    log.record(0, Phase::kCollective, t0, steady_seconds());
    return Status::OK();
  }

 private:
  const MpiContext& mpi_;
};

}  // namespace

std::unique_ptr<Collective> make_mpi_allgather(const MpiContext& mpi) {
  return std::make_unique<MpiAllgather>(mpi);
}

}  // namespace kolo
