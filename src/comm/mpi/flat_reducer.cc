#include "comm/mpi/flat_reducer.h"

#include <cstring>

#include "comm/mpi/mpi_status.h"
#include "comm/mpi/recursive_doubling.h"
#include "comm/mpi/ring_allreduce.h"

namespace kolo {

Status FlatReducer::start(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op) {
  int elem = 0;
  MPI_Type_size(type, &elem);
  const size_t bytes = static_cast<size_t>(count) * static_cast<size_t>(elem);
  const AllreduceAlgorithm algorithm = choose_allreduce(DeviceType::kCPU, static_cast<int64_t>(bytes), job_, false);
  if (algorithm == AllreduceAlgorithm::kMpiAllreduce) {
    KOLO_MPI_RETURN_IF_ERROR(MPI_Allreduce(send, recv, count, type, op, comm_), "MPI_Allreduce");
    return Status::OK();
  }
  if (send != MPI_IN_PLACE) std::memcpy(recv, send, bytes);
  const CombineBytes combine = combine_with(type, op);
  if (algorithm == AllreduceAlgorithm::kRecursiveDoubling) {
    if (scratch_.size() < bytes) scratch_.resize(bytes);
    return recursive_doubling_allreduce(comm_, rank_, size_, kTag, static_cast<char*>(recv), scratch_.data(), bytes,
                                        combine, "allreduce (recursive doubling)");
  }
  const size_t scratch = ring_scratch_bytes(count, static_cast<size_t>(elem), size_);
  if (scratch_.size() < scratch) scratch_.resize(scratch);
  return ring_allreduce(comm_, rank_, size_, kTag, static_cast<char*>(recv), scratch_.data(), count,
                        static_cast<size_t>(elem), combine, "allreduce (ring)");
}

}  // namespace kolo
