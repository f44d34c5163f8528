#include "settings/horovod_settings.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "settings/config.h"

namespace kolo {
namespace {

// Sets environment variables for one test and restores them after it.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::map<std::string, std::string>& vars) {
    for (const auto& kv : vars) {
      const char* old = std::getenv(kv.first.c_str());
      saved_.emplace_back(kv.first, old ? std::make_pair(true, std::string(old)) : std::make_pair(false, std::string()));
      setenv(kv.first.c_str(), kv.second.c_str(), 1);
    }
  }
  ~ScopedEnv() {
    for (const auto& s : saved_) {
      if (s.second.first) setenv(s.first.c_str(), s.second.second.c_str(), 1); else unsetenv(s.first.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::pair<bool, std::string>>> saved_;
};

Status from_environment(const std::map<std::string, std::string>& env, Config* c,
                        std::vector<std::string>* warnings = nullptr, const Settings& overrides = {}) {
  ScopedEnv scoped(env);
  std::vector<std::string> ignored;
  return config_from_environment(overrides, c, warnings ? warnings : &ignored);
}

TEST(HorovodSettings, EachAliasSetsItsKoloSetting) {
  Config c;
  ASSERT_TRUE(from_environment({{"HOROVOD_FUSION_THRESHOLD", "33554432"},
                                {"HOROVOD_CYCLE_TIME", "0.5"},
                                {"HOROVOD_CACHE_CAPACITY", "0"},
                                {"HOROVOD_TIMELINE", "/tmp/hvd_timeline.json"},
                                {"HOROVOD_TIMELINE_MARK_CYCLES", "1"},
                                {"HOROVOD_STALL_CHECK_TIME_SECONDS", "30"},
                                {"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "120"},
                                {"HOROVOD_HIERARCHICAL_ALLREDUCE", "0"},
                                {"HOROVOD_HIERARCHICAL_ALLGATHER", "1"},
                                {"HOROVOD_AUTOTUNE", "1"},
                                {"HOROVOD_AUTOTUNE_LOG", "/tmp/hvd_tune.csv"},
                                {"HOROVOD_AUTOTUNE_WARMUP_SAMPLES", "2"},
                                {"HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", "7"},
                                {"HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "15"},
                                {"HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "0.8"},
                                {"HOROVOD_LOG_LEVEL", "INFO"}},
                               &c)
                  .ok());
  EXPECT_EQ(c.fusion_threshold_bytes, 33554432);
  EXPECT_EQ(c.cycle_time_ms, 0.5);
  EXPECT_EQ(c.cache_capacity, 0);
  EXPECT_EQ(c.timeline_path, "/tmp/hvd_timeline.json");
  EXPECT_TRUE(c.timeline_mark_cycles);
  EXPECT_EQ(c.stall_check_seconds, 30.0);
  EXPECT_EQ(c.stall_shutdown_seconds, 120.0);
  EXPECT_FALSE(c.hierarchical_allreduce);
  EXPECT_TRUE(c.hierarchical_allgather);
  EXPECT_TRUE(c.autotune.enabled);
  EXPECT_EQ(c.autotune.log_path, "/tmp/hvd_tune.csv");
  EXPECT_EQ(c.autotune.warmup_samples, 2);
  EXPECT_EQ(c.autotune.steps_per_sample, 7);
  EXPECT_EQ(c.autotune.max_samples, 15);
  EXPECT_EQ(c.autotune.noise, 0.8);
  EXPECT_EQ(c.log_level, LogLevel::kInfo);
  // Given through an alias is given explicitly: autotune leaves them alone, as Horovod does.
  EXPECT_TRUE(c.autotune.fixed_fusion_threshold);
  EXPECT_TRUE(c.autotune.fixed_hierarchical);
  EXPECT_FALSE(c.autotune.fixed_segment);
}

TEST(HorovodSettings, FlagsReadAsHorovodReadsThem) {
  // Horovod: strtol(value) > 0. kolo's words are taken as well.
  for (const auto& v : std::vector<std::pair<std::string, bool>>{
           {"1", true}, {"2", true}, {"0", false}, {"-1", false}, {"true", true}, {"OFF", false}, {"", false}}) {
    Config c;
    ASSERT_TRUE(from_environment({{"HOROVOD_HIERARCHICAL_ALLGATHER", v.first}}, &c).ok()) << v.first;
    EXPECT_EQ(c.hierarchical_allgather, v.second) << v.first;
  }
}

TEST(HorovodSettings, ConversionsWhereHorovodsValuesDifferFromKolos) {
  Config c;
  // fatal is Horovod's quietest level; kolo's is error.
  ASSERT_TRUE(from_environment({{"HOROVOD_LOG_LEVEL", "fatal"}}, &c).ok());
  EXPECT_EQ(c.log_level, LogLevel::kError);
  // DYNAMIC: no file until start_timeline(), which is kolo's unset.
  ASSERT_TRUE(from_environment({{"HOROVOD_TIMELINE", "DYNAMIC"}}, &c).ok());
  EXPECT_EQ(c.timeline_path, "");
  // HOROVOD_STALL_CHECK_DISABLE on turns the check off, whatever the time says (Horovod's order).
  ASSERT_TRUE(from_environment({{"HOROVOD_STALL_CHECK_DISABLE", "1"}, {"HOROVOD_STALL_CHECK_TIME_SECONDS", "30"}}, &c)
                  .ok());
  EXPECT_EQ(c.stall_check_seconds, 0.0);
  EXPECT_FALSE(c.autotune.enabled);
  // Off, it leaves the time as given, or the default.
  ASSERT_TRUE(from_environment({{"HOROVOD_STALL_CHECK_DISABLE", "0"}, {"HOROVOD_STALL_CHECK_TIME_SECONDS", "30"}}, &c)
                  .ok());
  EXPECT_EQ(c.stall_check_seconds, 30.0);
  ASSERT_TRUE(from_environment({{"HOROVOD_STALL_CHECK_DISABLE", "0"}}, &c).ok());
  EXPECT_EQ(c.stall_check_seconds, 60.0);
}

TEST(HorovodSettings, AKoloSettingWinsWithOneWarningNamingBoth) {
  Config c;
  std::vector<std::string> warnings;
  ASSERT_TRUE(from_environment({{"HOROVOD_CYCLE_TIME", "5"}, {"KOLO_CYCLE_TIME_MS", "2"}}, &c, &warnings).ok());
  EXPECT_EQ(c.cycle_time_ms, 2.0);
  EXPECT_EQ(warnings,
            std::vector<std::string>{"KOLO_CYCLE_TIME_MS=2 and HOROVOD_CYCLE_TIME=5 are both set: kolo uses KOLO_CYCLE_TIME_MS"});
  // An override passed to init() is a KOLO_* setting too.
  ASSERT_TRUE(from_environment({{"HOROVOD_CACHE_CAPACITY", "5"}}, &c, &warnings, {{"KOLO_CACHE_CAPACITY", "9"}}).ok());
  EXPECT_EQ(c.cache_capacity, 9);
  EXPECT_EQ(warnings, std::vector<std::string>{
                          "KOLO_CACHE_CAPACITY=9 and HOROVOD_CACHE_CAPACITY=5 are both set: kolo uses KOLO_CACHE_CAPACITY"});
  // A bad Horovod value behind a KOLO_* one is never read.
  ASSERT_TRUE(from_environment({{"HOROVOD_FUSION_THRESHOLD", "64MB"}, {"KOLO_FUSION_THRESHOLD_BYTES", "1024"}}, &c).ok());
  EXPECT_EQ(c.fusion_threshold_bytes, 1024);
  // Nor is a bad flag or log level (read before the others once).
  ASSERT_TRUE(from_environment({{"HOROVOD_AUTOTUNE", "maybe"}, {"KOLO_AUTOTUNE", "1"}, {"HOROVOD_LOG_LEVEL", "loud"},
                                {"KOLO_LOG_LEVEL", "info"}, {"HOROVOD_STALL_CHECK_DISABLE", "yes please"},
                                {"KOLO_STALL_CHECK_SECONDS", "5"}},
                               &c)
                  .ok());
  EXPECT_TRUE(c.autotune.enabled);
  EXPECT_EQ(c.stall_check_seconds, 5.0);
}

TEST(HorovodSettings, BadValuesNameTheVariableAsWritten) {
  Config c;
  Status s = from_environment({{"HOROVOD_FUSION_THRESHOLD", "64MB"}}, &c);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "HOROVOD_FUSION_THRESHOLD='64MB' is not valid: expected a non-negative integer "
                         "(kolo reads it as KOLO_FUSION_THRESHOLD_BYTES).");
  s = from_environment({{"HOROVOD_CYCLE_TIME", "90000"}}, &c);
  EXPECT_EQ(s.message(), "HOROVOD_CYCLE_TIME='90000' is not valid: expected at most 60000 (one minute) "
                         "(kolo reads it as KOLO_CYCLE_TIME_MS).");
  s = from_environment({{"HOROVOD_AUTOTUNE", "maybe"}}, &c);
  EXPECT_EQ(s.message(), "HOROVOD_AUTOTUNE='maybe' is not valid: expected 1 or 0 (kolo reads it as KOLO_AUTOTUNE).");
  s = from_environment({{"HOROVOD_STALL_CHECK_DISABLE", "yes please"}}, &c);
  EXPECT_EQ(s.message(), "HOROVOD_STALL_CHECK_DISABLE='yes please' is not valid: expected 1 or 0 "
                         "(kolo reads it as KOLO_STALL_CHECK_SECONDS).");
  s = from_environment({{"HOROVOD_LOG_LEVEL", "loud"}}, &c);
  EXPECT_EQ(s.message(), "HOROVOD_LOG_LEVEL='loud' is not valid: expected one of trace, debug, info, warning, error, "
                         "fatal (kolo reads it as KOLO_LOG_LEVEL).");
  s = from_environment({{"HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", "0"}}, &c);
  EXPECT_EQ(s.message(), "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE='0' is not valid: expected an integer from 1 to 100000 "
                         "(kolo reads it as KOLO_AUTOTUNE_STEPS_PER_SAMPLE).");
}

TEST(HorovodSettings, NamesWithNoMeaningAreWarnedAboutUnlessTheyAskForWhatKoloDoes) {
  Config c;
  std::vector<std::string> warnings;
  ASSERT_TRUE(from_environment({{"HOROVOD_GPU_OPERATIONS", "NCCL"},
                                {"HOROVOD_CPU_OPERATIONS", "gloo"},
                                {"HOROVOD_CONTROLLER", "mpi"},
                                {"HOROVOD_DYNAMIC_PROCESS_SETS", "1"},
                                {"HOROVOD_LOG_HIDE_TIME", "1"},
                                {"HOROVOD_TORUS_ALLREDUCE", "1"},
                                {"HOROVOD_THREAD_AFFINITY", "0,1"},
                                {"HOROVOD_WITH_PYTORCH", "1"},
                                {"HOROVOD_NCCL_HOME", "/usr/local/nccl"},
                                {"HOROVOD_FUSION_TRESHOLD", "1"}},
                               &c, &warnings)
                  .ok());
  EXPECT_EQ(warnings, (std::vector<std::string>{
                          "HOROVOD_CPU_OPERATIONS=gloo has no meaning in kolo, ignored: kolo runs CPU collectives on MPI",
                          "HOROVOD_FUSION_TRESHOLD is set but is not a Horovod setting that kolo knows: ignored",
                          "HOROVOD_THREAD_AFFINITY=0,1 has no meaning in kolo, ignored: kolo pins no thread to a core; "
                          "KOLO_THREAD_NICE lowers its threads' priority instead",
                          "HOROVOD_TORUS_ALLREDUCE=1 has no meaning in kolo, ignored: kolo has no torus allreduce",
                          "HOROVOD_NCCL_HOME, HOROVOD_WITH_PYTORCH are Horovod build settings (read by pip install, not "
                          "when a job runs): ignored"}));
  // None of them changed a setting.
  EXPECT_EQ(c.fusion_threshold_bytes, 64 << 20);
}

TEST(HorovodSettings, EveryAliasNamesAKoloSettingAndNoNameComesTwice) {
  std::set<std::string> kolo_names, seen;
  for (const SettingSpec& s : settings_table()) kolo_names.insert(s.name);
  for (const HorovodSetting& h : horovod_settings()) {
    EXPECT_TRUE(seen.insert(h.name).second) << h.name << " is listed twice";
    EXPECT_EQ(std::string(h.name).rfind("HOROVOD_", 0), 0u) << h.name;
    if (h.kolo_setting != nullptr) {
      EXPECT_TRUE(kolo_names.count(h.kolo_setting)) << h.name << " -> " << h.kolo_setting;
    }
  }
}

// docs/migrating-from-horovod.md's tables list every name: an alias with its KOLO_* setting, the others by name.
TEST(HorovodSettings, DocsListEveryName) {
  std::ifstream page(KOLO_SOURCE_DIR "/docs/migrating-from-horovod.md");
  ASSERT_TRUE(page.good());
  std::stringstream text;
  text << page.rdbuf();
  for (const HorovodSetting& h : horovod_settings()) {
    const std::string row = h.kolo_setting != nullptr
                                ? std::string("| `") + h.name + "` | `" + h.kolo_setting + "` |"
                                : h.kind == HorovodSetting::kBuildSetting ? std::string("`") + h.name + "`"
                                                                          : std::string("| `") + h.name + "` |";
    EXPECT_NE(text.str().find(row), std::string::npos) << "docs/migrating-from-horovod.md lacks: " << row;
  }
}

}  // namespace
}  // namespace kolo
