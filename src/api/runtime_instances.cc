// How an instance (the job, set 0, or a process set) starts and stops: over the context the world made for
// its members, its host's shared memory, its GPU context where a GPU is usable, the collectives over both,
// and its engine.
#include <string>

#include "api/runtime.h"
#include "comm/allreduce_choice.h"
#include "comm/barrier.h"
#include "comm/device/device_collectives.h"
#include "comm/hierarchy_choice.h"
#include "comm/host/group_control_channel.h"
#include "comm/host/host_collectives.h"
#include "comm/host/shm_control_channel.h"
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
  instance->context = std::move(start.context);
  Context& context = *instance->context;
  if (start.id != 0) context.mark_process_set(start.id, start.ranks);
  const Topology& topo = context.topology();
  Config& config = start.config;
  const int64_t slot = config.shared_memory_slot_bytes;
  context.open_host_shm(
      HostShmOptions{config.shared_memory, config.shared_memory_dir, slot == Config::kAuto ? 0 : static_cast<size_t>(slot)});
  std::unique_ptr<Timeline> timeline;
  if (!start.timeline_path.empty()) {
    Status s = start.id == 0 ? Timeline::open(start.timeline_path, topo.rank, &timeline)
                      : Timeline::open(set_timeline_path(start.timeline_path, start.id), topo.rank, &timeline, -1.0,
                                       topo.job_ranks[topo.rank]);
    if (!s.ok()) return s;
  }
  std::unique_ptr<CollectiveRegistry> registry = collectives_for(&config, context, &instance->device);
  for (int g = 0; g < DeviceContext::kGroups && instance->device && start.carried; ++g) {
    if (!start.carried->group[g]) continue;
    const Status adopted =
        instance->device->adopt(static_cast<DeviceContext::Group>(g), std::move(start.carried->group[g]));
    if (!adopted.ok()) instance->device->poison(adopted);
  }
  if (start.carried) *start.carried = SurvivingComms();
  config.timeline_mark_cycles = config.timeline_mark_cycles || start.timeline_cycles;
  // Every rank on this host: negotiation through its shared memory too.
  auto over_group = std::make_unique<GroupControlChannel>(context.control());
  std::unique_ptr<ControlChannel> channel;
  if (context.host_shm() != nullptr && topo.cross_size == 1) {
    channel = std::make_unique<ShmControlChannel>(context.host_shm(), std::move(over_group));
  } else {
    channel = std::move(over_group);
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
  // In this order: the engine's collectives use the device's communicators and the context's groups.
  instance->engine.reset();
  instance->device.reset();
  instance->context.reset();
}

std::unique_ptr<CollectiveRegistry> Runtime::collectives_for(Config* config, const Context& context,
                                                             std::shared_ptr<DeviceContext>* device) {
  const Topology& topo = context.topology();
  resolve_layout_defaults(topo, config);
  const CollectiveTuning tuning{config->segment_bytes, config->zero_copy_bytes};
  auto registry = std::make_unique<CollectiveRegistry>();
  // Which allreduce runs: comm/allreduce_choice.h. Hierarchical allreduce splits each host's share into
  // one block per local rank, so every host must have as many ranks; hierarchical allgather works with
  // any layout.
  const JobShape job = context.job_shape();
  const AllreduceSettings settings = allreduce_settings(*config);
  const bool hierarchical_allreduce = starts_hierarchical(DeviceType::kCPU, job, settings);
  if (config->hierarchical_allreduce && !topo.homogeneous && topo.rank == 0) {
    KOLO_LOG(kWarning, "KOLO_HIERARCHICAL_ALLREDUCE needs the same number of ranks on every host; "
                       "using flat allreduce");
  }
  // Where KOLO_AUTOTUNE chooses between flat and hierarchical, both are built (comm/hierarchy_choice.h).
  if (tunes_hierarchy(job, settings)) {
    registry->add(make_hierarchy_choice(make_host_allreduce(context, tuning),
                                        make_host_hierarchical_allreduce(context, tuning), hierarchical_allreduce));
  } else {
    registry->add(hierarchical_allreduce ? make_host_hierarchical_allreduce(context, tuning)
                                         : make_host_allreduce(context, tuning));
  }
  registry->add(make_host_adasum(context));
  registry->add(config->hierarchical_allgather ? make_host_hierarchical_allgather(context)
                                               : make_host_allgather(context));
  registry->add(make_host_broadcast(context, tuning));
  registry->add(make_host_alltoall(context));
  registry->add(make_host_reducescatter(context));
  registry->add(make_negotiated_barrier());
  add_device_collectives(*config, starts_hierarchical(DeviceType::kCUDA, job, settings), context, registry.get(),
                         device);
  return registry;
}

void Runtime::add_device_collectives(const Config& config, bool hierarchical_allreduce, const Context& context,
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
  *device = std::make_shared<DeviceContext>(backend_, context);
  DeviceContext& d = **device;
  if (tunes_hierarchy(context.job_shape(), allreduce_settings(config))) {
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
