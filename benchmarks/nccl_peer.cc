// gpu_allreduce's raw NCCL peer, and pinning ranks to GPUs as NCCL needs them (built with CUDA only).
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>
#include <sched.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "allreduce_peer.h"
#include "cuda/cuda_status.h"

namespace bench {
namespace {

// A nonblocking communicator's last call (ncclInProgress) is polled to its end, as kolo's is.
kolo::Status settle(ncclComm_t comm, ncclResult_t r, const char* what) {
  while (r == ncclInProgress) {
    sched_yield();
    if (ncclCommGetAsyncError(comm, &r) != ncclSuccess) return kolo::Status::Internal("ncclCommGetAsyncError failed");
  }
  return kolo::nccl_status(r, what, comm);
}

class NcclPeer : public AllreducePeer {
 public:
  NcclPeer(ncclComm_t comm, bool blocking) : comm_(comm), blocking_(blocking) {}
  // Every rank destroys its peer at the same point of the program, after its work has ended.
  ~NcclPeer() override { ncclCommDestroy(comm_); }
  std::string name() const override {
    return std::string("raw ncclAllReduce on the benchmark's own ") + (blocking_ ? "" : "nonblocking ") +
           "NCCL communicator and stream";
  }
  kolo::Status allreduce(const float* in, float* out, int64_t count, kolo::DeviceStream stream) override {
    return settle(comm_, ncclAllReduce(in, out, static_cast<size_t>(count), ncclFloat32, ncclSum, comm_,
                                       static_cast<cudaStream_t>(stream)),
                  "ncclAllReduce");
  }

 private:
  ncclComm_t comm_;
  bool blocking_;
};

}  // namespace

kolo::Status pin_gpu(int* ordinal) {
  int gpus = 0;
  const cudaError_t e = cudaGetDeviceCount(&gpus);
  if (e != cudaSuccess)
    return kolo::Status::Unsupported(std::string("no GPU is usable (cudaGetDeviceCount: ") + cudaGetErrorString(e) +
                                     ")");
  if (gpus == 0) return kolo::Status::Unsupported("no GPU is usable (no CUDA device)");
  int rank = 0, local_rank = 0, local_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm host;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host);
  MPI_Comm_rank(host, &local_rank);
  MPI_Comm_size(host, &local_size);
  MPI_Comm_free(&host);
  if (local_size > gpus && std::getenv("NCCL_HOSTID") == nullptr) {
    setenv("NCCL_HOSTID", ("kolo-bench-" + std::to_string(rank)).c_str(), 1);
    setenv("NCCL_SOCKET_IFNAME", "lo", 0);
  }
  *ordinal = local_rank % gpus;
  return kolo::Status::OK();
}

kolo::Status make_nccl_peer(int ordinal, bool blocking, std::unique_ptr<AllreducePeer>* out) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  kolo::Status made;
  if (rank == 0) made = kolo::nccl_status(ncclGetUniqueId(&id), "ncclGetUniqueId");
  // Rank 0's outcome first, so that no rank waits in ncclCommInitRank for an id that never comes.
  int ok = made.ok() ? 1 : 0;
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!ok) return made.ok() ? kolo::Status::Internal("rank 0 could not make an NCCL id") : made;
  MPI_Bcast(&id, static_cast<int>(sizeof id), MPI_BYTE, 0, MPI_COMM_WORLD);
  kolo::Status s = kolo::cuda_status(cudaSetDevice(ordinal), "cudaSetDevice(" + std::to_string(ordinal) + ")");
  if (!s.ok()) return s;
  ncclComm_t comm = nullptr;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = blocking ? 1 : 0;
  s = kolo::nccl_status(ncclCommInitRankConfig(&comm, size, id, rank, &config), "ncclCommInitRankConfig");
  if (s.ok() && !blocking) s = settle(comm, ncclInProgress, "ncclCommInitRankConfig");
  if (!s.ok()) return s;
  *out = std::make_unique<NcclPeer>(comm, blocking);
  return kolo::Status::OK();
}

}  // namespace bench
