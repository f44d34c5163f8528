// The ranks of one host reducing through their shared segment (comm/shm/shm_layout.h), in rounds that
// every rank runs in the same order. In each round a rank copies its input into its slot and raises a
// flag; the others poll the flags (spinning briefly, then yielding, then asleep in the flag's futex, woken
// by its raise) instead of going through MPI, so a small allreduce costs a few cache-line transfers. Large
// buffers go in rounds of a slot each, block by block (common/blocks.h): each rank reduces its block's
// piece of the round, in a fixed order, and the others copy it, so every rank gets the same bits and
// each reads its input and writes its result about once, the slots staying in cache.
//
// A wait never outlasts its peer: a peer whose process ended is seen through its pidfd
// (peer_liveness.h), and the layer above can interrupt every wait (a loss the peer watch or MPI saw).
// After a failed round the group is broken: every later call fails with the same status.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/blocks.h"
#include "comm/shm/peer_liveness.h"
#include "comm/shm/shared_segment.h"
#include "comm/shm/shm_layout.h"
#include "kolo/status.h"

namespace kolo {

// What a wait asks of the layer that uses the group (it knows the job; this layer knows only pids).
class ShmWaitPolicy {
 public:
  virtual ~ShmWaitPolicy() = default;
  // Non-OK: stop waiting and fail with it (a peer lost elsewhere in the job).
  virtual Status interrupted() = 0;
  // Local rank `peer` (process `pid`) ended in the middle of a round: what the op fails with.
  virtual Status peer_ended(int peer, pid_t pid) = 0;
  // Called between rounds and while waiting: what else this thread keeps moving meanwhile (messages
  // crossing between hosts, which move only as their thread calls into MPI).
  virtual void progress() {}
};

// Reduces `n` inputs of `bytes` each into `out`, element by element, in an order fixed by the call
// (the order given; where `out` is one of the inputs, that one first, then the others in order).
class ReduceInto {
 public:
  virtual ~ReduceInto() = default;
  virtual void operator()(const char* const* inputs, int n, char* out, size_t bytes) const = 0;
};

// How a wait paces itself once its first spins are over (as comm/mpi/mpi_status.h's WaitPace).
enum class ShmPace {
  // Every rank has started the collective: yield for 2 ms, then nap at most 200 us.
  kTransfer,
  // Negotiation: a peer not there within 50 us may be computing for milliseconds: nap in steps doubling
  // to 1 ms.
  kControl,
};

class ShmGroup {
 public:
  // Over a segment of ShmLayout(ranks, slot_bytes).bytes() that every rank of the host has mapped.
  ShmGroup(std::unique_ptr<SharedSegment> segment, ShmLayout layout, int rank, ShmWaitPolicy* policy);
  ShmGroup(const ShmGroup&) = delete;
  ShmGroup& operator=(const ShmGroup&) = delete;

  // Writes this rank's pid for the others (before the group is agreed); then, once every rank has
  // written its own, start_watching() reads theirs.
  void publish_pid();
  void start_watching();
  SharedSegment& segment() { return *segment_; }

  int rank() const { return rank_; }
  int size() const { return layout_.ranks(); }
  // At most this many bytes, an allreduce is one round in which every rank reduces all of it.
  static constexpr size_t kWholeBytes = 16 << 10;

  // `count` elements of `elem` bytes from `in` (may equal `out`), reduced over the host into `out`.
  Status allreduce(const char* in, char* out, int64_t count, size_t elem, const ReduceInto& reduce,
                   ShmPace pace = ShmPace::kTransfer);
  // Afterwards block rank() of `data` (common/blocks.h) holds the reduction over the host; the other
  // blocks are as they were.
  Status reduce_scatter(char* data, int64_t count, size_t elem, const ReduceInto& reduce) {
    return reduce_scatter(data, data + block_start(count, size(), rank_) * elem, count, elem, reduce);
  }
  // The same out of place: block rank() of the reduction of `in` into `own` (its block's length).
  Status reduce_scatter(const char* in, char* own, int64_t count, size_t elem, const ReduceInto& reduce);
  // Block i of `data` from local rank i to every rank.
  Status allgather(char* data, int64_t count, size_t elem) {
    return allgather(data + block_start(count, size(), rank_) * elem, data, count, elem);
  }
  // The same out of place: `own` (block rank()'s length) into block rank() of `out`, every other rank's
  // into its block.
  Status allgather(const char* own, char* out, int64_t count, size_t elem);
  // What one round carries per rank: a collective whose rows are larger than slot_bytes() / size() cannot
  // go through the group.
  size_t slot_bytes() const { return layout_.slot_bytes(); }
  // Every nap of a wait this long (0, the default: from 20 us, doubling to the pace's longest). Only tests
  // set it, to naps far longer than they wait: the raise of the flag waited for must end the wait.
  void set_naps(std::chrono::microseconds nap) { naps_ = nap; }

 private:
  enum class Flag { kArrived, kReduced, kDone };
  // Starts the next round: waits until every rank is done with the round that last used its slot.
  Status begin_round();
  std::atomic<uint64_t>& flag_of(int rank, Flag flag) const;
  std::atomic<uint32_t>& sleepers_of(int rank, Flag flag) const;
  void raise(Flag flag) const;
  Status wait_all(Flag flag);
  Status wait_for(int peer, Flag flag);
  char* slot(int rank) const { return layout_.slot(segment_->base(), rank, round_); }
  Status fail(Status s);

  // The rounds of a buffer cut in blocks: piece k of block j covers its elements [k*q, (k+1)*q).
  struct Pieces {
    int64_t count;
    size_t elem;
    int size;
    int64_t q;  // elements of a block per round
    int64_t rounds() const;
    int64_t start(int block, int64_t round) const;  // the piece's first element in the buffer
    int64_t length(int block, int64_t round) const;  // its elements (0 past the block's end)
    size_t offset_in_slot(int block) const { return static_cast<size_t>(block) * static_cast<size_t>(q) * elem; }
  };
  Pieces pieces(int64_t count, size_t elem) const;
  // Round k begins: the pieces of `in` that the others reduce go into this rank's slot, and every rank's
  // are waited for (its own piece it reduces from where it lies).
  Status put_pieces(const char* in, const Pieces& p, int64_t k);
  // This rank's piece of round k, reduced over every rank (its own from `in`) into `to`.
  void reduce_own(const char* in, const Pieces& p, int64_t k, char* to, const ReduceInto& reduce);

  std::unique_ptr<SharedSegment> segment_;
  const ShmLayout layout_;
  const int rank_;
  ShmWaitPolicy* const policy_;
  const bool oversubscribed_;  // more ranks on the host than it has cores: waits yield at once
  std::unique_ptr<PeerLiveness> liveness_;
  uint64_t round_ = 0;
  ShmPace pace_ = ShmPace::kTransfer;  // the running call's
  std::chrono::microseconds naps_{0};
  Status broken_;
  std::vector<const char*> inputs_;  // the slots' pieces of a round, reused
};

}  // namespace kolo
