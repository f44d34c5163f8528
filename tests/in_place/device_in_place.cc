// The GPU path in place (ULFM), on the host double (tests/gpu_double): 3 ranks allreduce device tensors
// step after step; rank 1 dies while a step's collectives are on the others' devices. The survivors' ops
// fail with kPeersFailed (no work of theirs is left waiting on the lost peer), they call
// recover_in_place(), which shrinks the job and kolo's device communicators to the survivors (ranks 0
// and 2 of MPI_COMM_WORLD, now 0 and 1; the double checks the ranks kolo excludes), and go on from the
// step that failed, each result exact. At the end each says how many device communicators were made
// and how many shrunk.
//
//   mpirun --with-ft ulfm --mca btl tcp,self -np 3 device_in_place STEPS DIE_AT
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "api/runtime.h"
#include "gpu_double/host_double.h"
#include "kolo/kolo.h"

namespace {

// Elements of each tensor: a scalar, an odd size, and one large enough to be in flight when the
// victim dies (fused with the others below the fusion threshold).
const std::vector<int64_t> kSizes = {1, 7, 1000, 1 << 20};

// Waits for the default stream's work (the double's copies run on it, as cudaMemcpyAsync's would).
bool sync_default(kolo::DeviceBackend& device) {
  kolo::DeviceEvent e = nullptr;
  bool ok = device.create_event(0, false, &e).ok() && device.record(e, nullptr).ok() && device.synchronize(e).ok();
  if (e != nullptr) device.destroy_event(e);
  return ok;
}

int fail(const std::string& what) {
  std::fprintf(stderr, "device_in_place: rank %d: %s\n", kolo::rank(), what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return std::fprintf(stderr, "usage: device_in_place STEPS DIE_AT\n"), 2;
  const int steps = std::atoi(argv[1]);
  const int die_at = std::atoi(argv[2]);
  auto device = std::make_shared<kolo::testing::HostDouble>();
  kolo::Runtime::instance().use_device_backend(device);
  if (!kolo::init().ok()) return fail("init failed");
  if (!kolo::in_place_recovery()) return fail("not in place (start under mpirun --with-ft ulfm --mca btl tcp,self)");
  const int first_rank = kolo::rank();
  std::printf("rank %d of %d starts with pid %d\n", kolo::rank(), kolo::size(), static_cast<int>(getpid()));
  std::fflush(stdout);

  std::vector<void*> tensors;
  for (int64_t n : kSizes) {
    void* data = nullptr;
    if (!device->allocate(0, n * 8, &data).ok()) return fail("allocate failed");
    tensors.push_back(data);
  }
  for (int step = 0; step < steps;) {
    // Every rank's value: its rank + 1 plus half the step, exact in float64 whatever the order of the sums.
    const int rank = kolo::rank(), size = kolo::size();
    for (size_t t = 0; t < tensors.size(); ++t) {
      std::vector<double> host(static_cast<size_t>(kSizes[t]), rank + 1 + 0.5 * step + static_cast<double>(t));
      if (!device->copy(tensors[t], host.data(), kSizes[t] * 8, nullptr).ok() || !sync_default(*device)) {
        return fail("upload failed");
      }
    }
    if (step == die_at && first_rank == 1) {
      // Dies on its default stream, which kolo's waits on for the inputs: the negotiation is done, and
      // the others' device collectives are under way, waiting for it.
      device->enqueue(nullptr, [] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        std::raise(SIGKILL);
      });
    }
    std::vector<kolo::Handle> handles;
    for (size_t t = 0; t < tensors.size(); ++t) {
      kolo::TensorView view;
      view.data = tensors[t];
      view.dtype = kolo::DataType::kFloat64;
      view.shape = {kSizes[t]};
      view.device = kolo::Device::CUDA(0);
      kolo::AllreduceOptions sum;
      sum.op = kolo::ReduceOp::kSum;
      handles.push_back(kolo::allreduce_async("t" + std::to_string(t), view, view, sum));
    }
    kolo::Status failed;
    for (kolo::Handle h : handles) {
      kolo::Status s = kolo::wait(h);
      if (!s.ok() && failed.ok()) failed = s;
    }
    if (failed.code() == kolo::StatusCode::kPeersFailed) {
      std::printf("rank %d of %d: step %d failed: %s\n", rank, size, step, failed.message().c_str());
      kolo::Status r = kolo::recover_in_place();
      if (!r.ok()) return fail("recover_in_place failed: " + r.message());
      std::printf("rank %d of %d: in place now rank %d of %d, step %d again\n", rank, size, kolo::rank(), kolo::size(),
                  step);
      std::fflush(stdout);
      continue;
    }
    if (!failed.ok()) return fail("step " + std::to_string(step) + ": " + failed.message());
    for (size_t t = 0; t < tensors.size(); ++t) {
      std::vector<double> host(static_cast<size_t>(kSizes[t]));
      if (!device->copy(host.data(), tensors[t], kSizes[t] * 8, nullptr).ok() || !sync_default(*device)) {
        return fail("download failed");
      }
      const double expected = size * (size + 1) / 2.0 + size * (0.5 * step + static_cast<double>(t));
      for (size_t i = 0; i < host.size(); ++i) {
        if (host[i] != expected) {
          return fail("step " + std::to_string(step) + " on " + std::to_string(size) + " ranks: tensor t" +
                      std::to_string(t) + "[" + std::to_string(i) + "] = " + std::to_string(host[i]) + ", expected " +
                      std::to_string(expected));
        }
      }
    }
    if (rank == 0) std::printf("step %d on %d ranks: exact\n", step, size);
    std::fflush(stdout);
    ++step;
  }
  std::printf("rank %d of %d: device communicators made %d, shrunk %d\n", kolo::rank(), kolo::size(),
              device->comms_made(), device->comms_shrunk());
  std::printf("rank %d of %d ends with pid %d\n", kolo::rank(), kolo::size(), static_cast<int>(getpid()));
  std::fflush(stdout);
  for (void* t : tensors) device->free(t);
  kolo::shutdown();
  return 0;
}
