// Load: many small tensors per step, submitted from several threads per rank, for many steps.
// Every result must be exact and memory must stay flat after warm-up.
//
//   mpirun -np 4 kolo_load_test [--tensors 10000] [--steps 1000] [--threads 4]
#include <mpi.h>
#include <unistd.h>

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kolo/kolo.h"

namespace {

// Heap bytes in use, over every malloc arena (glibc's malloc_info: what the system gave minus what
// lies free). Unlike resident memory, this does not move with page reuse or allocator caching.
long heap_in_use_kib() {
  char* text = nullptr;
  size_t length = 0;
  FILE* f = open_memstream(&text, &length);
  if (f == nullptr) return 0;
  malloc_info(0, f);
  std::fclose(f);
  long long system = 0, free_bytes = 0;
  // The totals come last: <total type="fast" count=".." size=".."/> <total type="rest" ...>
  // <total type="mmap" ...> <system type="current" size=".."/>.
  const char* totals = nullptr;  // after the last heap's entry
  for (const char* p = text; (p = std::strstr(p, "</heap>")) != nullptr; ++p) totals = p;
  for (const char* p = totals; p != nullptr && (p = std::strstr(p, "<total type=\"")) != nullptr; ++p) {
    char type[16] = {0};
    long long count = 0, size = 0;
    if (std::sscanf(p, "<total type=\"%15[^\"]\" count=\"%lld\" size=\"%lld\"", type, &count, &size) == 3 &&
        (std::strcmp(type, "fast") == 0 || std::strcmp(type, "rest") == 0)) {
      free_bytes += size;
    }
  }
  const char* current = totals ? std::strstr(totals, "<system type=\"current\" size=\"") : nullptr;
  if (current != nullptr) std::sscanf(current, "<system type=\"current\" size=\"%lld\"", &system);
  std::free(text);
  return static_cast<long>((system - free_bytes) / 1024);
}

// A reusable barrier for the submitting threads (std::barrier is C++20).
class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mu_);
    const int generation = generation_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != generation; });
    }
  }

 private:
  const int n_;
  int arrived_ = 0, generation_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
};

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
  const int warmup = std::min(steps / 4, 20);
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
  std::vector<long> heap(static_cast<size_t>(steps), 0);  // KiB in use at the end of each step
  // Persistent submitting threads, as a framework's are; the main thread joins in at step ends.
  Barrier step_start(threads + 1), step_end(threads + 1);
  std::vector<std::thread> pool;
  for (int th = 0; th < threads; ++th) {
    pool.emplace_back([&, th] {
      std::vector<kolo::Handle> handles;
      handles.reserve(static_cast<size_t>(per_thread));
      kolo::AllreduceOptions sum;
      sum.op = kolo::ReduceOp::kSum;
      for (int step = 0; step < steps; ++step) {
        step_start.arrive_and_wait();
        handles.clear();
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
        step_end.arrive_and_wait();
      }
    });
  }
  for (int step = 0; step < steps; ++step) {
    step_start.arrive_and_wait();
    step_end.arrive_and_wait();  // every op of the step has completed: nothing of it should remain
    heap[static_cast<size_t>(step)] = heap_in_use_kib();
    if (trace) std::fprintf(stderr, "rank %d step %d: %ld KiB of heap in use\n", rank, step, heap[static_cast<size_t>(step)]);
  }
  for (auto& p : pool) p.join();
  // The engine's own buffers come and go between cycles, so one reading can be megabytes off; the
  // least reading of a window is steady. A leak lifts the least reading of the last window above
  // that of the first one after warm-up.
  const int window = std::max(1, std::min(20, (steps - warmup) / 2));
  auto least = [&](int from) { return *std::min_element(heap.begin() + from, heap.begin() + from + window); };
  long growth = steps > warmup ? least(steps - window) - least(warmup) : 0, max_growth = growth;
  MPI_Allreduce(&growth, &max_growth, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
  long totals[2] = {wrong.load(), failed.load()};
  MPI_Allreduce(MPI_IN_PLACE, totals, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  kolo::shutdown();
  // Memory is flat when the least heap in use grew by under 512 KiB: glibc's own bookkeeping drifts
  // by about 100 KiB and back over hundreds of steps, while the smallest leak per op (one 16-byte
  // chunk) would be 160 KB a step, and one of 2 KB a step shows within 300 steps.
  // (LeakSanitizer runs check for unreachable memory directly.)
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KOLO_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define KOLO_UNDER_SANITIZER 1
#endif
#endif
#ifdef KOLO_UNDER_SANITIZER
  // Sanitizers replace malloc (and hold freed memory back), so the heap figure says nothing here;
  // LeakSanitizer checks for leaks at exit instead.
  const bool memory_flat = true;
  if (rank == 0) std::printf("heap use not checked under a sanitizer\n");
#else
  const bool memory_flat = max_growth < 512;
#endif
  const bool ok = totals[0] == 0 && totals[1] == 0 && memory_flat;
  if (rank == 0) {
    std::printf("%d ranks x %d threads, %d tensors per step, %d steps: %ld wrong values, %ld failed ops, "
                "least heap in use grew %ld KiB from steps %d.. to the last %d (largest on any rank) -> %s\n",
                size, threads, per_thread * threads, steps, totals[0], totals[1], max_growth, warmup, window,
                ok ? "OK" : "FAILED");
  }
  return ok ? 0 : 1;
}
