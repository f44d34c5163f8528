// Where this process sits in the job: global rank, rank within its host, and which host. For the
// engine of a process set, the same within the set, with the set's id and its members' job ranks.
#pragma once

#include <vector>

namespace kolo {

struct Topology {
  int rank = -1;
  int size = -1;
  int local_rank = -1;   // among the ranks on this host
  int local_size = -1;
  int cross_rank = -1;   // index of this host, hosts ordered by their lowest rank
  int cross_size = -1;   // number of hosts
  bool homogeneous = true;  // every host runs the same number of ranks
  int process_set = 0;        // 0: the whole job
  std::vector<int> job_ranks;  // a process set's members by job rank, in set-rank order; empty for the job
};

}  // namespace kolo
