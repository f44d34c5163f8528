// What every collective on GPU tensors shares: its name in the timeline (the library's, e.g.
// "NCCL_ALLGATHER"), the op it takes, and the frame around its work: bind kolo's thread to the
// call's GPU, give joined pieces memory, make the communication stream wait for the inputs' ready
// events, let the collective enqueue its work (marking its phases), and hand the work back as
// pending, for the engine to poll.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm/collective.h"
#include "comm/device/device_context.h"
#include "comm/device/device_work.h"

namespace kolo {

class DeviceCollective : public Collective {
 public:
  DeviceCollective(DeviceContext& context, OpKind kind, const std::string& what)
      : context_(context), kind_(kind), name_(context.library() + "_" + what) {}
  const char* name() const override { return name_.c_str(); }
  bool accepts(OpKind kind, DeviceType device) const override { return kind == kind_ && device == DeviceType::kCUDA; }
  Status run(CollectiveCall& call, PhaseLog& log, std::unique_ptr<Completion>* pending) final;
  // Once its communicators are made, a launch only enqueues work on kolo's stream: a driving caller
  // may run it (Engine::drive).
  bool gives_up_on_lost_peer(int64_t bytes) const override;

 protected:
  // Queues the call's work on the communication stream.
  virtual Status enqueue(CollectiveCall& call, DeviceWork& work) = 0;
  // The communicators enqueue() may use on this rank.
  virtual std::vector<DeviceContext::Group> groups() const { return {DeviceContext::Group::kWorld}; }
  // A communicator of the context, which the work then depends on (its errors end the work).
  Status comm(DeviceContext::Group group, DeviceWork& work, DeviceComm** out);
  // What a reduction's data travels and is reduced as on the device: the call's wire dtype
  // (compression), except int16 and uint16, which NCCL lacks, as int32 (wrapping alike).
  static DataType reduced_as(const CollectiveCall& call);
  // The op the device library runs: bools logically (reduction_for), an Average as a sum divided
  // afterwards (as on the CPU, so integers truncate alike).
  static ReduceOp library_op(DataType dtype, ReduceOp op);

  DeviceContext& context_;

 private:
  const OpKind kind_;
  const std::string name_;
};

}  // namespace kolo
