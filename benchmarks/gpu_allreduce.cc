// kolo's allreduce of GPU tensors beside the raw collective library, on the same buffers in the
// same run, as an nccl-tests table: float32 sums of 8 B to --max-bytes by powers of 4 (and
// --max-bytes itself), one op per iteration, each waited for; then ResNet-50's gradient set as a
// training loop submits it (161 tensors with allreduce_async, then all waited) beside one raw
// allreduce of all its bytes.
//
//   mpirun -np 2 gpu_allreduce [--device cuda|double] [--max-bytes 268435456] [--rounds 5]
//                              [--row-seconds 1] [--steps 10] [--peer-blocking 1] [--async 0]
//                              [--json out.json]
//
// --async 1: each op of the size rows is allreduce_async, then wait (a training loop's op it waits
// for at once), where it is otherwise a blocking allreduce.
// The peer: with --device cuda, ncclAllReduce on an NCCL communicator the benchmark makes itself, on
// its own stream; with --device double, the host double's own communicator (over MPI; times mean
// nothing there, the run proves the code). Both sides reduce out of place from the same input (rank + 1
// everywhere, so every sum is exact) into outputs of their own, cleared before each round, and every
// element of every result is checked (#wrong, summed over ranks; any makes the exit status 1). A time
// is the slowest rank's per op (or step), the median over rounds that alternate which side goes
// first; a row's iterations are as many as fit --row-seconds. Goal on an H100 (documented, not
// asserted: times drift): kolo within 1.05x of raw NCCL from 1 MiB up and for the gradient set.
// Exit 77: no GPU here.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "allreduce_peer.h"
#include "allreduce_report.h"
#include "api/runtime.h"
#include "bench_args.h"
#include "bench_util.h"
#include "device_rig.h"
#include "gradient_set.h"
#include "kolo/kolo.h"

namespace {

using bench::check;
using bench::Side;

// 8, 32, 128, ... up to max_bytes, and max_bytes itself (in whole floats) when the powers miss it.
std::vector<int64_t> sizes_up_to(int64_t max_bytes) {
  std::vector<int64_t> sizes;
  for (int64_t b = 8; b <= max_bytes; b *= 4) sizes.push_back(b);
  const int64_t last = max_bytes / 4 * 4;
  if (!sizes.empty() && sizes.back() < last) sizes.push_back(last);
  return sizes;
}

// kolo and the peer on one rank's device: inputs of rank + 1, results checked against the exact sum.
class Sides {
 public:
  Sides(bench::DeviceRig& rig, bench::AllreducePeer& peer, int rounds, int64_t most_elements, bool async)
      : rig_(rig), peer_(peer), rounds_(rounds), async_(async), inputs_(static_cast<size_t>(most_elements)), back_(inputs_.size()) {
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::fill(inputs_.begin(), inputs_.end(), static_cast<float>(rank + 1));
    expected_ = static_cast<float>(size) * static_cast<float>(size + 1) / 2;
    sum_.op = kolo::ReduceOp::kSum;
  }

  // One size: kolo::allreduce of a tensor of `bytes` against the peer, out of place from `input`.
  bench::SizeRow size_row(int64_t bytes, double row_seconds, void* input, void* kolo_out, void* peer_out) {
    const int64_t count = bytes / 4;
    const std::string name = "allreduce." + std::to_string(bytes);
    const kolo::TensorView in = view(input, {count}), out = view(kolo_out, {count});
    auto kolo_op = [&] {
      if (async_) {
        check(kolo::wait(kolo::allreduce_async(name, in, out, sum_)));
      } else {
        check(kolo::allreduce(name, in, out, sum_));
      }
    };
    auto peer_op = [&] {
      check(peer_.allreduce(static_cast<const float*>(input), static_cast<float*>(peer_out), count, rig_.stream()));
      rig_.finish();
    };
    // Warm-up, then the slower side's time for one op (the slowest rank's, so every rank agrees).
    kolo_op();
    peer_op();
    const double one = std::max(bench::timed_step(kolo_op), bench::timed_step(peer_op));
    bench::SizeRow row;
    row.bytes = bytes;
    row.iters = static_cast<int>(std::clamp(row_seconds / (2.0 * rounds_ * std::max(one, 1e-6)), 1.0, 1000.0));
    auto iterate = [&row](Side* side, const std::function<void()>& op) {
      return [&row, side, op] {
        const double t = bench::timed_step([&] {
          for (int i = 0; i < row.iters; ++i) op();
        });
        side->times.push_back(t / row.iters);
      };
    };
    take_turns({{&row.kolo, {{kolo_out, count}}, iterate(&row.kolo, kolo_op)},
                {&row.peer, {{peer_out, count}}, iterate(&row.peer, peer_op)}});
    return row;
  }

  // The gradient set, `steps` steps a round: kolo as a training loop submits it (every tensor with
  // allreduce_async, then every wait) against one peer allreduce of all its bytes.
  void gradient_set(const std::vector<bench::Tensor>& tensors, int steps, Side* kolo_side, Side* peer_side) {
    std::vector<std::shared_ptr<void>> in, out;
    std::vector<Buffer> outputs;
    int64_t n = 0;
    for (const bench::Tensor& t : tensors) {
      const int64_t count = static_cast<int64_t>(t.data.size());
      in.push_back(upload_input(count));
      out.push_back(rig_.allocate(count * 4));
      outputs.push_back({out.back().get(), count});
      n += count;
    }
    std::shared_ptr<void> flat_in = upload_input(n), flat_out = rig_.allocate(n * 4);
    auto kolo_step = [&] {
      std::vector<kolo::Handle> handles;
      handles.reserve(tensors.size());
      for (size_t i = 0; i < tensors.size(); ++i) {
        handles.push_back(kolo::allreduce_async("grad." + tensors[i].name, view(in[i].get(), tensors[i].shape),
                                                view(out[i].get(), tensors[i].shape), sum_));
      }
      for (kolo::Handle h : handles) check(kolo::wait(h));
    };
    auto peer_step = [&] {
      check(peer_.allreduce(static_cast<const float*>(flat_in.get()), static_cast<float*>(flat_out.get()), n,
                            rig_.stream()));
      rig_.finish();
    };
    for (int w = 0; w < 2; ++w) {
      kolo_step();
      peer_step();
    }
    auto stepping = [steps](Side* side, const std::function<void()>& step) {
      return [side, step, steps] {
        for (int s = 0; s < steps; ++s) side->times.push_back(bench::timed_step(step));
      };
    };
    take_turns({{kolo_side, outputs, stepping(kolo_side, kolo_step)},
                {peer_side, {{flat_out.get(), n}}, stepping(peer_side, peer_step)}});
  }

  // A buffer of floats on the device.
  std::shared_ptr<void> upload_input(int64_t count) {
    std::shared_ptr<void> p = rig_.allocate(count * 4);
    rig_.transfer(p.get(), inputs_.data(), count * 4);
    return p;
  }

 private:
  struct Buffer {
    void* data;
    int64_t count;
  };
  // A side's turn: its outputs, and its timed work (which records its times).
  struct Turn {
    Side* side;
    std::vector<Buffer> outputs;
    std::function<void()> timed;
  };

  // `rounds` rounds of turns, the first side first in even rounds, the last in odd ones: each turn
  // clears the side's outputs, runs its work and counts the wrong elements it left there.
  void take_turns(const std::vector<Turn>& turns) {
    for (int round = 0; round < rounds_; ++round) {
      for (size_t k = 0; k < turns.size(); ++k) {
        const Turn& t = turns[round % 2 == 0 ? k : turns.size() - 1 - k];
        for (const Buffer& b : t.outputs) rig_.clear(b.data, b.count, kolo::DataType::kFloat32);
        rig_.finish();
        t.timed();
        for (const Buffer& b : t.outputs) t.side->wrong += wrong_in(b);
      }
    }
  }

  int64_t wrong_in(const Buffer& b) {
    rig_.transfer(back_.data(), b.data, b.count * 4);
    return std::count_if(back_.begin(), back_.begin() + b.count, [&](float v) { return v != expected_; });
  }

  kolo::TensorView view(void* data, std::vector<int64_t> shape) {
    kolo::TensorView v;
    v.data = data;
    v.shape = std::move(shape);
    v.device = kolo::Device::CUDA(rig_.ordinal());
    v.stream = rig_.stream();  // where the inputs were written
    return v;
  }

  bench::DeviceRig& rig_;
  bench::AllreducePeer& peer_;
  int rounds_;
  bool async_;
  std::vector<float> inputs_;
  std::vector<float> back_;
  float expected_ = 0.0f;
  kolo::AllreduceOptions sum_;
};

void sum_over_ranks(Side& side) { MPI_Allreduce(MPI_IN_PLACE, &side.wrong, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD); }

int run(const bench::World& world, int argc, char** argv) {
  bench::Args args(argc, argv);
  const std::string device = args.text("device", bench::default_device());
  // The double is slow and shares this machine's cores: fewer rounds and steps by default.
  const bool gpu = device == "cuda";
  const int64_t max_bytes = static_cast<int64_t>(args.real("max-bytes", 256.0 * (1 << 20)));
  const int rounds = std::max(1, args.integer("rounds", gpu ? 5 : 3));
  const int steps = std::max(1, args.integer("steps", gpu ? 10 : 3));
  const double row_seconds = args.real("row-seconds", gpu ? 1.0 : 0.3);
  const std::string shapes = args.text("shapes", KOLO_RESNET50_SHAPES), json = args.text("json", "");
  // 0: the raw peer's communicator is nonblocking, as kolo's (what that mode costs NCCL itself).
  const bool peer_blocking = args.integer("peer-blocking", 1) != 0;
  const bool async = args.integer("async", 0) != 0;
  args.finish();

  std::shared_ptr<kolo::DeviceBackend> backend;
  kolo::Status opened = bench::open_device(device, &backend);
  int ordinal = 0;
#if KOLO_HAVE_CUDA
  if (opened.ok() && gpu) opened = bench::pin_gpu(&ordinal);
#endif
  if (!opened.ok()) return bench::refuse(opened, world.rank);
  bench::DeviceRig rig(backend, ordinal);
  // The peer's communicator first, then kolo (whose own communicator comes with its first GPU op).
  std::unique_ptr<bench::AllreducePeer> peer;
#if KOLO_HAVE_CUDA
  if (gpu) check(bench::make_nccl_peer(ordinal, peer_blocking, &peer));
#else
  (void)peer_blocking;  // the double's peer is its own communicator
#endif
  if (!peer) check(bench::make_seam_peer(rig.backend(), ordinal, &peer));
  kolo::Runtime::instance().use_device_backend(backend);
  check(kolo::init());

  const std::vector<bench::Tensor> tensors = bench::read_gradient_set(shapes);
  const int64_t n = static_cast<int64_t>(bench::element_count(tensors));
  const int64_t max_count = std::max<int64_t>(2, max_bytes / 4);
  Sides sides(rig, *peer, rounds, std::max(max_count, n), async);
  bench::AllreduceReport report;
  {
    std::shared_ptr<void> input = sides.upload_input(max_count);
    std::shared_ptr<void> kolo_out = rig.allocate(max_count * 4), peer_out = rig.allocate(max_count * 4);
    for (int64_t bytes : sizes_up_to(max_bytes)) {
      report.rows.push_back(sides.size_row(bytes, row_seconds, input.get(), kolo_out.get(), peer_out.get()));
    }
  }
  sides.gradient_set(tensors, steps, &report.grad_kolo, &report.grad_peer);
  check(kolo::shutdown());

  for (bench::SizeRow& row : report.rows) {
    sum_over_ranks(row.kolo);
    sum_over_ranks(row.peer);
  }
  sum_over_ranks(report.grad_kolo);
  sum_over_ranks(report.grad_peer);
  report.device = rig.backend().description();
  report.peer = peer->name();
  if (async) report.kolo_call = "allreduce_async, then wait";
  report.ranks = world.size;
  report.ordinal = ordinal;
  report.rounds = rounds;
  report.steps = steps;
  report.tensors = tensors.size();
  report.elements = n;
  if (world.rank == 0) bench::print_report(report, json);
  return bench::wrong_total(report) == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const bench::World world = bench::start_mpi(&argc, &argv);
  const int rc = run(world, argc, argv);  // everything on the device is gone before MPI is
  MPI_Finalize();
  return rc;
}
