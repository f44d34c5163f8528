// A synthetic data-parallel training step with ResNet-50's gradient set, in the manner of Horovod's
// synthetic benchmarks, with the model's compute emulated by sleeping: this machine's CPUs stand in
// for a GPU's network traffic, not for its arithmetic, so the ranks' compute must not compete with
// the collectives for them. Each step: forward (a third of --compute-ms), then backward, which
// produces the gradients last layer first, spread over the other two thirds in proportion to their
// size; kolo reduces each as it appears (overlapped), the peer row reduces them all with one
// MPI_Allreduce once backward is done (no overlap). --compute-ms 0 measures communication alone.
//
//   mpirun -np 4 build/benchmarks/synthetic_step --compute-ms 200 [--batch 64] [--op sum|average]
//       [--json out.json]
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include "bench_args.h"
#include "bench_util.h"
#include "gradient_set.h"
#include "kolo/kolo.h"

using bench::check;

namespace {

using Clock = std::chrono::steady_clock;

// Emulated compute: sleeps until `fraction` of the step's compute has passed since `start`, so many
// short slices add up to the stated total however coarse the sleeps are.
void compute_until(Clock::time_point start, double compute_s, double fraction) {
  std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double>(compute_s * fraction)));
}

}  // namespace

int main(int argc, char** argv) {
  const bench::World world = bench::start_mpi(&argc, &argv);
  const int rank = world.rank, size = world.size;
  bench::Args args(argc, argv);
  const int steps = args.integer("steps", 10), warmup = args.integer("warmup", 2), batch = args.integer("batch", 64);
  const double compute_ms = args.real("compute-ms", 200.0);
  const std::string op = args.text("op", "average"), shapes = args.text("shapes", KOLO_RESNET50_SHAPES),
                    json = args.text("json", "");
  args.finish();
  const double compute_s = compute_ms / 1e3;

  bench::GradientSet set(shapes);
  std::vector<bench::Tensor>& tensors = set.tensors;
  const size_t total = set.total;

  // Backward: the last layer's gradient first; `ready(i)` is called as gradient i appears.
  auto train_step = [&](const std::function<void(size_t)>& ready) {
    const Clock::time_point start = Clock::now();
    compute_until(start, compute_s, 1.0 / 3.0);
    size_t done = 0;
    for (size_t k = tensors.size(); k-- > 0;) {
      done += tensors[k].data.size();
      compute_until(start, compute_s, 1.0 / 3.0 + 2.0 / 3.0 * static_cast<double>(done) / static_cast<double>(total));
      ready(k);
    }
  };
  auto kolo_step = [&] {
    std::vector<kolo::Handle> handles;
    kolo::AllreduceOptions reduce;
    reduce.op = op == "sum" ? kolo::ReduceOp::kSum : kolo::ReduceOp::kAverage;
    train_step([&](size_t k) {
      kolo::TensorView v = kolo::cpu_view(tensors[k].data.data(), tensors[k].shape);
      handles.push_back(kolo::allreduce_async(tensors[k].name, v, v, reduce));
    });
    for (kolo::Handle h : handles) check(kolo::wait(h));
  };
  auto mpi_step = [&] {
    train_step([](size_t) {});
    if (size > 1) set.mpi_one_call();
  };
  struct Mode {
    std::string name;
    kolo::Settings settings;
    std::function<void()> step;
    bool uses_kolo;
  };
  std::vector<Mode> modes = {{"kolo, flat", {{"KOLO_HIERARCHICAL_ALLREDUCE", "0"}}, kolo_step, true}};
  if (size > 1) modes.push_back({"kolo, hierarchical", {{"KOLO_HIERARCHICAL_ALLREDUCE", "1"}}, kolo_step, true});
  modes.push_back({"MPI_Allreduce after backward", {}, mpi_step, false});

  check(kolo::init());
  const int local_size = kolo::local_size(), hosts = kolo::cross_size();
  check(kolo::shutdown());

  std::map<std::string, double> seconds;
  for (const Mode& m : modes) {
    if (m.uses_kolo) check(kolo::init(m.settings));
    for (int s = 0; s < warmup; ++s) bench::timed_step(m.step);
    std::vector<double> times;
    for (int s = 0; s < steps; ++s) times.push_back(bench::timed_step(m.step));
    seconds[m.name] = bench::median(times);
    if (m.uses_kolo) check(kolo::shutdown());
  }

  if (rank == 0) {
    const double peer = seconds["MPI_Allreduce after backward"];
    std::printf("# synthetic ResNet-50 step: %zu float32 gradients (%.1f MB), %.0f ms emulated compute, batch %d "
                "per rank; %d ranks on %d hosts (%d per host); median of %d steps\n",
                tensors.size(), total * 4 / 1e6, compute_ms, batch, size, hosts, local_size, steps);
    std::printf("%-30s %12s %14s %16s\n", "", "step (ms)", "images/s", "time vs peer");
    std::string rows;
    for (const Mode& m : modes) {
      const double t = seconds[m.name];
      std::printf("%-30s %12.1f %14.1f %15.2fx\n", m.name.c_str(), t * 1e3, size * batch / t, t / peer);
      char js[256];
      std::snprintf(js, sizeof js, "%s    {\"name\": \"%s\", \"seconds\": %.6f, \"images_per_second\": %.3f}",
                    rows.empty() ? "" : ",\n", m.name.c_str(), t, size * batch / t);
      rows += js;
    }
    if (!json.empty()) {
      std::ofstream out(json);
      out << "{\n  \"benchmark\": \"synthetic_step\",\n  \"ranks\": " << size << ",\n  \"hosts\": " << hosts
          << ",\n  \"local_size\": " << local_size << ",\n  \"bytes\": " << total * 4 << ",\n  \"compute_seconds\": "
          << compute_s << ",\n  \"batch\": " << batch << ",\n  \"rows\": [\n" << rows << "\n  ]\n}\n";
    }
  }
  MPI_Finalize();
  return 0;
}
