// Reducescatter of CPU tensors: reduce everywhere, keep this rank's block of rows (through the host's shared
// memory where every rank is on one host).
#include <climits>

#include "common/clock.h"
#include "comm/mpi/mpi_collectives.h"
#include "comm/mpi/mpi_status.h"
#include "comm/mpi/shm_reducer.h"
#include "cpu/kernels.h"

namespace kolo {
namespace {

class MpiReducescatter : public Collective {
 public:
  explicit MpiReducescatter(const MpiContext& mpi) : mpi_(mpi) {}
  const char* name() const override { return "MPI_REDUCE_SCATTER"; }
  bool accepts(OpKind kind, DeviceType device) const override {
    return kind == OpKind::kReducescatter && device == DeviceType::kCPU;
  }

  Status run(CollectiveCall& call, PhaseLog& log, std::unique_ptr<Completion>*) override {
    const Piece& p = call.pieces[0];
    const int size = mpi_.topology().size;
    const DataType dtype = call.dtype;
    int64_t row_elems = 1;
    for (size_t i = 1; i < call.shape.size(); ++i) row_elems *= call.shape[i];
    std::vector<int> counts(static_cast<size_t>(size));
    for (int q = 0; q < size; ++q) {
      const int64_t n = reducescatter_rows(call.shape[0], q, size) * row_elems;
      if (n > INT_MAX) {
        return Status::Unsupported("tensor '" + p.name + "' is too large for MPI's int counts");
      }
      counts[q] = static_cast<int>(n);
    }
    const void* send = p.in;
    const bool prescaled = call.prescale != 1.0;
    if (prescaled) {
      // The input is the caller's: scale a copy.
      scratch_.resize(static_cast<size_t>(call.size_bytes()));
      scale_into(dtype, p.in, scratch_.data(), call.num_elements(), Scaling{call.prescale, 1});
      send = scratch_.data();
    }
    const double t0 = steady_seconds();
    ShmGroup* shm = on_one_host_shm(mpi_, row_elems * static_cast<int64_t>(dtype_size(dtype)));
    if (shm != nullptr) {
      // Rows as the group's elements: its blocks are reducescatter_rows' (common/blocks.h).
      const MpiReduceInto reduce(mpi_.datatype(dtype), mpi_.op(dtype, call.reduce_op));
      Status s = shm->reduce_scatter(static_cast<const char*>(send), static_cast<char*>(p.out), call.shape[0],
                                     static_cast<size_t>(row_elems) * dtype_size(dtype), reduce);
      if (!s.ok()) return s;
    } else {
      KOLO_MPI_RETURN_IF_ERROR(MPI_Reduce_scatter(send, p.out, counts.data(), mpi_.datatype(dtype),
                                                  mpi_.op(dtype, call.reduce_op), mpi_.data()),
                               "MPI_Reduce_scatter");
    }
    const Scaling post = post_scaling(dtype, call.reduce_op, call.postscale, size);
    const int me = mpi_.topology().rank;
    scale_into(dtype, p.out, p.out, counts[me], post);
    log.record(0, Phase::kCollective, t0, steady_seconds());
    return Status::OK();
  }

 private:
  const MpiContext& mpi_;
  std::vector<char> scratch_;
};

}  // namespace

std::unique_ptr<Collective> make_mpi_reducescatter(const MpiContext& mpi) {
  return std::make_unique<MpiReducescatter>(mpi);
}

}  // namespace kolo
