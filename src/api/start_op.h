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
  // Blocking: the op ran to its end inside its start, with `status`, and made no handle (a small CPU allreduce
  // that took the express way, Engine::express: one policy of who runs the op's cycle).
  bool finished = false;
  Status status;
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

// Runs `start` (one of the above, for one op): the one path of every op, the C++ API's and the C ABI's.
// Refused at once (a bad argument, kolo not initialized, an unknown set, a name in flight): returns why,
// nothing enqueued and no handle made. Else, not blocking: OK and *handle; blocking: the op's status and
// *output (may be null), the op run to its end by the caller: inside its start (Submission::finished), or
// by driving its cycles (KOLO_CALLER_DRIVES) and waiting.
Status start_op(FunctionRef<Handle(Submission*)> start, bool blocking, Handle* handle, Output* output);

// start_op's blocking path, for the C++ API's blocking calls.
Status start_blocking(FunctionRef<Handle(Submission*)> start, Output* output);

}  // namespace kolo
