// kolorun --gloo's ranks, watched to their end. Without --in-place the first rank to fail (a status other
// than 0, or a signal) ends the job, named, as mpirun ends one, and the job's status is its. In place
// (--in-place, KOLO_GLOO_IN_PLACE) a rank's failure is the survivors' to go on from (src/comm/gloo/
// survivors.h): it is named and the others run on; the job's status is the last rank's to end. A stop signal
// (SIGINT, SIGTERM) ends every rank; SIGUSR1 (elastic kolorun: the hosts have room for more ranks) reaches
// every rank as SIGUSR1, through the store for those on other hosts.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "gloo_plan.h"
#include "store/tcp_store_server.h"

namespace kolo {
namespace launcher {

struct Running {
  pid_t pid = -1;
  int rank = -1;     // -1: srun, for every rank
  std::string host;
};

// The words a rank's peer watch reads in the store (src/comm/gloo/gloo_peer_watch.h): the job ends, and
// how many times the hosts changed.
std::string ended_key(const GlooStoreAddress& store);
std::string hosts_changed_key(const GlooStoreAddress& store);

// Runs to the last rank's end; kolorun's exit status.
int watch_ranks(const std::vector<Running>& running, const TcpStoreServer& server, const GlooStoreAddress& store,
                bool in_place);

}  // namespace launcher
}  // namespace kolo
