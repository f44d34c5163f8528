// Whether an elastic attempt's ranks have all started. A rank frozen (or its host cut off) inside MPI's
// own start-up holds every other rank there too, where neither kolo's peer watch nor ULFM's detector runs
// yet: kolorun bounds that time (--start-timeout) and restarts the attempt.
#pragma once

#include <string>

namespace kolo {
namespace launcher {

// Rank 0 of an elastic job prints, once its first init() has gathered every rank (src/api/runtime.cc):
//   "kolo: all N ranks have started"
// The N, or 0 if the line is not that.
int started_ranks(const std::string& line);

}  // namespace launcher
}  // namespace kolo
