// Load: many small tensors per step, submitted from several threads per rank, for many steps.
// Every result must be exact and memory must stay flat after warm-up.
//
//   mpirun -np 4 kolo_load_test [--tensors 10000] [--steps 1000] [--threads 4]
#include <mpi.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kolo/kolo.h"

namespace {

long resident_kib() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  long pages = 0, resident = 0;
  if (f != nullptr) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

int arg(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int tensors = arg(argc, argv, "--tensors", 10000);
  const int steps = arg(argc, argv, "--steps", 1000);
  const int threads = arg(argc, argv, "--threads", 4);
  const int warmup = std::min(steps / 4, 100);
  const bool trace = arg(argc, argv, "--trace", 0) != 0;
  // Enough cache for every name, so that steady state is the bit-vector fast path.
  kolo::Status s = kolo::init({{"KOLO_CACHE_CAPACITY", std::to_string(tensors + 16)}});
  if (!s.ok()) {
    std::fprintf(stderr, "init: %s\n", s.to_string().c_str());
    return 1;
  }
  const int rank = kolo::rank(), size = kolo::size();
  const int per_thread = tensors / threads;

  // Tensor t holds (t % 5 + 1) int32 values; rank r contributes r + step + t + i, so each sum is
  // known exactly: size * (step + t + i) + size * (size - 1) / 2.
  std::vector<std::vector<int32_t>> data(static_cast<size_t>(per_thread * threads));
  for (size_t t = 0; t < data.size(); ++t) data[t].resize(t % 5 + 1);

  std::atomic<long> wrong{0}, failed{0};
  long rss_after_warmup = 0;
  for (int step = 0; step < steps; ++step) {
    std::vector<std::thread> pool;
    for (int th = 0; th < threads; ++th) {
      pool.emplace_back([&, th] {
        std::vector<kolo::Handle> handles;
        handles.reserve(static_cast<size_t>(per_thread));
        kolo::AllreduceOptions sum;
        sum.op = kolo::ReduceOp::kSum;
        for (int k = 0; k < per_thread; ++k) {
          const int t = th * per_thread + k;
          std::vector<int32_t>& v = data[static_cast<size_t>(t)];
          for (size_t i = 0; i < v.size(); ++i) v[i] = rank + step + t + static_cast<int32_t>(i);
          handles.push_back(kolo::allreduce_async("load." + std::to_string(t), kolo::cpu_view(v), kolo::cpu_view(v), sum));
        }
        for (int k = 0; k < per_thread; ++k) {
          const int t = th * per_thread + k;
          if (!kolo::wait(handles[static_cast<size_t>(k)]).ok()) ++failed;
          const std::vector<int32_t>& v = data[static_cast<size_t>(t)];
          for (size_t i = 0; i < v.size(); ++i) {
            const int32_t expected = size * (step + t + static_cast<int32_t>(i)) + size * (size - 1) / 2;
            if (v[i] != expected) ++wrong;
          }
        }
      });
    }
    for (auto& p : pool) p.join();
    if (step == warmup) rss_after_warmup = resident_kib();
    if (trace && rank == 0 && step % 50 == 0) std::printf("step %d: %ld KiB resident\n", step, resident_kib());
  }
  const long rss_end = resident_kib();
  long growth = rss_end - rss_after_warmup, max_growth = growth;
  MPI_Allreduce(&growth, &max_growth, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
  long totals[2] = {wrong.load(), failed.load()};
  MPI_Allreduce(MPI_IN_PLACE, totals, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  kolo::shutdown();
  // Memory is flat when resident memory grew by less than 4 MiB after warm-up: it wanders by a
  // megabyte or two with the allocator, while a leak of even one byte per op over 10,000 ops a step
  // for 1,000 steps is 10 MB. (LeakSanitizer and valgrind runs check for leaks directly.)
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KOLO_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define KOLO_UNDER_SANITIZER 1
#endif
#endif
#ifdef KOLO_UNDER_SANITIZER
  // Sanitizers hold freed memory back (ASan's quarantine), so resident memory says nothing here;
  // LeakSanitizer checks for leaks at exit instead.
  const bool memory_flat = true;
  if (rank == 0) std::printf("resident memory not checked under a sanitizer\n");
#else
  const bool memory_flat = max_growth < 4096;
#endif
  const bool ok = totals[0] == 0 && totals[1] == 0 && memory_flat;
  if (rank == 0) {
    std::printf("%d ranks x %d threads, %d tensors per step, %d steps: %ld wrong values, %ld failed ops, "
                "resident memory grew %ld KiB after step %d (largest on any rank) -> %s\n",
                size, threads, per_thread * threads, steps, totals[0], totals[1], max_growth, warmup,
                ok ? "OK" : "FAILED");
  }
  return ok ? 0 : 1;
}
