// kolo in the Gloo world against kolo in the MPI world, in one run, alternated: the ResNet-50 gradient set
// (161 float32 tensors submitted one by one, then waited for) and one blocking 4-byte allreduce. Each round
// runs every mode with kolo initialized in its world (KOLO_CONTROLLER among init's settings); the ratio is the
// Gloo world's time over the MPI world's. Started by mpirun, with a store for the Gloo world:
//
//   mpirun -np 2 -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=29700 build/benchmarks/world_allreduce [--steps 10]
//       [--rounds 5] [--latency-ops 200] [--json out.json] [--settings KOLO_X=v,...]
#include <mpi.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "bench_args.h"
#include "bench_util.h"
#include "gradient_set.h"
#include "kolo/kolo.h"

using bench::check;

namespace {

// "A=1,B=2" -> settings.
kolo::Settings parse_settings(const std::string& text) {
  kolo::Settings s;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t eq = item.find('=');
    if (eq != std::string::npos) s[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const bench::World world = bench::start_mpi(&argc, &argv);
  bench::Args args(argc, argv);
  const int steps = args.integer("steps", 10), rounds = args.integer("rounds", 5), warmup = args.integer("warmup", 2);
  const int ops = args.integer("latency-ops", 200);
  const std::string shapes = args.text("shapes", KOLO_RESNET50_SHAPES), json = args.text("json", "");
  const kolo::Settings extra = parse_settings(args.text("settings", ""));
  args.finish();
  if (!kolo::build_info().gloo) {
    if (world.rank == 0) std::fprintf(stderr, "world_allreduce: this kolo was built without Gloo\n");
    MPI_Finalize();
    return 77;
  }
  bench::GradientSet set(shapes);
  std::map<std::string, std::vector<double>> set_times, latency;
  const char* worlds[] = {"mpi", "gloo"};
  for (int round = 0; round < rounds; ++round) {
    for (const char* w : worlds) {
      kolo::Settings settings = extra;
      settings["KOLO_CONTROLLER"] = w;
      check(kolo::init(settings));
      for (int s = 0; s < warmup + steps; ++s) {
        const double dt = bench::timed_step([&] { set.kolo_step(); });
        if (s >= warmup) set_times[w].push_back(dt);
      }
      float one = 1.0f;
      kolo::AllreduceOptions sum;
      sum.op = kolo::ReduceOp::kSum;
      for (int i = 0; i < ops + 20; ++i) {
        const double dt = bench::timed_step(
            [&] { check(kolo::allreduce("latency", kolo::cpu_view(&one, {1}), kolo::cpu_view(&one, {1}), sum)); });
        if (i >= 20) latency[w].push_back(dt);
      }
      check(kolo::shutdown());
    }
  }
  if (world.rank == 0) {
    const double sm = bench::median(set_times["mpi"]), sg = bench::median(set_times["gloo"]);
    const double lm = bench::median(latency["mpi"]), lg = bench::median(latency["gloo"]);
    std::printf("# kolo's Gloo world against its MPI world, %d ranks; medians of %d rounds, alternated\n", world.size,
                rounds);
    std::printf("%-44s %12s %12s %8s\n", "", "MPI world", "Gloo world", "ratio");
    std::printf("%-44s %9.2f ms %9.2f ms %8.3f\n", "ResNet-50 gradient set (161 tensors, 102 MB)", sm * 1e3, sg * 1e3,
                sg / sm);
    std::printf("%-44s %9.1f us %9.1f us %8.3f\n", "one 4-byte allreduce (blocking)", lm * 1e6, lg * 1e6, lg / lm);
    if (!json.empty()) {
      std::ofstream out(json);
      out << "{\n  \"benchmark\": \"world_allreduce\",\n  \"ranks\": " << world.size << ",\n  \"rounds\": " << rounds
          << ",\n  \"gradient_set_seconds\": {\"mpi\": " << sm << ", \"gloo\": " << sg << "},\n"
          << "  \"latency_4_bytes_seconds\": {\"mpi\": " << lm << ", \"gloo\": " << lg << "}\n}\n";
    }
  }
  MPI_Finalize();
  return 0;
}
