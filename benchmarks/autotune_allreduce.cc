// KOLO_AUTOTUNE against an exhaustive grid, in one run: ResNet-50's gradient set reduced at every point
// of a grid of the settings the tuner searches (fusion threshold, segment and zero-copy sizes and, on
// several hosts, flat or hierarchical), then by a job tuning itself until it keeps a setting, then the
// grid's best point, the setting kept, kolo's defaults and one MPI_Allreduce of all bytes, alternated.
//
//   mpirun -np 2 build/benchmarks/autotune_allreduce
//   tests/system/cluster/cluster.sh --rate-mbit 1000 -- sh -c 'mpirun $CLUSTER_MPIRUN_ARGS -np 4 \
//       -H ...:2,...:2 build/benchmarks/autotune_allreduce --fusion-mib 16,64,128 --segment-mib 4,32 \
//       --steps-per-sample 2 --max-samples 12'
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "bench_args.h"
#include "bench_util.h"
#include "gradient_set.h"
#include "kolo/kolo.h"

using bench::check;

namespace {

struct Point {
  long long fusion = 0, segment = 0, zero_copy = 0;
  int hierarchical = 0;

  kolo::Settings settings() const {
    return {{"KOLO_FUSION_THRESHOLD_BYTES", std::to_string(fusion)},
            {"KOLO_SEGMENT_BYTES", std::to_string(segment)},
            {"KOLO_ZERO_COPY_BYTES", std::to_string(zero_copy)},
            {"KOLO_HIERARCHICAL_ALLREDUCE", std::to_string(hierarchical)}};
  }
  std::string describe() const {
    char s[160];
    std::snprintf(s, sizeof s, "fusion %lld MiB, segment %.4g MiB, zero copy %.4g MiB%s", fusion >> 20,
                  segment / 1048576.0, zero_copy / 1048576.0, hierarchical ? ", hierarchical" : "");
    return s;
  }
};

// Rank 0's log's "kept" row, if it has one, sent to every rank.
bool kept_point(const std::string& log, int rank, Point* kept) {
  long long v[5] = {0, 0, 0, 0, 0};
  if (rank == 0) {
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);) {
      if (line.find(",kept,") == std::string::npos) continue;
      std::replace(line.begin(), line.end(), ',', ' ');
      std::istringstream row(line);
      std::string sample, phase;
      row >> sample >> phase >> v[1] >> v[2] >> v[3] >> v[4];
      v[0] = 1;
    }
  }
  MPI_Bcast(v, 5, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  *kept = Point{v[1], v[2], v[3], static_cast<int>(v[4])};
  return v[0] == 1;
}

}  // namespace

int main(int argc, char** argv) {
  const bench::World world = bench::start_mpi(&argc, &argv);
  const int rank = world.rank, size = world.size;
  bench::Args args(argc, argv);
  const int steps = args.integer("steps", 3), rounds = args.integer("rounds", 3);
  const std::vector<long long> fusion = args.integers("fusion-mib", "4,16,64,128", 1ll << 20),
                               segment = args.integers("segment-mib", "1,4,16,32", 1ll << 20),
                               zero_copy = args.integers("zero-copy-kib", "256,8192", 1ll << 10);
  const std::string shapes = args.text("shapes", KOLO_RESNET50_SHAPES), json = args.text("json", ""),
                    log = args.text("log", "/tmp/kolo_autotune_bench_" + std::to_string(getpid()) + ".csv");
  const int warmup_samples = args.integer("warmup-samples", 3), steps_per_sample = args.integer("steps-per-sample", 5),
            max_samples = args.integer("max-samples", 20);
  args.finish();

  bench::GradientSet set(shapes);
  const double bytes = set.bytes;
  auto kolo_step = [&] { set.kolo_step(); };
  auto mpi_step = [&] { set.mpi_one_call(); };
  // `steps` timed steps after one untimed (negotiation of every name), at `settings`.
  auto measure = [&](const kolo::Settings& settings, std::vector<double>* times) {
    check(kolo::init(settings));
    kolo_step();
    for (int s = 0; s < steps; ++s) times->push_back(bench::timed_step(kolo_step));
    check(kolo::shutdown());
  };

  check(kolo::init());
  const int hosts = kolo::cross_size();
  const bool homogeneous = kolo::is_homogeneous();
  check(kolo::shutdown());

  // The grid.
  std::vector<Point> grid;
  for (long long f : fusion) {
    for (long long g : segment) {
      for (long long z : zero_copy) {
        for (int h = 0; h <= (hosts > 1 && homogeneous ? 1 : 0); ++h) grid.push_back(Point{f, g, z, h});
      }
    }
  }
  std::vector<double> grid_time(grid.size());
  for (size_t i = 0; i < grid.size(); ++i) {
    std::vector<double> times;
    measure(grid[i].settings(), &times);
    grid_time[i] = bench::median(times);
  }
  size_t best = 0;
  for (size_t i = 1; i < grid.size(); ++i) {
    if (grid_time[i] < grid_time[best]) best = i;
  }

  // A job tuning itself, from kolo's defaults, until it keeps a setting; then its steps at that setting.
  const double tune_start = bench::now();
  check(kolo::init({{"KOLO_AUTOTUNE", "1"},
                    {"KOLO_AUTOTUNE_LOG", log},
                    {"KOLO_AUTOTUNE_WARMUP_SAMPLES", std::to_string(warmup_samples)},
                    {"KOLO_AUTOTUNE_STEPS_PER_SAMPLE", std::to_string(steps_per_sample)},
                    {"KOLO_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", std::to_string(max_samples)}}));
  Point kept;
  int tuning_steps = 0;
  while (!kept_point(log, rank, &kept)) {
    kolo_step();
    ++tuning_steps;
  }
  const double tune_seconds = bench::now() - tune_start;
  std::vector<double> live;
  for (int s = 0; s < steps * rounds; ++s) live.push_back(bench::timed_step(kolo_step));
  check(kolo::shutdown());

  // The grid's best, the setting kept, the defaults and MPI, alternated.
  std::vector<double> t_best, t_kept, t_default, t_mpi;
  for (int round = 0; round < rounds; ++round) {
    measure(grid[best].settings(), &t_best);
    measure(kept.settings(), &t_kept);
    measure({}, &t_default);
    mpi_step();
    for (int s = 0; s < steps; ++s) t_mpi.push_back(bench::timed_step(mpi_step));
  }

  if (rank == 0) {
    const double best_time = bench::median(t_best);
    std::printf("# ResNet-50 gradients: %zu float32 tensors (%.1f MB), sum, %d ranks on %d host%s\n", set.tensors.size(),
                bytes / 1e6, size, hosts, hosts > 1 ? "s" : "");
    std::printf("# grid: %zu points, median of %d steps each; best: %s (%.1f ms)\n", grid.size(), steps,
                grid[best].describe().c_str(), grid_time[best] * 1e3);
    std::printf("# KOLO_AUTOTUNE: kept %s after %d steps (%.1f s): %d warm-up + %d samples of %d steps\n",
                kept.describe().c_str(), tuning_steps, tune_seconds, warmup_samples, max_samples, steps_per_sample);
    std::printf("# then median of %d steps x %d rounds, alternated\n", steps, rounds);
    std::printf("%-44s %10s %14s\n", "", "time (ms)", "vs grid best");
    std::string rows;
    auto row = [&](const std::string& name, double t) {
      std::printf("%-44s %10.1f %14.3f\n", name.c_str(), t * 1e3, t / best_time);
      char js[320];
      std::snprintf(js, sizeof js, "%s    {\"name\": \"%s\", \"seconds\": %.6f}", rows.empty() ? "" : ",\n",
                    name.c_str(), t);
      rows += js;
    };
    row("kolo, grid's best setting", best_time);
    row("kolo, the setting KOLO_AUTOTUNE kept", bench::median(t_kept));
    row("kolo, the tuning job after it kept it", bench::median(live));
    row("kolo, defaults", bench::median(t_default));
    row("MPI_Allreduce, one call", bench::median(t_mpi));
    std::printf("# every grid point (ms):");
    for (size_t i = 0; i < grid.size(); ++i) {
      std::printf("%s %s: %.1f", i ? ";" : "", grid[i].describe().c_str(), grid_time[i] * 1e3);
    }
    std::printf("\n");
    if (!json.empty()) {
      std::ofstream out(json);
      out << "{\n  \"benchmark\": \"autotune_allreduce\",\n  \"ranks\": " << size << ",\n  \"hosts\": " << hosts
          << ",\n  \"bytes\": " << static_cast<long long>(bytes) << ",\n  \"grid_points\": " << grid.size()
          << ",\n  \"grid_best\": \"" << grid[best].describe() << "\",\n  \"kept\": \"" << kept.describe()
          << "\",\n  \"tuning_steps\": " << tuning_steps << ",\n  \"tuning_seconds\": " << tune_seconds
          << ",\n  \"rows\": [\n" << rows << "\n  ]\n}\n";
    }
  }
  MPI_Finalize();
  return 0;
}
