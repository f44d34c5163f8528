// kolorun's flags for kolo's settings come from the settings' table (src/settings/settings_table.cc): each
// is taken, sets its setting, and kolorun --help shows it with the setting's name.
#include <gtest/gtest.h>

#include <sstream>

#include "launch_options.h"
#include "setting_flags.h"

namespace kolo {
namespace launcher {
namespace {

TEST(KolorunSettingFlags, EveryFlagOfTheTableIsTakenAndInHelp) {
  for (const SettingSpec& s : settings_table()) {
    for (const SettingFlagSpec& f : s.flags) {
      if (f.flag == nullptr) continue;
      const SettingFlag* taken = find_setting_flag(f.flag);
      ASSERT_NE(taken, nullptr) << f.flag;
      EXPECT_EQ(std::string(taken->setting), s.name) << f.flag;
      EXPECT_EQ(taken->value, f.value) << f.flag;
      if (f.usage == nullptr) continue;
      const size_t at = usage().find("\n  " + std::string(f.usage) + " ");
      ASSERT_NE(at, std::string::npos) << "kolorun --help lacks " << f.usage;
      const std::string line = usage().substr(at + 1, usage().find('\n', at + 1) - at - 1);
      EXPECT_NE(line.find(s.name), std::string::npos) << line;
    }
  }
}

TEST(KolorunSettingFlags, HelpLinesWrapUnderTheirColumn) {
  std::istringstream lines(setting_flags_usage());
  std::string line, previous;
  while (std::getline(lines, line)) {
    EXPECT_LE(line.size(), 110u) << line;
    if (line.rfind("  --", 0) != 0) {
      EXPECT_EQ(line.find_first_not_of(' '), 36u) << "after: " << previous << "\n" << line;
    }
    previous = line;
  }
  EXPECT_NE(setting_flags_usage().find("  --fusion-threshold-mb N           KOLO_FUSION_THRESHOLD_BYTES, in MiB"),
            std::string::npos);
}

}  // namespace
}  // namespace launcher
}  // namespace kolo
