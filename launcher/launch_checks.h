// What kolorun checks on the machine before it starts anything: mpirun is there, and every other
// host answers within the start timeout.
#pragma once

#include <string>
#include <vector>

#include "launch_options.h"

namespace kolo {
namespace launcher {

// The mpirun to use: $KOLO_MPIRUN if set, else the first on PATH; empty if none.
std::string find_mpirun();

// The first line `mpirun --version` prints ("mpirun (Open MPI) 5.0.11"); empty if it printed none.
std::string mpirun_version(const std::string& mpirun);

// Runs `agent [ssh_args] host true` (agent: ssh in batch mode, or --rsh-agent; ssh_args: -p, -i) for
// every host that is not this one, all at once; returns one message per host that failed or did not
// answer in time.
std::vector<std::string> unreachable_hosts(const std::vector<Host>& hosts, const std::string& hostname,
                                           const std::string& rsh_agent, const std::vector<std::string>& ssh_args,
                                           double timeout_seconds);

}  // namespace launcher
}  // namespace kolo
