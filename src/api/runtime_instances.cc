// How an instance (the job, set 0, or a process set) starts and stops: its MPI context over the members'
// communicator, its GPU context where a GPU is usable, the collectives over both, and its engine.
#include <string>

#include "api/runtime.h"
#include "comm/allreduce_choice.h"
#include "comm/barrier.h"
#include "comm/device/device_collectives.h"
#include "comm/hierarchy_choice.h"
#include "comm/mpi/mpi_collectives.h"
#include "comm/mpi/mpi_control_channel.h"
#include "comm/mpi/mpi_peer_bell.h"
#include "comm/mpi/shm_control_channel.h"
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

std::string set_timeline_path(const std::string& path, int id);

Status Runtime::start_instance(InstanceStart start, std::shared_ptr<Instance>* out) {
  auto instance = std::make_shared<Instance>();
  Status s = MpiContext::create(start.comm, &instance->mpi);
  if (!s.ok()) return s;
  if (start.id != 0) instance->mpi->mark_process_set(start.id, start.ranks);
  const Topology& topo = instance->mpi->topology();
  Config& config = start.config;
  const int64_t slot = config.shared_memory_slot_bytes;
  instance->mpi->open_host_shm(
      HostShmOptions{config.shared_memory, config.shared_memory_dir, slot == Config::kAuto ? 0 : static_cast<size_t>(slot)});
  std::unique_ptr<Timeline> timeline;
  if (!start.timeline_path.empty()) {
    s = start.id == 0 ? Timeline::open(start.timeline_path, topo.rank, &timeline)
                      : Timeline::open(set_timeline_path(start.timeline_path, start.id), topo.rank, &timeline, -1.0,
                                       topo.job_ranks[topo.rank]);
    if (!s.ok()) return s;
  }
  std::unique_ptr<CollectiveRegistry> registry = collectives_for(&config, *instance->mpi, &instance->device);
  for (int g = 0; g < DeviceContext::kGroups && instance->device && start.carried; ++g) {
    if (!start.carried->group[g]) continue;
    const Status adopted =
        instance->device->adopt(static_cast<DeviceContext::Group>(g), std::move(start.carried->group[g]));
    if (!adopted.ok()) instance->device->poison(adopted);
  }
  if (start.carried) *start.carried = SurvivingComms();
  config.timeline_mark_cycles = config.timeline_mark_cycles || start.timeline_cycles;
  // Across hosts, negotiation's waits sleep on a doorbell; every rank on this host: negotiation through
  // its shared memory too.
  std::unique_ptr<PeerBell> bell;
  if (config.doorbell && topo.cross_size > 1) {
    s = open_peer_bell(instance->mpi->control(), &bell);
    if (!s.ok()) return s;
  }
  auto mpi_channel = std::make_unique<MpiControlChannel>(instance->mpi->control(), std::move(bell));
  std::unique_ptr<ControlChannel> channel;
  if (instance->mpi->host_shm() != nullptr && topo.cross_size == 1) {
    channel = std::make_unique<ShmControlChannel>(instance->mpi->host_shm(), std::move(mpi_channel));
  } else {
    channel = std::move(mpi_channel);
  }
  instance->engine = std::make_shared<Engine>(config, topo, std::move(channel), std::move(registry),
                                              std::move(timeline), &handles_);
  instance->engine->start();
  *out = std::move(instance);
  return Status::OK();
}

void Runtime::stop_instance(const std::shared_ptr<Instance>& instance) {
  if (instance == nullptr) return;
  if (instance->engine) instance->engine->stop();
  if (!faults_.lost().ok()) {
    faults_.keep(instance);  // its engine's thread may be stuck on the lost peer
    return;
  }
  faults_.forget_engine(instance->engine);
  // In this order: the engine's collectives use the device's and MPI's communicators.
  instance->engine.reset();
  instance->device.reset();
  instance->mpi.reset();
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

}  // namespace kolo
