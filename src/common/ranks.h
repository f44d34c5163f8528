// Compact rank lists for messages: {0,1,2,5} -> "0-2,5", so a report on 512 ranks stays one line.
#pragma once

#include <string>
#include <vector>

namespace kolo {

std::string format_ranks(std::vector<int> ranks);
// "rank 3" or "ranks 0-2,5".
std::string ranks_phrase(const std::vector<int>& ranks);
// "rank 3".
std::string rank_phrase(int rank);

// How an engine's messages name ranks: as the job knows them. The engine of a process set counts ranks within
// the set; its names give a member's job rank (set rank 1 of set {0, 2} is "rank 2") and name the set. The
// default names the job's own ranks as they are, and no set.
class RankNames {
 public:
  RankNames() = default;
  // `job_ranks`: the set's members by job rank, in set-rank order (empty for the job's own engine).
  RankNames(std::vector<int> job_ranks, int process_set);

  int job_rank(int rank) const;
  // "rank 3", by job rank.
  std::string rank(int rank) const;
  // "rank 3" or "ranks 0-2,5", by job rank.
  std::string ranks(std::vector<int> ranks) const;
  // "process set 1: " for a set's engine, else "".
  const std::string& prefix() const { return prefix_; }

 private:
  std::vector<int> job_ranks_;
  std::string prefix_;
};

}  // namespace kolo
