// Allreduce of ResNet-50's gradients (161 float32 tensors, 25,557,032 elements) as a training loop
// submits them, one by one, then waits for all: kolo against MPI_Allreduce in the same run.
//
//   mpirun -np 2 benchmarks/resnet50_allreduce [--steps 20] [--rounds 3] [--json out.json]
//
// Rows, interleaved round by round so that drift hits all alike: kolo with its defaults, kolo with
// fusion off, with the response cache off, with its shared memory off (MPI inside the host); one memcpy
// of all the bytes on one core (the floor); one MPI_Allreduce of all the bytes (the reference);
// MPI_Allreduce of the same bytes in 4 MiB pieces; one MPI_Allreduce per tensor. Sum, so that every
// row does the same arithmetic. Then the latency of one 4-byte allreduce, kolo against MPI.
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>

#include "bench_args.h"
#include "bench_util.h"
#include "gradient_set.h"
#include "kolo/kolo.h"

using bench::check;

int main(int argc, char** argv) {
  const bench::World world = bench::start_mpi(&argc, &argv);
  const int rank = world.rank, size = world.size;
  bench::Args args(argc, argv);
  const int steps = args.integer("steps", 20), rounds = args.integer("rounds", 3), warmup = args.integer("warmup", 3);
  const std::string shapes = args.text("shapes", KOLO_RESNET50_SHAPES), json = args.text("json", "");
  args.finish();

  bench::GradientSet set(shapes);
  const size_t total = set.total;
  const double bytes = set.bytes;

  auto kolo_step = [&] { set.kolo_step(); };
  auto mpi_whole = [&] { set.mpi_one_call(); };
  auto mpi_pieces = [&] {
    const size_t piece = (4u << 20) / sizeof(float);
    for (size_t off = 0; off < total; off += piece) {
      MPI_Allreduce(MPI_IN_PLACE, set.flat.data() + off, static_cast<int>(std::min(piece, total - off)), MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
    }
  };
  // The floor: with the exchange pipelined in cache-sized rounds, each rank reads its input and writes its
  // result about once, one memcpy's traffic. Rank 0 copies, alone, on one core.
  std::vector<float> copy_to(total);
  auto one_memcpy = [&] {
    if (rank == 0) std::memcpy(copy_to.data(), set.flat.data(), total * sizeof(float));
  };
  // Every rank at once, each on its own core: what the ranks' own traffic costs when they share the
  // host's memory, as an allreduce's ranks do.
  auto every_rank_memcpy = [&] { std::memcpy(copy_to.data(), set.flat.data(), total * sizeof(float)); };
  auto mpi_per_tensor = [&] {
    for (bench::Tensor& t : set.tensors) {
      MPI_Allreduce(MPI_IN_PLACE, t.data.data(), static_cast<int>(t.data.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
  };

  struct Mode {
    std::string name;
    kolo::Settings settings;  // kolo rows only
    std::function<void()> step;
    bool uses_kolo;
  };
  const std::vector<Mode> modes = {
      {"MPI_Allreduce, all bytes in one call", {}, mpi_whole, false},
      {"kolo (defaults)", {}, kolo_step, true},
      {"kolo, fusion off", {{"KOLO_FUSION_THRESHOLD_BYTES", "0"}}, kolo_step, true},
      {"kolo, cache off", {{"KOLO_CACHE_CAPACITY", "0"}}, kolo_step, true},
      {"kolo, shared memory off", {{"KOLO_SHARED_MEMORY", "0"}}, kolo_step, true},
      {"one memcpy of all bytes, one core", {}, one_memcpy, false},
      {"one memcpy on every rank at once", {}, every_rank_memcpy, false},
      {"MPI_Allreduce in 4 MiB pieces", {}, mpi_pieces, false},
      {"MPI_Allreduce per tensor", {}, mpi_per_tensor, false},
  };
  std::map<std::string, std::vector<double>> samples;
  for (int round = 0; round < rounds; ++round) {
    for (const Mode& m : modes) {
      if (m.uses_kolo) check(kolo::init(m.settings));
      for (int s = 0; s < warmup + steps; ++s) {
        const double dt = bench::timed_step(m.step);
        if (s >= warmup) samples[m.name].push_back(dt);
      }
      if (m.uses_kolo) check(kolo::shutdown());
    }
  }

  // Latency: one 4-byte allreduce, kolo against MPI, alternating.
  check(kolo::init());
  std::vector<double> lat_kolo, lat_mpi;
  float one = 1.0f;
  for (int i = 0; i < 400; ++i) {
    kolo::AllreduceOptions sum;
    sum.op = kolo::ReduceOp::kSum;
    const double k = bench::timed_step([&] { check(kolo::allreduce("latency", kolo::cpu_view(&one, {1}), kolo::cpu_view(&one, {1}), sum)); });
    const double m = bench::timed_step([&] { MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); });
    if (i >= 50) {
      lat_kolo.push_back(k);
      lat_mpi.push_back(m);
    }
  }
  check(kolo::shutdown());

  if (rank == 0) {
    std::vector<bench::Row> rows;
    for (const Mode& m : modes) rows.push_back({m.name, bench::median(samples[m.name]), bytes, 0.0});
    for (bench::Row& r : rows) r.ratio = r.seconds / rows[0].seconds;
    std::printf("# ResNet-50 gradients: %zu float32 tensors, %zu elements (%.1f MB), sum, %d ranks\n", set.tensors.size(),
                total, bytes / 1e6, size);
    std::printf("# median of %d steps x %d rounds; ratio = time / time of one MPI_Allreduce of all bytes\n", steps, rounds);
    std::printf("%-40s %12s %10s %10s %8s\n", "", "time/step", "algbw", "busbw", "ratio");
    std::printf("%-40s %12s %10s %10s %8s\n", "", "(ms)", "(GB/s)", "(GB/s)", "");
    for (const bench::Row& r : rows) {
      std::printf("%-40s %12.2f %10.2f %10.2f %8.3f\n", r.name.c_str(), r.seconds * 1e3, bench::algbw(r),
                  bench::busbw(r, size), r.ratio);
    }
    auto seconds_of = [&](const std::string& name) { return bench::median(samples[name]); };
    const double floor = seconds_of("one memcpy of all bytes, one core");
    std::printf("# kolo (defaults) / one memcpy: %.2f; kolo, shared memory off / one memcpy: %.2f; kolo (defaults) / "
                "one memcpy on every rank at once: %.2f\n",
                seconds_of("kolo (defaults)") / floor, seconds_of("kolo, shared memory off") / floor,
                seconds_of("kolo (defaults)") / seconds_of("one memcpy on every rank at once"));
    const double lk = bench::median(lat_kolo), lm = bench::median(lat_mpi);
    std::printf("# latency, one 4-byte allreduce: kolo %.1f us, MPI_Allreduce %.1f us, ratio %.2f\n", lk * 1e6, lm * 1e6,
                lk / lm);
    if (!json.empty()) {
      std::ofstream out(json);
      out << "{\n  \"benchmark\": \"resnet50_allreduce\",\n  \"ranks\": " << size << ",\n  \"tensors\": " << set.tensors.size()
          << ",\n  \"bytes\": " << static_cast<long long>(bytes) << ",\n  \"steps\": " << steps << ",\n  \"rounds\": " << rounds
          << ",\n  \"rows\": [\n";
      for (size_t i = 0; i < rows.size(); ++i) {
        const bench::Row& r = rows[i];
        out << "    {\"name\": \"" << bench::json_escape(r.name) << "\", \"seconds\": " << r.seconds
            << ", \"algbw_gbps\": " << bench::algbw(r) << ", \"busbw_gbps\": " << bench::busbw(r, size)
            << ", \"ratio\": " << r.ratio << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
      }
      out << "  ],\n  \"latency_4_bytes\": {\"kolo_seconds\": " << lk << ", \"mpi_seconds\": " << lm << "}\n}\n";
    }
  }
  MPI_Finalize();
  return 0;
}
