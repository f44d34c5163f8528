// Runs a cycle's responses on this rank: plans fusion, finds each group's collective, and ends
// every entry it touches: output written, callback called, handle completed.
#pragma once

#include <vector>

#include "comm/collective.h"
#include "engine/handle_table.h"
#include "engine/message.h"
#include "engine/tensor_queue.h"
#include "engine/timeline.h"

namespace kolo {

class Executor {
 public:
  Executor(const CollectiveRegistry* registry, TensorQueue* queue, HandleTable* handles, Timeline* timeline,
           int64_t fusion_threshold_bytes);

  // `agreed_at`: when the cycle that produced `responses` finished negotiating.
  void run(const std::vector<Response>& responses, double agreed_at);

  // Ends an entry: callback, then handle, so that wait() returns after the callback has run.
  static void finish(std::unique_ptr<TensorEntry> entry, const Status& status, HandleTable* handles);

 private:
  void run_group(const std::vector<Task>& tasks, double agreed_at);

  const CollectiveRegistry* registry_;
  TensorQueue* queue_;
  HandleTable* handles_;
  Timeline* timeline_;  // may be null
  int64_t fusion_threshold_bytes_;
};

}  // namespace kolo
