// The flags that set one of kolo's settings on every rank (horovodrun's names, and its options for
// what kolo does not have, as their HOROVOD_* variables): the KOLO_* ones come from the settings' table
// (src/settings/settings_table.cc), so that the command line's parser and kolorun --help handle them all alike.
#pragma once

#include <string>

#include "settings/settings_table.h"

namespace kolo {
namespace launcher {

// One flag.
struct SettingFlag {
  const char* flag;
  const char* setting;
  FlagValue value;
  double scale = 1.0;           // kInteger, kNumber: the setting is the value given times this
  const char* fixed = nullptr;  // kFixed: the flag takes no value and sets this
};

// The row for `flag`; null if it is not one of them.
const SettingFlag* find_setting_flag(const std::string& flag);

// The setting's value for `text` given to `f` (not kFixed). False, with the message for the user
// in `error`, when `text` is not what `f` takes.
bool setting_value(const SettingFlag& f, const std::string& text, std::string* value, std::string* error);

// kolorun --help's lines for the table's flags, a line (or two) each: "  --cycle-time-ms N   KOLO_CYCLE_TIME_MS".
std::string setting_flags_usage();

}  // namespace launcher
}  // namespace kolo
