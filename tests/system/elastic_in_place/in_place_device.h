// What device_in_place (tests/system/elastic_in_place/device_in_place.cc) runs on: the host double (the default, as
// the in-place suite in CI) or CUDA + NCCL (cuda_in_place.cc, built with KOLO_HAVE_CUDA). The program
// reaches device memory, streams and events through the device seam only; this adds the little the
// seam does not have.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "comm/device/device.h"

namespace kolo {
namespace testing {

struct InPlaceDevice {
  std::shared_ptr<DeviceBackend> backend;
  int ordinal = 0;   // the GPU this rank's tensors are on
  std::string what;  // for the log: "host double", "CUDA 13.0, NCCL 2.28.9; 1 GPU: NVIDIA H100 80GB HBM3"
  // Runs `work` on the host in `stream`'s order: what is enqueued on the stream later starts after it
  // has returned (a host function on CUDA, the stream's worker on the double).
  std::function<Status(DeviceStream, std::function<void()>)> on_stream;
  // "device communicators made M, shrunk S" where the backend counts them (the double); else empty,
  // and kolo's log says how many shrank (KOLO_LOG_LEVEL=info: "recovered in place: ... N GPU
  // communicator(s) shrunk").
  std::function<std::string()> counts;
};

#if KOLO_HAVE_CUDA
// CUDA + NCCL, this rank's GPU its local rank modulo the GPUs seen. Called before MPI and kolo start:
// where this host's ranks outnumber its GPUs, it sets NCCL_HOSTID=kolo-<rank> (and NCCL_SOCKET_IFNAME=lo
// unless set) before any NCCL call, so that NCCL takes the ranks for hosts of their own and connects
// them through sockets (it refuses two ranks on one GPU of one host). Null, saying why, where no GPU is
// usable.
std::unique_ptr<InPlaceDevice> make_cuda_in_place_device(std::string* why);
#endif

}  // namespace testing
}  // namespace kolo
