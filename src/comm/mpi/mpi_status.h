// MPI return codes as kolo Status, with MPI's own words for what went wrong.
#pragma once

#include <mpi.h>

#include <string>

#include "comm/peer_bell.h"
#include "comm/wait_pace.h"
#include "kolo/status.h"

namespace kolo {

Status mpi_status(int rc, const std::string& what);

#define KOLO_MPI_RETURN_IF_ERROR(call, what)        \
  do {                                              \
    const int kolo_mpi_rc_ = (call);                \
    if (kolo_mpi_rc_ != MPI_SUCCESS) return ::kolo::mpi_status(kolo_mpi_rc_, what); \
  } while (0)

// Waits for a nonblocking MPI request without pinning a core: spin briefly, then yield, then
// sleep in short naps, so a waiting engine leaves the CPU to the framework's threads (ranks often
// outnumber cores on a laptop or in CI). Gives up on a lost peer (comm/give_up.h). With a `bell`, the wait tells `peer` (the rank whose message
// it waits for) that it sleeps, and each nap sleeps on the bell: a ring (the peer has sent) ends the
// nap, and the wait spins and yields again for the message.
Status mpi_wait(MPI_Request* request, const char* what, WaitPace pace = WaitPace::kControl, PeerBell* bell = nullptr,
                int peer = -1);

}  // namespace kolo
