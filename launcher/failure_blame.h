// Which host a line of a failed job's output blames: what kolorun's elastic mode counts to leave a
// host that keeps failing out of the job. Pure, so it is tested on the lines themselves.
#pragma once

#include <string>

namespace kolo {
namespace launcher {

// The host named by Open MPI's "process rank N with PID P on node HOST exited on signal S" or by
// kolo's peer watch "rank N (host HOST) sent no heartbeat"; false for any other line.
bool blamed_host(const std::string& line, std::string* host);

}  // namespace launcher
}  // namespace kolo
