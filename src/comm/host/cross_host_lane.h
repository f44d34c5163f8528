// A thread of its own for the cross-host stage of hierarchical allreduce. While it sends one
// segment's block between hosts, kolo's thread reduces the next segment inside the host and gathers
// the one before, so that the link is kept busy instead of waiting for the host's work in turn (on 2
// emulated hosts at 1 Gbit/s: 1.16x the link's bound time against 1.26x and more one stage after
// another; benchmarks/README.md, "Across hosts"). Its work runs in the order given, one call at a time; the
// transport must allow calls from several threads (MPI: MPI_THREAD_MULTIPLE).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "kolo/status.h"

namespace kolo {

class CrossHostLane {
 public:
  CrossHostLane() = default;
  ~CrossHostLane();
  CrossHostLane(const CrossHostLane&) = delete;
  CrossHostLane& operator=(const CrossHostLane&) = delete;

  // Queues `work` (the thread starts with the first); its ticket for wait().
  uint64_t submit(std::function<Status()> work);
  // Blocks until the ticket's work has run; its status.
  Status wait(uint64_t ticket);

 private:
  void loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<uint64_t, std::function<Status()>>> queue_;
  std::map<uint64_t, Status> done_;
  uint64_t next_ticket_ = 1;
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace kolo
