#include "settings/setting_parser.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace kolo {
namespace {

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

bool in_limits(const SettingLimits& l, double x) {
  if (l.highest >= 0 && x > l.highest) return false;
  if (l.above_lowest ? x <= l.lowest : x < l.lowest) return false;
  return l.multiple_of <= 1 || std::fmod(x, static_cast<double>(l.multiple_of)) == 0;
}

}  // namespace

bool SettingParser::given(const char* name, const SettingSpec** spec, const char** value) {
  if (!status_.ok()) return false;
  *spec = find_setting(name);
  if (*spec == nullptr) {
    status_ = Status::Internal(std::string(name) + " is read but is not in src/settings/settings_table.cc");
    return false;
  }
  *value = lookup_(name);
  return *value != nullptr;
}

template <typename V>
void SettingParser::keep(const char* name, const V& value, V* out) {
  if (!compare_) {
    *out = value;
  } else if (!(value == *out)) {
    differs(name);
  }
}

void SettingParser::read(const char* name, int64_t* out) {
  const SettingSpec* s;
  const char* v;
  if (!given(name, &s, &v)) return;
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v, &end, 10);
  if (*v == '\0' || *end != '\0' || errno != 0 || x < 0) return fail(name, v, setting_takes(*s));
  if (!in_limits(s->limits, static_cast<double>(x))) return fail(name, v, s->limits.expected);
  keep(name, static_cast<int64_t>(x), out);
}

void SettingParser::read(const char* name, double* out) {
  const SettingSpec* s;
  const char* v;
  if (!given(name, &s, &v)) return;
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(v, &end);
  if (*v == '\0' || *end != '\0' || errno != 0 || !std::isfinite(x) || x < 0) return fail(name, v, setting_takes(*s));
  if (!in_limits(s->limits, x)) return fail(name, v, s->limits.expected);
  keep(name, x, out);
}

void SettingParser::read(const char* name, std::string* out) {
  const SettingSpec* s;
  const char* v;
  if (!given(name, &s, &v)) return;
  // A path with limits must name something (an empty directory name is no directory).
  if (s->type == SettingType::kPath && s->limits.expected != nullptr && *v == '\0') {
    return fail(name, v, s->limits.expected);
  }
  keep(name, std::string(v), out);
}

void SettingParser::read(const char* name, bool* out) {
  const SettingSpec* s;
  const char* v;
  if (!given(name, &s, &v)) return;
  const std::string t = lower(v);
  if (t == "1" || t == "true" || t == "yes" || t == "on") {
    keep(name, true, out);
  } else if (t == "0" || t == "false" || t == "no" || t == "off" || t.empty()) {
    keep(name, false, out);
  } else {
    fail(name, v, setting_takes(*s));
  }
}

void SettingParser::read(const char* name, LogLevel* out) {
  const SettingSpec* s;
  const char* v;
  if (!given(name, &s, &v)) return;
  LogLevel level;
  if (!parse_log_level(v, &level)) return fail(name, v, setting_takes(*s));
  keep(name, level, out);
}

bool SettingParser::choice(const char* name, int* index) {
  const SettingSpec* s;
  const char* v;
  if (!given(name, &s, &v)) return false;
  const std::string t = lower(v);
  std::istringstream words(s->words);
  std::string word;
  for (int i = 0; words >> word; ++i) {
    if (word == t) {
      *index = i;
      return true;
    }
  }
  fail(name, v, setting_takes(*s));
  return false;
}

void SettingParser::fail(const char* name, const char* value, const std::string& expected) {
  const HorovodSource* from = origin_ ? origin_(name) : nullptr;
  if (from != nullptr) {
    status_ = Status::InvalidArgument(from->name + "='" + from->written + "' is not valid: expected " + expected +
                                      " (kolo reads it as " + name + ").");
    return;
  }
  status_ = Status::InvalidArgument(std::string(name) + "='" + value + "' is not valid: expected " + expected + ".");
}

void SettingParser::differs(const char* name) {
  if (!status_.ok()) return;
  status_ = Status::Internal(std::string("Config's member default of ") + name + " (src/settings/config.h) is not " +
                             find_setting(name)->default_text + ", the table's (src/settings/settings_table.cc)");
}

}  // namespace kolo
