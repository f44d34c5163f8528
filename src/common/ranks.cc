#include "common/ranks.h"

#include <algorithm>

namespace kolo {

namespace {
thread_local const RankLabels* current_labels = nullptr;
}  // namespace

RankLabels::RankLabels(std::vector<int> job_ranks, std::string set_name)
    : previous_(current_labels), job_ranks_(std::move(job_ranks)), set_name_(std::move(set_name)) {
  current_labels = this;
}

RankLabels::~RankLabels() { current_labels = previous_; }

int job_rank(int rank) {
  const RankLabels* l = current_labels;
  if (l == nullptr || rank < 0 || rank >= static_cast<int>(l->job_ranks_.size())) return rank;
  return l->job_ranks_[static_cast<size_t>(rank)];
}

std::string set_prefix() {
  const RankLabels* l = current_labels;
  return l == nullptr || l->set_name_.empty() ? std::string() : l->set_name_ + ": ";
}

std::string rank_phrase(int rank) { return "rank " + std::to_string(job_rank(rank)); }

std::string format_ranks(std::vector<int> ranks) {
  for (int& r : ranks) r = job_rank(r);
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

}  // namespace kolo
