// Allgather in three steps, so that each host's rows cross between hosts once: gather inside the
// host, exchange host blocks among each host's first rank, broadcast inside the host.
#include <cstring>
#include <string>

#include "common/clock.h"
#include "comm/host/host_collectives.h"
#include "cpu/host_memory.h"

namespace kolo {
namespace {

class HostHierarchicalAllgather : public Collective {
 public:
  explicit HostHierarchicalAllgather(const Context& context)
      : context_(context), name_(collective_name(context, "HIERARCHICAL_ALLGATHER")) {
    // Ranks gathered host by host come out in world order when every host holds a contiguous range
    // of ranks (mpirun's --map-by slot); otherwise the result is put in order afterwards.
    int next = 0;
    for (const auto& members : context.host_members()) {
      for (int r : members) in_world_order_ = in_world_order_ && r == next++;
    }
  }
  const char* name() const override { return name_.c_str(); }
  bool accepts(OpKind kind, DeviceType device) const override {
    return kind == OpKind::kAllgather && device == DeviceType::kCPU;
  }

  Status run(CollectiveCall& call, PhaseLog& log, std::unique_ptr<Completion>*) override {
    Piece& p = call.pieces[0];
    Status s = call.allocate(0, call.shape, host_memory, &p.out);
    if (!s.ok() || call.size_bytes() == 0) return s;
    const int64_t row_bytes = call.size_bytes() / call.shape[0];
    const Topology& t = context_.topology();
    const auto& hosts = context_.host_members();
    const std::vector<int>& mine = hosts[static_cast<size_t>(t.cross_rank)];
    const double t0 = steady_seconds();

    // Rows in gathered order: host by host, each host's ranks in local-rank order.
    std::vector<int64_t> local_rows, host_rows;
    int64_t before_my_host = 0;
    for (size_t h = 0; h < hosts.size(); ++h) {
      int64_t n = 0;
      for (int q : hosts[h]) n += call.first_dims[static_cast<size_t>(q)];
      host_rows.push_back(n);
      if (static_cast<int>(h) < t.cross_rank) before_my_host += n;
    }
    for (int q : mine) local_rows.push_back(call.first_dims[static_cast<size_t>(q)]);

    char* gathered = static_cast<char*>(p.out);
    if (!in_world_order_) {
      scratch_.resize(static_cast<size_t>(call.size_bytes()));
      gathered = scratch_.data();
    }
    char* my_host_block = gathered + before_my_host * row_bytes;
    const std::string what = "allgather of tensor '" + p.name + "'";
    s = context_.local().allgatherv(p.in, my_host_block, local_rows, row_bytes, (what + " inside the host").c_str());
    if (!s.ok()) return s;
    if (t.local_rank == 0 && t.cross_size > 1) {
      s = context_.cross().allgatherv(my_host_block, gathered, host_rows, row_bytes, (what + " across hosts").c_str());
      if (!s.ok()) return s;
    }
    // The whole result from the host's first rank.
    if (t.cross_size > 1) {
      s = context_.local().broadcast(gathered, call.size_bytes(), 0, (what + " inside the host").c_str());
      if (!s.ok()) return s;
    }
    if (!in_world_order_) {
      // Move each rank's rows to its place in world order.
      std::vector<int64_t> world_offset(call.first_dims.size() + 1, 0);
      for (size_t q = 0; q < call.first_dims.size(); ++q) world_offset[q + 1] = world_offset[q] + call.first_dims[q];
      int64_t at = 0;
      for (const auto& members : hosts) {
        for (int q : members) {
          const int64_t rows = call.first_dims[static_cast<size_t>(q)];
          std::memcpy(static_cast<char*>(p.out) + world_offset[static_cast<size_t>(q)] * row_bytes,
                      gathered + at * row_bytes, static_cast<size_t>(rows * row_bytes));
          at += rows;
        }
      }
    }
    log.record(0, Phase::kCollective, t0, steady_seconds());
    return Status::OK();
  }

 private:
  const Context& context_;
  const std::string name_;
  bool in_world_order_ = true;
  std::vector<char> scratch_;
};

}  // namespace

std::unique_ptr<Collective> make_host_hierarchical_allgather(const Context& context) {
  return std::make_unique<HostHierarchicalAllgather>(context);
}

}  // namespace kolo
