// Allgather of CPU tensors whose first dimension may differ per rank.
#include "common/clock.h"
#include "comm/mpi/mpi_collectives.h"
#include "comm/mpi/mpi_status.h"
#include "cpu/host_memory.h"

namespace kolo {
namespace {

class MpiAllgather : public Collective {
 public:
  explicit MpiAllgather(const MpiContext& mpi) : mpi_(mpi) {}
  const char* name() const override { return "MPI_ALLGATHER"; }
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
    VectorLayout layout;
    s = make_vector_layout(call.first_dims, row_bytes, p.name, &layout);
    if (!s.ok()) return s;
    const int me = mpi_.topology().rank;
    const double t0 = steady_seconds();
    KOLO_MPI_RETURN_IF_ERROR(MPI_Allgatherv(p.in, layout.counts[me], layout.type, p.out,
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
