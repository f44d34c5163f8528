// Allgather of CPU tensors whose first dimension may differ per rank (through the host's shared memory where
// every rank is on one host and each holds its block of the rows).
#include "common/clock.h"
#include "comm/mpi/mpi_collectives.h"
#include "common/blocks.h"
#include "comm/mpi/mpi_status.h"
#include "comm/mpi/shm_reducer.h"
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
    ShmGroup* shm = on_one_host_shm(mpi_, row_bytes);
    if (shm != nullptr && rows_are_blocks(call.first_dims, total_rows)) {
      s = shm->allgather(static_cast<const char*>(p.in), static_cast<char*>(p.out), total_rows,
                         static_cast<size_t>(row_bytes));
      if (!s.ok()) return s;
    } else {
      // An input that is already the output's own block (an allgather into the caller's memory) is
      // MPI's in place.
      int64_t own_offset = 0;
      for (int q = 0; q < me; ++q) own_offset += call.first_dims[static_cast<size_t>(q)] * row_bytes;
      const void* send = static_cast<const char*>(p.out) + own_offset == p.in ? MPI_IN_PLACE : p.in;
      KOLO_MPI_RETURN_IF_ERROR(MPI_Allgatherv(send, layout.counts[me], layout.type, p.out,
                                              layout.counts.data(), layout.displs.data(), layout.type,
                                              mpi_.data()),
                               "MPI_Allgatherv");
    }
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
