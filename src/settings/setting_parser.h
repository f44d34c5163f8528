// Reads settings into typed fields by their row of the table (settings/settings_table.h): the type says how
// to read the text, the limits what is taken, and an error names the setting and its value (or the
// HOROVOD_* variable it came from). settings/config.cc binds each row to its field of Config.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/logging.h"
#include "settings/horovod_settings.h"
#include "settings/settings_table.h"
#include "kolo/status.h"

namespace kolo {

using SettingLookup = std::function<const char*(const std::string& name)>;
using SettingOrigin = std::function<const HorovodSource*(const std::string& name)>;

class SettingParser {
 public:
  // `compare`: instead of setting a field, check that the field already holds what the value read
  // gives (Config's member defaults against the table's; check_config_defaults in settings/config.h).
  SettingParser(const SettingLookup& lookup, const SettingOrigin& origin, bool compare = false)
      : lookup_(lookup), origin_(origin), compare_(compare) {}

  void read(const char* name, bool* out);
  void read(const char* name, int64_t* out);
  void read(const char* name, double* out);
  void read(const char* name, std::string* out);
  void read(const char* name, LogLevel* out);
  // kChoice: the index of the word given in the row's words.
  template <typename E>
  void read_choice(const char* name, E* out) {
    int index = static_cast<int>(*out);
    const int before = index;
    if (!choice(name, &index)) return;
    if (compare_ && index != before) differs(name);
    if (!compare_) *out = static_cast<E>(index);
  }

  Status status() const { return status_; }

 private:
  // The row and the value given; false where the value is unset, an error came before, or `name` is not
  // in the table (an error).
  bool given(const char* name, const SettingSpec** spec, const char** value);
  bool choice(const char* name, int* index);
  template <typename V>
  void keep(const char* name, const V& value, V* out);
  void fail(const char* name, const char* value, const std::string& expected);
  void differs(const char* name);

  const SettingLookup lookup_;
  const SettingOrigin origin_;
  const bool compare_;
  Status status_;
};

}  // namespace kolo
