// Allreduce of CPU tensors, fused or alone, in cache-sized segments (comm/segment_plan.h). Each
// segment is reduced flat (one MPI_Allreduce over every rank) or hierarchically (reduce-scatter
// inside the host, allreduce across hosts, allgather inside the host).
#include <vector>

#include "common/clock.h"
#include "comm/joined.h"
#include "comm/mpi/mpi_collectives.h"
#include "comm/mpi/mpi_status.h"
#include "comm/segment_plan.h"
#include "cpu/kernels.h"

namespace kolo {
namespace {

char* bytes_at(void* p, int64_t offset) { return static_cast<char*>(p) + offset; }
const char* bytes_at(const void* p, int64_t offset) { return static_cast<const char*>(p) + offset; }

// Reduces `count` elements from `send` (MPI_IN_PLACE: from `recv`) into `recv` on every rank.
class SegmentReducer {
 public:
  virtual ~SegmentReducer() = default;
  virtual Status reduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op) = 0;
};

class FlatReducer : public SegmentReducer {
 public:
  explicit FlatReducer(MPI_Comm comm) : comm_(comm) {}
  Status reduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op) override {
    KOLO_MPI_RETURN_IF_ERROR(MPI_Allreduce(send, recv, count, type, op, comm_), "MPI_Allreduce");
    return Status::OK();
  }

 private:
  MPI_Comm comm_;
};

// Every host's ranks split the segment into blocks (sizes differing by at most one element, so any
// count works); block i is reduced across hosts by the ranks of local rank i, so each byte crosses
// between hosts once per host instead of once per rank.
class HierarchicalReducer : public SegmentReducer {
 public:
  explicit HierarchicalReducer(const MpiContext& mpi) : mpi_(mpi) {}
  Status reduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op) override {
    const Topology& t = mpi_.topology();
    int elem = 0;
    MPI_Type_size(type, &elem);
    counts_.resize(static_cast<size_t>(t.local_size));
    displs_.resize(static_cast<size_t>(t.local_size));
    int offset = 0;
    for (int i = 0; i < t.local_size; ++i) {
      counts_[i] = count / t.local_size + (i < count % t.local_size ? 1 : 0);
      displs_[i] = offset;
      offset += counts_[i];
    }
    const int mine = counts_[t.local_rank];
    block_.resize(static_cast<size_t>(mine) * elem + 1);
    KOLO_MPI_RETURN_IF_ERROR(MPI_Reduce_scatter(send == MPI_IN_PLACE ? recv : send, block_.data(), counts_.data(),
                                                type, op, mpi_.local()),
                             "MPI_Reduce_scatter (inside the host)");
    if (t.cross_size > 1) {
      KOLO_MPI_RETURN_IF_ERROR(MPI_Allreduce(MPI_IN_PLACE, block_.data(), mine, type, op, mpi_.cross()),
                               "MPI_Allreduce (across hosts)");
    }
    KOLO_MPI_RETURN_IF_ERROR(MPI_Allgatherv(block_.data(), mine, type, recv, counts_.data(), displs_.data(), type,
                                            mpi_.local()),
                             "MPI_Allgatherv (inside the host)");
    return Status::OK();
  }

 private:
  const MpiContext& mpi_;
  std::vector<int> counts_, displs_;
  std::vector<char> block_;
};

class MpiAllreduce : public Collective {
 public:
  MpiAllreduce(const MpiContext& mpi, const CpuTuning& tuning, bool hierarchical)
      : mpi_(mpi), tuning_(tuning), hierarchical_(hierarchical) {
    if (hierarchical) {
      reducer_ = std::make_unique<HierarchicalReducer>(mpi);
    } else {
      reducer_ = std::make_unique<FlatReducer>(mpi.data());
    }
  }

  const char* name() const override { return hierarchical_ ? "MPI_HIERARCHICAL_ALLREDUCE" : "MPI_ALLREDUCE"; }

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
    if (staging_.size() < static_cast<size_t>(plan.staging_bytes)) staging_.resize(plan.staging_bytes);

    const MPI_Datatype type = mpi_.datatype(wire);
    const MPI_Op op = mpi_.op(wire, call.reduce_op);
    const Scaling pre{call.prescale, 1};
    // Joined ranks contributed the identity; an average is over the ranks that contributed.
    const int contributors = call.contributors > 0 ? call.contributors : mpi_.topology().size;
    const Scaling post = post_scaling(dtype, call.reduce_op, call.postscale, contributors);
    const bool timed = log.enabled();

    for (const Segment& seg : plan.segments) {
      const int count = static_cast<int>(seg.bytes / wire_elem);
      if (seg.direct) {
        const SegmentPiece& sp = seg.pieces[0];
        const Piece& p = call.pieces[sp.member];
        const double t0 = timed ? steady_seconds() : 0;
        char* out = bytes_at(p.out, sp.offset);
        const void* send = MPI_IN_PLACE;
        if (!pre.identity()) {
          scale_into(dtype, bytes_at(p.in, sp.offset), out, count, pre);
        } else if (p.in != p.out) {
          send = bytes_at(p.in, sp.offset);
        }
        s = reducer_->reduce(send, out, count, type, op);
        if (!s.ok()) return s;
        if (!post.identity()) scale_into(dtype, out, out, count, post);
        if (timed) log.record(sp.member, Phase::kCollective, t0, steady_seconds());
        continue;
      }
      const double t0 = timed ? steady_seconds() : 0;
      for (const SegmentPiece& sp : seg.pieces) {
        cast_into(dtype, wire, bytes_at(call.pieces[sp.member].in, sp.offset / wire_elem * elem),
                  staging_.data() + sp.staging_offset, sp.bytes / wire_elem, pre);
      }
      const double t1 = timed ? steady_seconds() : 0;
      s = reducer_->reduce(MPI_IN_PLACE, staging_.data(), count, type, op);
      if (!s.ok()) return s;
      const double t2 = timed ? steady_seconds() : 0;
      for (const SegmentPiece& sp : seg.pieces) {
        cast_into(wire, dtype, staging_.data() + sp.staging_offset,
                  bytes_at(call.pieces[sp.member].out, sp.offset / wire_elem * elem), sp.bytes / wire_elem, post);
      }
      if (timed) {
        const double t3 = steady_seconds();
        for (const SegmentPiece& sp : seg.pieces) {
          log.record(sp.member, Phase::kPack, t0, t1);
          log.record(sp.member, Phase::kCollective, t1, t2);
          log.record(sp.member, Phase::kUnpack, t2, t3);
        }
      }
    }
    return Status::OK();
  }

 private:
  const MpiContext& mpi_;
  const CpuTuning tuning_;
  const bool hierarchical_;
  std::unique_ptr<SegmentReducer> reducer_;
  std::vector<char> staging_;  // the fusion buffer: one packed segment at a time
};

}  // namespace

std::unique_ptr<Collective> make_mpi_allreduce(const MpiContext& mpi, const CpuTuning& tuning) {
  return std::make_unique<MpiAllreduce>(mpi, tuning, false);
}

std::unique_ptr<Collective> make_mpi_hierarchical_allreduce(const MpiContext& mpi, const CpuTuning& tuning) {
  return std::make_unique<MpiAllreduce>(mpi, tuning, true);
}

}  // namespace kolo
