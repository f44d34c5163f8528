// MPI return codes as kolo Status, with MPI's own words for what went wrong.
#pragma once

#include <mpi.h>

#include <string>

#include "comm/peer_bell.h"
#include "kolo/status.h"

namespace kolo {

Status mpi_status(int rc, const std::string& what);

#define KOLO_MPI_RETURN_IF_ERROR(call, what)        \
  do {                                              \
    const int kolo_mpi_rc_ = (call);                \
    if (kolo_mpi_rc_ != MPI_SUCCESS) return ::kolo::mpi_status(kolo_mpi_rc_, what); \
  } while (0)

// How a wait paces itself once its first spins are over.
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

// Waits for a nonblocking MPI request without pinning a core: spin briefly, then yield, then
// sleep in short naps, so a waiting engine leaves the CPU to the framework's threads (ranks often
// outnumber cores on a laptop or in CI). With a `bell`, the wait tells `peer` (the rank whose message
// it waits for) that it sleeps, and each nap sleeps on the bell: a ring (the peer has sent) ends the
// nap, and the wait spins and yields again for the message.
Status mpi_wait(MPI_Request* request, const char* what, WaitPace pace = WaitPace::kControl, PeerBell* bell = nullptr,
                int peer = -1);

// A peer is lost and the job must end (no ULFM): every mpi_wait from now on gives up, failing with
// `why`, instead of waiting for ever for the lost peer (its request is left to the process's end), so
// that a caller running kolo's cycle on its own thread hears of the loss as an op's error.
void give_up_mpi_waits(const std::string& why);
// OK, or the Aborted status an mpi_wait gives up with after give_up_mpi_waits (`what` names the wait):
// for waits outside MPI (kolo's shared memory).
Status mpi_waits_given_up(const char* what);

}  // namespace kolo
