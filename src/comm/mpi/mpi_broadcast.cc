// Broadcast of CPU tensors from any root, in cache-sized segments like the allreduce.
#include <algorithm>
#include <climits>
#include <cstring>

#include "common/clock.h"
#include "comm/joined.h"
#include "comm/mpi/mpi_collectives.h"
#include "comm/mpi/mpi_status.h"

namespace kolo {
namespace {

class MpiBroadcast : public Collective {
 public:
  MpiBroadcast(const MpiContext& mpi, const CollectiveTuning& tuning) : mpi_(mpi), tuning_(tuning) {}
  const char* name() const override { return "MPI_BCAST"; }
  void tune(const CollectiveTuning& tuning) override { tuning_.segment_bytes = tuning.segment_bytes; }
  bool accepts(OpKind kind, DeviceType device) const override {
    return kind == OpKind::kBroadcast && device == DeviceType::kCPU;
  }

  Status run(CollectiveCall& call, PhaseLog& log, std::unique_ptr<Completion>*) override {
    Status s = prepare_host_joined_pieces(call);
    if (!s.ok()) return s;
    const Piece& p = call.pieces[0];
    const int64_t bytes = call.size_bytes();
    if (mpi_.topology().rank == call.root && p.in != p.out && bytes > 0) {
      std::memcpy(p.out, p.in, static_cast<size_t>(bytes));
    }
    const int64_t step = tuning_.segment_bytes > 0 ? std::min<int64_t>(tuning_.segment_bytes, INT_MAX) : INT_MAX;
    const double t0 = steady_seconds();
    for (int64_t off = 0; off < bytes; off += step) {
      const int n = static_cast<int>(std::min(step, bytes - off));
      KOLO_MPI_RETURN_IF_ERROR(
          MPI_Bcast(static_cast<char*>(p.out) + off, n, MPI_BYTE, call.root, mpi_.data()), "MPI_Bcast");
    }
    log.record(0, Phase::kCollective, t0, steady_seconds());
    return Status::OK();
  }

 private:
  const MpiContext& mpi_;
  CollectiveTuning tuning_;  // its segment size
};

}  // namespace

std::unique_ptr<Collective> make_mpi_broadcast(const MpiContext& mpi, const CollectiveTuning& tuning) {
  return std::make_unique<MpiBroadcast>(mpi, tuning);
}

}  // namespace kolo
