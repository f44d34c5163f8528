#include <gtest/gtest.h>

#include <map>
#include <set>

#include "settings/config.h"

namespace kolo {
namespace {

Status parse(const std::map<std::string, std::string>& env, Config* c) {
  return parse_config(
      [&env](const std::string& name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      c);
}

TEST(Config, Defaults) {
  Config c;
  ASSERT_TRUE(parse({}, &c).ok());
  EXPECT_EQ(c.cycle_time_ms, 1.0);
  EXPECT_EQ(c.fusion_threshold_bytes, 64 << 20);
  EXPECT_EQ(c.cache_capacity, 1024);
  EXPECT_EQ(c.timeline_path, "");
  EXPECT_EQ(c.stall_check_seconds, 60.0);
  EXPECT_EQ(c.stall_shutdown_seconds, 0.0);
  EXPECT_EQ(c.log_level, LogLevel::kWarning);
  EXPECT_EQ(c.segment_bytes, Config::kAuto);
  EXPECT_EQ(c.zero_copy_bytes, Config::kAuto);
  EXPECT_EQ(c.thread_nice, 0);
  EXPECT_FALSE(c.join_average_over_contributors);
}

TEST(Config, AutotuneReadsItsSettingsAndWhatWasFixed) {
  Config c;
  ASSERT_TRUE(parse({}, &c).ok());
  EXPECT_FALSE(c.autotune.enabled);
  EXPECT_EQ(c.autotune.warmup_samples, 3);
  EXPECT_EQ(c.autotune.steps_per_sample, 10);
  EXPECT_EQ(c.autotune.max_samples, 20);
  EXPECT_EQ(c.autotune.noise, 0.5);
  EXPECT_FALSE(c.autotune.fixed_fusion_threshold || c.autotune.fixed_segment || c.autotune.fixed_zero_copy ||
               c.autotune.fixed_hierarchical);
  ASSERT_TRUE(parse({{"KOLO_AUTOTUNE", "1"},
                     {"KOLO_AUTOTUNE_LOG", "/tmp/tune.csv"},
                     {"KOLO_AUTOTUNE_WARMUP_SAMPLES", "0"},
                     {"KOLO_AUTOTUNE_STEPS_PER_SAMPLE", "4"},
                     {"KOLO_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "12"},
                     {"KOLO_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "0.5"},
                     {"KOLO_SEGMENT_BYTES", "0"},
                     {"KOLO_HIERARCHICAL_ALLREDUCE", "0"}},
                    &c)
                  .ok());
  EXPECT_TRUE(c.autotune.enabled);
  EXPECT_EQ(c.autotune.log_path, "/tmp/tune.csv");
  EXPECT_EQ(c.autotune.warmup_samples, 0);
  EXPECT_EQ(c.autotune.steps_per_sample, 4);
  EXPECT_EQ(c.autotune.max_samples, 12);
  EXPECT_EQ(c.autotune.noise, 0.5);
  EXPECT_FALSE(c.autotune.fixed_fusion_threshold);
  EXPECT_TRUE(c.autotune.fixed_segment);
  EXPECT_FALSE(c.autotune.fixed_zero_copy);
  EXPECT_TRUE(c.autotune.fixed_hierarchical);
  Status s = parse({{"KOLO_AUTOTUNE_STEPS_PER_SAMPLE", "0"}}, &c);
  EXPECT_EQ(s.message(), "KOLO_AUTOTUNE_STEPS_PER_SAMPLE='0' is not valid: expected an integer from 1 to 100000.");
  s = parse({{"KOLO_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "0"}}, &c);
  EXPECT_EQ(s.message(), "KOLO_AUTOTUNE_GAUSSIAN_PROCESS_NOISE='0' is not valid: expected a number above 0, at most 10.");
}

Topology layout(int hosts, int ranks_per_host, bool homogeneous = true) {
  Topology t;
  t.rank = 0;
  t.size = hosts * ranks_per_host;
  t.local_rank = 0;
  t.local_size = ranks_per_host;
  t.cross_rank = 0;
  t.cross_size = hosts;
  t.homogeneous = homogeneous;
  return t;
}

TEST(Config, LayoutDefaultsDependOnWhetherTheJobSpansHosts) {
  Config one_host, hosts, one_per_host, uneven;
  resolve_layout_defaults(layout(1, 4), &one_host);
  EXPECT_FALSE(one_host.hierarchical_allreduce);
  EXPECT_EQ(one_host.segment_bytes, 4 << 20);
  EXPECT_EQ(one_host.zero_copy_bytes, 256 << 10);
  // Across hosts with as many ranks on each: hierarchical, in 4 MiB segments; one rank a host too
  // (nothing to reduce inside it, kolo's pipelined crossing all the same).
  resolve_layout_defaults(layout(2, 2), &hosts);
  EXPECT_TRUE(hosts.hierarchical_allreduce);
  EXPECT_EQ(hosts.segment_bytes, 4 << 20);
  EXPECT_EQ(hosts.zero_copy_bytes, 8 << 20);
  resolve_layout_defaults(layout(3, 1), &one_per_host);
  EXPECT_TRUE(one_per_host.hierarchical_allreduce);
  EXPECT_EQ(one_per_host.segment_bytes, 4 << 20);
  EXPECT_EQ(one_per_host.zero_copy_bytes, 8 << 20);
  // Flat across hosts of unequal ranks, which hierarchical cannot split alike.
  resolve_layout_defaults(layout(2, 3, false), &uneven);
  EXPECT_FALSE(uneven.hierarchical_allreduce);
  EXPECT_EQ(uneven.segment_bytes, 32 << 20);
}

TEST(Config, LayoutDefaultsLeaveWhatTheUserSet) {
  Config set;
  ASSERT_TRUE(parse({{"KOLO_HIERARCHICAL_ALLREDUCE", "0"}, {"KOLO_ZERO_COPY_BYTES", "1024"}}, &set).ok());
  resolve_layout_defaults(layout(2, 2), &set);
  EXPECT_FALSE(set.hierarchical_allreduce);
  EXPECT_EQ(set.segment_bytes, 32 << 20);  // flat across hosts
  EXPECT_EQ(set.zero_copy_bytes, 1024);
  Config on_one_host;
  ASSERT_TRUE(parse({{"KOLO_HIERARCHICAL_ALLREDUCE", "1"}, {"KOLO_SEGMENT_BYTES", "0"}}, &on_one_host).ok());
  resolve_layout_defaults(layout(1, 2), &on_one_host);
  EXPECT_TRUE(on_one_host.hierarchical_allreduce);
  EXPECT_EQ(on_one_host.segment_bytes, 0);
}

TEST(Config, AutoWrittenOutIsTheSameAsUnset) {
  Config written;
  ASSERT_TRUE(parse({{"KOLO_HIERARCHICAL_ALLREDUCE", "auto"}, {"KOLO_SEGMENT_BYTES", "AUTO"},
                     {"KOLO_ZERO_COPY_BYTES", "auto"}, {"KOLO_SHARED_MEMORY_SLOT_BYTES", "Auto"},
                     {"KOLO_AUTOTUNE", "1"}},
                    &written)
                  .ok());
  // Open to autotune, as unset ones are, and decided by the layout.
  EXPECT_FALSE(written.autotune.fixed_hierarchical);
  EXPECT_FALSE(written.autotune.fixed_segment);
  EXPECT_FALSE(written.autotune.fixed_zero_copy);
  EXPECT_EQ(written.shared_memory_slot_bytes, Config::kAuto);
  resolve_layout_defaults(layout(2, 2), &written);
  EXPECT_TRUE(written.hierarchical_allreduce);
  EXPECT_EQ(written.segment_bytes, 4 << 20);
  EXPECT_EQ(written.zero_copy_bytes, 8 << 20);
  // Only those settings take it.
  Config c;
  const Status s = parse({{"KOLO_FUSION_THRESHOLD_BYTES", "auto"}}, &c);
  EXPECT_EQ(s.message(), "KOLO_FUSION_THRESHOLD_BYTES='auto' is not valid: expected a non-negative integer.");
}

TEST(Config, ReadsEveryValue) {
  Config c;
  ASSERT_TRUE(parse({{"KOLO_CYCLE_TIME_MS", "2.5"},
                     {"KOLO_FUSION_THRESHOLD_BYTES", "0"},
                     {"KOLO_CACHE_CAPACITY", "7"},
                     {"KOLO_TIMELINE", "/tmp/t.json"},
                     {"KOLO_STALL_CHECK_SECONDS", "3"},
                     {"KOLO_STALL_SHUTDOWN_SECONDS", "9.5"},
                     {"KOLO_LOG_LEVEL", "DEBUG"},
                     {"KOLO_SEGMENT_BYTES", "1024"},
                     {"KOLO_ZERO_COPY_BYTES", "0"},
                     {"KOLO_JOIN_AVERAGE", "contributors"},
                     {"KOLO_THREAD_NICE", "19"}},
                    &c)
                  .ok());
  EXPECT_EQ(c.cycle_time_ms, 2.5);
  EXPECT_EQ(c.fusion_threshold_bytes, 0);
  EXPECT_EQ(c.cache_capacity, 7);
  EXPECT_EQ(c.timeline_path, "/tmp/t.json");
  EXPECT_EQ(c.stall_check_seconds, 3.0);
  EXPECT_EQ(c.stall_shutdown_seconds, 9.5);
  EXPECT_EQ(c.log_level, LogLevel::kDebug);
  EXPECT_EQ(c.segment_bytes, 1024);
  EXPECT_EQ(c.zero_copy_bytes, 0);
  EXPECT_TRUE(c.join_average_over_contributors);
  EXPECT_EQ(c.thread_nice, 19);
}

TEST(Config, InvalidValuesNameTheVariable) {
  Config c;
  Status s = parse({{"KOLO_FUSION_THRESHOLD_BYTES", "64MB"}}, &c);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "KOLO_FUSION_THRESHOLD_BYTES='64MB' is not valid: expected a non-negative integer.");
  s = parse({{"KOLO_CYCLE_TIME_MS", "-1"}}, &c);
  EXPECT_EQ(s.message(), "KOLO_CYCLE_TIME_MS='-1' is not valid: expected a non-negative number.");
  s = parse({{"KOLO_LOG_LEVEL", "loud"}}, &c);
  EXPECT_EQ(s.message(),
            "KOLO_LOG_LEVEL='loud' is not valid: expected one of trace, debug, info, warning, error.");
  s = parse({{"KOLO_CACHE_CAPACITY", ""}}, &c);
  EXPECT_EQ(s.message(), "KOLO_CACHE_CAPACITY='' is not valid: expected a non-negative integer.");
  s = parse({{"KOLO_JOIN_AVERAGE", "ranks"}}, &c);
  EXPECT_EQ(s.message(), "KOLO_JOIN_AVERAGE='ranks' is not valid: expected one of size contributors.");
  s = parse({{"KOLO_SEGMENT_BYTES", "2147483648"}}, &c);
  EXPECT_EQ(s.message(), "KOLO_SEGMENT_BYTES='2147483648' is not valid: expected at most 1073741824 (1 GiB).");
  s = parse({{"KOLO_THREAD_NICE", "20"}}, &c);
  EXPECT_EQ(s.message(), "KOLO_THREAD_NICE='20' is not valid: expected an integer from 0 to 19.");
  s = parse({{"KOLO_THREAD_NICE", "-5"}}, &c);
  EXPECT_EQ(s.message(), "KOLO_THREAD_NICE='-5' is not valid: expected a non-negative integer.");
}

TEST(Config, OverridesWinAndUnknownOverridesAreErrors) {
  Config c;
  std::vector<std::string> unknown;
  ASSERT_TRUE(config_from_environment({{"KOLO_CACHE_CAPACITY", "3"}}, &c, &unknown).ok());
  EXPECT_EQ(c.cache_capacity, 3);
  Status s = config_from_environment({{"KOLO_FUSION_THRESHOLD", "1"}}, &c, &unknown);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "'KOLO_FUSION_THRESHOLD' is not a kolo setting; the settings are listed in docs/configuration.md (KOLO_*)");
}

TEST(Config, UnknownEnvironmentNamesAreReported) {
  setenv("KOLO_FUSION_TRESHOLD_BYTES", "1", 1);
  setenv("KOLO_NCCL_LIBRARY", "/opt/nccl/lib/libnccl.so.2", 1);  // read by the GPU path: no warning
  Config c;
  std::vector<std::string> warnings;
  ASSERT_TRUE(config_from_environment({}, &c, &warnings).ok());
  unsetenv("KOLO_FUSION_TRESHOLD_BYTES");
  unsetenv("KOLO_NCCL_LIBRARY");
  EXPECT_EQ(warnings, std::vector<std::string>{
                          "KOLO_FUSION_TRESHOLD_BYTES is set but is not a kolo setting (see the KOLO_* table in docs/configuration.md)"});
}

// Config's member defaults (Config{} is used unparsed too) are the table's.
TEST(Config, MemberDefaultsAreTheTables) {
  const Status s = check_config_defaults();
  EXPECT_TRUE(s.ok()) << s.message();
}

// Every row of the table is read into a field, and limits are the table's.
TEST(Config, EveryRowOfTheTableIsRead) {
  std::set<std::string> asked;
  Config c;
  ASSERT_TRUE(parse_config([&asked](const std::string& name) -> const char* {
                asked.insert(name);
                return nullptr;
              }, &c).ok());
  for (const SettingSpec& s : settings_table()) EXPECT_TRUE(asked.count(s.name)) << s.name << " is never read";
  const Status s = parse({{"KOLO_SHARED_MEMORY_SLOT_BYTES", "4100"}}, &c);
  EXPECT_EQ(s.message(), "KOLO_SHARED_MEMORY_SLOT_BYTES='4100' is not valid: expected a multiple of 64 from 4096 to "
                         "67108864.");
  EXPECT_EQ(parse({{"KOLO_SHARED_MEMORY_DIR", ""}}, &c).message(),
            "KOLO_SHARED_MEMORY_DIR='' is not valid: expected a directory.");
}

}  // namespace
}  // namespace kolo
