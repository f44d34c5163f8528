// The raw collective gpu_allreduce measures kolo against, on the same buffers in the same run: NCCL
// itself on a communicator of the benchmark's own (CUDA), or the host double's own communicator. Each
// is made collectively over MPI_COMM_WORLD, before kolo makes its own.
#pragma once

#include <memory>
#include <string>

#include "comm/device/device.h"

namespace bench {

class AllreducePeer {
 public:
  virtual ~AllreducePeer() = default;
  // Which peer ran, for the output.
  virtual std::string name() const = 0;
  // The sum over every rank of `count` floats, enqueued on `stream`.
  virtual kolo::Status allreduce(const float* in, float* out, int64_t count, kolo::DeviceStream stream) = 0;
};

// A communicator of the device backend over every rank, made as kolo's device context makes its own
// (comm/device/device_context.cc): for the host double, its communicator over MPI.
kolo::Status make_seam_peer(kolo::DeviceBackend& backend, int ordinal, std::unique_ptr<AllreducePeer>* out);

#if KOLO_HAVE_CUDA
// The GPU of this rank: its index among the ranks of its host, modulo the GPUs. Where a host's ranks
// outnumber its GPUs, each rank also claims an NCCL host of its own (NCCL_HOSTID, and sockets over
// lo), since NCCL refuses two ranks on one GPU of one host; so this comes before any NCCL call.
kolo::Status pin_gpu(int* ordinal);
// ncclAllReduce on an NCCL communicator of its own over every rank: ncclGetUniqueId on rank 0, sent
// with MPI_Bcast, then ncclCommInitRankConfig on `ordinal`. `blocking` false: a nonblocking
// communicator, each call polled to its end (ncclCommGetAsyncError), as kolo's are.
kolo::Status make_nccl_peer(int ordinal, bool blocking, std::unique_ptr<AllreducePeer>* out);
#endif

}  // namespace bench
