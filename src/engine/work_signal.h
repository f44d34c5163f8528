// How the end of device work reaches kolo's waiting threads without polling naps. The device
// backend calls fire() on a thread of its own once a group's work has ended (a CUDA host function,
// the host double's stream worker); kolo's engine thread is woken through its queue (listen), and a
// caller driving its op waits here (wait_past). Shared with every callback armed: one may run after
// the engine is gone (work left on a lost peer's communicator ends late or never).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

namespace kolo {

class WorkSignal {
 public:
  // From the backend's thread. Only counts and notifies: a CUDA host function must not call CUDA or
  // NCCL, nor block the stream for long.
  void fire();
  // How many times fire() has run.
  uint64_t fired();
  // Waits until fired() exceeds `seen` or `seconds` pass; returns fired().
  uint64_t wait_past(uint64_t seen, double seconds);
  // Called by every fire() from now on (the engine wakes its thread's queue), until cleared with an
  // empty function; once that listen({}) has returned, no fire() is still inside the old one.
  void listen(std::function<void()> listener);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t fired_ = 0;
  std::function<void()> listener_;
};

}  // namespace kolo
