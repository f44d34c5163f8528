// kolo's own element-wise reduction (cpu/reduce.h) against the MPI_Reduce_local it replaces, one rank,
// the two alternated round by round in one run: float32 sum and max, int64 sum and bfloat16 sum (kolo's
// user op on the MPI side, as mpi_types.cc makes it) at 4 KiB (L1), 64 KiB (L2) and 4 MiB (memory).
// Prints each pair's median time per call and the ratio kolo / MPI (below 1: kolo is faster).
//
//   mpirun -np 1 reduce_into_bench [--rounds 9] [--ms 20]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "comm/mpi/mpi_types.h"
#include "common/half.h"
#include "cpu/reduce.h"
#include "kolo/tensor.h"
#include "kolo/types.h"

namespace {

using kolo::DataType;
using kolo::ReduceOp;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Case {
  const char* name;
  DataType dtype;
  ReduceOp op;
};

// Values in [1, 2): no NaNs, infinities or subnormals (which some CPUs take slow paths for), and sums that
// stay finite for as many calls as a run makes.
void fill(DataType dtype, std::mt19937& rng, std::vector<char>& bytes) {
  std::uniform_real_distribution<float> u(1.0f, 2.0f);
  const size_t n = bytes.size() / kolo::dtype_size(dtype);
  for (size_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DataType::kFloat32: {
        const float v = u(rng);
        std::memcpy(bytes.data() + 4 * i, &v, 4);
        break;
      }
      case DataType::kBFloat16: {
        const uint16_t v = kolo::float_to_bf16(u(rng));
        std::memcpy(bytes.data() + 2 * i, &v, 2);
        break;
      }
      case DataType::kInt64: {
        const int64_t v = static_cast<int64_t>(rng());
        std::memcpy(bytes.data() + 8 * i, &v, 8);
        break;
      }
      default: break;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rounds = 9;
  double ms = 20.0;  // per timing: calls repeated until about this long
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--rounds") rounds = std::max(1, std::atoi(argv[i + 1]));
    if (a == "--ms") ms = std::max(1.0, std::atof(argv[i + 1]));
  }
  MPI_Op bf16_ops[kolo::kNumReduceOps];
  if (!kolo::create_16bit_ops(DataType::kBFloat16, bf16_ops).ok()) {
    std::fprintf(stderr, "create_16bit_ops failed\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const Case cases[] = {{"float32 sum", DataType::kFloat32, ReduceOp::kSum},
                        {"float32 max", DataType::kFloat32, ReduceOp::kMax},
                        {"int64 sum", DataType::kInt64, ReduceOp::kSum},
                        {"bfloat16 sum", DataType::kBFloat16, ReduceOp::kSum}};
  const size_t sizes[] = {4 << 10, 64 << 10, 4 << 20};

  std::printf("%-14s %8s %12s %12s %10s %10s %8s\n", "op", "bytes", "kolo us", "MPI us", "kolo GB/s", "MPI GB/s",
              "kolo/MPI");
  std::mt19937 rng(7);
  for (const Case& c : cases) {
    const MPI_Datatype type = kolo::mpi_datatype(c.dtype);
    const MPI_Op op = c.dtype == DataType::kBFloat16 ? bf16_ops[static_cast<int>(c.op)]
                                                     : kolo::mpi_builtin_op(kolo::reduction_for(c.dtype, c.op));
    for (size_t bytes : sizes) {
      const int64_t count = static_cast<int64_t>(bytes / kolo::dtype_size(c.dtype));
      std::vector<char> from(bytes), into_kolo(bytes), into_mpi(bytes);
      fill(c.dtype, rng, from);
      fill(c.dtype, rng, into_kolo);
      into_mpi = into_kolo;
      auto kolo_call = [&] { kolo::reduce_into(c.dtype, c.op, from.data(), into_kolo.data(), count); };
      auto mpi_call = [&] { MPI_Reduce_local(from.data(), into_mpi.data(), static_cast<int>(count), type, op); };
      // Calls per timing, from a short trial of the MPI call (which sets the pace for both), on a copy.
      const std::vector<char> start = into_mpi;
      int64_t calls = 1;
      for (;;) {
        const double t0 = now();
        for (int64_t k = 0; k < calls; ++k) mpi_call();
        if (now() - t0 > ms / 1e3 / 4 || calls > (int64_t{1} << 30)) break;
        calls *= 2;
      }
      calls *= 4;
      into_mpi = start;
      std::vector<double> t_kolo, t_mpi;
      for (int r = 0; r < rounds; ++r) {
        // Alternated, and which goes first alternates too.
        for (int turn = 0; turn < 2; ++turn) {
          const bool kolo_turn = (turn == 0) == (r % 2 == 0);
          const double t0 = now();
          if (kolo_turn) {
            for (int64_t k = 0; k < calls; ++k) kolo_call();
          } else {
            for (int64_t k = 0; k < calls; ++k) mpi_call();
          }
          (kolo_turn ? t_kolo : t_mpi).push_back((now() - t0) / static_cast<double>(calls));
        }
      }
      // The same calls on the same data: the same bits (the test says so for every case; here a check
      // that the timed work was the same).
      const bool same = std::memcmp(into_kolo.data(), into_mpi.data(), bytes) == 0;
      const double tk = median(t_kolo), tm = median(t_mpi);
      std::printf("%-14s %8zu %12.3f %12.3f %10.2f %10.2f %8.2f%s\n", c.name, bytes, tk * 1e6, tm * 1e6,
                  static_cast<double>(bytes) / tk / 1e9, static_cast<double>(bytes) / tm / 1e9, tk / tm,
                  same ? "" : "  (results differ!)");
      std::fflush(stdout);
    }
  }
  for (MPI_Op& o : bf16_ops) {
    if (o != MPI_OP_NULL) MPI_Op_free(&o);
  }
  MPI_Finalize();
  return 0;
}
