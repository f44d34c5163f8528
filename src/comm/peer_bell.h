// What a wait for a peer's message may sleep on instead of a timed nap, and how a rank wakes a peer
// that sleeps waiting for its message. MPI wakes no sleeping waiter when a message arrives, so a rank
// waiting for a late peer on another host would see it only when its nap ends (up to 1 ms later).
// A hint, never data: a note or a ring lost costs the sleeper the rest of its nap, as without a bell.
// Used by the MPI waits (comm/mpi/mpi_status.h); one over UDP in comm/socket/udp_doorbell.h.
#pragma once

#include <chrono>

namespace kolo {

class PeerBell {
 public:
  virtual ~PeerBell() = default;
  // Before a wait for `peer`'s message first sleeps: tells `peer` so (ring_if_asleep there finds the
  // note), and forgets rings already here, which were for waits that have ended.
  virtual void sleeping_on(int peer) = 0;
  // Sleeps until this rank is rung or `timeout` passes; true when rung.
  virtual bool sleep(std::chrono::microseconds timeout) = 0;
  // Rings `peer` where it has said it sleeps waiting for this rank: called once this rank has sent to
  // it. Costs a look at this rank's own socket where `peer` has said nothing; never blocks.
  virtual void ring_if_asleep(int peer) = 0;
};

}  // namespace kolo
