// The seam between the engine and the ways bytes move. The engine hands a Collective an agreed
// operation as buffers (CollectiveCall); one Collective per algorithm and device (MPI for CPU
// tensors, the device path for GPU tensors, ...), each in its own file. The registry picks the
// first that accepts a call, so choosing one is data, not scattered ifs, and it is also the one
// place that answers "is this supported".
//
// A collective may finish its work before run() returns (MPI), or leave it running (a GPU stream)
// and hand back a Completion that the engine polls each cycle while it negotiates the next ops.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/op_kind.h"
#include "kolo/status.h"
#include "kolo/tensor.h"
#include "kolo/types.h"

namespace kolo {

// One tensor of an operation on this rank.
struct Piece {
  std::string name;                // for messages
  const void* in = nullptr;        // the input
  void* out = nullptr;             // the output (may be `in`); null until allocated for allgather, alltoall
  int64_t bytes = 0;               // the input's size
  std::vector<int64_t> shape;      // the input's shape
  std::vector<int64_t> splits;     // alltoall: rows this rank sends to each rank
  // This rank has joined and has no tensor of this name: it takes part with memory the collective
  // gets from `allocate` (the op's identity for a reduction, scratch to receive a broadcast, no
  // rows for an allgather). `in` and `out` are null.
  bool joined = false;
  // Device tensors: an event recorded on the producer's stream when the op was enqueued. The work
  // on this tensor starts after it (on the device, never blocking the host). Null for host tensors.
  void* ready = nullptr;
};

// Memory kolo owns, of the collective's kind (host memory for host collectives, device memory for
// device ones), released when the last owner lets go.
using OwnMemory = std::function<Status(int64_t bytes, std::shared_ptr<void>* storage)>;
// Gives piece `piece` an output of `shape` (the input's dtype and device): the caller's allocator
// if it gave one, else memory from `own`; the result is *data.
using AllocateOutput =
    std::function<Status(size_t piece, const std::vector<int64_t>& shape, const OwnMemory& own, void** data)>;

// An agreed operation as this rank runs it: every tensor of a fused group, with what the ranks
// agreed on (op, dtype, scaling, shapes).
struct CollectiveCall {
  OpKind kind = OpKind::kAllreduce;
  DataType dtype = DataType::kFloat32;
  Device device;                     // where this rank's tensors are
  ReduceOp reduce_op = ReduceOp::kSum;
  double prescale = 1.0;
  double postscale = 1.0;
  DataType wire_dtype = DataType::kFloat32;  // what the data travels as (compression); = dtype without
  int contributors = 0;              // ranks that contributed (an Average divides by it); 0: every rank
  int root = 0;                      // broadcast; join: the last rank to join
  std::vector<int64_t> shape;        // as agreed: allgather's output shape, else the common input shape
  std::vector<int64_t> first_dims;   // allgather: rows from each rank
  std::vector<Piece> pieces;
  AllocateOutput allocate;

  // What the collective reports beyond the outputs.
  std::vector<int64_t> received_splits;  // alltoall: rows received from each rank
  int last_joined_rank = -1;             // join

  const std::string& name() const { return pieces.front().name; }
  int64_t num_elements() const { return kolo::num_elements(shape); }
  int64_t size_bytes() const { return num_elements() * static_cast<int64_t>(dtype_size(dtype)); }
};

// Settings a collective takes up between runs: KOLO_SEGMENT_BYTES and friends at start, and
// KOLO_AUTOTUNE's choices on a live job (every rank at the same cycle, none while a run is under way).
struct CollectiveTuning {
  int64_t segment_bytes = 0;    // CPU: the largest MPI call; 0: no limit
  int64_t zero_copy_bytes = 0;  // CPU: tensors this large are reduced where they lie; 0: never
  bool hierarchical = false;    // allreduce: inside hosts, then across (where one can choose)
};

// The phases of each piece that a collective reports, for the timeline.
enum class Phase { kPack, kCollective, kUnpack };
constexpr int kNumPhases = 3;
const char* phase_name(Phase phase);

class PhaseLog {
 public:
  PhaseLog(size_t pieces, bool enabled);
  bool enabled() const { return enabled_; }
  // Widens piece's span of `phase` to include [start, end] (steady seconds).
  void record(size_t piece, Phase phase, double start, double end);
  // The same span for every piece.
  void record_all(Phase phase, double start, double end);
  struct Span {
    double start = 0.0, end = 0.0;
    bool set = false;
  };
  const Span& span(size_t piece, Phase phase) const { return spans_[piece * kNumPhases + static_cast<int>(phase)]; }

 private:
  bool enabled_;
  size_t pieces_;
  std::vector<Span> spans_;
};

// Work a collective left running when run() returned.
class Completion {
 public:
  virtual ~Completion() = default;
  // std::nullopt while the work runs; its outcome once it has ended. Never blocks.
  virtual std::optional<Status> poll() = 0;
  // Device work: an event recorded after it, which a framework's stream may wait on instead of the
  // host waiting (get() is the DeviceEvent; the owner keeps it valid). Null for host work.
  virtual std::shared_ptr<void> done_event() const { return nullptr; }
  // Once poll() has given an outcome: the phases as measured where the work ran.
  virtual void record_phases(PhaseLog& log) {}
  // The engine is stopping and the work has not ended within its bound: stop it, so that nothing
  // writes to the callers' memory any more. poll() then gives an error. A peer lost in place
  // (kPeersFailed) leaves device work to recover_in_place, which stops it by shrinking its
  // communicators.
  virtual void abort(const Status& why) {}
  // Arranges for `wake` to be called, on any thread and maybe after this object is gone, once the work
  // has ended, so that the engine polls when there is something to find. False where it cannot (the
  // engine then polls in naps). Work that fails without ending (a communicator's error) may never call
  // it: the engine still polls once a cycle.
  virtual bool wake_when_done(const std::function<void()>& wake) {
    (void)wake;
    return false;
  }
};

class Collective {
 public:
  virtual ~Collective() = default;
  virtual const char* name() const = 0;  // shown in the timeline, e.g. "MPI_ALLREDUCE"
  virtual bool accepts(OpKind kind, DeviceType device) const = 0;
  // Reductions: whether it runs `op`. Adasum is an algorithm of its own, which only its collectives run.
  virtual bool accepts_reduction(ReduceOp op) const { return op != ReduceOp::kAdasum; }
  // Runs the call, writing each piece's output. Either finishes before returning (`*pending` left
  // null) or returns OK with the rest of the work in `*pending`; an error means nothing is left running.
  virtual Status run(CollectiveCall& call, PhaseLog& log, std::unique_ptr<Completion>* pending) = 0;
  // Whether run() of at most `bytes` waits only in calls that give up when a peer is lost, so that a
  // caller's thread may run it (engine/engine.h, drive): a blocking call with a lost peer would keep it
  // for ever.
  virtual bool gives_up_on_lost_peer(int64_t bytes) const {
    (void)bytes;
    return false;
  }
  // Takes up what concerns it; the rest is ignored.
  virtual void tune(const CollectiveTuning& tuning) { (void)tuning; }
};

class CollectiveRegistry {
 public:
  void add(std::unique_ptr<Collective> collective) { all_.push_back(std::move(collective)); }
  // The first collective, in order of registration, that accepts the op; nullptr if none.
  Collective* find(OpKind kind, DeviceType device, ReduceOp op = ReduceOp::kSum) const;
  bool supports(OpKind kind, DeviceType device, ReduceOp op = ReduceOp::kSum) const {
    return find(kind, device, op) != nullptr;
  }
  // Why ops on `device` have no collective (for the error at enqueue), e.g. "no GPU is usable: ...".
  void set_unsupported_reason(DeviceType device, std::string why);
  std::string unsupported_reason(DeviceType device) const;
  // Hands `tuning` to every collective.
  void tune(const CollectiveTuning& tuning);

 private:
  std::vector<std::unique_ptr<Collective>> all_;
  std::string no_gpu_reason_;
};

}  // namespace kolo
