// Alltoall of CPU tensors with per-rank split sizes along the first dimension.
#include "common/clock.h"
#include "comm/mpi/mpi_collectives.h"
#include "comm/mpi/mpi_status.h"
#include "cpu/host_memory.h"

namespace kolo {
namespace {

class MpiAlltoall : public Collective {
 public:
  explicit MpiAlltoall(const MpiContext& mpi) : mpi_(mpi) {}
  const char* name() const override { return "MPI_ALLTOALL"; }
  bool accepts(OpKind kind, DeviceType device) const override {
    return kind == OpKind::kAlltoall && device == DeviceType::kCPU;
  }

  Status run(CollectiveCall& call, PhaseLog& log, std::unique_ptr<Completion>*) override {
    Piece& p = call.pieces[0];
    const int size = mpi_.topology().size;
    const double t0 = steady_seconds();
    // Each rank learns how many rows it receives from each other rank.
    std::vector<int64_t> received(static_cast<size_t>(size));
    KOLO_MPI_RETURN_IF_ERROR(MPI_Alltoall(p.splits.data(), 1, MPI_INT64_T, received.data(), 1, MPI_INT64_T,
                                          mpi_.data()),
                             "MPI_Alltoall (split sizes)");
    std::vector<int64_t> shape = p.shape;
    int64_t rows = 0;
    for (int64_t n : received) rows += n;
    shape[0] = rows;
    Status s = call.allocate(0, shape, host_memory, &p.out);
    if (!s.ok()) return s;
    call.received_splits = received;

    int64_t row_elems = 1;
    for (size_t i = 1; i < shape.size(); ++i) row_elems *= shape[i];
    const int64_t row_bytes = row_elems * static_cast<int64_t>(dtype_size(call.dtype));
    if (row_bytes > 0) {
      VectorLayout send, recv;
      s = make_vector_layout(p.splits, row_bytes, p.name, &send);
      if (s.ok()) s = make_vector_layout(received, row_bytes, p.name, &recv);
      if (!s.ok()) return s;
      KOLO_MPI_RETURN_IF_ERROR(MPI_Alltoallv(p.in, send.counts.data(), send.displs.data(), send.type,
                                             p.out, recv.counts.data(), recv.displs.data(), recv.type,
                                             mpi_.data()),
                               "MPI_Alltoallv");
    }
    log.record(0, Phase::kCollective, t0, steady_seconds());
    return Status::OK();
  }

 private:
  const MpiContext& mpi_;
};

}  // namespace

std::unique_ptr<Collective> make_mpi_alltoall(const MpiContext& mpi) {
  return std::make_unique<MpiAlltoall>(mpi);
}

}  // namespace kolo
