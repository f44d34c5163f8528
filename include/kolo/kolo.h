// kolo's C++ API: data-parallel collectives negotiated, fused and run by a background engine.
//
//   kolo::init();                                   // once per process, after or instead of MPI_Init
//   kolo::Handle h = kolo::allreduce_async("grad/w", view, view);
//   ... more work ...
//   kolo::Status s = kolo::wait(h);                 // s.ok(), or why not (naming the tensor and ranks)
//
// Every rank must submit an operation of a given name for it to run; ranks may submit in any order
// and from any thread. An empty name asks kolo to number the call, which is only safe when every rank
// makes its unnamed calls of that kind in the same order.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kolo/export.h"
#include "kolo/status.h"
#include "kolo/tensor.h"
#include "kolo/types.h"

namespace kolo {

// ---- Lifecycle and topology ------------------------------------------------------------------

// Starts the engine. Initializes MPI unless the application already did (then kolo works on a
// duplicate of MPI_COMM_WORLD and leaves MPI_Finalize to the application). Calling it again while
// initialized is a no-op; after shutdown() it starts a fresh engine.
KOLO_EXPORT Status init(const Settings& overrides = {});
// Stops the engine on every rank (the first rank to call it ends the job's collectives): operations
// still in flight fail with kAborted, so no waiter is left behind.
KOLO_EXPORT Status shutdown();
// Fault tolerance in place (Open MPI 5's ULFM, the job started with `mpirun --with-ft ulfm`): when a
// peer fails, kolo revokes its communicators, so that no survivor waits on it, and every op in flight
// or enqueued later fails with kPeersFailed. recover_in_place() (collective over the survivors) then
// shrinks the job to them and starts kolo again, no process restarted; rank() and size() change.
// The failed ops' GPU work may write their outputs until recover_in_place() returns: roll your state
// back after it. Without ULFM a lost peer ends the job and recover_in_place() is kUnsupported.
KOLO_EXPORT Status recover_in_place();
// Whether this job survives a lost peer in place (ULFM built and on), as of init().
KOLO_EXPORT bool in_place_recovery();
KOLO_EXPORT bool is_initialized();

// All of these return -1 before init().
KOLO_EXPORT int rank();
KOLO_EXPORT int size();
KOLO_EXPORT int local_rank();   // index among the ranks on this host
KOLO_EXPORT int local_size();   // ranks on this host
KOLO_EXPORT int cross_rank();   // index of this host
KOLO_EXPORT int cross_size();   // number of hosts
// True when the job runs over MPI and MPI gave MPI_THREAD_MULTIPLE, so the application may make its own
// MPI calls concurrently.
KOLO_EXPORT bool mpi_threads_supported();
// The world the ranks formed (KOLO_CONTROLLER): "mpi" or "gloo" while initialized, "" otherwise.
KOLO_EXPORT std::string controller();
// True when every host runs as many ranks; false before init().
KOLO_EXPORT bool is_homogeneous();

// Starts writing a timeline (see KOLO_TIMELINE; %r in the path gives each rank its own file, else
// rank 0 writes) from now on, replacing one being written; `mark_cycles` marks negotiation cycles.
// Returns once the engine writes to it. stop_timeline() closes it (the file is then valid JSON).
KOLO_EXPORT Status start_timeline(const std::string& path, bool mark_cycles = false);
KOLO_EXPORT Status stop_timeline();

// ---- Operations ------------------------------------------------------------------------------

// ReduceOp, Output, Settings, the callbacks and reducescatter_rows are in kolo/types.h.

// For the reducing collectives, allreduce and reducescatter.
struct ReduceOptions {
  ReduceOp op = ReduceOp::kAverage;
  // Integers are multiplied in double precision and truncated toward zero; bools are never scaled
  // (their reductions are logical: Sum, Average, Max are or; Min, Product are and).
  double prescale_factor = 1.0;   // applied to the input before the reduction
  double postscale_factor = 1.0;  // applied to the result
  DoneCallback on_done;
  Compression compression = Compression::kNone;  // allreduce only (kolo/types.h)
  int process_set = 0;  // 0: every rank; else a set from add_process_set (see Process sets below)
};
using AllreduceOptions = ReduceOptions;
using ReducescatterOptions = ReduceOptions;

struct SizedOutputOptions {
  OutputAllocator allocate;  // empty: kolo allocates, and wait() hands the memory over in Output
  DoneCallback on_done;
  int process_set = 0;
};

struct BroadcastOptions {
  DoneCallback on_done;
  int process_set = 0;  // root_rank is then still a job rank, as in Horovod; it must be in the set
};

// An operation in flight. Copyable; wait() consumes it.
class KOLO_EXPORT Handle {
 public:
  Handle() = default;
  explicit Handle(int64_t id) : id_(id) {}
  int64_t id() const { return id_; }
  bool valid() const { return id_ > 0; }

 private:
  int64_t id_ = 0;
};

// A call that is wrong in itself (bad dtype, null data, wrong output size, name already in flight,
// kolo not initialized, ...) returns a handle that has already failed with kInvalidArgument or
// kNotInitialized: nothing was enqueued.

// output may be the input (in place). Shapes and dtypes must match.
KOLO_EXPORT Handle allreduce_async(const std::string& name, const TensorView& input,
                                   const TensorView& output, const AllreduceOptions& options = {});
// Concatenates every rank's input along the first dimension, which may differ per rank.
KOLO_EXPORT Handle allgather_async(const std::string& name, const TensorView& input,
                                   const SizedOutputOptions& options = {});
// output receives root's input on every rank; output may be the input (in place).
KOLO_EXPORT Handle broadcast_async(const std::string& name, const TensorView& input,
                                   const TensorView& output, int root_rank,
                                   const BroadcastOptions& options = {});
// Sends splits[r] rows of the input (along the first dimension, in rank order) to rank r.
// Empty splits: the first dimension is divided evenly (it must divide by size()).
KOLO_EXPORT Handle alltoall_async(const std::string& name, const TensorView& input,
                                  const std::vector<int64_t>& splits,
                                  const SizedOutputOptions& options = {});
// Reduces across ranks, then rank r keeps its block of the first dimension: rows are divided as
// evenly as possible, lower ranks taking one extra row when they do not divide (reducescatter_rows).
KOLO_EXPORT Handle reducescatter_async(const std::string& name, const TensorView& input,
                                       const TensorView& output,
                                       const ReducescatterOptions& options = {});
// One barrier at a time per rank (they all share the name "barrier").
KOLO_EXPORT Handle barrier_async(const DoneCallback& on_done = {});
// The same among the ranks of a process set.
KOLO_EXPORT Handle barrier_async(int process_set, const DoneCallback& on_done = {});
// "This rank has no more data": until every rank has joined, the others' allreduces, allgathers,
// broadcasts and barriers go on with this rank taking part with the op's identity (zeros for a sum,
// no rows for an allgather), and an Average divides by every rank (as Horovod and PyTorch's Join;
// KOLO_JOIN_AVERAGE=contributors: by the ranks that contributed). This rank may
// submit nothing else meanwhile. Output::last_joined_rank tells the last rank to join.
KOLO_EXPORT Handle join_async(const DoneCallback& on_done = {});

// Blocks until the operation ends, then releases the handle. Every operation ends: with its result,
// with an error naming the tensor and ranks, or with kAborted when the engine stops.
KOLO_EXPORT Status wait(Handle handle, Output* output = nullptr);
// As wait(), but gives up after timeout_seconds with kTimeout and keeps the handle.
KOLO_EXPORT Status wait_for(Handle handle, double timeout_seconds, Output* output = nullptr);
// For GPU ops: the host waits only until kolo has launched the op's work on the GPU, then `stream`
// (a cudaStream_t; null: the default stream) waits for that work on the device, and the handle is
// released as by wait(). A training step thus queues what follows without blocking on the
// collective. The output is final; an error the GPU meets afterwards is logged and fails kolo's
// later GPU ops. For host ops, and ops that ended before launch (an error), as wait().
KOLO_EXPORT Status wait_on_stream(Handle handle, void* stream, Output* output = nullptr);
// std::nullopt while the operation is in flight; its status once done. Does not release the handle.
KOLO_EXPORT std::optional<Status> poll(Handle handle);

// Blocking forms: enqueue, then wait.
KOLO_EXPORT Status allreduce(const std::string& name, const TensorView& input, const TensorView& output,
                             const AllreduceOptions& options = {});
KOLO_EXPORT Status allgather(const std::string& name, const TensorView& input, Output* output,
                             const SizedOutputOptions& options = {});
KOLO_EXPORT Status broadcast(const std::string& name, const TensorView& input, const TensorView& output,
                             int root_rank, const BroadcastOptions& options = {});
KOLO_EXPORT Status alltoall(const std::string& name, const TensorView& input,
                            const std::vector<int64_t>& splits, Output* output,
                            const SizedOutputOptions& options = {});
KOLO_EXPORT Status reducescatter(const std::string& name, const TensorView& input,
                                 const TensorView& output, const ReducescatterOptions& options = {});
KOLO_EXPORT Status barrier();
// Returns the last rank to join in *last_joined_rank (may be null).
KOLO_EXPORT Status join(int* last_joined_rank = nullptr);

// ---- Process sets ----------------------------------------------------------------------------
// A process set is a subset of the job's ranks with an engine and communicators of its own: its ops
// negotiate, fuse and run among its members only (a slow set never holds up another), hierarchically
// inside it where configured, on NCCL communicators of its own on GPUs. Ops name the set in their
// options (`process_set`); ranks stay job ranks everywhere (a broadcast's root, messages), and an op
// from a rank outside the set fails at once. 0 is every rank (the global set).

// Collective over every rank of the job, each passing the same ranks (any order): makes a set of
// them and gives its id, the same on every rank (ids count up from 1). Fails on every rank, saying
// why, when the ranks disagree, are out of range or repeated, or already form a set. Needs
// MPI_THREAD_MULTIPLE (which kolo asks for when it initializes MPI).
KOLO_EXPORT Status add_process_set(const std::vector<int>& ranks, int* id);
// Collective over every rank of the job: the set's engine stops and its id is gone. Refused on every
// rank while any member still has ops of the set in flight.
KOLO_EXPORT Status remove_process_set(int id);
// The set's members (job ranks, ascending) and this rank's place among them (-1: not a member).
KOLO_EXPORT Status process_set_ranks(int id, std::vector<int>* ranks, int* rank = nullptr);
// The ids of every set known here, 0 first.
KOLO_EXPORT std::vector<int> process_set_ids();

// ---- Build --------------------------------------------------------------------------------------

struct BuildInfo {
  std::string version;
  std::string mpi_version;    // empty when not built with MPI (never, today)
  bool cuda = false;          // CUDA support compiled in
  std::string cuda_version;
  bool nccl = false;
  std::string nccl_version;
  std::string gpus;           // with CUDA: the GPUs this process sees, or why none is usable
  bool mpi_ulfm = false;      // the MPI has ULFM (fault-tolerant communicators)
  bool gloo = false;          // the Gloo world compiled in (KOLO_WITH_GLOO)
  std::string gloo_version;
};
KOLO_EXPORT BuildInfo build_info();

}  // namespace kolo
