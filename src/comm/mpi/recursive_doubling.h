// Allreduce of a small block of bytes by recursive doubling over point-to-point messages: log2(n)
// exchanges with a partner, each side combining the other's block into its own. Open MPI's
// nonblocking MPI_Iallreduce (libnbc) takes about 0.9 us for a negotiation's few words on 2 ranks on
// shared memory, its blocking MPI_Allreduce 0.5 us, an Isend/Irecv pair 0.3 us, and the negotiation
// runs every cycle. Unlike the blocking call, every wait gives up on a lost peer (mpi_wait).
#pragma once

#include <mpi.h>

#include <cstddef>

#include "comm/mpi/combine_bytes.h"
#include "comm/peer_bell.h"
#include "kolo/status.h"

namespace kolo {

// Reduces `data` (`bytes`, the same on every rank) over `comm` in place; `scratch` holds `bytes`.
// Ranks beyond the largest power of two fold into a partner first and get the result from it. Uses
// `tag` on `comm`, which nothing else may receive on meanwhile. Partners always combine the lower rank's
// block first, so both hold the same bytes after each step and every rank ends with the same result,
// whether or not the reduction commutes to the bit (floating-point min with NaNs does not).
// With a `bell`, its waits sleep on it and it rings partners waiting for it (point_to_point.h).
Status recursive_doubling_allreduce(MPI_Comm comm, int rank, int size, int tag, char* data, char* scratch,
                                    size_t bytes, const CombineBytes& combine, const char* what,
                                    PeerBell* bell = nullptr);

}  // namespace kolo
