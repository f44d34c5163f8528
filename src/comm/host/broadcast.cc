// Broadcast of CPU tensors from any root, in cache-sized segments like the allreduce.
#include <algorithm>
#include <climits>
#include <cstring>
#include <string>

#include "common/clock.h"
#include "comm/host/host_collectives.h"
#include "comm/joined.h"

namespace kolo {
namespace {

class HostBroadcast : public Collective {
 public:
  HostBroadcast(const Context& context, const CollectiveTuning& tuning)
      : context_(context), tuning_(tuning), name_(collective_name(context, "BCAST")) {}
  const char* name() const override { return name_.c_str(); }
  void tune(const CollectiveTuning& tuning) override { tuning_.segment_bytes = tuning.segment_bytes; }
  bool accepts(OpKind kind, DeviceType device) const override {
    return kind == OpKind::kBroadcast && device == DeviceType::kCPU;
  }

  Status run(CollectiveCall& call, PhaseLog& log, std::unique_ptr<Completion>*) override {
    Status s = prepare_host_joined_pieces(call);
    if (!s.ok()) return s;
    const Piece& p = call.pieces[0];
    const int64_t bytes = call.size_bytes();
    if (context_.topology().rank == call.root && p.in != p.out && bytes > 0) {
      std::memcpy(p.out, p.in, static_cast<size_t>(bytes));
    }
    const int64_t step = tuning_.segment_bytes > 0 ? std::min<int64_t>(tuning_.segment_bytes, INT_MAX) : INT_MAX;
    const double t0 = steady_seconds();
    const std::string what = "broadcast of tensor '" + p.name + "'";
    for (int64_t off = 0; off < bytes; off += step) {
      s = context_.data().broadcast(static_cast<char*>(p.out) + off, std::min(step, bytes - off), call.root,
                                    what.c_str());
      if (!s.ok()) return s;
    }
    log.record(0, Phase::kCollective, t0, steady_seconds());
    return Status::OK();
  }

 private:
  const Context& context_;
  CollectiveTuning tuning_;  // its segment size
  const std::string name_;
};

}  // namespace

std::unique_ptr<Collective> make_host_broadcast(const Context& context, const CollectiveTuning& tuning) {
  return std::make_unique<HostBroadcast>(context, tuning);
}

}  // namespace kolo
