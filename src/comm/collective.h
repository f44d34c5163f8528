// The seam between the engine and the ways bytes move. One Collective per algorithm and device
// (MPI allreduce for CPU tensors, NCCL for GPU tensors, ...), each in its own file; the registry
// picks the first that accepts a response, so choosing one is data, not scattered ifs.
#pragma once

#include <memory>
#include <vector>

#include "engine/message.h"
#include "engine/tensor_entry.h"

namespace kolo {

// One response and this rank's entry for it.
struct Task {
  const Response* response;
  TensorEntry* entry;
};

// The phases of each task that a collective reports, for the timeline.
enum class Phase { kPack, kCollective, kUnpack };
constexpr int kNumPhases = 3;
const char* phase_name(Phase phase);

class PhaseLog {
 public:
  PhaseLog(size_t tasks, bool enabled);
  bool enabled() const { return enabled_; }
  // Widens task's span of `phase` to include [start, end] (steady seconds).
  void record(size_t task, Phase phase, double start, double end);
  struct Span {
    double start = 0.0, end = 0.0;
    bool set = false;
  };
  const Span& span(size_t task, Phase phase) const { return spans_[task * kNumPhases + static_cast<int>(phase)]; }

 private:
  bool enabled_;
  std::vector<Span> spans_;
};

class Collective {
 public:
  virtual ~Collective() = default;
  virtual const char* name() const = 0;  // shown in the timeline, e.g. "MPI_ALLREDUCE"
  virtual bool accepts(const Response& response) const = 0;
  // Runs every task (several only for a fused allreduce), writing each entry's output.
  virtual Status run(const std::vector<Task>& tasks, PhaseLog& log) = 0;
};

class CollectiveRegistry {
 public:
  void add(std::unique_ptr<Collective> collective) { all_.push_back(std::move(collective)); }
  // The first collective, in order of registration, that accepts `response`; nullptr if none.
  Collective* find(const Response& response) const;

 private:
  std::vector<std::unique_ptr<Collective>> all_;
};

}  // namespace kolo
