// Reduces a segment inside each host, across hosts, and inside each host again (allreduce.cc's
// hierarchical path).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "comm/context.h"
#include "comm/host/combine_bytes.h"
#include "comm/host/cross_host_lane.h"
#include "comm/host/segment_reducer.h"

namespace kolo {

// Every host's ranks split the segment into blocks (sizes differing by at most one element, so any
// count works); block i is reduced across hosts by the ranks of local rank i, so each byte crosses
// between hosts once per host instead of once per rank. Across hosts, segments are pipelined (kDepth
// in flight): while one segment's blocks cross, this thread reduce-scatters the next ones inside the
// host and gathers the earlier ones, so that the link is kept busy. Inside the host both go through the
// host's shared memory, else kolo's ring in place (ring_allreduce.h), whose waits leave the core to the
// framework's threads. On 2 hosts the crossing is a pairwise exchange of the blocks (transfers posted in
// pieces of at most kCrossingMessageBytes; under MPI progressed by every MPI call of this thread), and
// both sides combine the two blocks in one order, so that they get the same bits. On more, kolo's ring
// over the hosts (ring_allreduce.h: each host sends the least bytes, 2(H-1)/H of the block, and every host
// gets the same bits), on a lane of its own (cross_host_lane.h) where the transport allows calls from
// several threads, else on this thread, one segment at a time. Measured in benchmarks/README.md, "Across
// hosts".
class HierarchicalReducer : public SegmentReducer {
 public:
  explicit HierarchicalReducer(const Context& context);

  int depth() const override {
    return crossing_ == AllreduceAlgorithm::kHierarchicalPairwise || crossing_ == AllreduceAlgorithm::kHierarchicalRingOnLane
               ? kDepth
               : 1;
  }
  Status start(const void* send, void* recv, int count, DataType dtype, ReduceOp op) override;
  Status finish_oldest() override;
  void abandon() override;

 private:
  static constexpr int kDepth = 3;
  // Sent whole, a block of 2 MiB (a 4 MiB segment over 2 ranks a host) crossed slower than in pieces:
  // on 2 emulated hosts x 2 ranks at 1 Gbit/s, 4 MiB segments took 1.22-1.25x the link's bound time
  // whole against 1.06-1.07x in 256 KiB pieces (1.08x in 512 KiB, 1.14-1.15x in 1 MiB), at 250 Mbit/s
  // 1.38x against 1.11-1.12x, and level without a cap (benchmarks/README.md, "Across hosts"). Not the pipeline: a
  // trace showed every rank with its exchange in flight 96-99% of the step either way.
  static constexpr size_t kCrossingMessageBytes = 256 << 10;
  // The ring across hosts on block `data` of `count` elements, in place.
  Status cross_ring(char* data, int count, size_t elem, const CombineBytes& combine);
  struct Flight {
    char* recv = nullptr;  // the segment, reduced in place
    int count = 0;
    int elem = 0;
    CombineBytes combine;  // the op, on this segment's dtype
    char* data = nullptr;  // this rank's block of the segment, the one that crosses between hosts
    int mine = 0;          // its element count
    int block = 0;  // kPairwise: which of peer_blocks_ receives the other host's block
    std::vector<std::unique_ptr<Group::Transfer>> transfers;  // kPairwise: the exchange's, piece by piece
    uint64_t ticket = 0;  // kRingOnLane: the ring across hosts
  };

  const Context& context_;
  // How blocks cross between hosts (comm/allreduce_choice.h): not at all on one host, a pairwise exchange
  // on 2, kolo's ring on the lane or on this thread on more.
  const AllreduceAlgorithm crossing_;
  std::vector<char> scratch_;  // the ring's incoming block inside the host
  std::vector<char> cross_scratch_;  // and across hosts (used by one thread at a time: the lane's, or this)
  std::vector<char> peer_blocks_[kDepth];
  size_t next_block_ = 0;
  std::deque<Flight> flights_;
  CrossHostLane lane_;  // last: its thread ends before the blocks go
};

}  // namespace kolo
