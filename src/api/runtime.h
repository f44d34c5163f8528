// The process's one kolo runtime: the world the job runs over (comm/world.h: MPI or Gloo), a map of
// instances (the job is process set 0, each added set one more, all started one way), the handle table,
// and the fault domain that a lost peer goes through. Every piece of state kolo keeps for a process is here or in what it owns; the few
// process-wide variables elsewhere are listed, with why each stays, in docs/architecture.md.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/fault_domain.h"
#include "common/function_ref.h"
#include "comm/device/device_context.h"
#include "comm/context.h"
#include "comm/device/surviving_comms.h"
#include "comm/world.h"
#include "comm/device/device.h"
#include "engine/engine.h"
#include "engine/handle_table.h"

namespace kolo {

// One engine with what it runs on: its context (its groups of ranks, comm/context.h), its GPU context
// (where one is usable) and the collectives over them. The job has one (process set 0); each process set
// has its own, over the set's ranks. Started by Runtime::start_instance only.
struct Instance {
  std::unique_ptr<Context> context;
  std::shared_ptr<DeviceContext> device;
  std::shared_ptr<Engine> engine;
};

// A process set as this rank knows it: its members and, on a member, its instance.
struct ProcessSet {
  int id = 0;
  std::vector<int> ranks;  // job ranks, ascending
  int rank = -1;           // this rank's place among them; -1 outside the set
  std::shared_ptr<Instance> instance;
};

// What an op in a process set (0: the job) runs on, on this rank.
struct Target {
  std::shared_ptr<Engine> engine;
  std::shared_ptr<DeviceContext> device;
  std::vector<int> ranks;  // a set's members by job rank; empty for the job
};

class Runtime {
 public:
  static Runtime& instance();

  Status init(const Settings& overrides);
  Status shutdown();
  // After a peer failed in a job that survives a loss in place (kPeersFailed): stops kolo on this rank,
  // shrinks the world to the survivors (agreed among them) and starts kolo again over it with the same
  // settings. Collective over the survivors. rank() and size() then describe the new job.
  Status recover_in_place();
  // Whether a lost peer is survived in place (ULFM on), as of init().
  bool in_place();
  bool initialized();
  // The running engine, or null; shared so that a concurrent shutdown cannot pull it away mid-call.
  std::shared_ptr<Engine> engine();
  HandleTable& handles() { return handles_; }
  // The GPU kolo's device collectives use while initialized, or null (no GPU support, or no GPU).
  std::shared_ptr<DeviceContext> device();
  // The device backend, which outlives init() and shutdown() (events and memory kolo handed out
  // are released through it).
  std::shared_ptr<DeviceBackend> device_backend();
  // Tests put the host double here before init(), in place of CUDA.
  void use_device_backend(std::shared_ptr<DeviceBackend> backend);
  // Whether the job runs over MPI and MPI allows calls from several threads (MPI_THREAD_MULTIPLE).
  bool mpi_threads_supported();
  // "mpi" or "gloo" while initialized, else "".
  std::string controller();

  // Process sets (src/api/process_sets.cc). `target` for an op of process set `id` on this rank, or
  // why it cannot run there (unknown set, not a member, not initialized), after `what()` names the op
  // (made only then: this is on every op's path).
  Status target(int id, FunctionRef<std::string()> what, Target* target);
  // Both collective over every rank of the job, which must pass the same arguments; an error is the
  // same on every rank. add: `ranks` (job ranks, any order) get a set of their own with its own
  // engine and communicators; *id is its id (the same on every rank). remove: refused on every rank
  // while any member has ops of the set in flight.
  Status add_process_set(std::vector<int> ranks, int* id);
  Status remove_process_set(int id);
  // The set's members (ascending) and this rank's place among them (-1: not a member).
  Status process_set(int id, std::vector<int>* ranks, int* rank);
  std::vector<int> process_set_ids();
  // The timeline of every engine: the job's to `path`, each set's beside it (set_timeline_path).
  Status start_timeline(const std::string& path, bool mark_cycles);
  Status stop_timeline();
  // Why no engine is running, for the error of an op submitted without one.
  std::string not_running_reason();

 private:
  Runtime() = default;
  static void at_exit();
  // The collectives of an instance over `context`, and its GPU context where a GPU is usable (else the
  // registry says why not); resolves the config's layout defaults for the instance's topology.
  std::unique_ptr<CollectiveRegistry> collectives_for(Config* config, const Context& context,
                                                      std::shared_ptr<DeviceContext>* device);
  void add_device_collectives(const Config& config, bool hierarchical_allreduce, const Context& context,
                              CollectiveRegistry* registry, std::shared_ptr<DeviceContext>* device);
  // The one way to start an instance: process set `id` (0: the job) of `ranks` (job ranks; every rank
  // for the job) over `context`, which the world made for it; `carried`: GPU communicators shrunk by a
  // recovery in place, for the job's. Takes no lock: the caller registers it.
  struct InstanceStart {
    int id = 0;
    std::vector<int> ranks;
    std::unique_ptr<Context> context;
    Config config;
    std::string timeline_path;  // the job's; a set's goes beside it
    bool timeline_cycles = false;
    SurvivingComms* carried = nullptr;
  };
  Status start_instance(InstanceStart start, std::shared_ptr<Instance>* out);
  void stop_instance(const std::shared_ptr<Instance>& instance);

  // Opens the world init() asks for (once per process and kind) and, where it survives a loss in place,
  // hooks the fault domain to its failures. Called with mu_ held.
  Status open_world(const Config& config);
  ContextOptions context_options(const Config& config) const;
  // The job's instance (set 0), or null when not initialized. Called with mu_ held.
  Instance* job();

  std::mutex mu_;
  // The worlds opened in this process (MPI's, Gloo's), each for the process's life, and the one the job runs
  // over now (init() may ask for the other: KOLO_CONTROLLER among its settings).
  std::unique_ptr<World> worlds_[2];  // [0] MPI, [1] Gloo
  World* world_ = nullptr;
  std::shared_ptr<DeviceBackend> backend_;
  bool backend_chosen_ = false;
  HandleTable handles_;
  FaultDomain faults_{&handles_};  // a lost peer: in place or not, the failure, what a loss abandons and keeps
  Config base_config_;  // as configured, before layout defaults (each set resolves its own)
  int world_size_ = 0;
  int job_rank_ = -1;
  // Process sets: registration travels on the world's group for it, one add or remove at a time.
  std::mutex sets_op_mu_;
  // The instances: the job is set 0, present while kolo is initialized; each set added after it.
  std::map<int, ProcessSet> sets_;
  int next_set_id_ = 1;
  std::string timeline_path_;  // the job's timeline being written, for sets added meanwhile
  bool timeline_cycles_ = false;
  bool exit_hook_ = false;
  // Rank 0 of an elastic job (KOLO_ELASTIC, set by kolorun) has said every rank started: once per process.
  bool said_started_ = false;
  Settings overrides_;   // init()'s, for recovery
  SurvivingComms carried_;  // shrunk by recover_in_place, for the job's next GPU context
  bool shut_down_ = false;  // after shutdown(), ops say so rather than "not initialized"
};

}  // namespace kolo
