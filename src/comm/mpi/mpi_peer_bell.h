// Opens this rank's doorbell (comm/socket/udp_doorbell.h) and tells every rank of `comm` where the
// others' are, so that negotiation's waits across hosts sleep until the peer they wait for rings
// instead of in timed naps. Collective over `comm`. Where this rank's socket cannot be made it warns
// and takes part with none (peers do not ring it; its own waits nap as before): *out is then null.
#pragma once

#include <mpi.h>

#include <memory>

#include "comm/peer_bell.h"
#include "kolo/status.h"

namespace kolo {

Status open_peer_bell(MPI_Comm comm, std::unique_ptr<PeerBell>* out);

}  // namespace kolo
