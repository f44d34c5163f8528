// What kolo's benchmarks share: step timing across ranks, medians, and the table/JSON output.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace bench {

inline double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Times `step` after a barrier; a step lasts until the slowest rank finishes it.
inline double timed_step(const std::function<void()>& step) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = now();
  step();
  double dt = now() - t0;
  MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return dt;
}

struct Row {
  std::string name;
  double seconds = 0.0;  // median per step
  double bytes = 0.0;    // reduced per step
  double ratio = 0.0;    // against the reference row
};

inline double algbw(const Row& r) { return r.seconds > 0 ? r.bytes / r.seconds / 1e9 : 0.0; }
// nccl-tests' bus bandwidth for allreduce: algbw * 2(n-1)/n.
inline double busbw(const Row& r, int ranks) { return algbw(r) * 2.0 * (ranks - 1) / ranks; }

inline std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace bench
