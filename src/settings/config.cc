#include "settings/config.h"

#include <cctype>
#include <cstdlib>
#include <set>
#include <vector>

extern char** environ;

namespace kolo {

// Variables kolorun and the bindings use that are not engine settings: no "unknown setting" warning.
// KOLO_* names that are not settings but are read elsewhere: set by kolorun for the ranks (elastic
// mode; the Gloo world's store, comm/launcher_env.h), kolorun's own, kolo.run's for its ranks, where the GPU
// path finds NCCL, and the Open MPI guard's debug switch.
static bool read_elsewhere(const std::string& name) {
  static const std::set<std::string> names = {"KOLO_ELASTIC",      "KOLO_ELASTIC_JOB_ID",  "KOLO_ELASTIC_ATTEMPT",
                                              "KOLO_ELASTIC_COMMIT_DIR", "KOLO_ELASTIC_MIN_NP", "KOLO_MPIRUN",
                                              "KOLO_RUN_SERVICE", "KOLO_NCCL_LIBRARY", "KOLO_DEBUG_OMPI_GUARD",
                                              "KOLO_STORE_ADDR", "KOLO_STORE_PORT", "KOLO_STORE_TOKEN",
                                              "KOLO_JOB_ID"};
  return names.count(name) > 0;
}

namespace {

// A setting whose default the job's layout decides (documented as "auto").
bool is_auto_setting(const std::string& name) {
  const SettingSpec* s = find_setting(name);
  return s != nullptr && std::string(s->default_text) == "auto";
}

// Each row of the table bound to its field: the one line a new setting adds here.
void read_settings(SettingParser& p, Config& c) {
  p.read("KOLO_CYCLE_TIME_MS", &c.cycle_time_ms);
  p.read("KOLO_CALLER_DRIVES", &c.caller_drives);
  p.read("KOLO_SMALL_OP_BYTES", &c.small_op_bytes);
  p.read("KOLO_DEVICE_GROUPS_IN_FLIGHT", &c.device_groups_in_flight);
  p.read("KOLO_FUSION_THRESHOLD_BYTES", &c.fusion_threshold_bytes);
  p.read("KOLO_CACHE_CAPACITY", &c.cache_capacity);
  p.read("KOLO_TIMELINE", &c.timeline_path);
  p.read("KOLO_TIMELINE_MARK_CYCLES", &c.timeline_mark_cycles);
  p.read("KOLO_STALL_CHECK_SECONDS", &c.stall_check_seconds);
  p.read("KOLO_STALL_SHUTDOWN_SECONDS", &c.stall_shutdown_seconds);
  p.read("KOLO_PEER_TIMEOUT_SECONDS", &c.peer_timeout_seconds);
  p.read("KOLO_RECOVERY_TIMEOUT_SECONDS", &c.recovery_timeout_seconds);
  p.read("KOLO_LOG_LEVEL", &c.log_level);
  p.read_choice("KOLO_CONTROLLER", &c.controller);
  p.read("KOLO_GLOO_TIMEOUT_SECONDS", &c.gloo_timeout_seconds);
  p.read("KOLO_GLOO_IFACE", &c.gloo_iface);
  p.read("KOLO_GLOO_IN_PLACE", &c.gloo_in_place);
  p.read("KOLO_SEGMENT_BYTES", &c.segment_bytes);
  p.read("KOLO_ZERO_COPY_BYTES", &c.zero_copy_bytes);
  p.read("KOLO_HIERARCHICAL_ALLREDUCE", &c.hierarchical_allreduce);
  p.read("KOLO_HIERARCHICAL_ALLGATHER", &c.hierarchical_allgather);
  p.read("KOLO_SHARED_MEMORY", &c.shared_memory);
  p.read("KOLO_SHARED_MEMORY_DIR", &c.shared_memory_dir);
  p.read("KOLO_SHARED_MEMORY_SLOT_BYTES", &c.shared_memory_slot_bytes);
  p.read("KOLO_DOORBELL", &c.doorbell);
  p.read("KOLO_THREAD_NICE", &c.thread_nice);
  p.read_choice("KOLO_JOIN_AVERAGE", &c.join_average_over_contributors);
  Config::Autotune& a = c.autotune;
  p.read("KOLO_AUTOTUNE", &a.enabled);
  p.read("KOLO_AUTOTUNE_LOG", &a.log_path);
  p.read("KOLO_AUTOTUNE_WARMUP_SAMPLES", &a.warmup_samples);
  p.read("KOLO_AUTOTUNE_STEPS_PER_SAMPLE", &a.steps_per_sample);
  p.read("KOLO_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", &a.max_samples);
  p.read("KOLO_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", &a.noise);
}

}  // namespace

Status parse_config(const SettingLookup& given, Config* config, const SettingOrigin& origin) {
  // "auto", the default the docs show for the settings that the job's layout decides, is also a value
  // one may write: it means the same as leaving the setting unset (and so open to autotune).
  const SettingLookup lookup = [&given](const std::string& name) -> const char* {
    const char* v = given(name);
    if (v == nullptr || !is_auto_setting(name)) return v;
    std::string t = v;
    for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return t == "auto" ? nullptr : v;
  };
  Config c;
  SettingParser p(lookup, origin);
  read_settings(p, c);
  Config::Autotune& a = c.autotune;
  a.fixed_fusion_threshold = lookup("KOLO_FUSION_THRESHOLD_BYTES") != nullptr;
  a.fixed_segment = lookup("KOLO_SEGMENT_BYTES") != nullptr;
  a.fixed_zero_copy = lookup("KOLO_ZERO_COPY_BYTES") != nullptr;
  a.fixed_hierarchical = lookup("KOLO_HIERARCHICAL_ALLREDUCE") != nullptr;
  if (!p.status().ok()) return p.status();
  *config = c;
  return Status::OK();
}

Status check_config_defaults() {
  // Each default the table gives as a value ("auto" and "(unset)" are what the members' sentinels mean).
  const SettingLookup defaults = [](const std::string& name) -> const char* {
    const SettingSpec* s = find_setting(name);
    const std::string text = s ? s->default_text : "auto";
    return text == "auto" || text == "(unset)" ? nullptr : s->default_text;
  };
  Config c;
  SettingParser p(defaults, nullptr, true);
  read_settings(p, c);
  return p.status();
}

AllreduceSettings allreduce_settings(const Config& config) {
  AllreduceSettings s;
  if (config.autotune.fixed_hierarchical) {
    s.hierarchical = config.hierarchical_allreduce ? HierarchySetting::kOn : HierarchySetting::kOff;
  }
  s.autotune = config.autotune.enabled;
  return s;
}

void resolve_layout_defaults(const Topology& topology, Config* config) {
  const bool spans_hosts = topology.cross_size > 1;
  if (!config->autotune.fixed_hierarchical) {
    // The thread level does not matter to whether, only to how.
    config->hierarchical_allreduce =
        starts_hierarchical(DeviceType::kCPU, job_shape(topology, true), allreduce_settings(*config));
  }
  const bool flat_across_hosts = spans_hosts && !(config->hierarchical_allreduce && topology.homogeneous);
  if (config->segment_bytes == Config::kAuto) config->segment_bytes = flat_across_hosts ? 32ll << 20 : 4ll << 20;
  if (config->zero_copy_bytes == Config::kAuto) config->zero_copy_bytes = spans_hosts ? 8ll << 20 : 256ll << 10;
}

Status config_from_environment(const Settings& overrides, Config* config, std::vector<std::string>* warnings) {
  auto given = [&overrides](const std::string& name) -> const char* {
    auto it = overrides.find(name);
    if (it != overrides.end()) return it->second.c_str();
    return std::getenv(name.c_str());
  };
  for (const auto& kv : overrides) {
    if (find_setting(kv.first) == nullptr) {
      return Status::InvalidArgument("'" + kv.first + "' is not a kolo setting; the settings are "
                                     "listed in docs/configuration.md (KOLO_*)");
    }
  }
  const HorovodAliases horovod(given);
  if (!horovod.status().ok()) return horovod.status();
  // A KOLO_* variable (or override) wins over its Horovod alias.
  auto lookup = [&](const std::string& name) -> const char* {
    const char* v = given(name);
    return v != nullptr ? v : horovod.value(name);
  };
  auto origin = [&](const std::string& name) -> const HorovodSource* {
    return given(name) != nullptr ? nullptr : horovod.source(name);
  };
  if (warnings != nullptr) {
    warnings->clear();
    std::vector<std::string> names;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      const std::string entry = *e;
      names.push_back(entry.substr(0, entry.find('=')));
    }
    for (const std::string& name : names) {
      if (name.rfind("KOLO_", 0) == 0 && find_setting(name) == nullptr && !read_elsewhere(name)) {
        warnings->push_back(name + " is set but is not a kolo setting (see the KOLO_* table in docs/configuration.md)");
      }
    }
    const std::vector<std::string> from_horovod =
        horovod_warnings(names, given, [&given](const std::string& name) { return given(name) != nullptr; });
    warnings->insert(warnings->end(), from_horovod.begin(), from_horovod.end());
  }
  return parse_config(lookup, config, origin);
}

}  // namespace kolo
