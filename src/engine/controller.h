// One negotiation cycle: which submitted ops are ready on every rank, in one order all ranks share.
//
// Fast path: names seen before live in the ResponseCache on every rank, so readiness is one bit per
// name, ANDed across ranks in a single small allreduce. The same allreduce carries OR-ed words
// (sent inverted, since OR(a,b) = ~AND(~a,~b)): "someone has uncached requests", "these cache
// entries are stale", "these ranks are shutting down". Only when someone has uncached requests do
// ranks gather them to rank 0, whose Coordinator answers with a broadcast list of responses.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/ranks.h"
#include "settings/config.h"
#include "comm/control_channel.h"
#include "engine/coordinator.h"
#include "engine/message.h"
#include "engine/response_cache.h"

namespace kolo {

struct CycleResult {
  std::vector<Response> responses;  // to run, in this order, on every rank
  bool shutdown = false;            // some rank asked to stop: run nothing more
  std::vector<int> shutdown_ranks;
  std::vector<int> joined_ranks;    // ranks in join() this cycle; they take part in ops they lack
  bool negotiated = false;          // this cycle went through rank 0 (not only the cache)
  // A small allreduce done by the cycle's own collective (engine/rider.h): its response and the
  // rider, whose data is the reduction.
  bool ridden = false;
  Response ridden_response;
  std::string rider;

  // Empties it for the next cycle, keeping what it has allocated (a cycle per small op).
  void clear();
};

// Loads the op cached at `position` into `*rider` (engine/rider.h's load_rider); false if it cannot.
using RiderLoader = std::function<bool(uint32_t position, const Response& response, std::string* rider)>;

using Clock = std::function<double()>;  // seconds, monotonic

class Controller {
 public:
  // `names`: how its messages name the ranks (a process set's engine counts ranks within the set).
  Controller(ControlChannel* channel, const Config& config, Clock clock = steady_seconds,
             RankNames names = RankNames());

  // `submitted`: the `count` requests new since the last cycle (copied). Fails only when the channel
  // does. `load`: the riders of small allreduces (config.small_op_bytes; none without it). `result` is
  // cleared first.
  Status cycle(const Request* submitted, size_t count, bool want_shutdown, CycleResult* result,
               const RiderLoader& load = nullptr);
  Status cycle(const std::vector<Request>& submitted, bool want_shutdown, CycleResult* result,
               const RiderLoader& load = nullptr) {
    return cycle(submitted.data(), submitted.size(), want_shutdown, result, load);
  }

  const ResponseCache& cache() const { return cache_; }

 private:
  struct Waiting {
    Request request;
    double since;  // when this rank submitted it
  };

  void classify(const Request& request, double now, std::vector<uint64_t>* invalid);
  // Marks the request waiting on the cache at `position`, in a spare node if there is one.
  void wait_on_cache(uint32_t position, const Request& request, double now);
  // Forgets what waited at `position`, keeping its node (its request's memory) for the next.
  void stop_waiting_on_cache(uint32_t position);
  void maybe_check_stalls(double now);
  Status negotiate(double now, std::vector<Response>* responses);
  void remember(const std::vector<Response>& responses);

  ControlChannel* channel_;
  Clock clock_;
  const int rank_;
  const int size_;
  const RankNames names_;
  const double cached_stall_seconds_;  // a cached op this old is sent to rank 0 so it can be reported
  const size_t rider_data_bytes_;      // 0: no rider
  ResponseCache cache_;
  using CachedWaiting = std::map<uint32_t, Waiting>;
  CachedWaiting cached_waiting_;  // by cache position
  std::vector<CachedWaiting::node_type> spare_waiting_;  // a few, for the next cached op: no allocation
  std::vector<Waiting> uncached_;               // for rank 0 at the next negotiation
  std::unique_ptr<Coordinator> coordinator_;    // rank 0 only
  std::vector<Response> stall_failures_;        // rank 0: to announce at the next negotiation
  double last_stall_check_ = 0.0;
  std::vector<uint64_t> bits_;  // the cycle's words, kept between cycles
  std::string rider_;           // the cycle's rider, likewise
  bool joined_here_ = false;    // this rank has submitted a join that has not completed
  bool anyone_joined_ = false;  // as of the last cycle
};

}  // namespace kolo
