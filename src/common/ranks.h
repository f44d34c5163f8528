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

// Messages name the job's ranks. The engine of a process set counts ranks within the set; while a
// RankLabels lives, the phrases above made on its thread name the set's members by their job ranks
// (set rank 1 of set {0, 2} is "rank 2"), and set_prefix() names the set for its messages.
class RankLabels {
 public:
  RankLabels(std::vector<int> job_ranks, std::string set_name);
  ~RankLabels();
  RankLabels(const RankLabels&) = delete;
  RankLabels& operator=(const RankLabels&) = delete;

 private:
  const RankLabels* previous_;
  std::vector<int> job_ranks_;
  std::string set_name_;
  friend int job_rank(int rank);
  friend std::string set_prefix();
};
// `rank` as the job knows it.
int job_rank(int rank);
// "process set 1: " on a set's thread, else "".
std::string set_prefix();

}  // namespace kolo
