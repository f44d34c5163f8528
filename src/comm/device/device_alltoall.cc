// Alltoall of GPU tensors with per-rank split sizes: the split sizes are exchanged on the host over
// MPI (the output's shape depends on them), then the rows move as point-to-point sends and
// receives, launched together.
#include "comm/device/device_collectives.h"
#include "comm/device/device_work.h"
#include "comm/mpi/mpi_status.h"

namespace kolo {
namespace {

class DeviceAlltoall : public Collective {
 public:
  explicit DeviceAlltoall(DeviceContext& context) : context_(context), name_(context.library() + "_ALLTOALL") {}
  const char* name() const override { return name_.c_str(); }
  bool accepts(OpKind kind, DeviceType device) const override {
    return kind == OpKind::kAlltoall && device == DeviceType::kCUDA;
  }

  Status run(CollectiveCall& call, PhaseLog& log, std::unique_ptr<Completion>* pending) override {
    return run_on_device(context_, call, log, pending, [&](DeviceWork& work) { return exchange(call, work); });
  }

 private:
  Status exchange(CollectiveCall& call, DeviceWork& work) {
    Piece& p = call.pieces[0];
    const int size = context_.mpi().topology().size;
    std::vector<int64_t> received(static_cast<size_t>(size));
    KOLO_MPI_RETURN_IF_ERROR(MPI_Alltoall(p.splits.data(), 1, MPI_INT64_T, received.data(), 1, MPI_INT64_T,
                                          context_.mpi().data()),
                             "MPI_Alltoall (split sizes)");
    std::vector<int64_t> shape = p.shape;
    shape[0] = 0;
    for (int64_t n : received) shape[0] += n;
    Status s = call.allocate(0, shape, context_.own_memory(), &p.out);
    if (!s.ok()) return s;
    call.received_splits = received;
    int64_t row_bytes = static_cast<int64_t>(dtype_size(call.dtype));
    for (size_t i = 1; i < shape.size(); ++i) row_bytes *= shape[i];
    DeviceComm* world = nullptr;
    s = context_.comm(DeviceContext::Group::kWorld, &world);
    if (!s.ok() || row_bytes == 0) return s;
    work.uses(world);
    const DeviceStream stream = context_.stream();
    const char* in = static_cast<const char*>(p.in);
    char* out = static_cast<char*>(p.out);
    s = world->group_start();
    int64_t sent = 0, got = 0;
    for (int r = 0; r < size && s.ok(); ++r) {
      const int64_t send_bytes = p.splits[static_cast<size_t>(r)] * row_bytes;
      const int64_t recv_bytes = received[static_cast<size_t>(r)] * row_bytes;
      if (send_bytes > 0) s = world->send(in + sent, send_bytes, r, stream);
      if (s.ok() && recv_bytes > 0) s = world->recv(out + got, recv_bytes, r, stream);
      sent += send_bytes;
      got += recv_bytes;
    }
    Status end = world->group_end();
    if (s.ok()) s = end;
    if (s.ok()) s = work.mark(Phase::kCollective);
    return s;
  }

  DeviceContext& context_;
  const std::string name_;
};

}  // namespace

std::unique_ptr<Collective> make_device_alltoall(DeviceContext& context) {
  return std::make_unique<DeviceAlltoall>(context);
}

}  // namespace kolo
