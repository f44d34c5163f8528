// KOLO_AUTOTUNE on a live job: while the tuner moves the fusion threshold and the segment and zero-copy
// sizes between samples (every rank at the same cycle), every step's results stay exact, a blocking
// small op keeps running on the caller's thread through the decisions, and rank 0's log ends with the
// settings kept.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "mpi_test_util.h"

namespace kolo {
namespace {

using testing::Buffer;
using testing::ScopedSettings;

// One training-like step: tensors from 1 KiB to 3 MiB reduced asynchronously (fused as the settings say),
// a broadcast, and a blocking scalar; each exact.
void step(int n) {
  const std::vector<int64_t> sizes = {256, 25600, 262144, 786432};
  std::vector<Buffer> buffers;
  std::vector<Handle> handles;
  buffers.reserve(sizes.size());
  for (size_t t = 0; t < sizes.size(); ++t) {
    buffers.emplace_back(DataType::kFloat32, std::vector<int64_t>{sizes[t]});
    Buffer& b = buffers.back();
    for (size_t i = 0; i < b.size(); ++i) b.set(i, (rank() + 1) * ((i + t + n) % 7));
    AllreduceOptions o;
    o.op = ReduceOp::kSum;
    handles.push_back(allreduce_async("tune.grad." + std::to_string(t), b.view(), b.view(), o));
  }
  Buffer w(DataType::kInt32, {1000});
  for (size_t i = 0; i < w.size(); ++i) w.set(i, rank() == 0 ? static_cast<double>(i + n) : -1.0);
  ASSERT_TRUE(broadcast("tune.weights", w.view(), w.view(), 0).ok());
  for (size_t i = 0; i < w.size(); ++i) ASSERT_EQ(w.get(i), static_cast<double>(i + n));
  Buffer loss(DataType::kFloat32, {1});
  loss.set(0, rank() + 1.0);
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  ASSERT_TRUE(allreduce("tune.loss", loss.view(), loss.view(), sum).ok());
  ASSERT_EQ(loss.get(0), size() * (size() + 1) / 2.0);
  const double ranks_sum = size() * (size() + 1) / 2.0;
  for (size_t t = 0; t < sizes.size(); ++t) {
    ASSERT_TRUE(wait(handles[t]).ok()) << "step " << n << " tensor " << t;
    for (size_t i = 0; i < buffers[t].size(); ++i) {
      ASSERT_EQ(buffers[t].get(i), ranks_sum * ((i + t + n) % 7)) << "step " << n << " tensor " << t << " at " << i;
    }
  }
}

// Runs `steps` steps under KOLO_AUTOTUNE with samples of one step and `settings` besides; rank 0's log
// (empty on the other ranks).
std::vector<std::string> tune(int steps, const Settings& settings) {
  const std::string log = ::testing::TempDir() + "kolo_autotune_" + std::to_string(getpid()) + ".csv";
  Settings all = {{"KOLO_AUTOTUNE", "1"}, {"KOLO_AUTOTUNE_LOG", log}, {"KOLO_AUTOTUNE_STEPS_PER_SAMPLE", "1"}};
  all.insert(settings.begin(), settings.end());
  {
    ScopedSettings scoped(all);
    for (int n = 0; n < steps && !::testing::Test::HasFatalFailure(); ++n) step(n);
  }
  std::vector<std::string> lines;
  if (rank() == 0) {
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    std::remove(log.c_str());
  }
  return lines;
}

TEST(Autotune, ResultsStayExactWhileTheSettingsChangeAndTheBestIsKept) {
  // A sample takes 2 steps (the first boundary after a decision starts it): 1 + 6 + 3 (the best measured
  // again) samples, then steps at the settings kept.
  const std::vector<std::string> lines =
      tune(26, {{"KOLO_AUTOTUNE_WARMUP_SAMPLES", "1"}, {"KOLO_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "6"}});
  if (rank() != 0 || HasFatalFailure()) return;
  ASSERT_EQ(lines.size(), 1u + 1 + 6 + 3 + 1) << "header, warm-up, samples, the best again, kept";
  EXPECT_EQ(lines[1].substr(0, 9), "0,warmup,");
  EXPECT_EQ(lines[7].substr(0, 9), "6,sample,");
  EXPECT_EQ(lines[8].substr(0, 10), "7,confirm,");
  EXPECT_EQ(lines[11].substr(0, 8), "10,kept,");
}

TEST(Autotune, ASettingGivenExplicitlyIsNotTuned) {
  const std::vector<std::string> lines = tune(18, {{"KOLO_AUTOTUNE_WARMUP_SAMPLES", "0"},
                                                   {"KOLO_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "4"},
                                                   {"KOLO_FUSION_THRESHOLD_BYTES", "2097152"}});
  if (rank() != 0 || HasFatalFailure()) return;
  ASSERT_EQ(lines.size(), 1u + 4 + 3 + 1);
  for (size_t i = 1; i < lines.size(); ++i) EXPECT_NE(lines[i].find(",2097152,"), std::string::npos) << lines[i];
}

}  // namespace
}  // namespace kolo
