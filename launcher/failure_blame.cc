#include "failure_blame.h"

namespace kolo {
namespace launcher {
namespace {

// The word between `before` and `after` in `line`, if both are there in that order with one word between.
bool word_between(const std::string& line, const std::string& before, const std::string& after, std::string* word) {
  const size_t start = line.find(before);
  if (start == std::string::npos) return false;
  const size_t begin = start + before.size();
  const size_t end = line.find(after, begin);
  if (end == std::string::npos || end == begin || line.find(' ', begin) < end) return false;
  *word = line.substr(begin, end - begin);
  return true;
}

// The one word after `label` when the line is `label`, spaces, that word and nothing else (an
// indented field of one of Open MPI's messages).
bool field_value(const std::string& line, const std::string& label, std::string* word) {
  const size_t start = line.find_first_not_of(' ');
  if (start == std::string::npos || line.compare(start, label.size(), label) != 0) return false;
  const size_t begin = line.find_first_not_of(' ', start + label.size());
  if (begin == std::string::npos || begin == start + label.size()) return false;
  if (line.find(' ', begin) != std::string::npos) return false;
  *word = line.substr(begin);
  return true;
}

}  // namespace

Blame blamed_host(const std::string& line, std::string* host) {
  // Open MPI's mpirun, when a rank dies: "... process rank 1 with PID 42 on node h2 exited on signal 9 (Killed)."
  if (line.find("process rank ") != std::string::npos && word_between(line, " on node ", " exited on signal", host)) {
    return Blame::kExited;
  }
  // kolo's peer watch, when a rank stops answering: "... rank 1 (host h2) sent no heartbeat for 30.0 s ..."
  if (word_between(line, " (host ", ") sent no heartbeat", host)) return Blame::kLostPeer;
  // Open MPI 5 (PRRTE), when a host is cut off: at the next start, "A daemon failed to report back after
  // being spawned ... Remote host:   h3"; while a job runs, "Remote daemon: [prterun-h1-7@0,2] on node h3".
  if (field_value(line, "Remote host:", host)) return Blame::kUnreachable;
  if (line.find("Remote daemon:") != std::string::npos && word_between(line + "\n", " on node ", "\n", host)) {
    return Blame::kUnreachable;
  }
  return Blame::kNone;
}

}  // namespace launcher
}  // namespace kolo
