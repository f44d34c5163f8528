#include "config_file.h"

#include <algorithm>
#include <sstream>

#include "option_values.h"
#include "setting_flags.h"

namespace kolo {
namespace launcher {
namespace {

// A key of the file and the option it stands for; a yes-or-no key has an option for each answer
// (nullptr: the answer is kolo's default, nothing to set).
struct ConfigKey {
  const char* section;  // "" for a top-level key
  const char* key;
  const char* flag;      // the option for a value, or for "yes"
  bool yes_or_no;
  const char* no_flag;   // the option for "no"
};

const ConfigKey kKeys[] = {
    {"params", "fusion_threshold_mb", "--fusion-threshold-mb", false, nullptr},
    {"params", "cycle_time_ms", "--cycle-time-ms", false, nullptr},
    {"params", "cache_capacity", "--cache-capacity", false, nullptr},
    {"params", "hierarchical_allreduce", "--hierarchical-allreduce", true, "--no-hierarchical-allreduce"},
    {"params", "hierarchical_allgather", "--hierarchical-allgather", true, "--no-hierarchical-allgather"},
    {"params", "torus_allreduce", "--torus-allreduce", true, "--no-torus-allreduce"},
    {"autotune", "enabled", "--autotune", true, "--no-autotune"},
    {"autotune", "log_file", "--autotune-log-file", false, nullptr},
    {"autotune", "warmup_samples", "--autotune-warmup-samples", false, nullptr},
    {"autotune", "steps_per_sample", "--autotune-steps-per-sample", false, nullptr},
    {"autotune", "bayes_opt_max_samples", "--autotune-bayes-opt-max-samples", false, nullptr},
    {"autotune", "gaussian_process_noise", "--autotune-gaussian-process-noise", false, nullptr},
    {"timeline", "filename", "--timeline-filename", false, nullptr},
    {"timeline", "mark_cycles", "--timeline-mark-cycles", true, "--no-timeline-mark-cycles"},
    {"stall_check", "enabled", nullptr, true, "--no-stall-check"},
    {"stall_check", "warning_time_seconds", "--stall-check-warning-time-seconds", false, nullptr},
    {"stall_check", "shutdown_time_seconds", "--stall-check-shutdown-time-seconds", false, nullptr},
    {"library_options", "mpi_threads_disable", "--mpi-threads-disable", true, "--no-mpi-threads-disable"},
    {"library_options", "num_nccl_streams", "--num-nccl-streams", false, nullptr},
    {"library_options", "thread_affinity", "--thread-affinity", false, nullptr},
    {"library_options", "gloo_timeout_seconds", "--gloo-timeout-seconds", false, nullptr},
    {"logging", "level", "--log-level", false, nullptr},
    {"logging", "with_timestamp", "--log-with-timestamp", true, "--log-without-timestamp"},
};

// The line without a comment: a '#' at its start or after a blank, outside quotes.
std::string without_comment(const std::string& line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
      return line.substr(0, i);
    }
  }
  return line;
}

// A scalar as YAML writes it: quotes taken off. False for what this reader does not take (lists, maps).
bool scalar(const std::string& written, std::string* value) {
  const std::string v = trimmed(written);
  if (v.size() >= 2 && (v[0] == '\'' || v[0] == '"') && v.back() == v[0]) {
    *value = v.substr(1, v.size() - 2);
    return true;
  }
  if (!v.empty() && std::string("[{&*!|>").find(v[0]) != std::string::npos) return false;
  *value = v;
  return true;
}

bool yes_or_no(const std::string& value, bool* yes) {
  const std::string v = lowercase(value);
  if (v == "true" || v == "yes" || v == "on") {
    *yes = true;
    return true;
  }
  if (v == "false" || v == "no" || v == "off") {
    *yes = false;
    return true;
  }
  return false;
}

const ConfigKey* find_key(const std::string& section, const std::string& key) {
  for (const ConfigKey& k : kKeys) {
    if (section == k.section && key == k.key) return &k;
  }
  return nullptr;
}

bool is_section(const std::string& name) {
  return std::any_of(std::begin(kKeys), std::end(kKeys), [&](const ConfigKey& k) { return name == k.section; });
}

// The setting `flag` sets with `value` (none for a flag that takes no value).
bool add_setting(const char* flag, const std::string& value, std::vector<std::pair<std::string, std::string>>* out,
                 std::string* error) {
  const SettingFlag* f = find_setting_flag(flag);
  if (f == nullptr) return true;
  std::string setting = f->fixed ? f->fixed : "";
  if (f->value != FlagValue::kFixed && !setting_value(*f, value, &setting, error)) return false;
  out->emplace_back(f->setting, setting);
  return true;
}

}  // namespace

bool read_config_file(const std::string& text, std::vector<std::pair<std::string, std::string>>* settings,
                      std::string* error) {
  settings->clear();
  std::vector<std::pair<std::string, std::string>> stall_check_off;
  std::stringstream lines(text);
  std::string line, section;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    const std::string where = "line " + std::to_string(number) + ": ";
    const std::string content = trimmed(without_comment(line));
    if (content.empty() || content == "---") continue;
    const bool indented = line[0] == ' ' || line[0] == '\t';
    const size_t colon = content.find(':');
    if (colon == std::string::npos || colon == 0) {
      *error = where + "expected 'key: value' or 'section:', got '" + content + "'";
      return false;
    }
    const std::string key = trimmed(content.substr(0, colon));
    std::string value;
    if (!scalar(content.substr(colon + 1), &value)) {
      *error = where + key + ": horovodrun's config file takes one value a key, got '" +
               trimmed(content.substr(colon + 1)) + "'";
      return false;
    }
    if (!indented) {
      section.clear();
      if (key != "controller" && value.empty() && is_section(key)) {
        section = key;
        continue;
      }
      if (key != "controller") {
        *error = where + "'" + key + "' is not one of horovodrun's config file sections (params, autotune, timeline, "
                 "stall_check, library_options, logging) or top-level keys (controller)";
        return false;
      }
      const std::string controller = lowercase(value);
      if (controller != "mpi" && controller != "gloo") {
        *error = where + "controller is mpi or gloo, got '" + value + "'";
        return false;
      }
      if (!add_setting(controller == "mpi" ? "--mpi" : "--gloo", "", settings, error)) return false;
      continue;
    }
    const ConfigKey* k = section.empty() ? nullptr : find_key(section, key);
    if (k == nullptr) {
      *error = where + "'" + (section.empty() ? key : section + "." + key) +
               "' is not one of horovodrun's config file keys";
      return false;
    }
    const std::string name = section + "." + key;
    if (value.empty() || value == "~" || lowercase(value) == "null") continue;
    bool yes = false;
    if (k->yes_or_no && !yes_or_no(value, &yes)) {
      *error = where + name + " is true or false, got '" + value + "'";
      return false;
    }
    const char* flag = k->yes_or_no ? (yes ? k->flag : k->no_flag) : k->flag;
    if (flag == nullptr) continue;
    auto* out = std::string(flag) == "--no-stall-check" ? &stall_check_off : settings;
    if (!add_setting(flag, value, out, error)) {
      *error = where + name + ": " + *error;
      return false;
    }
  }
  settings->insert(settings->end(), stall_check_off.begin(), stall_check_off.end());
  return true;
}

}  // namespace launcher
}  // namespace kolo
