// Starting an op, once for every way in: the C++ API's *_async and blocking calls (kolo.cc) and the C
// ABI (c_api_ops.cc). How the op is submitted and what came of it travel in a Submission the caller
// owns, not in thread-local state, so that an op started inside another (a done callback run at a
// refusal or during a drive) has its own.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/function_ref.h"
#include "kolo/kolo.h"

namespace kolo {

class Engine;

struct Submission {
  // In. Blocking: the op goes to its engine without waking kolo's thread, and the caller drives it
  // (Engine::drive) before waiting; else a waiter may drive it (HandleTable::wait).
  bool blocking = false;
  // In. A refusal at once comes back in `refusal` with no handle made (the C ABI's status); else it
  // is a handle already done with it (the C++ API's *_async contract).
  bool tell_refusal = false;
  // Out.
  Status refusal;
  std::shared_ptr<Engine> driven;  // blocking: the engine that must be driven for the op, refused or not
};

// Each op's start; the public *_async calls are these with a default Submission.
Handle start_allreduce(const std::string& name, const TensorView& input, const TensorView& output,
                       const AllreduceOptions& options, Submission* how);
Handle start_allgather(const std::string& name, const TensorView& input, const SizedOutputOptions& options,
                       Submission* how);
Handle start_broadcast(const std::string& name, const TensorView& input, const TensorView& output, int root_rank,
                       const BroadcastOptions& options, Submission* how);
Handle start_alltoall(const std::string& name, const TensorView& input, const std::vector<int64_t>& splits,
                      const SizedOutputOptions& options, Submission* how);
Handle start_reducescatter(const std::string& name, const TensorView& input, const TensorView& output,
                           const ReducescatterOptions& options, Submission* how);
Handle start_barrier(int process_set, const DoneCallback& on_done, Submission* how);
Handle start_join(const DoneCallback& on_done, Submission* how);

// Runs `start` (one of the above, for one op). Refused at once (a bad argument, kolo not initialized,
// an unknown set, a name in flight): returns why, nothing enqueued and no handle made. Else, not
// blocking: OK and *handle; blocking: the caller drives its op's cycles (KOLO_CALLER_DRIVES) and waits,
// returning the op's status and *output (may be null).
Status start_op(FunctionRef<Handle(Submission*)> start, bool blocking, Handle* handle, Output* output);

// start_op's blocking path, for the C++ API's blocking calls.
Status start_blocking(FunctionRef<Handle(Submission*)> start, Output* output);

// The blocking allreduce: a small one of a CPU tensor through Engine::express where it takes it, else
// start_op's blocking path.
Status blocking_allreduce(const std::string& name, const TensorView& input, const TensorView& output,
                          const AllreduceOptions& options);

}  // namespace kolo
