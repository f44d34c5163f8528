#include "allreduce_peer.h"

#include <mpi.h>


namespace bench {
namespace {

class SeamPeer : public AllreducePeer {
 public:
  SeamPeer(std::string description, std::unique_ptr<kolo::DeviceComm> comm)
      : description_(std::move(description)), comm_(std::move(comm)) {}
  std::string name() const override { return "the device backend's own communicator (" + description_ + ")"; }
  kolo::Status allreduce(const float* in, float* out, int64_t count, kolo::DeviceStream stream) override {
    return comm_->allreduce(in, out, count, kolo::DataType::kFloat32, kolo::ReduceOp::kSum, stream);
  }

 private:
  std::string description_;
  std::unique_ptr<kolo::DeviceComm> comm_;
};

}  // namespace

kolo::Status make_seam_peer(kolo::DeviceBackend& backend, int ordinal, std::unique_ptr<AllreducePeer>* out) {
  kolo::CommMembers members;
  MPI_Comm_rank(MPI_COMM_WORLD, &members.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &members.size);
  const MPI_Comm world = MPI_COMM_WORLD;
  members.mpi_comm = &world;
  // Rank 0 makes the id and sends it; a length of -1 says it could not, so no rank waits for it.
  kolo::Status made;
  if (members.rank == 0) made = backend.unique_id(&members.id);
  int length = made.ok() ? static_cast<int>(members.id.size()) : -1;
  MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (length < 0) return made.ok() ? kolo::Status::Internal("rank 0 could not make a communicator id") : made;
  members.id.resize(static_cast<size_t>(length));
  MPI_Bcast(&members.id[0], length, MPI_BYTE, 0, MPI_COMM_WORLD);
  std::unique_ptr<kolo::DeviceComm> comm;
  kolo::Status s = backend.create_comm(ordinal, members, &comm);
  if (!s.ok()) return s;
  *out = std::make_unique<SeamPeer>(backend.description(), std::move(comm));
  return kolo::Status::OK();
}

}  // namespace bench
