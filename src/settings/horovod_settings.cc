#include "settings/horovod_settings.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <iterator>
#include <set>

#include "common/logging.h"
#include "settings/settings_table.h"

namespace kolo {

namespace {

using S = HorovodSetting;

// The names that are no alias (the aliases are rows of settings/settings_table.cc).
const HorovodSetting kNotAliases[] = {
    // What kolo does anyway, or cannot do.
    {"HOROVOD_CPU_OPERATIONS", S::kNoMeaning, nullptr, "kolo runs CPU collectives on MPI", S::kWhenValue, "MPI"},
    {"HOROVOD_GPU_OPERATIONS", S::kNoMeaning, nullptr, "kolo runs GPU collectives on NCCL", S::kWhenValue, "NCCL"},
    {"HOROVOD_GPU_ALLREDUCE", S::kNoMeaning, nullptr, "kolo runs GPU collectives on NCCL", S::kWhenValue, "NCCL"},
    {"HOROVOD_GPU_ALLGATHER", S::kNoMeaning, nullptr, "kolo runs GPU collectives on NCCL", S::kWhenValue, "NCCL"},
    {"HOROVOD_GPU_BROADCAST", S::kNoMeaning, nullptr, "kolo runs GPU collectives on NCCL", S::kWhenValue, "NCCL"},
    {"HOROVOD_GPU_ALLTOALL", S::kNoMeaning, nullptr, "kolo runs GPU collectives on NCCL", S::kWhenValue, "NCCL"},
    {"HOROVOD_GPU_REDUCESCATTER", S::kNoMeaning, nullptr, "kolo runs GPU collectives on NCCL", S::kWhenValue,
     "NCCL"},
    {"HOROVOD_DYNAMIC_PROCESS_SETS", S::kNoMeaning, nullptr,
     "kolo adds and removes process sets at any time", S::kAlways},
    {"HOROVOD_ENABLE_ASYNC_COMPLETION", S::kNoMeaning, nullptr,
     "kolo has no such setting (kolo.torch's GPU ops always complete on the GPU stream)"},
    {"HOROVOD_DISABLE_NVTX_RANGES", S::kNoMeaning, nullptr, "kolo marks no NVTX ranges", S::kWhenOn},
    {"HOROVOD_LOG_HIDE_TIME", S::kNoMeaning, nullptr, "kolo's log lines carry no time", S::kWhenOn},
    {"HOROVOD_MPI_THREADS_DISABLE", S::kNoMeaning, nullptr,
     "kolo asks MPI for MPI_THREAD_MULTIPLE unless the program initialised MPI itself", S::kWhenOff},
    {"HOROVOD_TORUS_ALLREDUCE", S::kNoMeaning, nullptr, "kolo has no torus allreduce", S::kWhenOff},
    {"HOROVOD_THREAD_AFFINITY", S::kNoMeaning, nullptr,
     "kolo pins no thread to a core; KOLO_THREAD_NICE lowers its threads' priority instead"},
    {"HOROVOD_NUM_NCCL_STREAMS", S::kNoMeaning, nullptr, "kolo has no such setting"},
    {"HOROVOD_BATCH_D2D_MEMCOPIES", S::kNoMeaning, nullptr, "kolo always packs GPU tensors with one batched copy"},
    {"HOROVOD_DISABLE_GROUP_FUSION", S::kNoMeaning, nullptr, "kolo has no such setting"},
    {"HOROVOD_ADASUM_MPI_CHUNK_SIZE", S::kNoMeaning, nullptr, "kolo has no such setting"},
    {"HOROVOD_ENABLE_XLA_OPS", S::kNoMeaning, nullptr, "kolo has no XLA ops for TensorFlow"},
    {"HOROVOD_CCL_CACHE", S::kNoMeaning, nullptr, "kolo has no oneCCL"},
    {"HOROVOD_GLOO_RENDEZVOUS_ADDR", S::kNoMeaning, nullptr,
     "horovodrun's Gloo mode sets it for its HTTP rendezvous; kolorun --gloo sets kolo's store (KOLO_STORE_ADDR)"},
    {"HOROVOD_GLOO_RENDEZVOUS_PORT", S::kNoMeaning, nullptr,
     "horovodrun's Gloo mode sets it for its HTTP rendezvous; kolorun --gloo sets kolo's store (KOLO_STORE_PORT)"},
    {"HOROVOD_RANK", S::kNoMeaning, nullptr, "horovodrun's Gloo mode sets it; kolo takes ranks from its launcher"},
    {"HOROVOD_SIZE", S::kNoMeaning, nullptr, "horovodrun's Gloo mode sets it; kolo takes ranks from its launcher"},
    {"HOROVOD_LOCAL_RANK", S::kNoMeaning, nullptr, "horovodrun's Gloo mode sets it; kolo takes ranks from its launcher"},
    {"HOROVOD_LOCAL_SIZE", S::kNoMeaning, nullptr, "horovodrun's Gloo mode sets it; kolo takes ranks from its launcher"},
    {"HOROVOD_CROSS_RANK", S::kNoMeaning, nullptr, "horovodrun's Gloo mode sets it; kolo places hosts itself"},
    {"HOROVOD_CROSS_SIZE", S::kNoMeaning, nullptr, "horovodrun's Gloo mode sets it; kolo places hosts itself"},
    {"HOROVOD_HOSTNAME", S::kNoMeaning, nullptr, "horovodrun's Gloo mode sets it; kolo places hosts itself"},
    {"HOROVOD_SECRET_KEY", S::kNoMeaning, nullptr, "horovodrun's; kolorun needs none"},
    {"HOROVOD_ELASTIC", S::kNoMeaning, nullptr, "kolorun's elastic options (--min-np, ...) set kolo's elastic mode"},
    {"HOROVOD_ELASTIC_TIMEOUT", S::kNoMeaning, nullptr, "kolorun --elastic-timeout"},
    {"HOROVOD_START_TIMEOUT", S::kNoMeaning, nullptr, "kolorun --start-timeout"},

    // Read by `pip install horovod`, by nothing at run time (Horovod included).
    {"HOROVOD_WITH_PYTORCH", S::kBuildSetting, nullptr, ""},
    {"HOROVOD_WITH_TENSORFLOW", S::kBuildSetting, nullptr, ""},
    {"HOROVOD_WITH_MXNET", S::kBuildSetting, nullptr, ""},
    {"HOROVOD_WITH_MPI", S::kBuildSetting, nullptr, ""},
    {"HOROVOD_WITH_GLOO", S::kBuildSetting, nullptr, ""},
    {"HOROVOD_WITHOUT_PYTORCH", S::kBuildSetting, nullptr, ""},
    {"HOROVOD_WITHOUT_TENSORFLOW", S::kBuildSetting, nullptr, ""},
    {"HOROVOD_WITHOUT_MXNET", S::kBuildSetting, nullptr, ""},
    {"HOROVOD_WITHOUT_MPI", S::kBuildSetting, nullptr, ""},
    {"HOROVOD_WITHOUT_GLOO", S::kBuildSetting, nullptr, ""},
    {"HOROVOD_CUDA_HOME", S::kBuildSetting, nullptr, ""},
    {"HOROVOD_ROCM_HOME", S::kBuildSetting, nullptr, ""},
    {"HOROVOD_NCCL_HOME", S::kBuildSetting, nullptr, ""},
    {"HOROVOD_NCCL_INCLUDE", S::kBuildSetting, nullptr, ""},
    {"HOROVOD_NCCL_LIB", S::kBuildSetting, nullptr, ""},
    {"HOROVOD_NCCL_LINK", S::kBuildSetting, nullptr, ""},
    {"HOROVOD_BUILD_CUDA_CC_LIST", S::kBuildSetting, nullptr, ""},
    {"HOROVOD_BUILD_ARCH_FLAGS", S::kBuildSetting, nullptr, ""},
    {"HOROVOD_CMAKE", S::kBuildSetting, nullptr, ""},
    {"HOROVOD_DEBUG", S::kBuildSetting, nullptr, ""},
    {"HOROVOD_MIXED_INSTALL", S::kBuildSetting, nullptr, ""},
    {"HOROVOD_ALLOW_MIXED_GPU_IMPL", S::kBuildSetting, nullptr, ""},
};

HorovodSetting::Kind alias_kind(HorovodReading reading) {
  switch (reading) {
    case HorovodReading::kFlag:
      return S::kAliasFlag;
    case HorovodReading::kLogLevel:
      return S::kAliasLogLevel;
    case HorovodReading::kTimeline:
      return S::kAliasTimeline;
    case HorovodReading::kDisablesStall:
      return S::kDisablesStall;
    case HorovodReading::kAsWritten:
      break;
  }
  return S::kAlias;
}

std::vector<HorovodSetting> all_horovod_settings() {
  std::vector<HorovodSetting> all;
  for (const SettingSpec& spec : settings_table()) {
    for (const HorovodAliasSpec& alias : spec.aliases) {
      if (alias.name != nullptr) all.push_back({alias.name, alias_kind(alias.reading), spec.name, alias.note});
    }
  }
  all.insert(all.end(), std::begin(kNotAliases), std::end(kNotAliases));
  return all;
}

}  // namespace

const std::vector<HorovodSetting>& horovod_settings() {
  static const std::vector<HorovodSetting> settings = all_horovod_settings();
  return settings;
}

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Horovod reads a flag as strtol(value) > 0; kolo's words for a flag are taken too. False: not a flag.
bool parse_flag(const std::string& text, bool* on) {
  const std::string t = lower(text);
  if (t == "true" || t == "yes" || t == "on") {
    *on = true;
    return true;
  }
  if (t.empty() || t == "false" || t == "no" || t == "off") {
    *on = false;
    return true;
  }
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(t.c_str(), &end, 10);
  if (*end != '\0' || errno != 0) return false;
  *on = x > 0;
  return true;
}

Status invalid(const HorovodSetting& s, const std::string& written, const std::string& expected) {
  return Status::InvalidArgument(std::string(s.name) + "='" + written + "' is not valid: expected " + expected +
                                 " (kolo reads it as " + s.kolo_setting + ").");
}

bool is_alias(const HorovodSetting& s) { return s.kolo_setting != nullptr; }

const HorovodSetting* find(const std::string& name) {
  for (const HorovodSetting& s : horovod_settings()) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

}  // namespace

HorovodAliases::HorovodAliases(const std::function<const char*(const std::string&)>& lookup) {
  for (const HorovodSetting& s : horovod_settings()) {
    if (!is_alias(s)) continue;
    const char* v = lookup(s.name);
    // The KOLO_* setting given too wins, whatever the alias says (horovod_warnings names both).
    if (v == nullptr || lookup(s.kolo_setting) != nullptr) continue;
    const std::string written = v;
    std::string value = written;
    bool on = false;
    switch (s.kind) {
      case HorovodSetting::kAliasFlag:
        if (!parse_flag(written, &on)) {
          if (status_.ok()) status_ = invalid(s, written, "1 or 0");
          continue;
        }
        value = on ? "1" : "0";
        break;
      case HorovodSetting::kDisablesStall:
        if (!parse_flag(written, &on)) {
          if (status_.ok()) status_ = invalid(s, written, "1 or 0");
          continue;
        }
        if (!on) continue;  // "do not disable": the check stays as set otherwise
        value = "0";
        break;
      case HorovodSetting::kAliasLogLevel: {
        LogLevel level;
        if (lower(written) == "fatal") {
          value = "error";
        } else if (!parse_log_level(written, &level)) {
          if (status_.ok()) status_ = invalid(s, written, "one of trace, debug, info, warning, error, fatal");
          continue;
        }
        break;
      }
      case HorovodSetting::kAliasTimeline:
        if (written == "DYNAMIC") continue;
        break;
      default:
        break;
    }
    auto it = values_.find(s.kolo_setting);
    // HOROVOD_STALL_CHECK_DISABLE on wins over HOROVOD_STALL_CHECK_TIME_SECONDS, whichever comes first.
    if (it != values_.end() && s.kind != HorovodSetting::kDisablesStall) continue;
    values_[s.kolo_setting] = Entry{value, HorovodSource{s.name, written}};
  }
}

const char* HorovodAliases::value(const std::string& kolo_name) const {
  auto it = values_.find(kolo_name);
  return it == values_.end() ? nullptr : it->second.value.c_str();
}

const HorovodSource* HorovodAliases::source(const std::string& kolo_name) const {
  auto it = values_.find(kolo_name);
  return it == values_.end() ? nullptr : &it->second.source;
}

std::vector<std::string> horovod_warnings(const std::vector<std::string>& set_names,
                                          const std::function<const char*(const std::string&)>& lookup,
                                          const std::function<bool(const std::string&)>& kolo_set) {
  std::set<std::string> names;
  for (const std::string& n : set_names) {
    if (n.rfind("HOROVOD_", 0) == 0) names.insert(n);
  }
  std::vector<std::string> warnings;
  std::string build;
  for (const std::string& name : names) {
    const HorovodSetting* s = find(name);
    const char* v = lookup(name);
    const std::string value = v ? v : "";
    if (s == nullptr) {
      warnings.push_back(name + " is set but is not a Horovod setting that kolo knows: ignored");
    } else if (is_alias(*s)) {
      if (kolo_set(s->kolo_setting)) {
        const char* kolo_value = lookup(s->kolo_setting);
        warnings.push_back(std::string(s->kolo_setting) + "=" + (kolo_value ? kolo_value : "") + " and " + name +
                           "=" + value + " are both set: kolo uses " + s->kolo_setting);
      }
    } else if (s->kind == HorovodSetting::kBuildSetting) {
      build += (build.empty() ? "" : ", ") + name;
    } else {
      bool on = false;
      const bool flag = parse_flag(value, &on);
      const bool matches = s->accepted == HorovodSetting::kAlways ||
                           (s->accepted == HorovodSetting::kWhenOn && flag && on) ||
                           (s->accepted == HorovodSetting::kWhenOff && flag && !on) ||
                           (s->accepted == HorovodSetting::kWhenValue && lower(value) == lower(s->accepted_value));
      if (!matches) warnings.push_back(name + "=" + value + " has no meaning in kolo, ignored: " + s->note);
    }
  }
  if (!build.empty()) {
    warnings.push_back(build + (build.find(',') == std::string::npos ? " is a Horovod build setting" :
                                                                       " are Horovod build settings") +
                       " (read by pip install, not when a job runs): ignored");
  }
  return warnings;
}

}  // namespace kolo
