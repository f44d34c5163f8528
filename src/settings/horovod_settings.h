// Horovod's HOROVOD_* environment variables, read by kolo so that a Horovod job script ports unchanged:
// each is either the alias of a KOLO_* setting (settings/config.h), or has no meaning in kolo and is named
// in a warning at init (unless its value asks for what kolo does anyway). tests/cpp/unit/horovod_settings_test
// checks that docs/migrating-from-horovod.md's tables list every name here.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kolo/status.h"

namespace kolo {

struct HorovodSetting {
  enum Kind {
    kAlias,         // the KOLO_* setting's value, as written (that setting's parser checks it)
    kAliasFlag,     // Horovod's 0/1 flag (any integer: above 0 is on; or true/false, yes/no, on/off)
    kAliasLogLevel, // Horovod's log levels: kolo's five, and fatal (kolo's error)
    kAliasTimeline, // a file name; DYNAMIC (no file until start_timeline) is the same as unset
    kDisablesStall, // on: KOLO_STALL_CHECK_SECONDS=0, ahead of HOROVOD_STALL_CHECK_TIME_SECONDS (Horovod's order)
    kNoMeaning,     // ignored, with a warning unless the value is `accepted`
    kBuildSetting,  // read by Horovod's pip install, not at run time: ignored, with a warning
  };
  // For kNoMeaning: which values match what kolo does, and so draw no warning.
  enum Accepted { kNever, kAlways, kWhenOn, kWhenOff, kWhenValue };

  const char* name;
  Kind kind;
  const char* kolo_setting;  // aliases: the KOLO_* setting; otherwise nullptr
  const char* note;          // how kolo reads it, or why it means nothing here (docs/migrating-from-horovod.md and warnings)
  Accepted accepted = kNever;
  const char* accepted_value = nullptr;  // kWhenValue, compared ignoring case
};

// Every HOROVOD_* name kolo knows: the aliases first (declared with their settings in settings/settings_table.cc),
// then the rest.
const std::vector<HorovodSetting>& horovod_settings();

// The value as the user wrote it, for messages about a setting that came from a Horovod variable.
struct HorovodSource {
  std::string name;     // HOROVOD_...
  std::string written;  // its value in the environment
};

// The KOLO_* values that the environment's HOROVOD_* variables stand for, read once through `lookup`.
class HorovodAliases {
 public:
  explicit HorovodAliases(const std::function<const char*(const std::string&)>& lookup);

  // Not OK when an alias's value is not valid; the message names the variable as the user wrote it.
  const Status& status() const { return status_; }
  // The value HOROVOD_* variables give KOLO_* setting `kolo_name`, or nullptr where none does.
  const char* value(const std::string& kolo_name) const;
  // The Horovod variable behind value(kolo_name); nullptr where none.
  const HorovodSource* source(const std::string& kolo_name) const;

 private:
  struct Entry {
    std::string value;
    HorovodSource source;
  };
  std::map<std::string, Entry> values_;
  Status status_;
};

// Warnings for the HOROVOD_* names among `set_names` (the environment's names): an alias whose KOLO_*
// setting is set too (`kolo_set`), which then wins; a name with no meaning in kolo (unless its value
// matches what kolo does; build settings together on one line); a name kolo does not know. One line each.
std::vector<std::string> horovod_warnings(const std::vector<std::string>& set_names,
                                          const std::function<const char*(const std::string&)>& lookup,
                                          const std::function<bool(const std::string&)>& kolo_set);

}  // namespace kolo
