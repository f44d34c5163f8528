// One C++ API call on its way to an engine (start_op.cc): its process set's engine and the op's identity,
// and what the calling thread keeps between calls. A small op's path reuses all of it: nothing here
// allocates per call once a thread has made its first.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm/device/device_context.h"
#include "engine/engine.h"
#include "engine/validation.h"
#include "kolo/status.h"

namespace kolo {

struct Call {
  std::shared_ptr<Engine> engine;
  std::shared_ptr<DeviceContext> device;  // null without GPU support
  std::vector<int> set_ranks;             // a process set's members by job rank; empty for the job
  int process_set = 0;
  CallSite site;
  Request request;  // an express op's (Engine::express), described into memory kept from the last
};

// What kolo keeps per calling thread, in one thread-local.
struct ThreadCalls {
  // The calls under way on this thread, reused from one call to the next so that a name is copied
  // into memory it already has. More than one: a callback run inside a call (an op refused at its
  // queue ends there) may start an op of its own.
  std::vector<std::unique_ptr<Call>> calls;
  size_t depth = 0;
};

// This thread's Call for one *_async call. Lets go of the engine at the end, so that no thread keeps an
// engine alive after shutdown().
class CallScope {
 public:
  CallScope();
  ~CallScope();
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;
  Call& operator*() const { return *call_; }

 private:
  ThreadCalls& calls_;
  Call* call_;
};

// The engine of the op's process set and this call's identity (`name`, or the next unnamed one of its
// kind and set), or why it cannot run here.
Status begin(const std::string& name, OpKind kind, int process_set, Call* call);

}  // namespace kolo
