// What kolo's survivors of a lost peer say, in place (kolorun --in-place), that kolorun acts on:
// - the job's new size after each recovery: a host that comes back is then room to grow into;
// - their exits: mpirun waits for every process it started, also for one frozen by SIGSTOP or on a
//   host cut off, which never end; once every survivor has exited, kolorun ends mpirun itself and
//   reports the survivors' status.
#pragma once

#include <map>
#include <string>

namespace kolo {
namespace launcher {

// The job's size after a recovery in place, from kolo.elastic's "kolo.elastic: in place: now rank R
// of N, ..." (bindings/python/kolo/elastic/runner.py); 0 if the line is not that.
int in_place_job_size(const std::string& line);

// Whether the line is a rank giving up a recovery in place that did not finish (src/api/give_up_recovery.cc):
//   "kolo: rank R of N: the recovery in place has not finished within T s (...)"
// mpirun would then wait for the lost process for good: kolorun ends it and restarts from the last commit.
bool recovery_given_up(const std::string& line);

// Each survivor prints, as it exits (bindings/python/kolo/_lifecycle.py):
//   "kolo: rank R of N, left in place after a peer was lost, exits with status S"
class SurvivorExits {
 public:
  // Counts the line if it is one of those.
  void read(const std::string& line);
  // Every rank of some job size N (the survivors of the last shrink) has said it exits.
  bool all_exited() const;
  // The highest status they gave (0 if all ended well).
  int status() const;

 private:
  // The statuses of the job size whose every rank has said it exits; null if none has.
  const std::map<int, int>* complete() const;

  std::map<int, std::map<int, int>> statuses_;  // size -> rank -> status
};

}  // namespace launcher
}  // namespace kolo
