// Rank 0's bookkeeping for negotiation: which ranks have submitted which names. A name becomes a
// response once every rank has submitted it, or has joined (join(): "I have no more data"; such a
// rank takes part with the op's identity). When every rank has joined, the join itself completes,
// reporting the last rank to join. Rank 0 only agrees; no tensor data passes through it.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "common/ranks.h"
#include "engine/message.h"

namespace kolo {

struct StallPolicy {
  double check_seconds = 60.0;     // report after this long; 0: never
  double shutdown_seconds = 0.0;   // fail after this long; 0: never
};

struct StallCheck {
  std::string report;               // for the log; empty when nothing new is stalled
  std::vector<Response> failures;   // ops past the shutdown limit, failed on every rank
};

class Coordinator {
 public:
  // `names`: how its messages name the ranks.
  Coordinator(int size, StallPolicy policy, RankNames names = RankNames())
      : size_(size), policy_(policy), names_(std::move(names)), joined_(static_cast<size_t>(size), false) {}

  // A request from its rank, received at `now` (seconds on rank 0's steady clock).
  void add(const Request& request, double now);
  // Responses for the names every rank has submitted, in the order they became complete.
  std::vector<Response> take_ready();
  // Ops submitted by some ranks and not others for longer than the policy's limits.
  StallCheck check_stalls(double now);

  size_t pending() const { return table_.size(); }

 private:
  struct Pending {
    std::vector<Request> by_rank;   // indexed by rank; meaningful where `submitted`
    std::vector<bool> submitted;
    int count = 0;
    double first_seen = 0.0;
    bool reported = false;
  };

  void add_join(const Request& request);
  // Emits the response for `name` if every rank has submitted it or joined.
  bool complete_if_ready(const std::string& name);
  // What `rank` is waiting on instead: the names it submitted that are still pending.
  std::vector<std::string> submitted_by(int rank) const;
  std::string describe_missing(const std::vector<int>& missing) const;

  int size_;
  StallPolicy policy_;
  RankNames names_;
  std::unordered_map<std::string, Pending> table_;
  std::vector<std::string> arrival_order_;  // names in order of first arrival, for stable reports
  std::vector<Response> ready_;
  std::vector<bool> joined_;
  int joined_count_ = 0;
  int last_joined_ = -1;
};

}  // namespace kolo
