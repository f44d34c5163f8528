#include "comm/host/hierarchical_reducer.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "comm/host/ring_allreduce.h"
#include "comm/host/shm_reducer.h"
#include "comm/host/tags.h"

namespace kolo {

HierarchicalReducer::HierarchicalReducer(const Context& context)
    : context_(context),
      // How blocks cross between hosts: chosen for a call too large to go flat.
      crossing_(choose_allreduce(DeviceType::kCPU, std::numeric_limits<int64_t>::max(), context.job_shape(), true)) {}

Status HierarchicalReducer::cross_ring(char* data, int count, size_t elem, const CombineBytes& combine) {
  const size_t scratch = ring_scratch_bytes(count, elem, context_.topology().cross_size);
  if (cross_scratch_.size() < scratch) cross_scratch_.resize(scratch);
  return ring_allreduce(context_.cross(), tags::kCrossing, data, cross_scratch_.data(), count, elem, combine,
                        "allreduce across hosts (ring)");
}

Status HierarchicalReducer::start(const void* send, void* recv, int count, DataType dtype, ReduceOp op) {
  const Topology& t = context_.topology();
  const int elem = static_cast<int>(dtype_size(dtype));
  Flight f;
  f.recv = static_cast<char*>(recv);
  f.count = count;
  f.elem = elem;
  f.combine = combine_for(dtype, op);
  // Inside the host, in place: this rank's block is reduced over the host where it lies in `recv`, the
  // others are left to the allgather. Through the host's shared memory where it has it, else by kolo's
  // ring (ring_allreduce.h); both cut the blocks alike (common/blocks.h).
  if (send != nullptr) std::memcpy(recv, send, static_cast<size_t>(count) * static_cast<size_t>(elem));
  Status rs;
  if (ShmGroup* host = context_.host_shm()) {
    rs = host->reduce_scatter(f.recv, count, static_cast<size_t>(elem), HostReduceInto(dtype, op));
  } else {
    const size_t scratch = ring_scratch_bytes(count, static_cast<size_t>(elem), t.local_size);
    if (scratch_.size() < scratch) scratch_.resize(scratch);
    rs = ring_reduce_scatter(context_.local(), tags::kHostRing, f.recv, scratch_.data(), count,
                             static_cast<size_t>(elem), f.combine, "reduce-scatter inside the host (ring)");
  }
  if (!rs.ok()) return rs;
  f.mine = static_cast<int>(block_count(count, t.local_size, t.local_rank));
  f.data = f.recv + block_start(count, t.local_size, t.local_rank) * elem;
  const int mine = f.mine;
  char* data = f.data;
  f.block = next_block_++ % kDepth;
  if (crossing_ == AllreduceAlgorithm::kHierarchicalPairwise) {
    Group& cross = context_.cross();
    std::vector<char>& theirs = peer_blocks_[f.block];
    const size_t bytes = static_cast<size_t>(mine) * static_cast<size_t>(elem);
    theirs.resize(bytes + 1);
    const int peer = 1 - t.cross_rank;
    // In flight before anything is posted, so that abandon() finds whatever was.
    flights_.push_back(std::move(f));
    std::vector<std::unique_ptr<Group::Transfer>>& transfers = flights_.back().transfers;
    for (size_t at = 0; at < bytes; at += kCrossingMessageBytes) {
      const size_t n = std::min(kCrossingMessageBytes, bytes - at);
      transfers.emplace_back();
      Status s = cross.post_receive(peer, tags::kCrossing, theirs.data() + at, n, "receive across hosts",
                                    &transfers.back());
      if (!s.ok()) return s;
      transfers.emplace_back();
      s = cross.post_send(peer, tags::kCrossing, data + at, n, "send across hosts", &transfers.back());
      if (!s.ok()) return s;
    }
    return Status::OK();
  }
  if (crossing_ == AllreduceAlgorithm::kHierarchicalRingOnLane) {
    f.ticket = lane_.submit(
        [=, combine = f.combine] { return cross_ring(data, mine, static_cast<size_t>(elem), combine); });
  } else if (crossing_ == AllreduceAlgorithm::kHierarchicalRingInTurn) {
    Status s = cross_ring(data, mine, static_cast<size_t>(elem), f.combine);
    if (!s.ok()) return s;
  }
  flights_.push_back(std::move(f));
  return depth() == 1 ? finish_oldest() : Status::OK();
}

Status HierarchicalReducer::finish_oldest() {
  if (flights_.empty()) return Status::OK();
  // In turn (each wait progresses them all), yielding the core and giving up on a lost peer; in
  // flight until then, so that abandon() finds what is left after an error.
  for (auto& t : flights_.front().transfers) {
    if (!t) continue;
    Status s = t->wait(WaitPace::kTransfer);
    if (!s.ok()) return s;
    t.reset();
  }
  Flight f = std::move(flights_.front());
  flights_.pop_front();
  const Topology& t = context_.topology();
  if (!f.transfers.empty()) {
    // Both hosts compute host 0's block combined with host 1's, operands in that order, so that every
    // rank gets the same bits even where an op is not symmetric in them (which NaN's payload survives).
    char* theirs = peer_blocks_[f.block].data();
    const size_t bytes = static_cast<size_t>(f.mine) * static_cast<size_t>(f.elem);
    if (t.cross_rank == 0) {
      f.combine(f.data, theirs, bytes);
      std::memcpy(f.data, theirs, bytes);
    } else {
      f.combine(theirs, f.data, bytes);
    }
  }
  if (f.ticket != 0) {
    Status s = lane_.wait(f.ticket);
    if (!s.ok()) return s;
  }
  if (ShmGroup* host = context_.host_shm()) return host->allgather(f.recv, f.count, static_cast<size_t>(f.elem));
  return ring_allgather(context_.local(), tags::kHostRing, f.recv, f.count, static_cast<size_t>(f.elem),
                        "allgather inside the host (ring)");
}

void HierarchicalReducer::abandon() {
  // Nothing may still write a block (or read it) once it is reused.
  for (Flight& f : flights_) {
    for (auto& t : f.transfers) {
      if (t) t->cancel();
    }
    if (f.ticket != 0) lane_.wait(f.ticket);
  }
  flights_.clear();
}

}  // namespace kolo
