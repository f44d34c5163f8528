// The device work of one collective, from its launch on the communication stream until its done
// event has fired: what the engine polls (Completion), with what the work needs kept alive
// (buffers, events) and the communicators whose asynchronous errors end it early.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "comm/collective.h"
#include "comm/device/device_context.h"

namespace kolo {

class DeviceWork : public Completion {
 public:
  // `timed`: record an event at each phase boundary, for the timeline.
  DeviceWork(DeviceContext& context, bool timed);

  // While enqueuing, in order: begin(), then mark(phase) as each phase's work is enqueued, then
  // launch() after the last.
  Status begin();
  Status mark(Phase ended);
  void keep(std::shared_ptr<void> resource) { keep_.push_back(std::move(resource)); }
  void uses(DeviceComm* comm);
  Status launch();

  std::optional<Status> poll() override;
  std::shared_ptr<void> done_event() const override { return done_; }
  void record_phases(PhaseLog& log) override;
  void abort(const Status& why) override;
  // A host callback behind the done event on the communication stream (after launch()).
  bool wake_when_done(const std::function<void()>& wake) override;

 private:
  Status fail(const Status& why);

  DeviceContext& context_;
  const bool timed_;
  PooledEvent start_, done_;
  std::vector<std::pair<Phase, PooledEvent>> marks_;  // the event at the end of each phase
  std::vector<std::shared_ptr<void>> keep_;
  std::vector<DeviceComm*> comms_;
  Status failed_;
  double ended_at_ = 0.0;
};

}  // namespace kolo

