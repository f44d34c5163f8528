// The GPU path in place (ULFM): 3 ranks allreduce device tensors step after step; rank 1 is lost while
// a step's collectives are on the others' devices: killed (SIGKILL) or frozen (SIGSTOP: alive but
// silent, found by kolo's peer watch, KOLO_PEER_TIMEOUT_SECONDS, and ULFM's detector). The survivors'
// ops fail with kPeersFailed (no work of theirs is left waiting on the lost peer), they call
// recover_in_place(), which shrinks the job and kolo's device communicators to the survivors (ranks 0
// and 2 of MPI_COMM_WORLD, now 0 and 1), and go on from the step that failed, each result exact.
//
// On the host double (the default; tests/cpp/gpu_double, which checks the ranks kolo excludes) each
// survivor ends saying how many device communicators were made and how many shrunk. On CUDA + NCCL
// (--device cuda, a build with CUDA) kolo's log says how many shrank (this program sets
// KOLO_LOG_LEVEL=info unless given: "recovered in place: ... N GPU communicator(s) shrunk").
//
// For the time from the loss to training again, every rank prints the wall-clock time (CLOCK_REALTIME)
// of the fault (the victim, just before the signal) and of its first exact step after the recovery:
//   rank 1 of 3: fault kill at 1764212345.123456
//   rank 0 of 2: training again: step 4 exact at 1764212345.534567
// (tests/system/elastic_in_place/device_in_place_job.py reads them).
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
#include "in_place_device.h"
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

// What the command line asks for.
struct Options {
  std::string device_name = "double";
  std::string fault = "kill";
  int steps = 0;
  int die_at = 0;
  int signal_number = SIGKILL;  // SIGSTOP for --fault freeze
};

// False on anything the program does not take (the caller prints the usage).
bool parse_options(int argc, char** argv, Options* o) {
  std::vector<int> numbers;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    std::string* option = a == "--device" ? &o->device_name : a == "--fault" ? &o->fault : nullptr;
    if (option != nullptr) {
      if (++i == argc) return false;
      *option = argv[i];
    } else if (a.rfind("--device=", 0) == 0) {
      o->device_name = a.substr(9);
    } else if (a.rfind("--fault=", 0) == 0) {
      o->fault = a.substr(8);
    } else if (!a.empty() && a[0] != '-') {
      numbers.push_back(std::atoi(a.c_str()));
    } else {
      return false;
    }
  }
  if (numbers.size() != 2 || (o->device_name != "double" && o->device_name != "cuda") ||
      (o->fault != "kill" && o->fault != "freeze")) {
    return false;
  }
  o->steps = numbers[0];
  o->die_at = numbers[1];
  o->signal_number = o->fault == "kill" ? SIGKILL : SIGSTOP;
  return true;
}

// Called before MPI and kolo start: on CUDA this sets NCCL_HOSTID for NCCL, which must see it first.
// Null, having said why, where the device cannot be had.
std::unique_ptr<InPlaceDevice> open_device(const std::string& device_name) {
  if (device_name == "double") return make_double();
#if KOLO_HAVE_CUDA
  std::string why;
  std::unique_ptr<InPlaceDevice> device = kolo::testing::make_cuda_in_place_device(&why);
  if (!device) std::fprintf(stderr, "device_in_place: --device cuda: %s\n", why.c_str());
  return device;
#else
  std::fprintf(stderr, "device_in_place: --device cuda: this build has no CUDA (KOLO_WITH_CUDA)\n");
  return nullptr;
#endif
}

// Starts kolo on the device, in place; empty, or what failed.
std::string start_kolo(InPlaceDevice& device, const Options& o) {
  setenv("KOLO_LOG_LEVEL", "info", 0);  // recover_in_place's line says how many device communicators shrank
  kolo::Runtime::instance().use_device_backend(device.backend);
  if (!kolo::init().ok()) return "init failed";
  if (!kolo::in_place_recovery()) return "not in place (start under mpirun --with-ft ulfm --mca btl tcp,self)";
  if (kolo::rank() == 0) {
    std::printf("device_in_place on %s: %d ranks, %d steps, rank %d %s at step %d\n", device.what.c_str(),
                kolo::size(), o.steps, kVictim, o.fault == "kill" ? "killed" : "frozen", o.die_at);
  }
  std::printf("rank %d of %d starts with pid %d\n", kolo::rank(), kolo::size(), static_cast<int>(getpid()));
  std::fflush(stdout);
  return "";
}

// This rank's tensors (one of each of kSizes, float64) in device memory, and the stream of the
// program's own that produces their inputs, which kolo's work waits for on the device.
struct Tensors {
  kolo::DeviceBackend& backend;
  int ordinal;
  kolo::DeviceStream stream = nullptr;
  std::vector<void*> data;
};

// Empty, or what failed.
std::string allocate(Tensors* t) {
  if (!t->backend.bind(t->ordinal).ok()) return "bind failed";
  if (!t->backend.create_stream(t->ordinal, &t->stream).ok()) return "create_stream failed";
  for (int64_t n : kSizes) {
    void* data = nullptr;
    if (!t->backend.allocate(t->ordinal, n * 8, &data).ok()) return "allocate failed";
    t->data.push_back(data);
  }
  return "";
}

// Every rank's value: its rank + 1 plus half the step, exact in float64 whatever the order of the sums.
bool upload_inputs(const Tensors& t, int rank, int step) {
  for (size_t i = 0; i < t.data.size(); ++i) {
    std::vector<double> host(static_cast<size_t>(kSizes[i]), rank + 1 + 0.5 * step + static_cast<double>(i));
    if (!t.backend.copy(t.data[i], host.data(), kSizes[i] * 8, t.stream).ok() ||
        !sync_stream(t.backend, t.ordinal, t.stream)) {
      return false;
    }
  }
  return true;
}

// The victim is lost on the stream its inputs come from, which kolo's stream waits on: the negotiation
// is done, and the others' device collectives are under way, waiting for it.
kolo::Status lose_victim(InPlaceDevice& device, kolo::DeviceStream stream, const Options& o, int rank, int size) {
  const std::string name = o.fault;
  const int signal_number = o.signal_number;
  return device.on_stream(stream, [rank, size, name, signal_number] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::printf("rank %d of %d: fault %s at %.6f\n", rank, size, name.c_str(), wall_seconds());
    std::fflush(stdout);
    std::raise(signal_number);
    std::_Exit(3);  // a frozen rank let go again: the job has gone on without it
  });
}

// One step's allreduces (a sum of each tensor in place); OK, or the first that failed.
kolo::Status allreduce_step(const Tensors& t) {
  std::vector<kolo::Handle> handles;
  for (size_t i = 0; i < t.data.size(); ++i) {
    kolo::TensorView view;
    view.data = t.data[i];
    view.dtype = kolo::DataType::kFloat64;
    view.shape = {kSizes[i]};
    view.device = kolo::Device::CUDA(t.ordinal);
    view.stream = t.stream;
    kolo::AllreduceOptions sum;
    sum.op = kolo::ReduceOp::kSum;
    handles.push_back(kolo::allreduce_async("t" + std::to_string(i), view, view, sum));
  }
  kolo::Status failed;
  for (kolo::Handle h : handles) {
    kolo::Status s = kolo::wait(h);
    if (!s.ok() && failed.ok()) failed = s;
  }
  return failed;
}

// After a step failed for lost peers: shrinks to the survivors and checks that the failed step's GPU
// work has ended (its unpack too), so that what is rolled back stays so. Empty, or what failed.
std::string recover(const Tensors& t, const kolo::Status& failed, int rank, int size, int step) {
  std::printf("rank %d of %d: step %d failed at %.6f: %s\n", rank, size, step, wall_seconds(),
              failed.message().c_str());
  std::fflush(stdout);
  kolo::Status r = kolo::recover_in_place();
  if (!r.ok()) return "recover_in_place failed: " + r.message();
  std::printf("rank %d of %d: in place now rank %d of %d, step %d again (recovered at %.6f)\n", rank, size,
              kolo::rank(), kolo::size(), step, wall_seconds());
  std::fflush(stdout);
  const std::string clobbered = rolled_back_values_stay(t.backend, t.ordinal, t.stream, t.data);
  if (!clobbered.empty()) return "after recover_in_place: " + clobbered;
  return "";
}

// Each element the sum over `size` ranks of upload_inputs' values; empty, or the first that is not.
std::string check_step(const Tensors& t, int size, int step) {
  for (size_t i = 0; i < t.data.size(); ++i) {
    std::vector<double> host(static_cast<size_t>(kSizes[i]));
    if (!t.backend.copy(host.data(), t.data[i], kSizes[i] * 8, t.stream).ok() ||
        !sync_stream(t.backend, t.ordinal, t.stream)) {
      return "download failed";
    }
    const double expected = size * (size + 1) / 2.0 + size * (0.5 * step + static_cast<double>(i));
    for (size_t k = 0; k < host.size(); ++k) {
      if (host[k] != expected) {
        return "step " + std::to_string(step) + " on " + std::to_string(size) + " ranks: tensor t" + std::to_string(i) +
               "[" + std::to_string(k) + "] = " + std::to_string(host[k]) + ", expected " + std::to_string(expected);
      }
    }
  }
  return "";
}

// The steps, each again after a recovery until it is exact; 0, or fail()'s status.
int train(InPlaceDevice& device, const Tensors& t, const Options& o) {
  const int first_rank = kolo::rank();
  bool recovered = false;  // since the last exact step
  for (int step = 0; step < o.steps;) {
    const int rank = kolo::rank(), size = kolo::size();
    if (!upload_inputs(t, rank, step)) return fail("upload failed");
    if (step == o.die_at && first_rank == kVictim) {
      kolo::Status s = lose_victim(device, t.stream, o, rank, size);
      if (!s.ok()) return fail(s.message());
    }
    const kolo::Status failed = allreduce_step(t);
    if (failed.code() == kolo::StatusCode::kPeersFailed) {
      const std::string error = recover(t, failed, rank, size, step);
      if (!error.empty()) return fail(error);
      recovered = true;
      continue;
    }
    if (!failed.ok()) return fail("step " + std::to_string(step) + ": " + failed.message());
    const std::string wrong = check_step(t, size, step);
    if (!wrong.empty()) return fail(wrong);
    if (recovered) {
      std::printf("rank %d of %d: training again: step %d exact at %.6f\n", rank, size, step, wall_seconds());
      recovered = false;
    }
    if (rank == 0) std::printf("step %d on %d ranks: exact\n", step, size);
    std::fflush(stdout);
    ++step;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  for (int s : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGPIPE}) std::signal(s, report_fatal_signal);
  Options o;
  if (!parse_options(argc, argv, &o)) return usage();
  std::unique_ptr<InPlaceDevice> device = open_device(o.device_name);
  if (!device) return 1;
  const std::string not_started = start_kolo(*device, o);
  if (!not_started.empty()) return fail(not_started);
  Tensors t{*device->backend, device->ordinal, nullptr, {}};
  const std::string not_allocated = allocate(&t);
  if (!not_allocated.empty()) return fail(not_allocated);
  const int status = train(*device, t, o);
  if (status != 0) return status;
  if (device->counts) std::printf("rank %d of %d: %s\n", kolo::rank(), kolo::size(), device->counts().c_str());
  std::printf("rank %d of %d ends with pid %d\n", kolo::rank(), kolo::size(), static_cast<int>(getpid()));
  std::fflush(stdout);
  for (void* data : t.data) t.backend.free(data);
  kolo::shutdown();
  t.backend.destroy_stream(t.stream);
  return 0;
}
