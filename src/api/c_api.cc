// The C ABI, a thin translation onto the C++ API.
#include "kolo/c_api.h"

#include <cstdio>
#include <string>

#include "api/c_api_internal.h"
#include "kolo/kolo.h"
#if KOLO_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

namespace {

thread_local std::string t_last_error;

}  // namespace

namespace kolo_c {

int32_t report(const kolo::Status& s) {
  if (!s.ok()) t_last_error = s.message();
  return static_cast<int32_t>(s.code());
}

int32_t hand_over(const kolo::Status& s, kolo::Output out, kolo_output** output) {
  if (output != nullptr) {
    const bool produced = out.storage != nullptr || out.view.data != nullptr || !out.received_splits.empty() ||
                          !out.view.shape.empty() || out.last_joined_rank >= 0;
    *output = produced ? new kolo_output{std::move(out)} : nullptr;
  }
  return report(s);
}

}  // namespace kolo_c

using kolo_c::hand_over;
using kolo_c::report;

namespace {

std::string safe_name(const char* name) { return name == nullptr ? std::string() : std::string(name); }

}  // namespace

extern "C" {

const char* kolo_last_error(void) { return t_last_error.c_str(); }
int32_t kolo_abi_version(void) { return KOLO_C_API_VERSION; }

int32_t kolo_init(void) { return report(kolo::init()); }

int32_t kolo_init_with_settings(const char* const* keys, const char* const* values, int32_t count) {
  kolo::Settings settings;
  for (int32_t i = 0; i < count; ++i) {
    if (keys == nullptr || values == nullptr || keys[i] == nullptr || values[i] == nullptr) {
      return report(kolo::Status::InvalidArgument("kolo_init_with_settings: NULL key or value"));
    }
    settings[keys[i]] = values[i];
  }
  return report(kolo::init(settings));
}

int32_t kolo_shutdown(void) { return report(kolo::shutdown()); }
int32_t kolo_recover_in_place(void) { return report(kolo::recover_in_place()); }
int32_t kolo_in_place_recovery(void) { return kolo::in_place_recovery() ? 1 : 0; }
int32_t kolo_is_initialized(void) { return kolo::is_initialized() ? 1 : 0; }
int32_t kolo_rank(void) { return kolo::rank(); }
int32_t kolo_size(void) { return kolo::size(); }
int32_t kolo_local_rank(void) { return kolo::local_rank(); }
int32_t kolo_local_size(void) { return kolo::local_size(); }
int32_t kolo_cross_rank(void) { return kolo::cross_rank(); }
int32_t kolo_cross_size(void) { return kolo::cross_size(); }
int32_t kolo_mpi_threads_supported(void) { return kolo::mpi_threads_supported() ? 1 : 0; }
int32_t kolo_is_homogeneous(void) { return kolo::is_homogeneous() ? 1 : 0; }
int32_t kolo_cuda_built(void) { return kolo::build_info().cuda ? 1 : 0; }

int32_t kolo_gloo_built(void) { return kolo::build_info().gloo ? 1 : 0; }

int32_t kolo_controller(void) {
  const std::string c = kolo::controller();
  return c == "mpi" ? KOLO_CONTROLLER_MPI : c == "gloo" ? KOLO_CONTROLLER_GLOO : 0;
}

int32_t kolo_nccl_built(void) {
  const kolo::BuildInfo b = kolo::build_info();
  if (!b.nccl) return 0;
  int major = 0, minor = 0, patch = 0;
  std::sscanf(b.nccl_version.c_str(), "%d.%d.%d", &major, &minor, &patch);
  return major * 10000 + minor * 100 + patch;
}

int32_t kolo_start_timeline(const char* path, int32_t mark_cycles) {
  return report(kolo::start_timeline(safe_name(path), mark_cycles != 0));
}

int32_t kolo_stop_timeline(void) { return report(kolo::stop_timeline()); }

int32_t kolo_add_process_set(const int32_t* ranks, int32_t count, int32_t* id) {
  if ((ranks == nullptr && count > 0) || count < 0 || id == nullptr) {
    return report(kolo::Status::InvalidArgument("kolo_add_process_set: NULL ranks or id, or a negative count"));
  }
  int made = -1;
  const kolo::Status s = kolo::add_process_set(std::vector<int>(ranks, ranks + count), &made);
  *id = made;
  return report(s);
}

int32_t kolo_remove_process_set(int32_t id) { return report(kolo::remove_process_set(id)); }

int32_t kolo_process_set_size(int32_t id) {
  std::vector<int> ranks;
  const kolo::Status s = kolo::process_set_ranks(id, &ranks);
  if (!s.ok()) {
    report(s);
    return -1;
  }
  return static_cast<int32_t>(ranks.size());
}

int32_t kolo_process_set_rank(int32_t id) {
  std::vector<int> ranks;
  int rank = -1;
  const kolo::Status s = kolo::process_set_ranks(id, &ranks, &rank);
  if (!s.ok()) {
    report(s);
    return -1;
  }
  return rank;
}

int32_t kolo_process_set_ranks(int32_t id, int32_t* ranks, int32_t capacity) {
  std::vector<int> members;
  const kolo::Status s = kolo::process_set_ranks(id, &members);
  if (s.ok() && ranks != nullptr) {
    for (size_t i = 0; i < members.size() && static_cast<int32_t>(i) < capacity; ++i) ranks[i] = members[i];
  }
  return report(s);
}

int32_t kolo_process_set_ids(int32_t* ids, int32_t capacity) {
  const std::vector<int> all = kolo::process_set_ids();
  if (ids != nullptr) {
    for (size_t i = 0; i < all.size() && static_cast<int32_t>(i) < capacity; ++i) ids[i] = all[i];
  }
  return static_cast<int32_t>(all.size());
}

int64_t kolo_reducescatter_rows(int64_t total_rows, int32_t rank, int32_t size) {
  return kolo::reducescatter_rows(total_rows, rank, size);
}

int32_t kolo_poll(kolo_handle handle) {
  std::optional<kolo::Status> s = kolo::poll(kolo::Handle(handle));
  if (!s) return 0;
  if (s->code() == kolo::StatusCode::kUnknownHandle) {
    report(*s);
    return -1;
  }
  return 1;
}

int32_t kolo_wait(kolo_handle handle, double timeout_seconds, kolo_output** output) {
  kolo::Output out;
  const kolo::Status s = timeout_seconds < 0 ? kolo::wait(kolo::Handle(handle), &out)
                                             : kolo::wait_for(kolo::Handle(handle), timeout_seconds, &out);
  return hand_over(s, std::move(out), output);
}

int32_t kolo_wait_on_stream(kolo_handle handle, void* stream, kolo_output** output) {
  kolo::Output out;
  const kolo::Status s = kolo::wait_on_stream(kolo::Handle(handle), stream, &out);
  return hand_over(s, std::move(out), output);
}

void* kolo_output_data(const kolo_output* o) { return o ? o->output.view.data : nullptr; }
int32_t kolo_output_ndim(const kolo_output* o) { return o ? static_cast<int32_t>(o->output.view.shape.size()) : 0; }
int64_t kolo_output_size_bytes(const kolo_output* o) { return o ? o->output.view.size_bytes() : 0; }
const int64_t* kolo_output_shape(const kolo_output* o) { return o ? o->output.view.shape.data() : nullptr; }
int32_t kolo_output_num_received_splits(const kolo_output* o) {
  return o ? static_cast<int32_t>(o->output.received_splits.size()) : 0;
}
const int64_t* kolo_output_received_splits(const kolo_output* o) {
  return o ? o->output.received_splits.data() : nullptr;
}
int32_t kolo_output_last_joined_rank(const kolo_output* o) { return o ? o->output.last_joined_rank : -1; }
void kolo_output_free(kolo_output* o) { delete o; }

const char* kolo_version(void) {
  static const std::string v = kolo::build_info().version;
  return v.c_str();
}

const char* kolo_nccl_runtime(void) {
#if KOLO_HAVE_CUDA
  static const std::string loaded = kolo::nccl_runtime();
  return loaded.c_str();
#else
  return "";
#endif
}

const char* kolo_build_summary(void) {
  static const std::string summary = [] {
    const kolo::BuildInfo b = kolo::build_info();
    auto line = [](bool have, const char* what, const std::string& detail) {
      return std::string("  [") + (have ? "X" : " ") + "] " + what + detail + "\n";
    };
    std::string s = "kolo " + b.version + "\n";
    s += line(!b.mpi_version.empty(), "MPI    ", b.mpi_version + " (the MPI world: mpirun, kolorun, Slurm)");
    s += line(b.gloo, "Gloo   ", b.gloo ? b.gloo_version + " (the Gloo world: kolorun --gloo, torchrun, any launcher)"
                                        : "not built in (KOLO_WITH_GLOO): ranks need an MPI launcher");
    s += line(b.cuda, "CUDA   ", b.cuda ? b.cuda_version : "not built in");
    s += line(b.nccl, "NCCL   ", b.nccl ? b.nccl_version + " (collectives on GPU tensors)" : "not built in");
#if KOLO_HAVE_CUDA
    // Not linked: loaded at the first GPU op, the process's own where one is loaded already.
    s += "  NCCL GPU ops use here: " + kolo::nccl_runtime() + "\n";
#endif
    if (b.cuda) s += "  here: " + b.gpus + "\n";
    // Elastic training runs by restarting from the last commit under an elastic kolorun, with any MPI;
    // in place (survivors shrinking their communicators) where the MPI has ULFM.
    s += line(true, "Elastic", " by restart from the last commit (kolorun --min-np/--max-np/--host-discovery-script)");
    s += line(b.mpi_ulfm, "ULFM   ", b.mpi_ulfm ? "this MPI has it: under kolorun --in-place (mpirun --with-ft ulfm) a lost peer is survived in place"
                                                    : "this MPI has none: a lost peer ends the job (kolorun's elastic mode restarts it)");
    return s;
  }();
  return summary.c_str();
}

}  // extern "C"
