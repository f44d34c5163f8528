#include "setting_flags.h"

#include <cmath>
#include <iterator>
#include <sstream>
#include <vector>

#include "option_values.h"

namespace kolo {
namespace launcher {
namespace {

// horovodrun's options for what kolo does not have: the ranks get the Horovod variable, and rank 0
// says, once, that it means nothing in kolo (src/settings/horovod_settings.cc), or stays silent where
// the value asks for what kolo does anyway.
const SettingFlag kHorovodOnlyFlags[] = {
    {"--torus-allreduce", "HOROVOD_TORUS_ALLREDUCE", FlagValue::kFixed, 1.0, "1"},
    {"--no-torus-allreduce", "HOROVOD_TORUS_ALLREDUCE", FlagValue::kFixed, 1.0, "0"},
    {"--mpi-threads-disable", "HOROVOD_MPI_THREADS_DISABLE", FlagValue::kFixed, 1.0, "1"},
    {"--no-mpi-threads-disable", "HOROVOD_MPI_THREADS_DISABLE", FlagValue::kFixed, 1.0, "0"},
    {"--num-nccl-streams", "HOROVOD_NUM_NCCL_STREAMS", FlagValue::kInteger},
    {"--thread-affinity", "HOROVOD_THREAD_AFFINITY", FlagValue::kInteger},
    {"--log-with-timestamp", "HOROVOD_LOG_HIDE_TIME", FlagValue::kFixed, 1.0, "0"},
    {"--no-log-hide-timestamp", "HOROVOD_LOG_HIDE_TIME", FlagValue::kFixed, 1.0, "0"},
    {"--log-without-timestamp", "HOROVOD_LOG_HIDE_TIME", FlagValue::kFixed, 1.0, "1"},
    {"--log-hide-timestamp", "HOROVOD_LOG_HIDE_TIME", FlagValue::kFixed, 1.0, "1"},
};

std::vector<SettingFlag> all_setting_flags() {
  std::vector<SettingFlag> all;
  for (const SettingSpec& s : settings_table()) {
    for (const SettingFlagSpec& f : s.flags) {
      if (f.flag != nullptr) all.push_back({f.flag, s.name, f.value, f.scale, f.fixed});
    }
  }
  all.insert(all.end(), std::begin(kHorovodOnlyFlags), std::end(kHorovodOnlyFlags));
  return all;
}

// kolorun --help's line: `head` (the flag) in a column of 36, then `text` broken at blanks into lines of at
// most 110, the lines after the first indented to that column.
std::string usage_line(const std::string& head, const std::string& text) {
  const size_t column = 36, width = 110;
  std::string line = head + std::string(head.size() + 2 <= column ? column - head.size() : 2, ' ');
  std::string out;
  bool fresh = true;  // no word on `line` yet
  std::istringstream words(text);
  std::string word;
  while (words >> word) {
    if (!fresh && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line = std::string(column, ' ');
      fresh = true;
    }
    line += (fresh ? "" : " ") + word;
    fresh = false;
  }
  return out + line + "\n";
}

}  // namespace

const SettingFlag* find_setting_flag(const std::string& flag) {
  static const std::vector<SettingFlag> flags = all_setting_flags();
  for (const SettingFlag& f : flags) {
    if (flag == f.flag) return &f;
  }
  return nullptr;
}

bool setting_value(const SettingFlag& f, const std::string& text, std::string* value, std::string* error) {
  if (f.value == FlagValue::kText) {
    *value = text;
    return true;
  }
  if (f.value == FlagValue::kLogLevel) {
    // horovodrun's levels, in either case; FATAL is kolo's quietest, error.
    const std::string level = lowercase(text);
    for (const char* known : {"trace", "debug", "info", "warning", "error"}) {
      if (level == known) {
        *value = level;
        return true;
      }
    }
    if (level == "fatal") {
      *value = "error";
      return true;
    }
    *error = std::string(f.flag) + " expects one of TRACE, DEBUG, INFO, WARNING, ERROR, FATAL, got '" + text + "'";
    return false;
  }
  const bool integer = f.value == FlagValue::kInteger;
  double x;
  if (!parse_number(text, &x) || (integer && x != std::floor(x))) {
    *error = std::string(f.flag) + " expects a non-negative " + (integer ? "integer" : "number") + ", got '" + text +
             "'";
    return false;
  }
  std::ostringstream out;
  out.precision(15);
  out << x * f.scale;
  *value = out.str();
  return true;
}

std::string setting_flags_usage() {
  std::string out;
  for (const SettingSpec& s : settings_table()) {
    for (const SettingFlagSpec& f : s.flags) {
      if (f.flag == nullptr || f.usage == nullptr) continue;
      out += usage_line(std::string("  ") + f.usage,
                        std::string(s.name) + (f.fixed ? std::string("=") + f.fixed : "") + f.usage_note);
    }
  }
  return out;
}

}  // namespace launcher
}  // namespace kolo
