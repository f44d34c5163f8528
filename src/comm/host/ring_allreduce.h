// Allreduce of a large block by a ring over point-to-point messages: a reduce-scatter, then an
// allgather, n-1 steps each, every rank sending 2(n-1)/n of the block to its right neighbour, as
// Open MPI's ring does. Why kolo has its own: inside MPI_Allreduce a rank whose peer is late spins at
// full speed. When training fills every core (CPU training overlapping backward), the peer's engine
// is late because backward holds its core, and the spinning rank takes half of its own core from its
// backward in turn. Here every wait gives its core away meanwhile (WaitPace::kTransfer): on 2 ranks on
// 2 cores with backward running, ResNet-50's gradients cost 28-34 ms beyond the local step instead of
// 40-43 ms, and as fast as MPI_Allreduce with the cores free (benchmarks/README.md, PyTorch). Its two halves are the
// hierarchical allreduce's steps inside each host. Every wait also gives up on a lost peer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/blocks.h"
#include "comm/group.h"
#include "comm/host/combine_bytes.h"
#include "kolo/status.h"

namespace kolo {

// `data` is `count` elements of `elem_bytes`, the same count on every rank, cut into `size` blocks
// as common/blocks.h cuts it (block i is rank i's). Each uses `tag`
// on `group`, which nothing else may receive on meanwhile.

// The scratch ring_reduce_scatter and ring_allreduce need: the largest block.
size_t ring_scratch_bytes(int64_t count, size_t elem_bytes, int size);

// Afterwards block `rank` of `data` holds the reduction over every rank; the other blocks hold partial
// results. Each block is reduced once, on one rank, in a fixed order.
Status ring_reduce_scatter(Group& group, int tag, char* data, char* scratch, int64_t count, size_t elem_bytes,
                           const CombineBytes& combine, const char* what);

// Block i of `data` from rank i to every rank.
Status ring_allgather(Group& group, int tag, char* data, int64_t count, size_t elem_bytes, const char* what);

// The two above: every rank ends with the same bytes, whether or not the reduction commutes to the bit.
Status ring_allreduce(Group& group, int tag, char* data, char* scratch, int64_t count, size_t elem_bytes,
                      const CombineBytes& combine, const char* what);

// The same over blocks of counts[i] elements each (any sizes, the blocks in rank order): the group's own
// reduce-scatter and allgather (comm/host/group_collectives.cc).
Status ring_reduce_scatter_blocks(Group& group, int tag, char* data, char* scratch, const std::vector<int64_t>& counts,
                                  size_t elem_bytes, const CombineBytes& combine, const char* what);
Status ring_allgather_blocks(Group& group, int tag, char* data, const std::vector<int64_t>& counts, size_t elem_bytes,
                             const char* what);

}  // namespace kolo
