// Whether the job's processes still answer: a world's watch over its ranks (MPI's heartbeats,
// comm/mpi/mpi_peer_watch.h), which reports a peer silent for the timeout once, on its own thread. What
// stops heartbeats is a process that cannot run at all (frozen by SIGSTOP, or swapped out for good) or a
// host that cannot be reached: exactly the cases where a collective would otherwise wait for ever.
#pragma once

#include <functional>
#include <string>

namespace kolo {

class PeerWatch {
 public:
  // Called once, on the watch's thread, with what was seen ("rank 1 (host h2) sent no heartbeat for 30.0 s").
  using OnLost = std::function<void(const std::string& why)>;
  virtual ~PeerWatch() = default;
  // Says goodbye to the peers it watches (so that this rank's silence from now on is no loss) and ends its
  // thread. True: the object may go. False (after a loss, or a goodbye that cannot leave): the transport
  // still holds its buffers, so the owner keeps the object to the process's end.
  virtual bool stop() = 0;
};

}  // namespace kolo
