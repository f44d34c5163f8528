// Allreduce of CPU tensors, fused or alone, in cache-sized segments (comm/segment_plan.h). Each
// segment is reduced flat (one MPI_Allreduce over every rank) or hierarchically (reduce-scatter
// inside the host, allreduce across hosts, allgather inside the host).
#include <algorithm>
#include <cstring>
#include <deque>
#include <vector>

#include "common/clock.h"
#include "comm/mpi/cross_host_lane.h"
#include "comm/joined.h"
#include "comm/mpi/mpi_collectives.h"
#include "comm/mpi/mpi_status.h"
#include "comm/mpi/recursive_doubling.h"
#include "comm/mpi/ring_allreduce.h"
#include "comm/segment_plan.h"
#include "cpu/kernels.h"

namespace kolo {
namespace {

char* bytes_at(void* p, int64_t offset) { return static_cast<char*>(p) + offset; }

// How kolo's point-to-point allreduces combine a peer's block with this rank's: MPI_Reduce_local.
CombineBytes combine_with(MPI_Datatype type, MPI_Op op) {
  int elem = 0;
  MPI_Type_size(type, &elem);
  return [elem, type, op](const char* from, char* into, size_t bytes) {
    MPI_Reduce_local(from, into, static_cast<int>(bytes / static_cast<size_t>(elem)), type, op);
  };
}
const char* bytes_at(const void* p, int64_t offset) { return static_cast<const char*>(p) + offset; }

// Reduces segments: `count` elements from `send` (MPI_IN_PLACE: from `recv`) into `recv` on every
// rank. start() may return before the segment is done; up to depth() segments are in flight, and
// finish_oldest() ends the oldest (its result is then in its `recv`). Every rank starts and finishes
// the same segments in the same order, so the collectives inside agree.
class SegmentReducer {
 public:
  virtual ~SegmentReducer() = default;
  virtual int depth() const { return 1; }
  virtual Status start(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op) = 0;
  virtual Status finish_oldest() { return Status::OK(); }
  // After an error: waits for what is in flight and forgets it.
  virtual void abandon() {}
};

class FlatReducer : public SegmentReducer {
 public:
  // A small segment is reduced by recursive doubling over point-to-point messages, each wait giving up
  // on a lost peer (recursive_doubling.h), so that a caller's thread may run it; faster than Open MPI's
  // MPI_Iallreduce at these sizes (README, Small ops). On every rank alike, whichever
  // thread runs it. Larger ones, on one host, by kolo's ring, whose waits leave the core to the
  // framework's threads (ring_allreduce.h); across hosts by MPI_Allreduce, whose algorithms suit
  // the network (README, Across hosts).
  static constexpr int64_t kSmallBytes = 64 << 10;
  FlatReducer(MPI_Comm comm, bool ring) : comm_(comm), ring_(ring) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
  }
  Status start(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op) override {
    int elem = 0;
    MPI_Type_size(type, &elem);
    const size_t bytes = static_cast<size_t>(count) * static_cast<size_t>(elem);
    const bool small = static_cast<int64_t>(bytes) <= kSmallBytes;
    if (!small && !ring_) {
      KOLO_MPI_RETURN_IF_ERROR(MPI_Allreduce(send, recv, count, type, op, comm_), "MPI_Allreduce");
      return Status::OK();
    }
    if (send != MPI_IN_PLACE) std::memcpy(recv, send, bytes);
    const CombineBytes combine = combine_with(type, op);
    if (small) {
      if (scratch_.size() < bytes) scratch_.resize(bytes);
      return recursive_doubling_allreduce(comm_, rank_, size_, kTag, static_cast<char*>(recv), scratch_.data(), bytes,
                                          combine, "allreduce (recursive doubling)");
    }
    const size_t scratch = ring_scratch_bytes(count, static_cast<size_t>(elem), size_);
    if (scratch_.size() < scratch) scratch_.resize(scratch);
    return ring_allreduce(comm_, rank_, size_, kTag, static_cast<char*>(recv), scratch_.data(), count,
                          static_cast<size_t>(elem), combine, "allreduce (ring)");
  }

 private:
  static constexpr int kTag = 2;  // on the data communicator; Adasum's messages there have their own
  MPI_Comm comm_;
  bool ring_;
  int rank_ = 0, size_ = 1;
  std::vector<char> scratch_;
};

// Every host's ranks split the segment into blocks (sizes differing by at most one element, so any
// count works); block i is reduced across hosts by the ranks of local rank i, so each byte crosses
// between hosts once per host instead of once per rank. Across hosts, segments are pipelined (kDepth
// in flight): while one segment's blocks cross, this thread reduce-scatters the next ones inside the
// host and gathers the earlier ones, so that the link is kept busy. Inside the host both are kolo's
// ring in place (ring_allreduce.h), whose waits leave the core to the framework's threads. On 2 hosts
// the crossing is a pairwise exchange of the blocks (nonblocking sends in pieces of at most
// kCrossingMessageBytes, progressed by every MPI call of this thread), and both sides combine the two
// blocks in one order, so that they get the same bits; on more, an MPI_Allreduce of each block on a
// lane of its own (cross_host_lane.h). Measured in README, "Across hosts".
class HierarchicalReducer : public SegmentReducer {
 public:
  explicit HierarchicalReducer(const MpiContext& mpi) : mpi_(mpi) {
    const int hosts = mpi.topology().cross_size;
    int level = 0;
    MPI_Query_thread(&level);
    mode_ = hosts == 2 ? Mode::kPairwise : hosts > 2 && level == MPI_THREAD_MULTIPLE ? Mode::kLane : Mode::kInTurn;
  }

  int depth() const override { return mode_ == Mode::kInTurn ? 1 : kDepth; }

  Status start(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op) override {
    const Topology& t = mpi_.topology();
    int elem = 0;
    MPI_Type_size(type, &elem);
    Flight f;
    f.recv = static_cast<char*>(recv);
    f.count = count;
    f.elem = elem;
    f.type = type;
    f.op = op;
    // Inside the host by kolo's ring, in place (ring_allreduce.h): this rank's block is reduced over
    // the host where it lies in `recv`, the others are left to the allgather.
    const int64_t bytes = static_cast<int64_t>(count) * elem;
    if (send != MPI_IN_PLACE) std::memcpy(recv, send, static_cast<size_t>(bytes));
    const size_t scratch = ring_scratch_bytes(count, static_cast<size_t>(elem), t.local_size);
    if (scratch_.size() < scratch) scratch_.resize(scratch);
    Status rs = ring_reduce_scatter(mpi_.local(), t.local_rank, t.local_size, kTag, f.recv, scratch_.data(), count,
                                    static_cast<size_t>(elem), combine_with(type, op),
                                    "reduce-scatter inside the host (ring)");
    if (!rs.ok()) return rs;
    f.mine = static_cast<int>(ring_block_count(count, t.local_size, t.local_rank));
    f.data = f.recv + ring_block_start(count, t.local_size, t.local_rank) * elem;
    const int mine = f.mine;
    char* data = f.data;
    f.block = next_block_++ % kDepth;
    const MPI_Comm cross = mpi_.cross();
    if (mode_ == Mode::kPairwise) {
      std::vector<char>& theirs = peer_blocks_[f.block];
      const size_t bytes = static_cast<size_t>(mine) * static_cast<size_t>(elem);
      theirs.resize(bytes + 1);
      const int peer = 1 - t.cross_rank;
      // In flight before anything is posted, so that abandon() finds whatever was.
      flights_.push_back(std::move(f));
      std::vector<MPI_Request>& requests = flights_.back().requests;
      for (size_t at = 0; at < bytes; at += kCrossingMessageBytes) {
        const int n = static_cast<int>(std::min(kCrossingMessageBytes, bytes - at));
        requests.push_back(MPI_REQUEST_NULL);
        KOLO_MPI_RETURN_IF_ERROR(MPI_Irecv(theirs.data() + at, n, MPI_BYTE, peer, 0, cross, &requests.back()),
                                 "MPI_Irecv (across hosts)");
        requests.push_back(MPI_REQUEST_NULL);
        KOLO_MPI_RETURN_IF_ERROR(MPI_Isend(data + at, n, MPI_BYTE, peer, 0, cross, &requests.back()),
                                 "MPI_Isend (across hosts)");
      }
      return Status::OK();
    }
    if (mode_ == Mode::kLane) {
      f.ticket = lane_.submit([=] {
        return mpi_status(MPI_Allreduce(MPI_IN_PLACE, data, mine, type, op, cross), "MPI_Allreduce (across hosts)");
      });
    } else if (t.cross_size > 1) {
      KOLO_MPI_RETURN_IF_ERROR(MPI_Allreduce(MPI_IN_PLACE, data, mine, type, op, cross),
                               "MPI_Allreduce (across hosts)");
    }
    flights_.push_back(std::move(f));
    return mode_ == Mode::kInTurn ? finish_oldest() : Status::OK();
  }

  Status finish_oldest() override {
    if (flights_.empty()) return Status::OK();
    // In turn (each wait progresses them all), yielding the core and giving up on a lost peer; in
    // flight until then, so that abandon() finds what is left after an error.
    for (MPI_Request& r : flights_.front().requests) {
      Status s = mpi_wait(&r, "exchange across hosts", WaitPace::kTransfer);
      if (!s.ok()) return s;
    }
    Flight f = std::move(flights_.front());
    flights_.pop_front();
    const Topology& t = mpi_.topology();
    if (!f.requests.empty()) {
      // Both hosts compute host 0's block combined with host 1's, operands in that order, so that every
      // rank gets the same bits even where an op is not symmetric in them (which NaN's payload survives).
      char* theirs = peer_blocks_[f.block].data();
      const size_t bytes = static_cast<size_t>(f.mine) * static_cast<size_t>(f.elem);
      const CombineBytes combine = combine_with(f.type, f.op);
      if (t.cross_rank == 0) {
        combine(f.data, theirs, bytes);
        std::memcpy(f.data, theirs, bytes);
      } else {
        combine(theirs, f.data, bytes);
      }
    }
    if (f.ticket != 0) {
      Status s = lane_.wait(f.ticket);
      if (!s.ok()) return s;
    }
    return ring_allgather(mpi_.local(), t.local_rank, t.local_size, kTag, f.recv, f.count,
                          static_cast<size_t>(f.elem), "allgather inside the host (ring)");
  }

  void abandon() override {
    // Nothing may still write a block (or read it) once it is reused.
    for (Flight& f : flights_) {
      for (MPI_Request& r : f.requests) {
        if (r == MPI_REQUEST_NULL) continue;
        MPI_Cancel(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
      }
      if (f.ticket != 0) lane_.wait(f.ticket);
    }
    flights_.clear();
  }

 private:
  static constexpr int kDepth = 3;
  // Sent whole, a block of 2 MiB (a 4 MiB segment over 2 ranks a host) crossed slower than in pieces:
  // on 2 emulated hosts x 2 ranks at 1 Gbit/s, 4 MiB segments took 1.22-1.25x the link's bound time
  // whole against 1.06-1.07x in 256 KiB pieces (1.08x in 512 KiB, 1.14-1.15x in 1 MiB), at 250 Mbit/s
  // 1.38x against 1.11-1.12x, and level without a cap (README, "Across hosts"). Not the pipeline: a
  // trace showed every rank with its exchange in flight 96-99% of the step either way.
  static constexpr size_t kCrossingMessageBytes = 256 << 10;
  static constexpr int kTag = 3;  // kolo's ring on the host's communicator
  enum class Mode { kInTurn, kPairwise, kLane };
  struct Flight {
    char* recv = nullptr;  // the segment, reduced in place
    int count = 0;
    int elem = 0;
    MPI_Datatype type = MPI_BYTE;
    MPI_Op op = MPI_SUM;
    char* data = nullptr;  // this rank's block of the segment, the one that crosses between hosts
    int mine = 0;          // its element count
    int block = 0;  // kPairwise: which of peer_blocks_ receives the other host's block
    std::vector<MPI_Request> requests;  // kPairwise: the exchange's receives and sends, piece by piece
    uint64_t ticket = 0;  // kLane: the cross-host allreduce
  };

  const MpiContext& mpi_;
  Mode mode_ = Mode::kInTurn;
  std::vector<char> scratch_;  // the ring's incoming block
  std::vector<char> peer_blocks_[kDepth];
  size_t next_block_ = 0;
  std::deque<Flight> flights_;
  CrossHostLane lane_;  // last: its thread ends before the blocks go
};

class MpiAllreduce : public Collective {
 public:
  MpiAllreduce(const MpiContext& mpi, const CollectiveTuning& tuning, bool hierarchical)
      : mpi_(mpi), tuning_(tuning), hierarchical_(hierarchical) {
    flat_ = std::make_unique<FlatReducer>(mpi.data(), /*ring=*/mpi.topology().cross_size == 1);
    if (hierarchical) hierarchical_reducer_ = std::make_unique<HierarchicalReducer>(mpi);
  }

  // Even where allreduce is hierarchical, a call of at most this many bytes goes flat, by recursive
  // doubling: three stages (inside, across, inside) would cost three latencies for no bandwidth gained.
  SegmentReducer& reducer_for(int64_t bytes) {
    return hierarchical_reducer_ != nullptr && bytes > FlatReducer::kSmallBytes ? *hierarchical_reducer_ : *flat_;
  }

  // Compression only narrows what travels; each segment is at most `bytes`.
  bool gives_up_on_lost_peer(int64_t bytes) const override { return bytes <= FlatReducer::kSmallBytes; }

  const char* name() const override { return hierarchical_ ? "MPI_HIERARCHICAL_ALLREDUCE" : "MPI_ALLREDUCE"; }

  void tune(const CollectiveTuning& tuning) override {
    tuning_.segment_bytes = tuning.segment_bytes;
    tuning_.zero_copy_bytes = tuning.zero_copy_bytes;
  }

  bool accepts(OpKind kind, DeviceType device) const override {
    return kind == OpKind::kAllreduce && device == DeviceType::kCPU;
  }

  Status run(CollectiveCall& call, PhaseLog& log, std::unique_ptr<Completion>*) override {
    Status s = prepare_host_joined_pieces(call);
    if (!s.ok()) return s;
    const DataType dtype = call.dtype;
    // Compressed data travels (and is reduced) as `wire`: every tensor is packed, cast on the way.
    const DataType wire = call.wire_dtype;
    const int64_t elem = static_cast<int64_t>(dtype_size(dtype));
    const int64_t wire_elem = static_cast<int64_t>(dtype_size(wire));
    std::vector<int64_t> member_bytes;
    member_bytes.reserve(call.pieces.size());
    for (const Piece& p : call.pieces) member_bytes.push_back(p.bytes / elem * wire_elem);
    const SegmentPlan plan =
        plan_segments(member_bytes, wire_elem, tuning_.segment_bytes, tuning_.zero_copy_bytes, wire == dtype);
    int64_t total_bytes = 0;
    for (int64_t b : member_bytes) total_bytes += b;
    SegmentReducer& reducer = reducer_for(total_bytes);
    // A packed segment keeps its slot of the staging buffer from its pack to its unpack: one slot per
    // segment in flight.
    const int depth = reducer.depth();
    if (staging_.size() < static_cast<size_t>(plan.staging_bytes * depth)) staging_.resize(plan.staging_bytes * depth);

    const MPI_Datatype type = mpi_.datatype(wire);
    const MPI_Op op = mpi_.op(wire, call.reduce_op);
    const Scaling pre{call.prescale, 1};
    // Joined ranks contributed the identity; an average is over the ranks that contributed.
    const int contributors = call.contributors > 0 ? call.contributors : mpi_.topology().size;
    const Scaling post = post_scaling(dtype, call.reduce_op, call.postscale, contributors);
    const bool timed = log.enabled();

    // Segments started and not yet finished, oldest first.
    struct Started {
      const Segment* seg;
      char* staging;  // packed: its slot
      double packing, reducing;
    };
    std::deque<Started> started;
    size_t next_slot = 0;
    auto finish_oldest = [&]() -> Status {
      const Started st = started.front();
      started.pop_front();
      Status fs = reducer.finish_oldest();
      if (!fs.ok()) return fs;
      const Segment& seg = *st.seg;
      const int count = static_cast<int>(seg.bytes / wire_elem);
      const double reduced = timed ? steady_seconds() : 0;
      if (seg.direct) {
        const SegmentPiece& sp = seg.pieces[0];
        char* out = bytes_at(call.pieces[sp.member].out, sp.offset);
        if (!post.identity()) scale_into(dtype, out, out, count, post);
        if (timed) log.record(sp.member, Phase::kCollective, st.reducing, steady_seconds());
        return Status::OK();
      }
      for (const SegmentPiece& sp : seg.pieces) {
        cast_into(wire, dtype, st.staging + sp.staging_offset,
                  bytes_at(call.pieces[sp.member].out, sp.offset / wire_elem * elem), sp.bytes / wire_elem, post);
      }
      if (timed) {
        const double unpacked = steady_seconds();
        for (const SegmentPiece& sp : seg.pieces) {
          log.record(sp.member, Phase::kPack, st.packing, st.reducing);
          log.record(sp.member, Phase::kCollective, st.reducing, reduced);
          log.record(sp.member, Phase::kUnpack, reduced, unpacked);
        }
      }
      return Status::OK();
    };
    auto run_segments = [&]() -> Status {
      for (const Segment& seg : plan.segments) {
        if (static_cast<int>(started.size()) >= depth) {
          Status fs = finish_oldest();
          if (!fs.ok()) return fs;
        }
        const int count = static_cast<int>(seg.bytes / wire_elem);
        Started st{&seg, nullptr, timed ? steady_seconds() : 0, 0};
        const void* send = MPI_IN_PLACE;
        void* recv = nullptr;
        if (seg.direct) {
          const SegmentPiece& sp = seg.pieces[0];
          const Piece& p = call.pieces[sp.member];
          char* out = bytes_at(p.out, sp.offset);
          if (!pre.identity()) {
            scale_into(dtype, bytes_at(p.in, sp.offset), out, count, pre);
          } else if (p.in != p.out) {
            send = bytes_at(p.in, sp.offset);
          }
          recv = out;
        } else {
          st.staging = staging_.data() + (next_slot++ % depth) * plan.staging_bytes;
          for (const SegmentPiece& sp : seg.pieces) {
            cast_into(dtype, wire, bytes_at(call.pieces[sp.member].in, sp.offset / wire_elem * elem),
                      st.staging + sp.staging_offset, sp.bytes / wire_elem, pre);
          }
          recv = st.staging;
        }
        st.reducing = timed ? steady_seconds() : 0;
        started.push_back(st);
        Status rs = reducer.start(send, recv, count, type, op);
        if (!rs.ok()) return rs;
      }
      while (!started.empty()) {
        Status fs = finish_oldest();
        if (!fs.ok()) return fs;
      }
      return Status::OK();
    };
    s = run_segments();
    if (!s.ok()) reducer.abandon();
    return s;
  }

 private:
  const MpiContext& mpi_;
  CollectiveTuning tuning_;  // its segment and zero-copy sizes
  const bool hierarchical_;
  std::unique_ptr<SegmentReducer> flat_;
  std::unique_ptr<SegmentReducer> hierarchical_reducer_;  // only where hierarchical
  std::vector<char> staging_;  // the fusion buffer: a slot for each packed segment in flight
};

}  // namespace

std::unique_ptr<Collective> make_mpi_allreduce(const MpiContext& mpi, const CollectiveTuning& tuning) {
  return std::make_unique<MpiAllreduce>(mpi, tuning, false);
}

std::unique_ptr<Collective> make_mpi_hierarchical_allreduce(const MpiContext& mpi, const CollectiveTuning& tuning) {
  return std::make_unique<MpiAllreduce>(mpi, tuning, true);
}

}  // namespace kolo
