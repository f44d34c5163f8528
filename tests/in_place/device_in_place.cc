// The GPU path in place (ULFM): 3 ranks allreduce device tensors step after step; rank 1 is lost while
// a step's collectives are on the others' devices: killed (SIGKILL) or frozen (SIGSTOP: alive but
// silent, found by kolo's peer watch, KOLO_PEER_TIMEOUT_SECONDS, and ULFM's detector). The survivors'
// ops fail with kPeersFailed (no work of theirs is left waiting on the lost peer), they call
// recover_in_place(), which shrinks the job and kolo's device communicators to the survivors (ranks 0
// and 2 of MPI_COMM_WORLD, now 0 and 1), and go on from the step that failed, each result exact.
//
// On the host double (the default; tests/gpu_double, which checks the ranks kolo excludes) each
// survivor ends saying how many device communicators were made and how many shrunk. On CUDA + NCCL
// (--device cuda, a build with CUDA) kolo's log says how many shrank (this program sets
// KOLO_LOG_LEVEL=info unless given: "recovered in place: ... N GPU communicator(s) shrunk").
//
// For the time from the loss to training again, every rank prints the wall-clock time (CLOCK_REALTIME)
// of the fault (the victim, just before the signal) and of its first exact step after the recovery:
//   rank 1 of 3: fault kill at 1764212345.123456
//   rank 0 of 2: training again: step 4 exact at 1764212345.534567
// (tests/in_place/device_in_place_job.py reads them).
//
//   mpirun --with-ft ulfm --mca btl tcp,self -np 3 device_in_place [--device double|cuda]
//       [--fault kill|freeze] STEPS DIE_AT
#include <execinfo.h>
#include <mpi.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "api/runtime.h"
#include "gpu_double/host_double.h"
#include "in_place/in_place_device.h"
#include "kolo/kolo.h"

namespace {

using kolo::testing::InPlaceDevice;

// Elements of each tensor: a scalar, an odd size, and one large enough to be in flight when the
// victim is lost (fused with the others below the fusion threshold).
const std::vector<int64_t> kSizes = {1, 7, 1000, 1 << 20};
constexpr int kVictim = 1;  // the rank of MPI_COMM_WORLD that is lost

double wall_seconds() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// Waits for the work on `stream` so far.
bool sync_stream(kolo::DeviceBackend& device, int ordinal, kolo::DeviceStream stream) {
  kolo::DeviceEvent e = nullptr;
  bool ok = device.create_event(ordinal, false, &e).ok() && device.record(e, stream).ok() && device.synchronize(e).ok();
  if (e != nullptr) device.destroy_event(e);
  return ok;
}

int fail(const std::string& what) {
  std::fprintf(stderr, "device_in_place: rank %d: %s\n", kolo::rank(), what.c_str());
  return 1;
}

int usage() {
  std::fprintf(stderr, "usage: device_in_place [--device double|cuda] [--fault kill|freeze] STEPS DIE_AT\n");
  return 2;
}

std::unique_ptr<InPlaceDevice> make_double() {
  auto device = std::make_unique<InPlaceDevice>();
  auto host = std::make_shared<kolo::testing::HostDouble>();
  device->backend = host;
  device->what = host->description();
  device->on_stream = [host](kolo::DeviceStream stream, std::function<void()> work) {
    host->enqueue(stream, std::move(work));
    return kolo::Status::OK();
  };
  device->counts = [host] {
    return "device communicators made " + std::to_string(host->comms_made()) + ", shrunk " +
           std::to_string(host->comms_shrunk());
  };
  return device;
}

// Writes known values into the tensors (a roll-back), waits, and reads them back: empty if they stayed,
// else what changed them (work of the failed step still running after recover_in_place returned).
std::string rolled_back_values_stay(kolo::DeviceBackend& backend, int ordinal, kolo::DeviceStream stream,
                                    const std::vector<void*>& tensors) {
  for (size_t t = 0; t < tensors.size(); ++t) {
    std::vector<double> host(static_cast<size_t>(kSizes[t]), -1000.0 - static_cast<double>(t));
    if (!backend.copy(tensors[t], host.data(), kSizes[t] * 8, stream).ok() || !sync_stream(backend, ordinal, stream)) {
      return "upload failed";
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (size_t t = 0; t < tensors.size(); ++t) {
    std::vector<double> host(static_cast<size_t>(kSizes[t]));
    if (!backend.copy(host.data(), tensors[t], kSizes[t] * 8, stream).ok() || !sync_stream(backend, ordinal, stream)) {
      return "download failed";
    }
    for (size_t i = 0; i < host.size(); ++i) {
      if (host[i] != -1000.0 - static_cast<double>(t)) {
        return "tensor t" + std::to_string(t) + "[" + std::to_string(i) + "] was rolled back to " +
               std::to_string(-1000.0 - static_cast<double>(t)) + " and then became " + std::to_string(host[i]) +
               " (the failed step's GPU work wrote it after the recovery)";
      }
    }
  }
  return "";
}

// A survivor that dies says how (its signal and where), instead of vanishing from the job's output.
void report_fatal_signal(int signal_number) {
  char line[64];
  const int n = std::snprintf(line, sizeof line, "device_in_place: pid %d: signal %d\n", static_cast<int>(getpid()),
                              signal_number);
  if (n > 0) (void)!write(STDERR_FILENO, line, static_cast<size_t>(n));
  void* frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), STDERR_FILENO);
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

}  // namespace

int main(int argc, char** argv) {
  for (int s : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGPIPE}) std::signal(s, report_fatal_signal);
  std::string device_name = "double", fault = "kill";
  std::vector<int> numbers;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    std::string* option = a == "--device" ? &device_name : a == "--fault" ? &fault : nullptr;
    if (option != nullptr) {
      if (++i == argc) return usage();
      *option = argv[i];
    } else if (a.rfind("--device=", 0) == 0) {
      device_name = a.substr(9);
    } else if (a.rfind("--fault=", 0) == 0) {
      fault = a.substr(8);
    } else if (!a.empty() && a[0] != '-') {
      numbers.push_back(std::atoi(a.c_str()));
    } else {
      return usage();
    }
  }
  if (numbers.size() != 2 || (device_name != "double" && device_name != "cuda") ||
      (fault != "kill" && fault != "freeze")) {
    return usage();
  }
  const int steps = numbers[0];
  const int die_at = numbers[1];
  const int signal_number = fault == "kill" ? SIGKILL : SIGSTOP;

  // Before MPI and kolo start: on CUDA this sets NCCL_HOSTID for NCCL, which must see it first.
  std::unique_ptr<InPlaceDevice> device;
  if (device_name == "double") {
    device = make_double();
  } else {
#if KOLO_HAVE_CUDA
    std::string why;
    device = kolo::testing::make_cuda_in_place_device(&why);
    if (!device) return std::fprintf(stderr, "device_in_place: --device cuda: %s\n", why.c_str()), 1;
#else
    return std::fprintf(stderr, "device_in_place: --device cuda: this build has no CUDA (KOLO_WITH_CUDA)\n"), 1;
#endif
  }
  setenv("KOLO_LOG_LEVEL", "info", 0);  // recover_in_place's line says how many device communicators shrank
  kolo::DeviceBackend& backend = *device->backend;
  const int ordinal = device->ordinal;
  kolo::Runtime::instance().use_device_backend(device->backend);
  if (!kolo::init().ok()) return fail("init failed");
  if (!kolo::in_place_recovery()) return fail("not in place (start under mpirun --with-ft ulfm --mca btl tcp,self)");
  const int first_rank = kolo::rank();
  if (first_rank == 0) {
    std::printf("device_in_place on %s: %d ranks, %d steps, rank %d %s at step %d\n", device->what.c_str(),
                kolo::size(), steps, kVictim, fault == "kill" ? "killed" : "frozen", die_at);
  }
  std::printf("rank %d of %d starts with pid %d\n", kolo::rank(), kolo::size(), static_cast<int>(getpid()));
  std::fflush(stdout);

  // The inputs are produced on a stream of the program's own, which kolo's work waits for on the device.
  if (!backend.bind(ordinal).ok()) return fail("bind failed");
  kolo::DeviceStream stream = nullptr;
  if (!backend.create_stream(ordinal, &stream).ok()) return fail("create_stream failed");
  std::vector<void*> tensors;
  for (int64_t n : kSizes) {
    void* data = nullptr;
    if (!backend.allocate(ordinal, n * 8, &data).ok()) return fail("allocate failed");
    tensors.push_back(data);
  }
  bool recovered = false;  // since the last exact step
  for (int step = 0; step < steps;) {
    // Every rank's value: its rank + 1 plus half the step, exact in float64 whatever the order of the sums.
    const int rank = kolo::rank(), size = kolo::size();
    for (size_t t = 0; t < tensors.size(); ++t) {
      std::vector<double> host(static_cast<size_t>(kSizes[t]), rank + 1 + 0.5 * step + static_cast<double>(t));
      if (!backend.copy(tensors[t], host.data(), kSizes[t] * 8, stream).ok() || !sync_stream(backend, ordinal, stream)) {
        return fail("upload failed");
      }
    }
    if (step == die_at && first_rank == kVictim) {
      // Lost on the stream its inputs come from, which kolo's stream waits on: the negotiation is done,
      // and the others' device collectives are under way, waiting for it.
      const std::string name = fault;
      kolo::Status s = device->on_stream(stream, [rank, size, name, signal_number] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        std::printf("rank %d of %d: fault %s at %.6f\n", rank, size, name.c_str(), wall_seconds());
        std::fflush(stdout);
        std::raise(signal_number);
        std::_Exit(3);  // a frozen rank let go again: the job has gone on without it
      });
      if (!s.ok()) return fail(s.message());
    }
    std::vector<kolo::Handle> handles;
    for (size_t t = 0; t < tensors.size(); ++t) {
      kolo::TensorView view;
      view.data = tensors[t];
      view.dtype = kolo::DataType::kFloat64;
      view.shape = {kSizes[t]};
      view.device = kolo::Device::CUDA(ordinal);
      view.stream = stream;
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
      std::printf("rank %d of %d: step %d failed at %.6f: %s\n", rank, size, step, wall_seconds(),
                  failed.message().c_str());
      std::fflush(stdout);
      kolo::Status r = kolo::recover_in_place();
      if (!r.ok()) return fail("recover_in_place failed: " + r.message());
      std::printf("rank %d of %d: in place now rank %d of %d, step %d again (recovered at %.6f)\n", rank, size,
                  kolo::rank(), kolo::size(), step, wall_seconds());
      std::fflush(stdout);
      // The failed step's GPU work has ended by now (its unpack too): what is rolled back stays so.
      const std::string clobbered = rolled_back_values_stay(backend, ordinal, stream, tensors);
      if (!clobbered.empty()) return fail("after recover_in_place: " + clobbered);
      recovered = true;
      continue;
    }
    if (!failed.ok()) return fail("step " + std::to_string(step) + ": " + failed.message());
    for (size_t t = 0; t < tensors.size(); ++t) {
      std::vector<double> host(static_cast<size_t>(kSizes[t]));
      if (!backend.copy(host.data(), tensors[t], kSizes[t] * 8, stream).ok() || !sync_stream(backend, ordinal, stream)) {
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
    if (recovered) {
      std::printf("rank %d of %d: training again: step %d exact at %.6f\n", rank, size, step, wall_seconds());
      recovered = false;
    }
    if (rank == 0) std::printf("step %d on %d ranks: exact\n", step, size);
    std::fflush(stdout);
    ++step;
  }
  if (device->counts) std::printf("rank %d of %d: %s\n", kolo::rank(), kolo::size(), device->counts().c_str());
  std::printf("rank %d of %d ends with pid %d\n", kolo::rank(), kolo::size(), static_cast<int>(getpid()));
  std::fflush(stdout);
  for (void* t : tensors) backend.free(t);
  kolo::shutdown();
  backend.destroy_stream(stream);
  return 0;
}
