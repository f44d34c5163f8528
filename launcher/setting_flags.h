// The flags that set one of kolo's settings on every rank (horovodrun's names, and its options for
// what kolo does not have, as their HOROVOD_* variables): a table, so that the command line's parser
// handles them all alike.
#pragma once

#include <string>

namespace kolo {
namespace launcher {

// One row of the table.
struct SettingFlag {
  enum Kind { kText, kInteger, kNumber, kFixed, kLogLevel };
  const char* flag;
  const char* setting;
  Kind kind;
  double scale = 1.0;          // kInteger, kNumber: the setting is the value given times this
  const char* fixed = nullptr;  // kFixed: the flag takes no value and sets this
};

// The row for `flag`; null if it is not one of them.
const SettingFlag* find_setting_flag(const std::string& flag);

// The setting's value for `text` given to `f` (not kFixed). False, with the message for the user
// in `error`, when `text` is not what `f` takes.
bool setting_value(const SettingFlag& f, const std::string& text, std::string* value, std::string* error);

}  // namespace launcher
}  // namespace kolo
