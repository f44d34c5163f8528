// Engine::express: a blocking small allreduce run in the one cycle it rides on, with no entry, handle or
// queue slot unless that cycle leaves it in flight. The cycle is the same collective as any other, so
// peers on the usual path (or taking this one) see nothing different.
#include <mutex>

#include "cpu/kernels.h"
#include "engine/engine.h"
#include "engine/rider.h"

namespace kolo {

Engine::Express Engine::express(const Request& request, const TensorView& input, const TensorView& output,
                                const DoneCallback& on_done, Status* status, int64_t* handle) {
  // Read without a lock first: most calls that cannot take it leave here.
  if (!config_.caller_drives || CycleTurns::in_cycle() || life_.over() ||
      stamps_submissions() || controller_.cache().capacity() == 0 ||
      !may_ride(request, static_cast<size_t>(config_.small_op_bytes)) || executor_.running_any_thread() > 0) {
    return Express::kNotTaken;
  }
  // Its name is in flight from here: a push of it is refused.
  if (!queue_.reserve(request.name)) return Express::kNotTaken;
  turns_.claim();
  std::unique_lock<std::mutex> lock(turns_.lock());
  switch_timeline();
  if (life_.ended() || life_.abandoned() || handed_ != nullptr || executor_.running() > 0 || timeline_ != nullptr) {
    lock.unlock();
    queue_.unreserve();
    turns_.unclaim();
    if (queue_.in_flight() > 0) queue_.wake();  // ops other threads pushed meanwhile
    return Express::kNotTaken;
  }
  apply_tuning();
  bool rode = false;
  {
    const CycleTurns::CallerCycle caller(&turns_);
    const CycleTurns::Cycle in_cycle;
    // Ops pushed since the last cycle go in with it, ahead of it. Where only its reservation is in
    // flight, none was.
    const size_t taken = queue_.in_flight() == 1 ? 0 : queue_.take_new(&submitted_);
    if (submitted_.size() <= taken) submitted_.resize(taken + 1);
    submitted_[taken] = request;  // an assignment: into memory the cycle's requests keep
    struct Ours {
      const std::string* name;
      const void* data;
    } ours{&request.name, input.data};
    // (Two pointers captured: the RiderLoader holds them without allocating.)
    const Status s = controller_.cycle(submitted_.data(), taken + 1, life_.stop_asked(), &cycle_result_,
                                       [this, &ours](uint32_t position, const Response& r, std::string* rider) {
                                         if (r.name == *ours.name) {
                                           load_rider(position, r, ours.data, rider);
                                           return true;
                                         }
                                         TensorEntry* e = queue_.find(r.name);
                                         if (e != nullptr) load_rider(position, r, *e, rider);
                                         return e != nullptr;
                                       });
    const CycleResult& result = cycle_result_;
    rode = s.ok() && !result.shutdown && result.ridden && result.ridden_response.name == request.name;
    if (rode) {
      uint32_t position = 0;
      const char* reduced = nullptr;
      rider_result(result.rider, &position, &reduced);
      const Response& r = result.ridden_response;
      scale_into(r.dtype, reduced, output.data, r.num_elements(),
                 post_scaling(r.dtype, r.reduce_op, r.postscale, topology_.size));
    } else {
      // In flight now, as if pushed before this cycle: what the cycle agreed on (its own run, a failure
      // that ends the engine) finds it in the queue, and drive() goes on with it.
      std::unique_ptr<TensorEntry> e = queue_.new_entry();
      e->request = request;
      e->input = input;
      e->output = output;
      e->handle = handles_->create(on_done, request.name);
      *handle = e->handle;
      queue_.adopt(std::move(e));
    }
    bool idle = false;
    conclude_cycle(s, &idle, true, rode);
  }
  if (!rode) return Express::kQueued;  // drive() hands back
  const bool left_work = handed_ != nullptr;
  lock.unlock();
  queue_.unreserve();
  hand_back(left_work);
  *status = Status::OK();
  if (on_done) on_done(*status);
  return Express::kDone;
}

}  // namespace kolo
