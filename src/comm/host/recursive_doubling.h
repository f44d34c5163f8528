// Allreduce of a small block of bytes by recursive doubling over point-to-point messages: log2(n)
// exchanges with a partner, each side combining the other's block into its own. Open MPI's
// nonblocking MPI_Iallreduce (libnbc) takes about 0.9 us for a negotiation's few words on 2 ranks on
// shared memory, its blocking MPI_Allreduce 0.5 us, an Isend/Irecv pair 0.3 us, and the negotiation
// runs every cycle. Unlike the blocking call, every wait gives up on a lost peer (comm/group.h).
#pragma once

#include <cstddef>

#include "comm/group.h"
#include "comm/host/combine_bytes.h"
#include "kolo/status.h"

namespace kolo {

// Reduces `data` (`bytes`, the same on every rank) over `group` in place; `scratch` holds `bytes`.
// Ranks beyond the largest power of two fold into a partner first and get the result from it. Uses
// `tag` on `group`, which nothing else may receive on meanwhile. Partners always combine the lower rank's
// block first, so both hold the same bytes after each step and every rank ends with the same result,
// whether or not the reduction commutes to the bit (floating-point min with NaNs does not).
Status recursive_doubling_allreduce(Group& group, int tag, char* data, char* scratch, size_t bytes,
                                    const CombineBytes& combine, const char* what);

}  // namespace kolo
