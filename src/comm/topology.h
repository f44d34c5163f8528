// Where this process sits in the job: global rank, rank within its host, and which host.
#pragma once

namespace kolo {

struct Topology {
  int rank = -1;
  int size = -1;
  int local_rank = -1;   // among the ranks on this host
  int local_size = -1;
  int cross_rank = -1;   // index of this host, hosts ordered by their lowest rank
  int cross_size = -1;   // number of hosts
  bool homogeneous = true;  // every host runs the same number of ranks
};

}  // namespace kolo
