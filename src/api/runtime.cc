#include "api/runtime.h"

#include <cstdio>
#include <cstdlib>

#include "comm/barrier.h"
#include "comm/hierarchy_choice.h"
#include "comm/device/device_collectives.h"
#include "comm/device/surviving_comms.h"
#include "comm/mpi/mpi_collectives.h"
#include "comm/mpi/mpi_control_channel.h"
#include "comm/mpi/mpi_fault.h"
#include "comm/mpi/mpi_status.h"
#include "common/logging.h"
#if KOLO_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

namespace kolo {
namespace {

// How long NCCL may take to make a communicator, or to accept a call, before kolo gives up on it
// (a peer that never comes, or froze).
constexpr double kDeviceCommTimeoutSeconds = 120.0;

}  // namespace

Runtime& Runtime::instance() {
  // Never destroyed: kolo's thread may outlive static destruction until at_exit stops it.
  static Runtime* runtime = new Runtime();
  return *runtime;
}

void Runtime::at_exit() {
  Runtime& r = instance();
  r.shutdown();
  std::lock_guard<std::mutex> lock(r.mu_);
  // After a lost peer MPI_Finalize would wait for it forever: the process ends without it, and
  // mpirun ends the job (the lost process included).
  if (r.lost_.ok()) mpi_finalize_if_owned(r.mpi_);
}

Status Runtime::init(const Settings& overrides) {
  std::lock_guard<std::mutex> lock(mu_);
  if (engine_) return Status::OK();

  Config config;
  std::vector<std::string> warnings;
  Status s = config_from_environment(overrides, &config, &warnings);
  if (!s.ok()) return s;
  set_log_level(config.log_level);

  s = mpi_ensure_initialized(&mpi_);
  if (!s.ok()) return s;
  if (!exit_hook_) {
    // Stop the engine and finalize MPI (if kolo initialized it) when the program ends without
    // calling shutdown().
    std::atexit(&Runtime::at_exit);
    exit_hook_ = true;
  }
  s = open_world();
  if (!s.ok()) return s;
  overrides_ = overrides;
  s = MpiContext::create(world_, &context_);
  if (!s.ok()) return s;
  const Topology& topo = context_->topology();
  world_size_ = topo.size;
  job_rank_ = topo.rank;
  set_log_rank(topo.rank);
  if (topo.rank == 0) {
    for (const std::string& w : warnings) KOLO_LOG(kWarning, w);
  }

  std::unique_ptr<Timeline> timeline;
  if (!config.timeline_path.empty()) {
    s = Timeline::open(config.timeline_path, topo.rank, &timeline);
    if (!s.ok()) return s;
  }
  // Cycles on callers' threads (Engine::drive) call MPI beside kolo's own threads.
  if (mpi_.thread_level != MPI_THREAD_MULTIPLE) config.caller_drives = false;
  base_config_ = config;
  timeline_path_ = config.timeline_path;
  timeline_cycles_ = config.timeline_mark_cycles;
  // A peer lost meanwhile (a second failure during a recovery) comes back as such: the recovery starts again.
  if (const int rc = MPI_Comm_dup(world_, &sets_comm_); rc != MPI_SUCCESS) {
    sets_comm_ = MPI_COMM_NULL;
    return mpi_status(rc, "MPI_Comm_dup (process sets)");
  }
  MPI_Comm_set_errhandler(sets_comm_, MPI_ERRORS_RETURN);
  track_comm(sets_comm_);

  std::unique_ptr<CollectiveRegistry> registry = collectives_for(&config, *context_, &device_);
  // After a recovery in place the job's GPU context starts with the communicators shrunk from the last.
  for (int g = 0; g < DeviceContext::kGroups && device_; ++g) {
    if (!carried_.group[g]) continue;
    const Status adopted = device_->adopt(static_cast<DeviceContext::Group>(g), std::move(carried_.group[g]));
    if (!adopted.ok()) device_->poison(adopted);
  }
  carried_ = SurvivingComms();
  engine_ = std::make_shared<Engine>(config, topo, std::make_unique<MpiControlChannel>(context_->control()),
                                     std::move(registry), std::move(timeline), &handles_);
  engine_->start();
  engines_.push_back(engine_);
  shut_down_ = false;
  if (config.peer_timeout_seconds > 0 && topo.size > 1) {
    if (mpi_.thread_level == MPI_THREAD_MULTIPLE) {
      s = MpiPeerWatch::start(world_, config.peer_timeout_seconds,
                              [this](const std::string& why) { peer_lost(why); }, &watch_);
      if (!s.ok()) return s;
    } else if (topo.rank == 0) {
      KOLO_LOG(kWarning, "no peer watch (KOLO_PEER_TIMEOUT_SECONDS): it needs MPI_THREAD_MULTIPLE, and MPI provides "
                             << mpi_thread_level_name(mpi_.thread_level)
                             << "; a frozen or unreachable process may leave the others waiting");
    }
  }
  if (!said_started_ && topo.rank == 0) {
    // The context's creation gathered every rank: kolorun bounds an elastic attempt's start by this line
    // (launcher/attempt_start.h).
    const char* elastic = std::getenv("KOLO_ELASTIC");
    if (elastic != nullptr && std::string(elastic) == "1") {
      std::fprintf(stderr, "kolo: all %d ranks have started\n", topo.size);
      std::fflush(stderr);
    }
  }
  said_started_ = true;
  KOLO_LOG(kInfo, "initialized: rank " << topo.rank << " of " << topo.size << ", local rank " << topo.local_rank
                                       << " of " << topo.local_size << ", host " << topo.cross_rank << " of "
                                       << topo.cross_size);
  return Status::OK();
}

std::unique_ptr<CollectiveRegistry> Runtime::collectives_for(Config* config, const MpiContext& mpi,
                                                             std::shared_ptr<DeviceContext>* device) {
  const Topology& topo = mpi.topology();
  resolve_layout_defaults(topo, config);
  const CollectiveTuning tuning{config->segment_bytes, config->zero_copy_bytes};
  auto registry = std::make_unique<CollectiveRegistry>();
  // Which allreduce runs: comm/allreduce_choice.h. Hierarchical allreduce splits each host's share into
  // one block per local rank, so every host must have as many ranks; hierarchical allgather works with
  // any layout.
  const JobShape job = mpi.job_shape();
  const AllreduceSettings settings = allreduce_settings(*config);
  const bool hierarchical_allreduce = starts_hierarchical(DeviceType::kCPU, job, settings);
  if (config->hierarchical_allreduce && !topo.homogeneous && topo.rank == 0) {
    KOLO_LOG(kWarning, "KOLO_HIERARCHICAL_ALLREDUCE needs the same number of ranks on every host; "
                       "using flat allreduce");
  }
  // Where KOLO_AUTOTUNE chooses between flat and hierarchical, both are built (comm/hierarchy_choice.h).
  if (tunes_hierarchy(job, settings)) {
    registry->add(make_hierarchy_choice(make_mpi_allreduce(mpi, tuning), make_mpi_hierarchical_allreduce(mpi, tuning),
                                        hierarchical_allreduce));
  } else {
    registry->add(hierarchical_allreduce ? make_mpi_hierarchical_allreduce(mpi, tuning)
                                         : make_mpi_allreduce(mpi, tuning));
  }
  registry->add(make_mpi_adasum(mpi));
  registry->add(config->hierarchical_allgather ? make_mpi_hierarchical_allgather(mpi) : make_mpi_allgather(mpi));
  registry->add(make_mpi_broadcast(mpi, tuning));
  registry->add(make_mpi_alltoall(mpi));
  registry->add(make_mpi_reducescatter(mpi));
  registry->add(make_negotiated_barrier());
  add_device_collectives(*config, starts_hierarchical(DeviceType::kCUDA, job, settings), mpi, registry.get(), device);
  return registry;
}

void Runtime::add_device_collectives(const Config& config, bool hierarchical_allreduce, const MpiContext& mpi,
                                     CollectiveRegistry* registry, std::shared_ptr<DeviceContext>* device) {
  if (!backend_chosen_) {
#if KOLO_HAVE_CUDA
    backend_ = make_cuda_backend(kDeviceCommTimeoutSeconds);
#endif
    backend_chosen_ = true;
  }
  if (!backend_) {
    registry->set_unsupported_reason(DeviceType::kCUDA, "this kolo was built without CUDA and NCCL");
    return;
  }
  Status usable = backend_->usable();
  if (!usable.ok()) {
    registry->set_unsupported_reason(DeviceType::kCUDA, usable.message());
    KOLO_LOG(kDebug, "GPU tensors are not supported: " << usable.message());
    return;
  }
  *device = std::make_shared<DeviceContext>(backend_, mpi);
  DeviceContext& d = **device;
  if (tunes_hierarchy(mpi.job_shape(), allreduce_settings(config))) {
    registry->add(make_hierarchy_choice(make_device_allreduce(d), make_device_hierarchical_allreduce(d),
                                        hierarchical_allreduce));
  } else {
    registry->add(hierarchical_allreduce ? make_device_hierarchical_allreduce(d) : make_device_allreduce(d));
  }
  registry->add(make_device_adasum(d));
  registry->add(config.hierarchical_allgather ? make_device_hierarchical_allgather(d) : make_device_allgather(d));
  registry->add(make_device_broadcast(d));
  registry->add(make_device_alltoall(d));
  registry->add(make_device_reducescatter(d));
  KOLO_LOG(kInfo, "GPU collectives through " << backend_->description());
}

Status Runtime::shutdown() {
  std::shared_ptr<Engine> engine;
  std::map<int, ProcessSet> sets;
  {
    std::lock_guard<std::mutex> lock(mu_);
    engine = std::move(engine_);
    if (engine) shut_down_ = true;
    sets = std::move(sets_);
    sets_.clear();
    next_set_id_ = 1;
  }
  if (!engine) return Status::OK();
  // The process sets' engines first (each stops with its set's members), then the job's.
  for (auto& kv : sets) stop_instance(kv.second.instance);
  sets.clear();
  engine->stop();
  // The watch goes after the engines: a peer that freezes while they stop is still seen. Its goodbye
  // tells the others that this rank's silence from now on is no loss.
  std::unique_ptr<MpiPeerWatch> watch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    watch = std::move(watch_);
  }
  if (watch && !watch->stop()) keep_after_loss(std::shared_ptr<MpiPeerWatch>(watch.release()));
  if (!lost_status().ok() || failed_in_place()) {
    // Stuck (or, after a revocation, exiting) engine threads may still use their engine (kept when
    // abandoned), its GPU context and MPI's: all stay.
    std::lock_guard<std::mutex> lock(mu_);
    kept_.push_back(device_);
    if (device_ && !peers_failed_.ok()) failed_devices_.push_back(device_);
    kept_.push_back(std::shared_ptr<MpiContext>(context_.release()));
    device_.reset();
    // Like the context, left to MPI (revoked after a failure in place, or shared with a lost peer): not freed.
    untrack_comm(sets_comm_);
    sets_comm_ = MPI_COMM_NULL;
    return Status::OK();
  }
  forget_engine(engine);
  // Callers that copied the pointer keep the object alive but find it stopped; the collectives
  // refer to the MPI context, so the engine must be gone before it is.
  engine.reset();
  std::shared_ptr<DeviceContext> device;
  {
    std::lock_guard<std::mutex> lock(mu_);
    device = std::move(device_);
  }
  // The device's communicators and stream go before MPI's context (their ids travelled over it).
  device.reset();
  std::lock_guard<std::mutex> lock(mu_);
  context_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) release_comm(&sets_comm_);
  sets_comm_ = MPI_COMM_NULL;
  return Status::OK();
}

std::shared_ptr<DeviceContext> Runtime::device() {
  std::lock_guard<std::mutex> lock(mu_);
  return device_;
}

std::shared_ptr<DeviceBackend> Runtime::device_backend() {
  std::lock_guard<std::mutex> lock(mu_);
  return backend_;
}

void Runtime::use_device_backend(std::shared_ptr<DeviceBackend> backend) {
  std::lock_guard<std::mutex> lock(mu_);
  backend_ = std::move(backend);
  backend_chosen_ = true;
}

bool Runtime::initialized() {
  std::lock_guard<std::mutex> lock(mu_);
  return engine_ != nullptr;
}

std::shared_ptr<Engine> Runtime::engine() {
  std::lock_guard<std::mutex> lock(mu_);
  return engine_;
}

std::string Runtime::not_running_reason() {
  std::lock_guard<std::mutex> lock(mu_);
  return shut_down_ ? "kolo has been shut down on this rank" : "kolo is not initialized: call init() first";
}

bool Runtime::mpi_threads_supported() {
  std::lock_guard<std::mutex> lock(mu_);
  return engine_ != nullptr && mpi_.thread_level == MPI_THREAD_MULTIPLE;
}

}  // namespace kolo
