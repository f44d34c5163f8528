// Status of every operation between enqueue and wait(), and the caller's callback. Outlives engine
// restarts, so a handle taken before shutdown() can still be waited on after it. An op ends once:
// whoever ends it first (the engine, or fail_pending when a peer is lost while the engine is stuck
// in MPI) runs its callback and wakes its waiters; a later end is ignored. In steady state it allocates
// nothing: a released handle's map node, its name's memory kept, serves the next one.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kolo/types.h"

namespace kolo {

class Engine;

class HandleTable {
 public:
  // In flight; on_done runs when it ends. `name`: the tensor's, for fail_pending's message. `engine`:
  // that of an async op, whose waiter may run its cycles (driver()).
  int64_t create(DoneCallback on_done = {}, const std::string& name = {}, std::weak_ptr<Engine> engine = {});
  int64_t create_done(Status status);         // already ended (a call rejected at enqueue)
  // Ends the op: its callback, then its waiters, so that wait() returns after the callback has run.
  void complete(int64_t handle, Status status, Output output);
  // Ends every op still in flight with `status` (a lost peer), each message led by "tensor 'NAME' did
  // not run: "; returns how many.
  size_t fail_pending(const Status& status);
  // The op's device work has been launched: `done_event` fires when it has ended, and `output` is
  // final already. A caller may then have its own stream wait instead of the host (wait_launched).
  void launched(int64_t handle, std::shared_ptr<void> done_event, const Output& output);

  // The engine that may run the op's cycles on its waiter's thread (Engine::drive_waited, called by the
  // API's wait before it blocks here): an async op's, while the op is pending and not launched; else null
  // (a blocking call's op, which its caller drives anyway, or an engine gone since).
  std::shared_ptr<Engine> driver(int64_t handle);
  // Blocks until done, or `timeout_seconds` (< 0: no limit) pass. Releases the handle when done.
  Status wait(int64_t handle, double timeout_seconds, Output* output);
  std::optional<Status> poll(int64_t handle);
  // Forgets an op that never reached an engine (refused at its queue), without its callback.
  void discard(int64_t handle);
  // Blocks until the op has ended or its device work has been launched. Ended: as wait(), and
  // *done_event is left null. Launched: OK, *done_event set, the output handed over and the handle
  // released (its completion, later, finds nobody waiting).
  Status wait_launched(int64_t handle, std::shared_ptr<void>* done_event, Output* output);
  size_t size();

 private:
  struct State {  // a member added here must be reset in forget() too
    bool done = false;
    bool ending = false;    // its callback is running
    bool released = false;  // handed over at launch (wait_launched): forgotten once it ends
    DoneCallback on_done;
    std::string name;
    Status status;
    Output output;
    std::shared_ptr<void> done_event;  // set once the device work has been launched
    std::weak_ptr<Engine> driver;      // empty: the op's engine runs it alone (a blocking call's drives it)
  };
  using States = std::unordered_map<int64_t, State>;
  static constexpr size_t kMostSpares = 64;  // nodes kept for reuse at most, past a burst of ops

  // Under mu_: a new handle's state, in a spare node if there is one.
  States::iterator add();
  // Under mu_: marks the op done (or forgets it, if released), false if nobody may wait for it.
  bool end(States::iterator it, Status* status, Output* output);
  // Under mu_: forgets the handle, keeping its node for the next.
  void forget(States::iterator it);
  // Under mu_ (every writer holds it, so a plain store counts): an end or launch a watcher may await.
  void tick_ends() { ends_.store(ends_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }
  // With `lock` on mu_: unless the op is `ready`, watches ends_ for a short bound (at most `seconds`),
  // unlocked and yielding, before the caller sleeps on cv_; returns locked.
  template <typename Ready>
  void watch_before_sleep(std::unique_lock<std::mutex>& lock, double seconds, Ready ready);

  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> ends_{0};  // counts what wakes cv_'s waiters (ends, launches), for the watch
  int64_t next_ = 1;
  States states_;
  std::vector<States::node_type> spares_;
};

}  // namespace kolo
