// KOLO_AUTOTUNE's tuner (engine/tuning/autotuner.h) driven as two ranks would drive it: samples end at
// the same agreed op on every rank whatever their clocks, rank 0's decision is what every rank applies,
// and on a synthetic job whose step time depends on the settings it keeps a setting close to the best
// within its bounded number of samples.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "engine/tuning/autotuner.h"

namespace kolo {
namespace {

Response op(const std::string& name, int64_t elements) {
  Response r;
  r.name = name;
  r.dtype = DataType::kFloat32;
  r.shape = {elements};
  return r;
}

Config::Autotune options(int64_t warmup, int64_t steps, int64_t max_samples) {
  Config::Autotune a;
  a.enabled = true;
  a.warmup_samples = warmup;
  a.steps_per_sample = steps;
  a.max_samples = max_samples;
  return a;
}

const TunedSettings kStart{64ll << 20, 4ll << 20, 256ll << 10, false};

// Feeds one step (ops a, b, c of 1 Mi floats: 12 MiB) at `now` to each tuner; how many ended a sample.
int feed_step(std::vector<Autotuner*> tuners, double now) {
  int ended = 0;
  for (Autotuner* t : tuners) {
    for (const char* name : {"a", "b", "c"}) t->observe(op(name, 1 << 20), now);
    ended += t->sample_ended() ? 1 : 0;
  }
  return ended;
}

TEST(Autotune, ASampleEndsAtTheSameOpOnEveryRankWhateverTheirClocks) {
  Autotuner rank0(options(1, 2, 4), kStart, false, 0), rank1(options(1, 2, 4), kStart, false, 1);
  // Step 1 has no boundary before it; step 2's first op starts the measurement; steps 3 and 4 end it.
  std::vector<int> ended;
  for (int step = 1; step <= 4; ++step) {
    for (const char* name : {"a", "b", "c"}) {
      rank0.observe(op(name, 1 << 20), step * 1.0);
      rank1.observe(op(name, 1 << 20), step * 7.5);  // another clock
      ASSERT_EQ(rank0.sample_ended(), rank1.sample_ended()) << "step " << step << " op " << name;
      if (rank0.sample_ended()) ended.push_back(step);
    }
  }
  EXPECT_EQ(ended, (std::vector<int>{4, 4, 4}));  // from step 4's first op on
}

TEST(Autotune, RankZerosDecisionIsWhatEveryRankApplies) {
  Autotuner rank0(options(0, 1, 5), kStart, true, 0), rank1(options(0, 1, 5), kStart, true, 1);
  std::vector<TunedSettings> applied0, applied1;
  double now = 0;
  // 5 samples, then the best 3 measured again.
  for (int sample = 0; sample < 8; ++sample) {
    ASSERT_FALSE(rank0.done());
    while (feed_step({&rank0, &rank1}, now += 0.1) == 0) {
    }
    const std::string decision = rank0.decide();
    ASSERT_TRUE(rank0.adopt(decision).ok());
    ASSERT_TRUE(rank1.adopt(decision).ok());
    TunedSettings a, b;
    if (rank0.take_change(&a)) applied0.push_back(a);
    if (rank1.take_change(&b)) applied1.push_back(b);
    EXPECT_FALSE(rank0.take_change(&a));  // once per decision
  }
  EXPECT_TRUE(rank0.done());
  EXPECT_TRUE(rank1.done());
  ASSERT_EQ(applied0.size(), applied1.size());
  ASSERT_FALSE(applied0.empty());
  for (size_t i = 0; i < applied0.size(); ++i) EXPECT_EQ(applied0[i].describe(), applied1[i].describe());
  EXPECT_FALSE(rank1.adopt("not a decision").ok());
}

// A job whose step time depends on the settings as a real one might: fusion best near 16 MiB,
// segments best near 2 MiB, zero copy best from 1 MiB, hierarchical 10% faster.
double step_seconds(const TunedSettings& s) {
  auto bowl = [](int64_t v, double best_log2, double weight) {
    const double d = std::log2(static_cast<double>(v)) - best_log2;
    return weight * d * d;
  };
  const double t = 0.1 + bowl(s.fusion_threshold_bytes, 24, 0.004) + bowl(s.segment_bytes, 21, 0.003) +
                   bowl(s.zero_copy_bytes, 20, 0.002);
  return s.hierarchical_allreduce ? t * 0.9 : t;
}

TunedSettings tune_synthetic(Config::Autotune o, bool hierarchy, const std::string& log_path = "") {
  o.log_path = log_path;
  Autotuner rank0(o, kStart, hierarchy, 0), rank1(o, kStart, hierarchy, 1);
  double now = 0;
  int samples = 0;
  while (!rank0.done()) {
    // Deterministic jitter of +-1% keeps the optimiser honest about noise.
    const double jitter = 1.0 + 0.01 * std::sin(samples * 12.9898);
    while (feed_step({&rank0, &rank1}, now += step_seconds(rank0.current()) * jitter) == 0) {
    }
    const std::string decision = rank0.decide();
    EXPECT_TRUE(rank0.adopt(decision).ok());
    EXPECT_TRUE(rank1.adopt(decision).ok());
    TunedSettings ignored;
    rank0.take_change(&ignored);
    EXPECT_LE(++samples, o.warmup_samples + o.max_samples + 3) << "the search is bounded";
  }
  EXPECT_EQ(samples, o.warmup_samples + o.max_samples + 3);  // the best 3 measured again
  EXPECT_TRUE(rank1.done());
  EXPECT_EQ(rank0.current().describe(), rank1.current().describe());
  return rank0.current();
}

double grid_best(bool hierarchy) {
  double best = 1e9;
  for (int f = 20; f <= 28; ++f) {
    for (int g = 18; g <= 26; ++g) {
      for (int z = 16; z <= 26; ++z) {
        for (int h = 0; h <= (hierarchy ? 1 : 0); ++h) {
          best = std::min(best, step_seconds(TunedSettings{1ll << f, 1ll << g, 1ll << z, h == 1}));
        }
      }
    }
  }
  return best;
}

TEST(Autotune, KeepsASettingWithinFivePercentOfTheGridsBestInItsSampleBudget) {
  const TunedSettings kept = tune_synthetic(options(2, 3, 20), false);
  EXPECT_LE(step_seconds(kept), grid_best(false) * 1.05) << kept.describe();
  EXPECT_LT(step_seconds(kept), step_seconds(kStart));
}

TEST(Autotune, ChoosesHierarchicalAllreduceWhereItIsFaster) {
  const TunedSettings kept = tune_synthetic(options(1, 2, 24), true);
  EXPECT_TRUE(kept.hierarchical_allreduce) << kept.describe();
  EXPECT_LE(step_seconds(kept), grid_best(true) * 1.05) << kept.describe();
}

TEST(Autotune, ASettingGivenExplicitlyStaysFixed) {
  Config::Autotune o = options(0, 1, 8);
  o.fixed_fusion_threshold = true;
  o.fixed_zero_copy = true;
  const TunedSettings kept = tune_synthetic(o, false);
  EXPECT_EQ(kept.fusion_threshold_bytes, kStart.fusion_threshold_bytes);
  EXPECT_EQ(kept.zero_copy_bytes, kStart.zero_copy_bytes);
  EXPECT_NE(kept.segment_bytes, kStart.segment_bytes);  // 4 MiB is not the best segment here
}

TEST(Autotune, WithEverySettingFixedThereIsNothingToTune) {
  Config::Autotune o = options(3, 10, 20);
  o.fixed_fusion_threshold = o.fixed_segment = o.fixed_zero_copy = true;
  Autotuner t(o, kStart, false, 0);
  EXPECT_TRUE(t.done());
  for (int step = 0; step < 50; ++step) feed_step({&t}, step);
  EXPECT_FALSE(t.sample_ended());
}

TEST(Autotune, TheLogHasEverySampleAndTheSettingsKept) {
  const std::string path = ::testing::TempDir() + "kolo_autotune_log.csv";
  const TunedSettings kept = tune_synthetic(options(2, 1, 6), false, path);
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 1u + 2 + 6 + 3 + 1);
  EXPECT_EQ(lines[0],
            "sample,phase,fusion_threshold_bytes,segment_bytes,zero_copy_bytes,hierarchical_allreduce,steps,bytes,"
            "seconds,score_bytes_per_second");
  EXPECT_EQ(lines[1].substr(0, 9), "0,warmup,");
  EXPECT_EQ(lines[3].substr(0, 9), "2,sample,");
  // The first scored sample is the starting setting.
  EXPECT_EQ(lines[3].substr(9, 28), "67108864,4194304,262144,0,1,");
  EXPECT_EQ(lines[9].substr(0, 10), "8,confirm,");
  EXPECT_EQ(lines[11].substr(0, 11), "10,confirm,");
  const std::string kept_row = "11,kept," + std::to_string(kept.fusion_threshold_bytes) + "," +
                               std::to_string(kept.segment_bytes) + "," + std::to_string(kept.zero_copy_bytes) + ",0,";
  EXPECT_EQ(lines[12].substr(0, kept_row.size()), kept_row);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace kolo
