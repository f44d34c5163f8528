// kolo's shared-memory collectives (comm/shm/), each rank a thread with its own mapping of one segment,
// as the ranks of a host are processes with theirs: every size through both paths (one round reduced
// by all, or rounds of pieces), results exact and the same bits on every rank; a rank asleep waiting is
// woken by the raise it waits for; a peer that ends, and an interrupted wait, fail the collective; orphaned
// segments are removed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <thread>
#include <vector>

#include "comm/shm/shm_group.h"
#include "cpu/sum_inputs.h"

namespace kolo {
namespace {

class Policy : public ShmWaitPolicy {
 public:
  Status interrupted() override { return stop ? Status::Aborted("interrupted") : Status::OK(); }
  Status peer_ended(int peer, pid_t) override { return Status::Aborted("local rank " + std::to_string(peer) + " ended"); }
  std::atomic<bool> stop{false};
};

struct FloatSum : ReduceInto {
  void operator()(const char* const* in, int n, char* out, size_t bytes) const override {
    ASSERT_TRUE(sum_inputs(DataType::kFloat32, in, n, out, static_cast<int64_t>(bytes / sizeof(float))));
  }
};

// Runs `body(group)` on `ranks` threads, each over its own mapping of one segment.
void on_host(int ranks, size_t slot_bytes, const std::function<void(ShmGroup&)>& body, Policy* policy = nullptr) {
  Policy fallback;
  if (policy == nullptr) policy = &fallback;
  const ShmLayout layout(ranks, slot_bytes);
  std::unique_ptr<SharedSegment> first;
  ASSERT_TRUE(SharedSegment::create("/dev/shm", layout.bytes(), &first).ok());
  std::vector<std::unique_ptr<ShmGroup>> groups;
  const std::string path = first->path();
  groups.push_back(std::make_unique<ShmGroup>(std::move(first), layout, 0, policy));
  for (int r = 1; r < ranks; ++r) {
    std::unique_ptr<SharedSegment> mapped;
    ASSERT_TRUE(SharedSegment::attach(path, layout.bytes(), &mapped).ok());
    groups.push_back(std::make_unique<ShmGroup>(std::move(mapped), layout, r, policy));
  }
  for (auto& g : groups) g->publish_pid();
  for (auto& g : groups) {
    g->segment().unlink();
    g->start_watching();
  }
  std::vector<std::thread> threads;
  for (auto& g : groups) threads.emplace_back([&body, &g] { body(*g); });
  for (auto& t : threads) t.join();
}

float input(int rank, int64_t i) { return static_cast<float>(rank + 1) + static_cast<float>(i % 1000); }

TEST(ShmGroup, AllreduceIsExactAtEverySizeThroughBothPaths) {
  for (int ranks : {2, 3, 4}) {
    // Empty, one element, whole (one round), just past it, pieces smaller than a block, many rounds with
    // blocks of unequal counts.
    for (int64_t count : {0, 1, 7, 4096, 4097, 100003, (1 << 20) + 3}) {
      std::vector<std::vector<float>> out(static_cast<size_t>(ranks));
      on_host(ranks, 16 << 10, [&](ShmGroup& g) {
        std::vector<float> in(static_cast<size_t>(count));
        for (int64_t i = 0; i < count; ++i) in[static_cast<size_t>(i)] = input(g.rank(), i);
        std::vector<float>& result = out[static_cast<size_t>(g.rank())];
        result.assign(static_cast<size_t>(count), -1.0f);
        const Status s = g.allreduce(reinterpret_cast<const char*>(in.data()), reinterpret_cast<char*>(result.data()),
                                     count, sizeof(float), FloatSum());
        EXPECT_TRUE(s.ok()) << s.message();
      });
      for (int r = 0; r < ranks; ++r) {
        for (int64_t i = 0; i < count; ++i) {
          float expected = 0;
          for (int j = 0; j < ranks; ++j) expected += input(j, i);
          ASSERT_EQ(out[static_cast<size_t>(r)][static_cast<size_t>(i)], expected)
              << ranks << " ranks, count " << count << ", rank " << r << ", element " << i;
        }
      }
    }
  }
}

TEST(ShmGroup, InPlaceAndManyCallsInTurnReuseTheSlotsSafely) {
  on_host(3, 4096, [](ShmGroup& g) {
    for (int call = 0; call < 50; ++call) {
      const int64_t count = 1 + call * 37;
      std::vector<float> data(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) data[static_cast<size_t>(i)] = input(g.rank(), i + call);
      char* bytes = reinterpret_cast<char*>(data.data());
      ASSERT_TRUE(g.allreduce(bytes, bytes, count, sizeof(float), FloatSum()).ok());
      for (int64_t i = 0; i < count; ++i) {
        ASSERT_EQ(data[static_cast<size_t>(i)], input(0, i + call) + input(1, i + call) + input(2, i + call));
      }
    }
  });
}

TEST(ShmGroup, EveryRankGetsTheSameBitsWhereTheOrderMatters) {
  // Sums that round differently by order, and NaNs with different payloads: one rank reduces each
  // piece (or every rank all of it, in one order), so every rank ends with the same bits.
  for (int64_t count : {1000, 300000}) {
    std::vector<std::vector<uint32_t>> bits(4);
    on_host(4, 8192, [&](ShmGroup& g) {
      std::vector<float> data(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) {
        data[static_cast<size_t>(i)] = i % 97 == 0 ? std::nanf(std::to_string(g.rank() + 1).c_str())
                                                    : std::ldexp(1.0f + 1e-7f * static_cast<float>(g.rank()), g.rank() * 9 - 13);
      }
      char* bytes = reinterpret_cast<char*>(data.data());
      ASSERT_TRUE(g.allreduce(bytes, bytes, count, sizeof(float), FloatSum()).ok());
      std::vector<uint32_t>& mine = bits[static_cast<size_t>(g.rank())];
      mine.resize(static_cast<size_t>(count));
      std::memcpy(mine.data(), data.data(), static_cast<size_t>(count) * sizeof(float));
    });
    for (int r = 1; r < 4; ++r) EXPECT_EQ(bits[static_cast<size_t>(r)], bits[0]) << "count " << count;
  }
}

TEST(ShmGroup, ReduceScatterThenAllgatherIsAnAllreduceCutAsTheRingCutsIt) {
  for (int64_t count : {5, 65537}) {
    on_host(3, 4096, [count](ShmGroup& g) {
      std::vector<float> data(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) data[static_cast<size_t>(i)] = input(g.rank(), i);
      char* bytes = reinterpret_cast<char*>(data.data());
      ASSERT_TRUE(g.reduce_scatter(bytes, count, sizeof(float), FloatSum()).ok());
      // Its own block is reduced; the others are still its input.
      const int64_t start = block_start(count, 3, g.rank()), n = block_count(count, 3, g.rank());
      for (int64_t i = 0; i < count; ++i) {
        const bool own = i >= start && i < start + n;
        ASSERT_EQ(data[static_cast<size_t>(i)], own ? input(0, i) + input(1, i) + input(2, i) : input(g.rank(), i));
      }
      ASSERT_TRUE(g.allgather(bytes, count, sizeof(float)).ok());
      for (int64_t i = 0; i < count; ++i) ASSERT_EQ(data[static_cast<size_t>(i)], input(0, i) + input(1, i) + input(2, i));
    });
  }
}

TEST(ShmGroup, OutOfPlaceReduceScatterAndAllgatherLeaveTheInputAndFillOnlyTheOutput) {
  // kolo's reducescatter and allgather ops (a sharded optimizer's): rows of 3 floats as the elements,
  // over several rounds of a small slot, at counts that split unevenly.
  for (int64_t rows : {1, 4, 7001}) {
    on_host(3, 4096, [rows](ShmGroup& g) {
      const size_t row = 3 * sizeof(float);
      const int64_t count = rows * 3;
      std::vector<float> in(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) in[static_cast<size_t>(i)] = input(g.rank(), i);
      const std::vector<float> before = in;
      const int64_t start = block_start(rows, 3, g.rank()) * 3, n = block_count(rows, 3, g.rank()) * 3;
      std::vector<float> own(static_cast<size_t>(n) + 1, -1.0f);  // one past: untouched
      ASSERT_TRUE(g.reduce_scatter(reinterpret_cast<const char*>(in.data()), reinterpret_cast<char*>(own.data()), rows,
                                   row, FloatSum()).ok());
      ASSERT_EQ(in, before);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(own[static_cast<size_t>(i)], input(0, start + i) + input(1, start + i) + input(2, start + i));
      }
      ASSERT_EQ(own[static_cast<size_t>(n)], -1.0f);
      std::vector<float> out(static_cast<size_t>(count), -1.0f);
      ASSERT_TRUE(g.allgather(reinterpret_cast<const char*>(own.data()), reinterpret_cast<char*>(out.data()), rows,
                              row).ok());
      for (int64_t i = 0; i < count; ++i) ASSERT_EQ(out[static_cast<size_t>(i)], input(0, i) + input(1, i) + input(2, i));
    });
  }
}

TEST(ShmGroup, AnInterruptedWaitFailsAndTheGroupStaysBroken) {
  Policy policy;
  on_host(2, 4096, [&policy](ShmGroup& g) {
    if (g.rank() == 1) {
      // Never arrives; tells rank 0's wait to stop after a while.
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      policy.stop = true;
      return;
    }
    float x = 1;
    const auto start = std::chrono::steady_clock::now();
    Status s = g.allreduce(reinterpret_cast<char*>(&x), reinterpret_cast<char*>(&x), 1, sizeof(float), FloatSum());
    EXPECT_EQ(s.message(), "interrupted");
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
    policy.stop = false;
    s = g.allreduce(reinterpret_cast<char*>(&x), reinterpret_cast<char*>(&x), 1, sizeof(float), FloatSum());
    EXPECT_EQ(s.message(), "interrupted");
  }, &policy);
}

TEST(ShmGroup, ARankAsleepWaitingForAPeerIsWokenByItsRaiseNotByItsNapsEnd) {
  on_host(2, 4096, [](ShmGroup& g) {
    float x = static_cast<float>(g.rank() + 1);
    if (g.rank() == 1) {
      // Arrives only once rank 0 sleeps on its flag, in a nap of a minute.
      const std::atomic<uint32_t>& sleepers = ShmLayout(2, 4096).flags(g.segment().base(), 1)->sleepers[0];
      while (sleepers.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    } else {
      g.set_naps(std::chrono::minutes(1));
    }
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(g.allreduce(reinterpret_cast<char*>(&x), reinterpret_cast<char*>(&x), 1, sizeof(float), FloatSum(),
                            ShmPace::kControl).ok());
    EXPECT_EQ(x, 3.0f);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  });
}

TEST(ShmGroup, APeerWhoseProcessEndsFailsTheWaitNamingIt) {
  const ShmLayout layout(2, 4096);
  std::unique_ptr<SharedSegment> segment;
  ASSERT_TRUE(SharedSegment::create("/dev/shm", layout.bytes(), &segment).ok());
  const pid_t child = fork();
  if (child == 0) {
    // Local rank 1: maps the segment, says who it is, and dies without arriving.
    std::unique_ptr<SharedSegment> mine;
    if (!SharedSegment::attach(segment->path(), layout.bytes(), &mine).ok()) _exit(2);
    layout.flags(mine->base(), 1)->pid = getpid();
    _exit(0);
  }
  ASSERT_GT(child, 0);
  int status = 0;
  // Its pid is in the segment once it has exited; the watch opens on the pid before the reaping below
  // (a zombie's pidfd reads as ended, as a live one's would once it died).
  while (layout.flags(segment->base(), 1)->pid == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  Policy policy;
  ShmGroup group(std::move(segment), layout, 0, &policy);
  group.publish_pid();
  group.start_watching();
  float x = 1;
  const auto start = std::chrono::steady_clock::now();
  const Status s = group.allreduce(reinterpret_cast<char*>(&x), reinterpret_cast<char*>(&x), 1, sizeof(float), FloatSum());
  EXPECT_EQ(s.message(), "local rank 1 ended");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  ASSERT_EQ(waitpid(child, &status, 0), child);
}

TEST(SharedSegment, OrphanedSegmentsAreRemovedAndLiveOnesKept) {
  char dir[] = "/tmp/kolo-shm-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  ASSERT_EQ(waitpid(gone, nullptr, 0), gone);
  const std::string orphan = std::string(dir) + "/kolo-" + std::to_string(gone) + "-0";
  const std::string live = std::string(dir) + "/kolo-" + std::to_string(getpid()) + "-7";
  const std::string other = std::string(dir) + "/not-kolo-" + std::to_string(gone) + "-0";
  for (const std::string& p : {orphan, live, other}) std::ofstream(p) << "x";
  EXPECT_EQ(remove_orphaned_segments(dir), 1);
  EXPECT_NE(access(orphan.c_str(), F_OK), 0);
  EXPECT_EQ(access(live.c_str(), F_OK), 0);
  EXPECT_EQ(access(other.c_str(), F_OK), 0);
  for (const std::string& p : {live, other}) unlink(p.c_str());
  rmdir(dir);
}

TEST(SharedSegment, ADirectoryThatCannotHoldItFailsNamingIt) {
  std::unique_ptr<SharedSegment> segment;
  const Status s = SharedSegment::create("/nonexistent-kolo-dir", 4096, &segment);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("cannot create /nonexistent-kolo-dir/kolo-", 0), 0u) << s.message();
}

}  // namespace
}  // namespace kolo
