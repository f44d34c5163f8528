#include "api/runtime.h"

#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <utility>

#include "comm/device/surviving_comms.h"
#include "common/deadline.h"
#include "common/logging.h"

namespace kolo {

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
  for (auto& world : r.worlds_) {
    if (world) world->finish(!r.faults_.lost().ok());
  }
}

namespace {

// "rank 3 of 8", from the launcher's variables (MPI may still be starting): for messages only.
std::string launcher_rank_words() {
  for (const auto& [rank, size] : {std::pair{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                   std::pair{"PMIX_RANK", "SLURM_NTASKS"}, std::pair{"PMI_RANK", "PMI_SIZE"},
                                   std::pair{"SLURM_PROCID", "SLURM_NTASKS"}, std::pair{"RANK", "WORLD_SIZE"}}) {
    const char* r = std::getenv(rank);
    const char* n = std::getenv(size);
    if (r != nullptr) return std::string("rank ") + r + (n != nullptr ? std::string(" of ") + n : std::string());
  }
  return "this rank";
}

}  // namespace

Status Runtime::init(const Settings& overrides) {
  std::lock_guard<std::mutex> lock(mu_);
  if (job()) return Status::OK();

  Config config;
  std::vector<std::string> warnings;
  Status s = config_from_environment(overrides, &config, &warnings);
  if (!s.ok()) return s;
  set_log_level(config.log_level);

  // init() is collective (MPI's start among it): a rank that never calls it (stuck before it, or on another
  // code path) holds the others inside MPI, which cannot be interrupted. They say so once the peer timeout
  // has passed, rather than wait in silence.
  const Deadline waiting(config.peer_timeout_seconds, [seconds = config.peer_timeout_seconds] {
    KOLO_LOG(kWarning, "init() on " << launcher_rank_words() << " has waited " << seconds
                                    << " s for the other ranks: all must call it, and one that has not (stuck before "
                                       "it, or on another code path) holds the others here");
  });
  if (!exit_hook_) {
    // Stop the engine and release the world (MPI_Finalize where kolo initialized MPI) when the program ends
    // without calling shutdown().
    std::atexit(&Runtime::at_exit);
    exit_hook_ = true;
  }
  s = open_world(config);
  if (!s.ok()) return s;
  overrides_ = overrides;
  const int rank = world_->rank(), size = world_->size();
  world_size_ = size;
  job_rank_ = rank;
  set_log_rank(rank);
  faults_.set_rank(rank);
  if (rank == 0) {
    for (const std::string& w : warnings) KOLO_LOG(kWarning, w);
  }
  std::string no_threads;
  const bool threads = world_->threads_multiple(&no_threads);
  // Cycles on callers' threads (Engine::drive) run collectives beside kolo's own threads.
  if (!threads) config.caller_drives = false;
  base_config_ = config;
  timeline_path_ = config.timeline_path;
  timeline_cycles_ = config.timeline_mark_cycles;
  s = world_->open_sets();
  if (!s.ok()) return s;

  std::vector<int> job_ranks(static_cast<size_t>(size));
  std::iota(job_ranks.begin(), job_ranks.end(), 0);
  InstanceStart start;
  start.ranks = job_ranks;
  start.config = config;
  start.timeline_path = timeline_path_;
  start.carried = &carried_;  // after a recovery in place: the communicators shrunk from the last
  // The watch starts before the engine's thread does: its collectives beside that thread's first cycles
  // held every rank for up to 4 s on a loaded machine, heartbeats of ULFM's detector (4 s in place) went
  // unsent, and it took a live rank for a failed one.
  if (config.peer_timeout_seconds > 0 && size > 1) {
    if (threads) {
      s = faults_.start_watch(*world_, config.peer_timeout_seconds);
      if (!s.ok()) return s;
    } else if (rank == 0) {
      KOLO_LOG(kWarning, "no peer watch (KOLO_PEER_TIMEOUT_SECONDS): it needs MPI_THREAD_MULTIPLE, and "
                             << no_threads << "; a frozen or unreachable process may leave the others waiting");
    }
  }
  s = world_->open_job_context(context_options(config), &start.context);
  if (!s.ok()) {
    faults_.stop_watch();
    return s;
  }
  std::shared_ptr<Instance> instance;
  s = start_instance(std::move(start), &instance);
  if (!s.ok()) {
    faults_.stop_watch();
    return s;
  }
  const Topology& topo = instance->context->topology();
  faults_.add_engine(instance->engine);
  ProcessSet job_set;
  job_set.ranks = std::move(job_ranks);
  job_set.rank = topo.rank;
  job_set.instance = std::move(instance);
  sets_[0] = std::move(job_set);
  shut_down_ = false;
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

Status Runtime::shutdown() {
  std::shared_ptr<Instance> job;
  std::map<int, ProcessSet> sets;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sets = std::move(sets_);
    sets_.clear();
    next_set_id_ = 1;
  }
  if (auto it = sets.find(0); it != sets.end()) {
    job = std::move(it->second.instance);
    sets.erase(it);
  }
  if (!job) return Status::OK();
  {
    std::lock_guard<std::mutex> lock(mu_);
    shut_down_ = true;
  }
  // The process sets' engines first (each stops with its set's members), then the job's.
  for (auto& kv : sets) stop_instance(kv.second.instance);
  sets.clear();
  job->engine->stop();
  // The watch goes after the engines: a peer that freezes while they stop is still seen. Its goodbye
  // tells the others that this rank's silence from now on is no loss.
  faults_.stop_watch();
  if (!faults_.lost().ok() || faults_.failed_in_place()) {
    // Stuck (or, after a revocation, exiting) engine threads may still use their engine (kept when
    // abandoned), its GPU context and the world's transport: all stay.
    faults_.keep(job);
    if (job->device && faults_.failed_in_place()) faults_.add_failed_device(job->device);
    std::lock_guard<std::mutex> lock(mu_);
    world_->close_sets(true);
    return Status::OK();
  }
  faults_.forget_engine(job->engine);
  // Callers that copied the engine keep the object alive but find it stopped. In this order: the
  // collectives refer to the context, and the device's communicators and stream go before the context
  // (their ids travelled over it).
  job->engine.reset();
  job->device.reset();
  std::lock_guard<std::mutex> lock(mu_);
  job->context.reset();
  world_->close_sets(false);
  return Status::OK();
}

Instance* Runtime::job() {
  // Ids count up from 0: the job, when there, is the map's first entry (no search on every op's path).
  return !sets_.empty() && sets_.begin()->first == 0 ? sets_.begin()->second.instance.get() : nullptr;
}

std::shared_ptr<DeviceContext> Runtime::device() {
  std::lock_guard<std::mutex> lock(mu_);
  return job() ? job()->device : nullptr;
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
  return job() != nullptr;
}

std::shared_ptr<Engine> Runtime::engine() {
  std::lock_guard<std::mutex> lock(mu_);
  return job() ? job()->engine : nullptr;
}

std::string Runtime::not_running_reason() {
  std::lock_guard<std::mutex> lock(mu_);
  return shut_down_ ? "kolo has been shut down on this rank" : "kolo is not initialized: call init() first";
}

std::string Runtime::controller() {
  std::lock_guard<std::mutex> lock(mu_);
  if (job() == nullptr) return "";
  return std::string(world_->name()) == "MPI" ? "mpi" : "gloo";
}

bool Runtime::mpi_threads_supported() {
  std::lock_guard<std::mutex> lock(mu_);
  return job() != nullptr && std::string(world_->name()) == "MPI" && world_->threads_multiple(nullptr);
}

}  // namespace kolo
