// Every KOLO_* setting, declared once (settings_table.cc): its type, default, limits, Horovod aliases,
// kolorun flags and meaning. The parser (settings/config.cc), the HOROVOD_* aliases (settings/horovod_settings.cc),
// kolorun's flags and their --help lines (launcher/setting_flags.cc) and docs/configuration.md's tables
// (tools/settings/settings_doc.cc, checked by ctest settings_drift) are all made from it. No dependencies:
// kolorun compiles it in too.
#pragma once

#include <string>

namespace kolo {

enum class SettingType {
  kFlag,      // 1, true, yes, on / 0, false, no, off, empty (any case)
  kInteger,   // a non-negative integer
  kBytes,     // the same, a size in bytes
  kNumber,    // a non-negative number
  kChoice,    // one of `words` (any case)
  kLogLevel,  // trace, debug, info, warning, error (any case)
  kText,      // any text
  kPath,      // a file or directory name
};

// What a numeric setting takes beyond being non-negative, and how an error says so.
struct SettingLimits {
  double lowest = 0;
  double highest = -1;          // below 0: no bound
  bool above_lowest = false;    // `lowest` itself not taken
  long long multiple_of = 1;
  const char* expected = nullptr;  // "at most 4096"; nullptr: no limits (or, kPath, any non-empty name)
};

// How a HOROVOD_* variable stands for the setting (settings/horovod_settings.h).
enum class HorovodReading {
  kAsWritten,      // the value as written, checked by the setting's parser
  kFlag,           // Horovod's flag: any integer (above 0 is on), or kolo's words
  kLogLevel,       // kolo's levels, and fatal (kolo's error)
  kTimeline,       // a file; DYNAMIC is the same as unset
  kDisablesStall,  // a flag that, on, sets the setting to 0 (the stall check's)
};

struct HorovodAliasSpec {
  const char* name = nullptr;  // nullptr: none
  HorovodReading reading = HorovodReading::kAsWritten;
  const char* note = nullptr;  // how kolo reads it (docs/migrating-from-horovod.md)
};

// A kolorun (and horovodrun) flag that sets the setting on every rank.
enum class FlagValue { kFixed, kText, kInteger, kNumber, kLogLevel };

struct SettingFlagSpec {
  const char* flag = nullptr;  // nullptr: none
  FlagValue value = FlagValue::kFixed;
  const char* fixed = nullptr;  // kFixed: the value it sets
  double scale = 1.0;           // kInteger, kNumber: the setting is the value given times this
  // kolorun --help: the flag as shown ("--fusion-threshold-mb N", "--[no-]autotune"; nullptr: not shown,
  // its pair shows it) and what follows the setting's name ("=1 (0)", ", in MiB (0: no fusion)").
  const char* usage = nullptr;
  const char* usage_note = "";
};

struct SettingSpec {
  const char* name;
  SettingType type;
  const char* default_text;  // a value the parser takes, or "auto" (the job's layout decides) or "(unset)"
  SettingLimits limits;
  const char* words;         // kChoice: the values, blank-separated; else nullptr
  const char* meaning;       // one line of docs/configuration.md (Markdown)
  HorovodAliasSpec aliases[2];
  SettingFlagSpec flags[2];
};

// The table, in docs/configuration.md's order.
const SettingSpec* settings_begin();
const SettingSpec* settings_end();
struct SettingsTable {
  const SettingSpec* begin() const { return settings_begin(); }
  const SettingSpec* end() const { return settings_end(); }
};
inline SettingsTable settings_table() { return {}; }

// The row of `name`; nullptr if it is not a setting.
const SettingSpec* find_setting(const std::string& name);

// What the setting takes, as an error and the docs say it: "a non-negative integer", "1 or 0", ...
// (the limits' phrase left out).
std::string setting_takes(const SettingSpec& s);

}  // namespace kolo
