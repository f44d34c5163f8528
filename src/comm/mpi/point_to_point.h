// Blocking point-to-point steps over nonblocking MPI calls, so that every wait is kolo's mpi_wait: it
// leaves the core to the framework's threads and gives up on a lost peer (mpi_status.h).
#pragma once

#include <mpi.h>

#include <cstddef>

#include "comm/mpi/mpi_status.h"
#include "kolo/status.h"

namespace kolo {

// With a `bell` (comm/peer_bell.h), the waits sleep on it, and each step rings the peer it sends to
// where that peer sleeps waiting for it: after a send alone, and after an exchange's send where the
// peer's message is already here (the peer waits for this rank's; where both arrive together, neither
// sleeps, and neither looks).
Status send_bytes(MPI_Comm comm, int peer, int tag, const char* data, size_t bytes, const char* what,
                  WaitPace pace = WaitPace::kControl, PeerBell* bell = nullptr);
Status receive_bytes(MPI_Comm comm, int peer, int tag, char* data, size_t bytes, const char* what,
                     WaitPace pace = WaitPace::kControl, PeerBell* bell = nullptr);

// Sends `out_bytes` at `out` to `right` while receiving `in_bytes` from `left` into `in` (left == right
// for a pairwise exchange). Each count must fit an int; the callers check their blocks.
Status send_receive_bytes(MPI_Comm comm, int left, int right, int tag, const char* out, size_t out_bytes, char* in,
                          size_t in_bytes, const char* what, WaitPace pace = WaitPace::kControl,
                          PeerBell* bell = nullptr);

}  // namespace kolo
