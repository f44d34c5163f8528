// Allreduce of CPU tensors, fused or alone, in cache-sized segments (comm/segment_plan.h). Each
// segment is reduced flat (over every rank at once) or hierarchically (reduce-scatter inside the host,
// allreduce across hosts, allgather inside the host).
#include <deque>
#include <string>
#include <vector>

#include "common/clock.h"
#include "comm/joined.h"
#include "comm/host/flat_reducer.h"
#include "comm/host/hierarchical_reducer.h"
#include "comm/host/host_collectives.h"
#include "comm/host/shm_reducer.h"
#include "comm/segment_plan.h"
#include "cpu/kernels.h"

namespace kolo {
namespace {

char* bytes_at(void* p, int64_t offset) { return static_cast<char*>(p) + offset; }

const char* bytes_at(const void* p, int64_t offset) { return static_cast<const char*>(p) + offset; }

class HostAllreduce : public Collective {
 public:
  HostAllreduce(const Context& context, const CollectiveTuning& tuning, bool hierarchical)
      : context_(context),
        tuning_(tuning),
        hierarchical_(hierarchical),
        job_(context.job_shape()),
        name_(collective_name(context, hierarchical ? "HIERARCHICAL_ALLREDUCE" : "ALLREDUCE")) {
    // Every rank on this host: through its shared memory (comm/allreduce_choice.h), at every size.
    if (choose_allreduce(DeviceType::kCPU, 0, job_, hierarchical) == AllreduceAlgorithm::kSharedMemory) {
      flat_ = std::make_unique<ShmReducer>(context.host_shm());
    } else {
      flat_ = std::make_unique<FlatReducer>(context.data(), job_);
    }
    if (hierarchical) hierarchical_reducer_ = std::make_unique<HierarchicalReducer>(context);
  }

  // Small calls go flat even where allreduce is hierarchical (comm/allreduce_choice.h).
  SegmentReducer& reducer_for(int64_t bytes) {
    return is_hierarchical(choose_allreduce(DeviceType::kCPU, bytes, job_, hierarchical_)) ? *hierarchical_reducer_
                                                                                           : *flat_;
  }

  // Compression only narrows what travels; each segment is at most `bytes`.
  bool gives_up_on_lost_peer(int64_t bytes) const override {
    const AllreduceAlgorithm a = choose_allreduce(DeviceType::kCPU, bytes, job_, false);
    return a == AllreduceAlgorithm::kRecursiveDoubling || a == AllreduceAlgorithm::kSharedMemory;
  }

  const char* name() const override { return name_.c_str(); }

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

    const ReduceOp op = call.reduce_op;
    const Scaling pre{call.prescale, 1};
    // Joined ranks contributed the identity; an average is over the ranks that contributed.
    const int contributors = call.contributors > 0 ? call.contributors : context_.topology().size;
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
        const void* send = nullptr;  // in place
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
        Status rs = reducer.start(send, recv, count, wire, op);
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
  const Context& context_;
  CollectiveTuning tuning_;  // its segment and zero-copy sizes
  const bool hierarchical_;
  const JobShape job_;
  const std::string name_;
  std::unique_ptr<SegmentReducer> flat_;
  std::unique_ptr<SegmentReducer> hierarchical_reducer_;  // only where hierarchical
  std::vector<char> staging_;  // the fusion buffer: a slot for each packed segment in flight
};

}  // namespace

std::string collective_name(const Context& context, const char* what) {
  return std::string(context.transport()) + "_" + what;
}

std::unique_ptr<Collective> make_host_allreduce(const Context& context, const CollectiveTuning& tuning) {
  return std::make_unique<HostAllreduce>(context, tuning, false);
}

std::unique_ptr<Collective> make_host_hierarchical_allreduce(const Context& context, const CollectiveTuning& tuning) {
  return std::make_unique<HostAllreduce>(context, tuning, true);
}

}  // namespace kolo
