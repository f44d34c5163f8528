// Threads as ranks (the Gloo way): a ControlChannel over shared memory, so negotiation can be
// tested with N ranks in one process, without MPI.
#pragma once

#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/control_channel.h"

namespace kolo {
namespace testing {

class FakeWorld {
 public:
  explicit FakeWorld(int size) : size_(size), slots_(static_cast<size_t>(size)) {}
  int size() const { return size_; }

  // Every rank deposits its bytes; all get everyone's, indexed by rank.
  std::vector<std::string> exchange(int rank, std::string mine) {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t generation = generation_;
    slots_[rank] = std::move(mine);
    if (++arrived_ == size_) {
      result_ = slots_;
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != generation; });
    }
    return result_;
  }

 private:
  const int size_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> slots_, result_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
};

class FakeChannel : public ControlChannel {
 public:
  FakeChannel(FakeWorld* world, int rank) : world_(world), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return world_->size(); }

  Status allreduce_and(std::vector<uint64_t>* words) override {
    std::string mine(reinterpret_cast<const char*>(words->data()), words->size() * sizeof(uint64_t));
    for (const std::string& other : world_->exchange(rank_, mine)) {
      if (other.size() != mine.size()) return Status::Internal("ranks passed different bit-vector lengths");
      for (size_t i = 0; i < words->size(); ++i) {
        uint64_t w;
        std::memcpy(&w, other.data() + i * sizeof w, sizeof w);
        (*words)[i] &= w;
      }
    }
    return Status::OK();
  }

  Status allreduce_and(std::vector<uint64_t>* words, std::string* rider, RiderCombine combine) override {
    // Each rank folds the others' riders into its own in rank order, as one MPI rank might.
    const std::string mine = *rider;
    std::vector<std::string> riders = world_->exchange(rank_, mine);
    Status s = allreduce_and(words);
    if (!s.ok()) return s;
    for (int r = 0; r < size(); ++r) {
      if (r == rank_) continue;
      if (riders[r].size() != mine.size()) return Status::Internal("ranks passed different rider sizes");
      combine(riders[r].data(), &(*rider)[0], rider->size());
    }
    return Status::OK();
  }

  Status gather(const std::string& mine, std::vector<std::string>* all) override {
    std::vector<std::string> everyone = world_->exchange(rank_, mine);
    all->clear();
    if (rank_ == 0) *all = std::move(everyone);
    return Status::OK();
  }

  Status broadcast(std::string* bytes) override {
    *bytes = world_->exchange(rank_, *bytes)[0];
    return Status::OK();
  }

 private:
  FakeWorld* world_;
  int rank_;
};

// Runs body(rank) on `size` threads and joins them.
inline void run_ranks(int size, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) threads.emplace_back(body, r);
  for (auto& t : threads) t.join();
}

}  // namespace testing
}  // namespace kolo
