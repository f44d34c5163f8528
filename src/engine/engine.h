// The background engine of one process: a thread that runs negotiation cycles and executes what
// the ranks agree on. Knows nothing of MPI: it is given a ControlChannel for agreement and a
// CollectiveRegistry for moving bytes (src/api/runtime.cc wires the MPI ones in; the unit tests
// wire in threads-as-ranks fakes).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "comm/collective.h"
#include "comm/control_channel.h"
#include "comm/topology.h"
#include "common/ranks.h"
#include "settings/config.h"
#include "engine/controller.h"
#include "engine/cycle_turns.h"
#include "engine/engine_life.h"
#include "engine/executor.h"
#include "engine/handle_table.h"
#include "engine/tensor_queue.h"
#include "engine/timeline.h"
#include "engine/timeline_handover.h"
#include "engine/tuning/autotuner.h"
#include "engine/work_signal.h"

namespace kolo {

class Engine {
 public:
  Engine(const Config& config, const Topology& topology, std::unique_ptr<ControlChannel> channel,
         std::unique_ptr<CollectiveRegistry> registry, std::unique_ptr<Timeline> timeline, HandleTable* handles);
  ~Engine();  // stops and joins

  void start();
  // Pushes a validated entry. Returns why the push is refused (its name already in flight, the engine
  // abandoned), else OK: a refused op's handle is the caller's to end. `caller_drives`: the caller calls
  // drive() for it next (a blocking call, even when refused), so the engine thread is not woken for it.
  Status submit(std::unique_ptr<TensorEntry> entry, bool caller_drives = false);
  // An entry to fill for submit(): a finished one reused, so that a small op allocates none. Any thread.
  std::unique_ptr<TensorEntry> new_entry() { return queue_.new_entry(); }
  // On the caller's thread, for the op of `handle` it is about to wait for: while that op is in flight
  // (alone, or beside others: ops this rank's peers have not reached yet, say) and no cycle is running,
  // the caller runs the negotiation cycles itself until the op is done, instead of handing it to the
  // engine thread and back (two thread wake-ups: most of a small op's latency). Cycles are collective
  // and ordered, so which thread of a rank runs one does not matter to the others. The caller's waits
  // must give up on a lost peer (a blocking MPI call with a lost peer would keep it for ever): it
  // negotiates, ends an op that rode on the negotiation, and runs collectives that promise so
  // (Collective::gives_up_on_lost_peer); others are handed to the engine thread. Leaves whatever is
  // left to the engine thread. Needs MPI_THREAD_MULTIPLE. `until_launched`: returns once the op's
  // device work is launched, leaving its end to the engine thread (a caller whose own stream waits
  // for that work).
  void drive(int64_t handle, bool until_launched = false);
  // drive() for an async op (submitted with the engine thread woken) that its caller now waits for: the
  // API's wait() (wait_on_stream(): `until_launched`) calls it for an op whose handle names this engine as
  // its driver (HandleTable::driver), then blocks on the handle.
  void drive_waited(int64_t handle, bool until_launched);
  // A blocking small allreduce of a CPU tensor (a loss, a metric): the caller runs the cycle that it
  // rides on (engine/rider.h) without an entry, a handle or the queue, most of a small op's own work.
  // kDone: it rode, its output and *status are set and `on_done` was called. kQueued: it did not ride in
  // that cycle (a peer not there yet, its name not cached, another op riding): it is in flight as a
  // submitted op now, *handle for drive() and the wait. kNotTaken: nothing was done (its name in flight,
  // a timeline, a collective running); the usual path takes it. `request` is the op's, as its entry
  // would have it.
  enum class Express { kNotTaken, kDone, kQueued };
  Express express(const Request& request, const TensorView& input, const TensorView& output,
                  const DoneCallback& on_done, Status* status, int64_t* handle);
  // Whether a caller is inside a cycle.
  bool driven() const { return turns_.caller_in_cycle(); }
  // Asks every rank's engine to stop at the next cycle and waits for this one to end (or to be
  // abandoned).
  void stop();
  // Whether the thread has ended, waiting up to `seconds` (an abandoned engine's ends once its MPI calls
  // return, as after ULFM's revocation).
  bool wait_ended(double seconds);
  // A peer is lost and this engine's thread may be stuck in MPI for good (api/runtime.cc): stop()
  // and timeline switches no longer wait for it; its thread is left to the process's end, so the
  // owner must keep this object alive from now on.
  // Ops submitted from now on fail at once with `why`.
  void abandon(const Status& why);
  // False once the engine stopped, here or because another rank shut down.
  bool running() const { return life_.running(); }
  // Ops submitted on this rank and not yet done. Any thread.
  size_t in_flight() { return queue_.in_flight() + executor_.running_any_thread(); }

  const Topology& topology() const { return topology_; }
  const Config& config() const { return config_; }
  // Whether ops are stamped as they are submitted (TensorEntry::enqueued_at): only once a timeline
  // has been asked for, since a small op counts each clock read.
  bool stamps_submissions() const { return stamps_.load(std::memory_order_relaxed); }
  // What this engine can run, for the checks at enqueue.
  const CollectiveRegistry& collectives() const { return *registry_; }
  // From any thread: writes a timeline to `path` from now on (replacing one being written), or
  // stops writing it; returns once the engine has switched (or has stopped).
  Status start_timeline(const std::string& path, bool mark_cycles);
  void stop_timeline();

 private:
  // Whether an async op's push leaves kolo's thread asleep for its wait (TensorQueue::Announce::kSoon).
  bool waited_soon(const TensorEntry& entry) const;
  void loop();
  // Whether the op of `handle` is still in flight, for drive().
  bool awaits(int64_t handle);
  // One negotiation cycle and what it agreed on, under the turns' lock; false once the engine has ended
  // (a failed negotiation or a shutdown), its ops failed. `idle`: nothing agreed and nothing in flight.
  // `on_caller`: a driving caller's cycle, which hands what it agreed on to the engine thread (handed_);
  // a cycle on the engine thread first runs what was handed to it.
  bool run_cycle(bool* idle, bool on_caller = false);
  // run_cycle's part after the controller's cycle (status `s`, in cycle_result_): runs or hands over
  // what it agreed on, or ends the engine. `ridden_done`: the op that rode was ended already (express).
  bool conclude_cycle(const Status& s, bool* idle, bool on_caller, bool ridden_done = false);
  // The end of a caller's drive (or express op): the engine thread takes up what is left.
  void hand_back(bool left_work);
  // On the engine thread: takes up a timeline handed over by start/stop_timeline.
  void switch_timeline();
  void hand_over_timeline(std::unique_ptr<Timeline> timeline, bool mark_cycles);
  // Until the next cycle is due (or an op arrives), ending device work meanwhile as it ends: woken by
  // its signal where every running group fires one, else polled in naps.
  void wait_between_cycles(double seconds);
  void hold_while_device_is_full();
  // After the engine thread's cycle launched device work (`seen`: the work signal's count before that
  // cycle): a short watch for its end before the thread sleeps.
  void spin_on_launched_work(uint64_t seen);
  // After a cycle that left nothing in flight on this rank: a short watch for the caller's next op
  // before the thread sleeps, so that an op submitted within it needs no wake-up.
  void watch_for_next_op();
  // On a driving caller's thread, after its cycle launched device work: ends it as it ends, for a short
  // bound (woken by the work's signal), instead of leaving that to the engine thread. False: work still
  // runs after the bound (the engine thread's now).
  bool wait_for_launched_work(int64_t handle);
  // Ends the device work that has ended, unless a cycle holds the lock (nullopt); whether some did.
  std::optional<bool> try_poll_device_work();
  // Ends the device work that has ended; the next nap: the first again if some did, else doubled.
  double poll_device_work(double nap);
  // How long to wait before polling device work again: until `until` where the work's end wakes this
  // thread (the cycle still polls, for a communicator's error), else the nap.
  double device_wait(double nap, double until) const;
  void fail_all(const std::string& why, StatusCode code);
  // KOLO_AUTOTUNE: counts what the cycle agreed on; where a sample ended, rank 0's decision reaches every
  // rank through the control channel (a collective, at the same cycle everywhere).
  Status observe_tuning(const CycleResult& result);
  // On kolo's thread before its loop: its name and KOLO_THREAD_NICE.
  void prepare_thread();
  // Applies the tuner's new settings, if any, before a cycle.
  void apply_tuning();

  // How long a stopping engine waits for work still running on a device before aborting it.
  static constexpr double kDrainSeconds = 30.0;

  const Config config_;
  const Topology topology_;
  const RankNames names_;  // how its messages name ranks: by job rank, and its process set
  std::unique_ptr<ControlChannel> channel_;
  std::unique_ptr<CollectiveRegistry> registry_;
  std::unique_ptr<Timeline> timeline_;
  bool mark_cycles_ = false;
  std::atomic<bool> stamps_{false};
  TimelineHandover timeline_handover_;
  HandleTable* handles_;
  // Fired by device work as it ends; wakes this engine's queue (and a driving caller) so that
  // completions are polled when there is one to find, not in naps.
  const std::shared_ptr<WorkSignal> work_signal_ = std::make_shared<WorkSignal>();
  TensorQueue queue_;
  Controller controller_;
  CycleResult cycle_result_;  // the last cycle's, reused (under the turns' lock)
  std::vector<Request> submitted_;  // the cycle's new requests (TensorQueue::take_new), reused likewise
  Executor executor_;
  std::unique_ptr<Autotuner> tuner_;  // KOLO_AUTOTUNE; under the turns' lock
  std::thread thread_;
  // Who runs the next cycle, and the lock a cycle holds.
  CycleTurns turns_;
  // Responses a caller's cycle agreed on, for the engine thread to run before its next cycle (every
  // rank runs them in the agreed order: no cycle comes between). Under the turns' lock.
  struct Handed {
    std::vector<Response> responses;
    double agreed_at = 0;
    bool joined = false;
  };
  std::unique_ptr<Handed> handed_;
  EngineLife life_;
};

}  // namespace kolo
