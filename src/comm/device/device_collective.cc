#include "comm/device/device_collective.h"

namespace kolo {

Status DeviceCollective::run(CollectiveCall& call, PhaseLog& log, std::unique_ptr<Completion>* pending) {
  Status s = context_.ensure(call.device, call.name());
  if (!s.ok()) return s;
  const DeviceContext::OnBoundDevice on_bound_device(context_);
  s = on_bound_device.status();
  if (s.ok()) s = prepare_joined_pieces(call, context_.own_memory(), context_.fill_identity());
  if (s.ok()) s = context_.wait_ready(call);
  if (!s.ok()) return s;
  auto work = std::make_unique<DeviceWork>(context_, log.enabled());
  s = work->begin();
  if (s.ok()) s = enqueue(call, *work);
  if (s.ok()) s = work->launch();
  if (!s.ok()) return s;
  *pending = std::move(work);
  return Status::OK();
}

bool DeviceCollective::gives_up_on_lost_peer(int64_t) const { return context_.launches_without_peers(groups()); }

DataType DeviceCollective::reduced_as(const CollectiveCall& call) {
  const bool narrow = call.wire_dtype == DataType::kInt16 || call.wire_dtype == DataType::kUInt16;
  return narrow ? DataType::kInt32 : call.wire_dtype;
}

ReduceOp DeviceCollective::library_op(DataType dtype, ReduceOp op) {
  const ReduceOp r = reduction_for(dtype, op);
  return r == ReduceOp::kAverage ? ReduceOp::kSum : r;
}

Status DeviceCollective::comm(DeviceContext::Group group, DeviceWork& work, DeviceComm** out) {
  Status s = context_.comm(group, out);
  if (s.ok()) work.uses(*out);
  return s;
}

}  // namespace kolo
