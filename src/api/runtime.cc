#include "api/runtime.h"

#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <utility>

#include "comm/device/surviving_comms.h"
#include "comm/mpi/mpi_fault.h"
#include "comm/mpi/mpi_status.h"
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
  if (r.faults_.lost().ok()) mpi_finalize_if_owned(r.mpi_);
}

namespace {

// "rank 3 of 8", from the launcher's variables (MPI may still be starting): for messages only.
std::string launcher_rank_words() {
  for (const auto& [rank, size] : {std::pair{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                   std::pair{"PMIX_RANK", "SLURM_NTASKS"}, std::pair{"PMI_RANK", "PMI_SIZE"},
                                   std::pair{"SLURM_PROCID", "SLURM_NTASKS"}}) {
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
  int rank = 0, size = 0;
  MPI_Comm_rank(world_, &rank);
  MPI_Comm_size(world_, &size);
  world_size_ = size;
  job_rank_ = rank;
  // The job's communicator's first allreduce on this thread, before any of kolo's threads run MPI (see
  // MpiContext::init: Open MPI's coll/han makes communicators of its own at a communicator's first allreduce).
  int one = 1;
  if (const int rc = MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_INT, MPI_MIN, world_); rc != MPI_SUCCESS) {
    return mpi_status(rc, "MPI_Allreduce (the job's communicator)");
  }
  set_log_rank(rank);
  faults_.set_rank(rank);
  if (rank == 0) {
    for (const std::string& w : warnings) KOLO_LOG(kWarning, w);
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

  std::vector<int> job_ranks(static_cast<size_t>(size));
  std::iota(job_ranks.begin(), job_ranks.end(), 0);
  InstanceStart start;
  start.ranks = job_ranks;
  start.comm = world_;
  start.config = config;
  start.timeline_path = timeline_path_;
  start.carried = &carried_;  // after a recovery in place: the communicators shrunk from the last
  // The watch starts before the engine's thread does: its collectives beside that thread's first cycles
  // held every rank for up to 4 s on a loaded machine, heartbeats of ULFM's detector (4 s in place) went
  // unsent, and it took a live rank for a failed one.
  if (config.peer_timeout_seconds > 0 && size > 1) {
    if (mpi_.thread_level == MPI_THREAD_MULTIPLE) {
      s = faults_.start_watch(world_, config.peer_timeout_seconds);
      if (!s.ok()) return s;
    } else if (rank == 0) {
      KOLO_LOG(kWarning, "no peer watch (KOLO_PEER_TIMEOUT_SECONDS): it needs MPI_THREAD_MULTIPLE, and MPI provides "
                             << mpi_thread_level_name(mpi_.thread_level)
                             << "; a frozen or unreachable process may leave the others waiting");
    }
  }
  std::shared_ptr<Instance> instance;
  s = start_instance(std::move(start), &instance);
  if (!s.ok()) {
    faults_.stop_watch();
    return s;
  }
  const Topology& topo = instance->mpi->topology();
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
    // abandoned), its GPU context and MPI's: all stay.
    faults_.keep(job);
    if (job->device && faults_.failed_in_place()) faults_.add_failed_device(job->device);
    // Like the context, left to MPI (revoked after a failure in place, or shared with a lost peer): not freed.
    std::lock_guard<std::mutex> lock(mu_);
    untrack_comm(sets_comm_);
    sets_comm_ = MPI_COMM_NULL;
    return Status::OK();
  }
  faults_.forget_engine(job->engine);
  // Callers that copied the engine keep the object alive but find it stopped. In this order: the
  // collectives refer to the MPI context, and the device's communicators and stream go before MPI's
  // context (their ids travelled over it).
  job->engine.reset();
  job->device.reset();
  std::lock_guard<std::mutex> lock(mu_);
  job->mpi.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) release_comm(&sets_comm_);
  sets_comm_ = MPI_COMM_NULL;
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

bool Runtime::mpi_threads_supported() {
  std::lock_guard<std::mutex> lock(mu_);
  return job() != nullptr && mpi_.thread_level == MPI_THREAD_MULTIPLE;
}

}  // namespace kolo
