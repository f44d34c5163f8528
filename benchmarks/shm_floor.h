// The floor of a small allreduce among the ranks of one host: each rank writes its values and a round
// number into a cache line of its own in shared memory and reads every other rank's once that rank's
// round number has arrived, summing in rank order. No library does less and still reduces: this is
// the cost of the cache lines crossing between cores, the peer a small op's time is judged against.
#pragma once

#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

namespace bench {

class ShmFloor {
 public:
  // Collective over MPI_COMM_WORLD. usable() is false where the ranks do not share one host, or for
  // more than kMostFloats values.
  ShmFloor() {
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local_);
    int world = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    MPI_Comm_size(local_, &size_);
    MPI_Comm_rank(local_, &rank_);
    if (size_ != world) return;
    MPI_Aint bytes = static_cast<MPI_Aint>(sizeof(Slot)) * 2;  // two rounds in turn: a rank may be one ahead
    void* base = nullptr;
    MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, local_, &base, &win_);
    slots_ = new Slot*[size_];
    for (int r = 0; r < size_; ++r) {
      MPI_Aint got = 0;
      int unit = 0;
      void* p = nullptr;
      MPI_Win_shared_query(win_, r, &got, &unit, &p);
      slots_[r] = static_cast<Slot*>(p);
    }
    std::memset(static_cast<void*>(slots_[rank_]), 0, static_cast<size_t>(bytes));
    MPI_Barrier(local_);
    // More ranks than cores: a spinning waiter would keep the core from the rank it waits for.
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    yield_ = size_ > cores;
  }
  ~ShmFloor() {
    if (win_ != MPI_WIN_NULL) MPI_Win_free(&win_);
    delete[] slots_;
    MPI_Comm_free(&local_);
  }
  ShmFloor(const ShmFloor&) = delete;
  ShmFloor& operator=(const ShmFloor&) = delete;

  static constexpr int kMostFloats = 1024;
  bool usable(int floats) const { return win_ != MPI_WIN_NULL && floats <= kMostFloats; }

  // data[0, n) summed over the ranks, in place.
  void allreduce(float* data, int n) {
    ++round_;
    Slot& mine = slots_[rank_][round_ % 2];
    std::memcpy(mine.values, data, sizeof(float) * static_cast<size_t>(n));
    mine.round.store(round_, std::memory_order_release);
    float sum[kMostFloats];
    std::fill(sum, sum + n, 0.0f);
    for (int r = 0; r < size_; ++r) {
      const Slot& theirs = slots_[r][round_ % 2];
      while (theirs.round.load(std::memory_order_acquire) < round_) {
        if (yield_) sched_yield();
      }
      for (int i = 0; i < n; ++i) sum[i] += theirs.values[i];
    }
    std::memcpy(data, sum, sizeof(float) * static_cast<size_t>(n));
  }

 private:
  struct alignas(64) Slot {
    std::atomic<int64_t> round;
    float values[kMostFloats];
  };
  MPI_Comm local_ = MPI_COMM_NULL;
  MPI_Win win_ = MPI_WIN_NULL;
  Slot** slots_ = nullptr;  // per rank, its two slots
  int size_ = 0, rank_ = 0;
  int64_t round_ = 0;
  bool yield_ = false;
};

}  // namespace bench
