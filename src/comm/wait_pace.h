// How a wait for a peer paces itself once its first spins are over: the MPI waits (comm/mpi/mpi_wait.h)
// and kolo's own point-to-point algorithms (comm/host/) name it; a transport whose waits sleep until the
// data is there (Gloo's) takes it as a hint.
#pragma once

namespace kolo {

enum class WaitPace {
  // Negotiation and small ops: a peer not there within 50 us may be computing for milliseconds, so
  // yield briefly, then nap in steps doubling to 1 ms.
  kControl,
  // A step of a large transfer that every rank has started: the peer is on its way, or descheduled for
  // a time slice by the framework's threads on a full machine. Yield for 2 ms (on an idle core a yield
  // returns at once, so a wait ends as soon as the data is there; on a busy one the framework's thread
  // runs meanwhile), then nap in steps of at most 100 us.
  kTransfer,
};

}  // namespace kolo
