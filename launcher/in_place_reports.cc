#include "in_place_reports.h"

#include <algorithm>
#include <cstdio>

namespace kolo {
namespace launcher {

int in_place_job_size(const std::string& line) {
  const size_t at = line.find("kolo.elastic: in place: now rank ");
  if (at == std::string::npos) return 0;
  int rank = -1, size = 0;
  if (std::sscanf(line.c_str() + at, "kolo.elastic: in place: now rank %d of %d", &rank, &size) != 2) return 0;
  return rank >= 0 && rank < size ? size : 0;
}

bool recovery_given_up(const std::string& line) {
  const size_t at = line.find("kolo: rank ");
  if (at == std::string::npos) return false;
  int rank = -1, size = 0, end = 0;
  if (std::sscanf(line.c_str() + at, "kolo: rank %d of %d: the recovery in place has not finished within %n", &rank,
                  &size, &end) != 2 || end == 0) {
    return false;
  }
  return rank >= 0 && rank < size;
}

void SurvivorExits::read(const std::string& line) {
  // Each report in the line: two ranks writing to one pipe can run theirs together.
  for (size_t at = line.find("kolo: rank "); at != std::string::npos; at = line.find("kolo: rank ", at + 1)) {
    int rank = -1, size = 0, status = -1, end = 0;
    // %n: the whole phrase matched, not a prefix of it.
    if (std::sscanf(line.c_str() + at,
                    "kolo: rank %d of %d, left in place after a peer was lost, exits with status %d%n", &rank, &size,
                    &status, &end) != 3 || end == 0) {
      continue;
    }
    if (rank < 0 || size <= 0 || rank >= size || status < 0 || status > 255) continue;
    statuses_[size][rank] = status;
  }
}

const std::map<int, int>* SurvivorExits::complete() const {
  for (const auto& sized : statuses_) {
    if (static_cast<int>(sized.second.size()) == sized.first) return &sized.second;
  }
  return nullptr;
}

bool SurvivorExits::all_exited() const { return complete() != nullptr; }

int SurvivorExits::status() const {
  int worst = 0;
  if (const std::map<int, int>* ranks = complete()) {
    for (const auto& ranked : *ranks) worst = std::max(worst, ranked.second);
  }
  return worst;
}

}  // namespace launcher
}  // namespace kolo
