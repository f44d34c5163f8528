// Small-op latency: one allreduce of 4 B, 256 B and 4 KiB (float32 sums, the loss, metrics and norms a
// training loop reduces), kolo's blocking allreduce against one MPI_Allreduce and against the floor of
// one exchange through shared memory (shm_floor.h; ranks of one host only), alternating in the same run,
// each timed between barriers (a step lasts until the slowest rank has it). Then the same with another
// op in flight on rank 0 (an op the other ranks have not reached).
//
//   mpirun -np 2 build/benchmarks/small_allreduce [--iterations 2000] [--with-another-in-flight 0] [--bytes 4,256,4096]
#include <mpi.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench_args.h"
#include "bench_util.h"
#include "shm_floor.h"
#include "kolo/kolo.h"

namespace {

void check(const kolo::Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "small_allreduce: %s\n", s.message().c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bench::World world = bench::start_mpi(&argc, &argv);
  bench::Args args(argc, argv);
  const int iterations = args.integer("iterations", 2000);
  const int warmup = args.integer("warmup", 200);
  const bool with_busy = args.integer("with-another-in-flight", 1) != 0;  // 0: the first rows only
  const std::vector<long long> sizes = args.integers("bytes", "4,256,4096");
  args.finish();
  check(kolo::init());
  kolo::AllreduceOptions sum;
  sum.op = kolo::ReduceOp::kSum;
  auto floor_owner = std::make_unique<bench::ShmFloor>();  // freed before MPI_Finalize
  bench::ShmFloor& floor = *floor_owner;
  struct Result {
    std::string row;
    double kolo_s, mpi_s, floor_s;  // floor_s 0: not measured (ranks on several hosts)
  };
  std::vector<Result> results;
  for (const bool busy : {false, true}) {
    if (busy && !with_busy) break;
    // With `busy`, rank 0 has another allreduce in flight (a gradient the others have not reached, say):
    // the others submit it only at the end.
    std::vector<float> spare(1, 1.0f);
    kolo::Handle pending;
    auto submit_spare = [&] { pending = kolo::allreduce_async("spare", kolo::cpu_view(spare), kolo::cpu_view(spare), sum); };
    if (busy && world.rank == 0) submit_spare();
    for (const long long bytes : sizes) {
      const int elements = static_cast<int>((bytes + 3) / 4);
      std::vector<float> data(static_cast<size_t>(elements), 1.0f);
      const std::string name = "small." + std::to_string(elements);
      std::vector<double> k, m, f;
      const bool floored = floor.usable(elements);
      for (int i = 0; i < warmup + iterations; ++i) {
        const double tk = bench::timed_step([&] { check(kolo::allreduce(name, kolo::cpu_view(data), kolo::cpu_view(data), sum)); });
        const double tm = bench::timed_step(
            [&] { MPI_Allreduce(MPI_IN_PLACE, data.data(), elements, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); });
        const double tf = floored ? bench::timed_step([&] { floor.allreduce(data.data(), elements); }) : 0.0;
        if (i >= warmup) {
          k.push_back(tk);
          m.push_back(tm);
          f.push_back(tf);
        }
        data.assign(data.size(), 1.0f);  // sums stay small and exact
      }
      results.push_back({std::to_string(elements * 4) + " B" + (busy ? ", another op in flight" : ""), bench::median(k),
                         bench::median(m), bench::median(f)});
    }
    if (busy && world.rank != 0) submit_spare();
    if (busy) check(kolo::wait(pending));
  }
  check(kolo::shutdown());
  floor_owner.reset();
  if (world.rank == 0) {
    std::printf("# one float32 sum allreduce, %d ranks; median of %d, alternating; ratio = kolo / MPI_Allreduce;\n"
                "# floor: one exchange through shared memory, no library (shm_floor.h); kolo/floor\n",
                world.size, iterations);
    std::printf("%-34s %12s %12s %8s %12s %10s\n", "", "kolo (us)", "MPI (us)", "ratio", "floor (us)", "kolo/floor");
    for (const Result& r : results) {
      std::printf("%-34s %12.2f %12.2f %8.2f", r.row.c_str(), r.kolo_s * 1e6, r.mpi_s * 1e6, r.kolo_s / r.mpi_s);
      if (r.floor_s > 0) {
        std::printf(" %12.2f %10.2f\n", r.floor_s * 1e6, r.kolo_s / r.floor_s);
      } else {
        std::printf(" %12s %10s\n", "-", "-");
      }
    }
  }
  MPI_Finalize();
  return 0;
}
