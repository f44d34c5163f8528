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
           int64_t fusion_threshold_bytes, int rank);

  // `agreed_at`: when the cycle that produced `responses` finished negotiating. `joined`: this rank
  // is in join(), so it takes part in ops it did not submit, through stand-ins.
  void run(const std::vector<Response>& responses, double agreed_at, bool joined = false);

  // Ends an entry: callback, then handle, so that wait() returns after the callback has run.
  static void finish(std::unique_ptr<TensorEntry> entry, const Status& status, HandleTable* handles);

 private:
  void run_group(const std::vector<Task>& tasks, double agreed_at);
  void finish_task(const Task& task, const Status& status);

  std::vector<std::unique_ptr<TensorEntry>> stand_ins_;  // this group's, for a joined rank

  int rank_;
  const CollectiveRegistry* registry_;
  TensorQueue* queue_;
  HandleTable* handles_;
  Timeline* timeline_;  // may be null
  int64_t fusion_threshold_bytes_;
};

}  // namespace kolo
