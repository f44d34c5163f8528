// Which host a line of a failed job's output blames: what kolorun's elastic mode counts to leave a
// host that keeps failing out of the job. Pure, so it is tested on the lines themselves.
#pragma once

#include <string>

namespace kolo {
namespace launcher {

// The host named by Open MPI's "process rank N with PID P on node HOST exited on signal S" or by
// kolo's peer watch "rank N (host HOST) sent no heartbeat"; false for any other line.
bool blamed_host(const std::string& line, std::string* host);
// Whether the line is kolo's peer watch giving up on a rank that stopped answering: a job whose
// survivors then end may still leave mpirun waiting on an unreachable host.
bool reports_lost_peer(const std::string& line);

}  // namespace launcher
}  // namespace kolo
