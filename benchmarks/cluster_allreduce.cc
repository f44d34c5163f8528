// ResNet-50's gradient set reduced across hosts: kolo flat, kolo hierarchical and one MPI_Allreduce,
// in one run, with the bytes that crossed between hosts (read from each host's interface counters)
// and the time, each against the least an allreduce must send across and the time that takes at the
// link's rate. Meant for the emulated cluster (tests/system/cluster/cluster.sh with --rate-mbit):
//
//   tests/system/cluster/cluster.sh --rate-mbit 1000 -- sh -c 'mpirun $CLUSTER_MPIRUN_ARGS -np 4
//       -H ...:2,...:2 build/benchmarks/cluster_allreduce --interface eth0 --link-gbit 1'
//
// An allreduce of S bytes over H hosts must send at least 2S(H-1)/H out of every host (each host's
// share of the result depends on every other host's data, and every host needs the whole result);
// at R bytes/s per direction, that takes at least 2S(H-1)/(H R).
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>

#include "bench_args.h"
#include "bench_util.h"
#include "gradient_set.h"
#include "kolo/kolo.h"

using bench::check;

namespace {

// Bytes this host has sent on `iface` (its link to the other hosts).
long long sent_bytes(const std::string& iface) {
  std::ifstream f("/sys/class/net/" + iface + "/statistics/tx_bytes");
  long long v = 0;
  f >> v;
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const bench::World world = bench::start_mpi(&argc, &argv);
  const int rank = world.rank, size = world.size;
  bench::Args args(argc, argv);
  const int steps = args.integer("steps", 3), rounds = args.integer("rounds", 2);
  const double link_gbit = args.real("link-gbit", 0.0);
  const std::string iface = args.text("interface", "eth0"), shapes = args.text("shapes", KOLO_RESNET50_SHAPES),
                    json = args.text("json", "");
  args.finish();

  bench::GradientSet set(shapes);
  const double bytes = set.bytes;

  auto kolo_step = [&] { set.kolo_step(); };
  auto mpi_step = [&] { set.mpi_one_call(); };
  struct Mode {
    std::string name;
    kolo::Settings settings;
    std::function<void()> step;
    bool uses_kolo;
  };
  const std::vector<Mode> modes = {
      {"kolo, flat", {{"KOLO_HIERARCHICAL_ALLREDUCE", "0"}}, kolo_step, true},
      {"kolo, hierarchical", {{"KOLO_HIERARCHICAL_ALLREDUCE", "1"}}, kolo_step, true},
      {"MPI_Allreduce, one call", {}, mpi_step, false},
  };

  // Which ranks read their host's counters: the first on each host.
  check(kolo::init());
  const bool reads_counters = kolo::local_rank() == 0;
  const int hosts = kolo::cross_size();
  check(kolo::shutdown());

  std::map<std::string, std::vector<double>> times;
  std::map<std::string, double> crossed;  // bytes sent between hosts, all hosts, summed over steps
  for (int round = 0; round < rounds; ++round) {
    for (const Mode& m : modes) {
      if (m.uses_kolo) check(kolo::init(m.settings));
      m.step();  // warm-up (and, for kolo, negotiation of every name)
      MPI_Barrier(MPI_COMM_WORLD);
      const long long before = reads_counters ? sent_bytes(iface) : 0;
      for (int s = 0; s < steps; ++s) times[m.name].push_back(bench::timed_step(m.step));
      MPI_Barrier(MPI_COMM_WORLD);
      long long delta = reads_counters ? sent_bytes(iface) - before : 0, all = 0;
      MPI_Allreduce(&delta, &all, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
      crossed[m.name] += static_cast<double>(all);
      if (m.uses_kolo) check(kolo::shutdown());
    }
  }

  if (rank == 0) {
    const double min_bytes = 2.0 * bytes * (hosts - 1);  // out of all hosts together, per step
    const double bound = link_gbit > 0 ? 2.0 * bytes * (hosts - 1) / hosts / (link_gbit * 1e9 / 8) : 0.0;
    std::printf("# ResNet-50 gradients: %zu float32 tensors (%.1f MB), sum, %d ranks on %d hosts\n", set.tensors.size(),
                bytes / 1e6, size, hosts);
    std::printf("# least an allreduce sends between hosts per step: %.1f MB", min_bytes / 1e6);
    if (link_gbit > 0) std::printf("; at %.3g Gbit/s per link that takes %.1f ms", link_gbit, bound * 1e3);
    std::printf("\n# median of %d steps x %d rounds\n", steps, rounds);
    std::printf("%-26s %12s %16s %14s %14s\n", "", "time (ms)", "crossed (MB)", "bytes / least", "time / least");
    std::string rows;
    for (const Mode& m : modes) {
      const double t = bench::median(times[m.name]);
      const double per_step = crossed[m.name] / (steps * rounds);
      char line[256];
      std::snprintf(line, sizeof line, "%-26s %12.1f %16.1f %14.2f %14s\n", m.name.c_str(), t * 1e3, per_step / 1e6,
                    per_step / min_bytes, bound > 0 ? std::to_string(t / bound).substr(0, 5).c_str() : "-");
      std::fputs(line, stdout);
      char js[256];
      std::snprintf(js, sizeof js, "%s    {\"name\": \"%s\", \"seconds\": %.6f, \"crossed_bytes\": %.0f}",
                    rows.empty() ? "" : ",\n", m.name.c_str(), t, per_step);
      rows += js;
    }
    if (!json.empty()) {
      std::ofstream out(json);
      out << "{\n  \"benchmark\": \"cluster_allreduce\",\n  \"ranks\": " << size << ",\n  \"hosts\": " << hosts
          << ",\n  \"bytes\": " << static_cast<long long>(bytes) << ",\n  \"link_gbit\": " << link_gbit
          << ",\n  \"least_crossed_bytes\": " << min_bytes << ",\n  \"least_seconds\": " << bound
          << ",\n  \"rows\": [\n" << rows << "\n  ]\n}\n";
    }
  }
  MPI_Finalize();
  return 0;
}
