// Runs a cycle's responses on this rank: plans fusion, hands each group to its collective as
// buffers, and ends every entry it touches: output written, callback called, handle completed.
//
// A collective may leave work running (a GPU stream): its group then waits in a completion queue,
// polled between and after cycles, while the engine negotiates the next ops; work that can fires a
// WorkSignal as it ends, so that the engine polls when there is something to find. Its entries leave the
// queue at launch (their names may be submitted again: the next op's work queues behind this one's
// on the device) and complete when the work has ended.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "comm/collective.h"
#include "engine/handle_table.h"
#include "engine/message.h"
#include "engine/tensor_queue.h"
#include "engine/timeline.h"
#include "engine/work_signal.h"

namespace kolo {

class Executor {
 public:
  // `job_rank`: this rank as the job knows it, for its errors.
  Executor(const CollectiveRegistry* registry, TensorQueue* queue, HandleTable* handles, Timeline* timeline,
           int64_t fusion_threshold_bytes, int job_rank, bool join_average_over_contributors = false,
           std::shared_ptr<WorkSignal> signal = nullptr);
  ~Executor();

  // `agreed_at`: when the cycle that produced `responses` finished negotiating. `joined`: this rank
  // is in join(), so it takes part in ops it did not submit.
  void run(const std::vector<Response>& responses, double agreed_at, bool joined = false);
  // Whether every collective `responses` need gives up its waits on a lost peer (Collective::
  // gives_up_on_lost_peer), so that a caller's thread may run them.
  bool runs_on_caller(const std::vector<Response>& responses) const;
  // Ends the op that rode on the cycle's collective (engine/rider.h): its reduction, in `rider`, scaled
  // into its output as the CPU path would, over `size` ranks.
  void finish_ridden(const Response& response, const std::string& rider, int size);
  // Ends every group whose work has ended since the last call. Never blocks.
  void poll();
  // Groups whose work is still running.
  size_t running() const { return running_.size(); }
  // The same, from any thread.
  size_t running_any_thread() const { return running_count_; }
  // Whether every group still running fires the signal when its work ends (Completion::wake_when_done),
  // so that nothing is found only by polling. Any thread.
  bool signals_every_end() const { return unsignalled_count_ == 0; }
  // Between cycles (KOLO_AUTOTUNE): the largest fused group from the next run on.
  void set_fusion_threshold(int64_t bytes) { fusion_threshold_bytes_ = bytes; }
  // On the engine thread: where phases are written from now on (null: nowhere).
  void set_timeline(Timeline* timeline) { timeline_ = timeline; }
  // Waits up to `seconds` for the running work, then aborts what is left, ending it with `why`; ends
  // every group.
  void drain(double seconds, const Status& why);

  // Ends an entry: callback, then handle, so that wait() returns after the callback has run. The entry
  // goes back to `spares` (null: freed) first, so that the caller's next op finds it there.
  static void finish(std::unique_ptr<TensorEntry> entry, const Status& status, HandleTable* handles,
                     TensorQueue* spares);

 private:
  struct Group;
  void launch(std::unique_ptr<Group> group);
  void end(Group& group, const Status& status);

  const int job_rank_;
  const bool join_average_over_contributors_;
  const CollectiveRegistry* registry_;
  TensorQueue* queue_;
  HandleTable* handles_;
  Timeline* timeline_;  // may be null
  int64_t fusion_threshold_bytes_;
  std::vector<std::unique_ptr<Group>> running_;  // in launch order
  std::atomic<size_t> running_count_{0};
  // Fired by running groups' work as it ends (null: none is asked to); of running_, those that will not.
  const std::shared_ptr<WorkSignal> signal_;
  std::atomic<size_t> unsignalled_count_{0};
};

}  // namespace kolo
