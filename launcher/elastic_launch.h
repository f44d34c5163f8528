// Elastic mode: kolorun stays mpirun's parent and starts it again, on the hosts there are then,
// after a failure (up to --reset-limit times) or for a planned restart (ranks exit 75, say on the
// SIGUSR1 kolorun sends when the discovery script finds room for more ranks).
#pragma once

#include <string>
#include <vector>

#include "launch_options.h"
#include "mpirun_command.h"

namespace kolo {
namespace launcher {

// What ranks exit with, once they have committed their state, to ask for a restart.
constexpr int kPlannedRestartStatus = 75;

// How many ranks an attempt runs on `slots`: all of them, at most --max-np; the first attempt at
// most -np.
int attempt_num_proc(const LaunchOptions& options, int slots, int attempt);

// One attempt's mpirun command: `num_proc` ranks on `hosts`, with KOLO_ELASTIC=1,
// KOLO_ELASTIC_JOB_ID and KOLO_ELASTIC_ATTEMPT set and forwarded to every rank.
MpirunCommand attempt_command(const LaunchOptions& options, const Machine& machine, const std::vector<Host>& hosts,
                              int num_proc, const std::string& job_id, int attempt);

// Runs the job, attempt after attempt, and returns kolorun's exit status. Hosts given with -H,
// --hostfile or none are expected to have been checked (slots, reachable) already.
int run_elastic(const LaunchOptions& options, const Machine& machine);

}  // namespace launcher
}  // namespace kolo
