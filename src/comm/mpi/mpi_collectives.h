// The MPI implementations of kolo's collectives, for CPU tensors. One file each.
#pragma once

#include <cstdint>
#include <memory>

#include "comm/collective.h"
#include "comm/mpi/mpi_context.h"

namespace kolo {

std::unique_ptr<Collective> make_mpi_allreduce(const MpiContext& mpi, const CollectiveTuning& tuning);
std::unique_ptr<Collective> make_mpi_hierarchical_allreduce(const MpiContext& mpi, const CollectiveTuning& tuning);
// Adasum (ReduceOp::kAdasum), registered beside the allreduce: the registry gives it only Adasum ops.
std::unique_ptr<Collective> make_mpi_adasum(const MpiContext& mpi);
std::unique_ptr<Collective> make_mpi_allgather(const MpiContext& mpi);
std::unique_ptr<Collective> make_mpi_hierarchical_allgather(const MpiContext& mpi);
std::unique_ptr<Collective> make_mpi_broadcast(const MpiContext& mpi, const CollectiveTuning& tuning);
std::unique_ptr<Collective> make_mpi_alltoall(const MpiContext& mpi);
std::unique_ptr<Collective> make_mpi_reducescatter(const MpiContext& mpi);

// Byte counts and displacements for the v-collectives, in units MPI's int can hold: bytes when
// everything fits, else rows of `row_bytes` through a contiguous datatype.
struct VectorLayout {
  MPI_Datatype type = MPI_BYTE;
  bool owns_type = false;
  std::vector<int> counts, displs;
  ~VectorLayout();
};
// `rows[r]`: rows for rank r. Fails when even rows do not fit an int.
Status make_vector_layout(const std::vector<int64_t>& rows, int64_t row_bytes, const std::string& name,
                          VectorLayout* layout);

}  // namespace kolo
