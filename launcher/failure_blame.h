// Which host a line of a failed job's output blames: what kolorun's elastic mode counts to leave a
// host that keeps failing out of the job. Pure, so it is tested on the lines themselves.
#pragma once

#include <string>

namespace kolo {
namespace launcher {

enum class Blame {
  kNone,
  kExited,    // Open MPI's "process rank N with PID P on node HOST exited on signal S"
  kLostPeer,  // kolo's peer watch "rank N (host HOST) sent no heartbeat": the survivors end, but
              // mpirun may still wait for an unreachable host
  kUnreachable,  // Open MPI's daemon on HOST never reported back or was lost ("Remote host:   HOST",
                 // "Remote daemon: [...] on node HOST"): printed on mpirun's standard output
};

// What the line blames, and the host it names (set unless kNone).
Blame blamed_host(const std::string& line, std::string* host);

}  // namespace launcher
}  // namespace kolo
