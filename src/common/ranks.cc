#include "common/ranks.h"

#include <algorithm>

namespace kolo {

std::string rank_phrase(int rank) { return "rank " + std::to_string(rank); }

std::string format_ranks(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(ranks[i]);
    if (j > i) out += '-' + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

std::string ranks_phrase(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + format_ranks(ranks);
}

RankNames::RankNames(std::vector<int> job_ranks, int process_set)
    : job_ranks_(std::move(job_ranks)),
      prefix_(process_set == 0 ? std::string() : "process set " + std::to_string(process_set) + ": ") {}

int RankNames::job_rank(int rank) const {
  if (rank < 0 || rank >= static_cast<int>(job_ranks_.size())) return rank;
  return job_ranks_[static_cast<size_t>(rank)];
}

std::string RankNames::rank(int rank) const { return rank_phrase(job_rank(rank)); }

std::string RankNames::ranks(std::vector<int> ranks) const {
  for (int& r : ranks) r = job_rank(r);
  return ranks_phrase(ranks);
}

}  // namespace kolo
