#include "engine/config.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
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

const std::vector<SettingInfo>& known_settings() {
  static const std::vector<SettingInfo> settings = {
      {"KOLO_CYCLE_TIME_MS", "1",
       "Time between negotiation cycles while this rank has ops in flight; an op enqueued on an idle "
       "engine starts a cycle at once (a small async one, see KOLO_CALLER_DRIVES, within this time), and an "
       "engine with nothing in flight sleeps longer, up to 50 ms."},
      {"KOLO_CALLER_DRIVES", "1",
       "A blocking call (allreduce, not allreduce_async) runs the negotiation of its op (alone in flight or "
       "beside other ops), and the op where it rides on it (KOLO_SMALL_OP_BYTES), is a flat CPU allreduce of at "
       "most 64 KiB, or is a GPU op whose communicators exist (launched on kolo's stream, its end polled for "
       "up to 10 ms), on the caller's thread, sparing the hand-offs to kolo's thread and back (most of a small "
       "op's latency); an async op's wait() (or wait_on_stream()) does the same where kolo's thread has not taken "
       "the op up yet, and an async allreduce of a CPU tensor that may ride (KOLO_SMALL_OP_BYTES) does not wake "
       "kolo's thread where it will look within KOLO_CYCLE_TIME_MS anyway (it is awake, or napping in a burst "
       "of such ops), so that a wait soon after finds it untaken; other ops run on kolo's thread. 0: always "
       "kolo's thread. Needs MPI_THREAD_MULTIPLE."},
      {"KOLO_SMALL_OP_BYTES", "256",
       "A CPU allreduce of at most this many bytes (float32, float64, int32 or int64; not Adasum) whose name "
       "recurs rides on the negotiation's own collective when every rank has it ready: one collective "
       "instead of two. Every cycle's negotiation carries this many bytes more; 0 turns it off."},
      {"KOLO_DEVICE_GROUPS_IN_FLIGHT", "2",
       "GPU groups on kolo's stream at once: with this many still running, the next cycle waits (at "
       "most 50 ms) for one to end, so what becomes ready meanwhile fuses into one group instead of "
       "many small ones; 0: never wait."},
      {"KOLO_FUSION_THRESHOLD_BYTES", "67108864",
       "Largest fused allreduce (64 MiB). A tensor larger than this goes alone; 0 turns fusion off."},
      {"KOLO_CACHE_CAPACITY", "1024",
       "Responses remembered so that recurring names are agreed by a bit-vector allreduce; 0 turns "
       "the cache off."},
      {"KOLO_TIMELINE", "(unset)",
       "Write a Chrome trace of every tensor's phases to this file (rank 0). A name containing %r "
       "gives each rank its own file, %r replaced by the rank."},
      {"KOLO_TIMELINE_MARK_CYCLES", "0", "1: the timeline also marks the start of every negotiation cycle that ran ops."},
      {"KOLO_STALL_CHECK_SECONDS", "60",
       "Report ops that some ranks submitted and others did not for this long; 0 turns the check off."},
      {"KOLO_STALL_SHUTDOWN_SECONDS", "0",
       "Fail such ops on every rank after this long; 0 waits forever."},
      {"KOLO_PEER_TIMEOUT_SECONDS", "30",
       "A process that stops answering (frozen, or its host unreachable) for this long is lost: every "
       "other rank fails its ops naming it and its host, and the job ends; 0 turns the watch off."},
      {"KOLO_RECOVERY_TIMEOUT_SECONDS", "60",
       "In place (ULFM): a recovery that has not finished in this long (MPI never declared a lost peer "
       "failed: its host cut off, or ULFM's detector off) is given up: the rank exits with status 1 and "
       "kolorun restarts the job from its last commit; 0 waits forever."},
      {"KOLO_LOG_LEVEL", "warning", "trace, debug, info, warning or error."},
      {"KOLO_CONTROLLER", "auto",
       "Which world the ranks form: mpi (an MPI launcher started them), gloo (any launcher; the ranks meet "
       "through a key-value store), or auto: mpi where an MPI launcher started the process, gloo otherwise."},
      {"KOLO_GLOO_TIMEOUT_SECONDS", "120",
       "The Gloo world's start waits this long for every rank to come (rank 0's store, then each rank's "
       "connections), naming the ranks still missing, before it fails."},
      {"KOLO_GLOO_IFACE", "(unset)",
       "The network interface (e.g. eth1) of the Gloo world's connections between hosts; unset: the one this "
       "host reaches the store through."},
      {"KOLO_GLOO_IN_PLACE", "0",
       "1: the Gloo world's survivors of a lost rank go on in place (kolo.elastic rolls them back to the last "
       "commit); kolorun --gloo --in-place sets it. 0: a lost rank ends the job."},
      {"KOLO_SEGMENT_BYTES", "auto",
       "CPU collectives run in segments of this size: 4 MiB on one host (each stays in cache) and for "
       "hierarchical allreduce across hosts (its stages pipeline), 32 MiB for flat allreduce across hosts "
       "(fewer network round trips); 0 runs each fused buffer as one MPI call."},
      {"KOLO_ZERO_COPY_BYTES", "auto",
       "CPU allreduce reduces a tensor of at least this size where it lies instead of copying it "
       "through the fusion buffer: 256 KiB on one host, 8 MiB across hosts; 0 copies every fused tensor."},
      {"KOLO_HIERARCHICAL_ALLREDUCE", "auto",
       "1: allreduce inside each host first (reduce-scatter), then across hosts among ranks of the same "
       "local rank, then inside each host again (allgather). Needs the same number of ranks on every host. "
       "auto: on for CPU tensors when the job spans hosts with as many ranks on each (where it was measured "
       "faster than flat at every link rate, one rank a host too); GPU tensors flat. 0: flat."},
      {"KOLO_HIERARCHICAL_ALLGATHER", "0",
       "1: allgather inside each host, then across hosts among each host's first rank, then a broadcast "
       "inside each host."},
      {"KOLO_SHARED_MEMORY", "1",
       "1: CPU allreduce among the ranks of one host goes through kolo's own shared-memory segment (flags "
       "and copies, no MPI), flat on one host and as the stages inside each host of hierarchical allreduce; "
       "where the segment cannot be made (the directory missing or too small) kolo warns once per host and "
       "uses MPI. 0: always MPI."},
      {"KOLO_SHARED_MEMORY_DIR", "/dev/shm",
       "Where the shared-memory segment is made (a tmpfs): it is removed as soon as every rank of the host "
       "has mapped it, and a killed job's leftover is removed by the next kolo that starts on the host."},
      {"KOLO_SHARED_MEMORY_SLOT_BYTES", "auto",
       "Each rank's share of the segment per round (twice this per rank, double-buffered): a round's "
       "copies stay in cache. auto: 1 MiB up to 8 ranks on a host, less beyond (a 16 MiB segment at most, "
       "slots of 64 KiB at least). A multiple of 64, from 4096 to 67108864."},
      {"KOLO_DOORBELL", "1",
       "1: where a job spans hosts, a rank waiting in negotiation for a peer sleeps on a UDP socket of its "
       "own (any interface, an ephemeral port) that the peer rings when it sends, so a late rank is seen "
       "when it comes; without one the wait sleeps in naps of up to 1 ms. A ring lost or blocked costs "
       "the rest of a nap. 0: naps only."},
      {"KOLO_THREAD_NICE", "0",
       "Nice value (0-19) of kolo's background thread and the threads it starts. Above 0, where the "
       "training threads fill every core (training on the CPU), backward runs first and the reductions take "
       "the gaps, instead of the two taking turns; where cores are idle (a GPU job) it changes nothing, but "
       "with every core busy (data loading, say) kolo's thread then waits for the others. Never raises a "
       "thread's priority; 0 leaves it as it is."},
      {"KOLO_JOIN_AVERAGE", "size",
       "While some ranks are in join() (contributing zeros): size, an Average divides by the number of "
       "ranks, as Horovod and PyTorch's Join do; contributors, by the ranks that contributed."},
      {"KOLO_AUTOTUNE", "0",
       "1: tune KOLO_FUSION_THRESHOLD_BYTES, KOLO_SEGMENT_BYTES, KOLO_ZERO_COPY_BYTES and, when the job spans "
       "hosts with as many ranks on each, KOLO_HIERARCHICAL_ALLREDUCE on the running job (Bayesian "
       "optimisation of the bytes reduced per second, decided on rank 0 and applied by every rank at the same "
       "cycle), then keep the best. A setting given explicitly is not tuned."},
      {"KOLO_AUTOTUNE_LOG", "(unset)", "With KOLO_AUTOTUNE: rank 0 writes every sample (settings, steps, bytes, "
       "seconds, score) and the settings it kept to this CSV file."},
      {"KOLO_AUTOTUNE_WARMUP_SAMPLES", "3", "Samples at the starting settings that are discarded first."},
      {"KOLO_AUTOTUNE_STEPS_PER_SAMPLE", "10",
       "Steps each sample measures (a step ends where a name seen since it began recurs)."},
      {"KOLO_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "20",
       "Samples scored (the starting settings, then the optimiser's choices) before the best is kept."},
      {"KOLO_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "0.5",
       "The scores' noise the optimiser assumes, as a share of their spread; larger trusts single samples less."},
  };
  return settings;
}

namespace {

// A setting whose default the job's layout decides (documented as "auto").
bool is_auto_setting(const std::string& name) {
  for (const SettingInfo& s : known_settings()) {
    if (name == s.name) return std::string(s.default_text) == "auto";
  }
  return false;
}

class Parser {
 public:
  Parser(const SettingLookup& lookup, const SettingOrigin& origin) : lookup_(lookup), origin_(origin) {}

  void non_negative_int(const char* name, int64_t* out) {
    const char* v = lookup_(name);
    if (v == nullptr || !status_.ok()) return;
    char* end = nullptr;
    errno = 0;
    const long long x = std::strtoll(v, &end, 10);
    if (*v == '\0' || *end != '\0' || errno != 0 || x < 0) {
      fail(name, v, "a non-negative integer");
      return;
    }
    *out = x;
  }

  void non_negative_double(const char* name, double* out) {
    const char* v = lookup_(name);
    if (v == nullptr || !status_.ok()) return;
    char* end = nullptr;
    errno = 0;
    const double x = std::strtod(v, &end);
    if (*v == '\0' || *end != '\0' || errno != 0 || !std::isfinite(x) || x < 0) {
      fail(name, v, "a non-negative number");
      return;
    }
    *out = x;
  }

  void text(const char* name, std::string* out) {
    const char* v = lookup_(name);
    if (v != nullptr) *out = v;
  }

  void boolean(const char* name, bool* out) {
    const char* v = lookup_(name);
    if (v == nullptr || !status_.ok()) return;
    std::string t = v;
    for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (t == "1" || t == "true" || t == "yes" || t == "on") {
      *out = true;
    } else if (t == "0" || t == "false" || t == "no" || t == "off" || t.empty()) {
      *out = false;
    } else {
      fail(name, v, "1 or 0");
    }
  }

  // One of `choices` (any case); *out = its index.
  void choice(const char* name, const std::vector<std::string>& choices, int* out) {
    const char* v = lookup_(name);
    if (v == nullptr || !status_.ok()) return;
    std::string t = v;
    for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    for (size_t i = 0; i < choices.size(); ++i) {
      if (choices[i] == t) {
        *out = static_cast<int>(i);
        return;
      }
    }
    std::string expected = "one of";
    for (const std::string& c : choices) expected += " " + c;
    fail(name, v, expected);
  }

  void log_level(const char* name, LogLevel* out) {
    const char* v = lookup_(name);
    if (v == nullptr || !status_.ok()) return;
    if (!parse_log_level(v, out)) fail(name, v, "one of trace, debug, info, warning, error");
  }

  void check(bool ok, const char* name, const std::string& what) {
    if (!ok && status_.ok()) {
      const char* v = lookup_(name);
      fail(name, v ? v : "", what);
    }
  }

  Status status() const { return status_; }

 private:
  void fail(const char* name, const char* value, const std::string& expected) {
    const HorovodSource* from = origin_ ? origin_(name) : nullptr;
    if (from != nullptr) {
      status_ = Status::InvalidArgument(from->name + "='" + from->written + "' is not valid: expected " + expected +
                                        " (kolo reads it as " + name + ").");
      return;
    }
    status_ = Status::InvalidArgument(std::string(name) + "='" + value + "' is not valid: expected " +
                                      expected + ".");
  }

  const SettingLookup& lookup_;
  const SettingOrigin& origin_;
  Status status_;
};

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
  Parser p(lookup, origin);
  p.non_negative_double("KOLO_CYCLE_TIME_MS", &c.cycle_time_ms);
  p.boolean("KOLO_CALLER_DRIVES", &c.caller_drives);
  p.non_negative_int("KOLO_SMALL_OP_BYTES", &c.small_op_bytes);
  p.non_negative_int("KOLO_DEVICE_GROUPS_IN_FLIGHT", &c.device_groups_in_flight);
  p.non_negative_int("KOLO_FUSION_THRESHOLD_BYTES", &c.fusion_threshold_bytes);
  p.non_negative_int("KOLO_CACHE_CAPACITY", &c.cache_capacity);
  p.text("KOLO_TIMELINE", &c.timeline_path);
  p.boolean("KOLO_TIMELINE_MARK_CYCLES", &c.timeline_mark_cycles);
  p.non_negative_double("KOLO_STALL_CHECK_SECONDS", &c.stall_check_seconds);
  p.non_negative_double("KOLO_STALL_SHUTDOWN_SECONDS", &c.stall_shutdown_seconds);
  p.non_negative_double("KOLO_PEER_TIMEOUT_SECONDS", &c.peer_timeout_seconds);
  p.non_negative_double("KOLO_RECOVERY_TIMEOUT_SECONDS", &c.recovery_timeout_seconds);
  p.log_level("KOLO_LOG_LEVEL", &c.log_level);
  p.non_negative_int("KOLO_SEGMENT_BYTES", &c.segment_bytes);
  p.non_negative_int("KOLO_ZERO_COPY_BYTES", &c.zero_copy_bytes);
  p.boolean("KOLO_HIERARCHICAL_ALLREDUCE", &c.hierarchical_allreduce);
  p.boolean("KOLO_HIERARCHICAL_ALLGATHER", &c.hierarchical_allgather);
  p.non_negative_int("KOLO_THREAD_NICE", &c.thread_nice);
  p.boolean("KOLO_SHARED_MEMORY", &c.shared_memory);
  p.text("KOLO_SHARED_MEMORY_DIR", &c.shared_memory_dir);
  p.non_negative_int("KOLO_SHARED_MEMORY_SLOT_BYTES", &c.shared_memory_slot_bytes);
  p.boolean("KOLO_DOORBELL", &c.doorbell);
  int controller = static_cast<int>(c.controller);
  p.choice("KOLO_CONTROLLER", {"auto", "mpi", "gloo"}, &controller);
  c.controller = static_cast<Config::Controller>(controller);
  p.non_negative_double("KOLO_GLOO_TIMEOUT_SECONDS", &c.gloo_timeout_seconds);
  p.text("KOLO_GLOO_IFACE", &c.gloo_iface);
  p.boolean("KOLO_GLOO_IN_PLACE", &c.gloo_in_place);
  int join_average = c.join_average_over_contributors ? 1 : 0;
  p.choice("KOLO_JOIN_AVERAGE", {"size", "contributors"}, &join_average);
  c.join_average_over_contributors = join_average == 1;
  // Bounds that keep the engine sane: a cycle of at most a minute, a cache whose bit vector stays
  // small, and segments whose element counts fit MPI's int counts.
  p.check(c.cycle_time_ms <= 60000.0, "KOLO_CYCLE_TIME_MS", "at most 60000 (one minute)");
  p.check(c.cache_capacity <= (1 << 20), "KOLO_CACHE_CAPACITY", "at most 1048576");
  p.check(c.small_op_bytes <= 4096, "KOLO_SMALL_OP_BYTES", "at most 4096");
  p.check(c.thread_nice <= 19, "KOLO_THREAD_NICE", "an integer from 0 to 19");
  p.check(c.segment_bytes <= (1ll << 30), "KOLO_SEGMENT_BYTES", "at most 1073741824 (1 GiB)");
  p.check(c.shared_memory_slot_bytes == Config::kAuto ||
              (c.shared_memory_slot_bytes >= 4096 && c.shared_memory_slot_bytes <= (64ll << 20) &&
               c.shared_memory_slot_bytes % 64 == 0),
          "KOLO_SHARED_MEMORY_SLOT_BYTES", "a multiple of 64 from 4096 to 67108864");
  p.check(!c.shared_memory_dir.empty(), "KOLO_SHARED_MEMORY_DIR", "a directory");
  Config::Autotune& a = c.autotune;
  p.boolean("KOLO_AUTOTUNE", &a.enabled);
  p.text("KOLO_AUTOTUNE_LOG", &a.log_path);
  p.non_negative_int("KOLO_AUTOTUNE_WARMUP_SAMPLES", &a.warmup_samples);
  p.non_negative_int("KOLO_AUTOTUNE_STEPS_PER_SAMPLE", &a.steps_per_sample);
  p.non_negative_int("KOLO_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", &a.max_samples);
  p.non_negative_double("KOLO_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", &a.noise);
  p.check(a.steps_per_sample >= 1 && a.steps_per_sample <= 100000, "KOLO_AUTOTUNE_STEPS_PER_SAMPLE",
          "an integer from 1 to 100000");
  p.check(a.max_samples >= 1 && a.max_samples <= 1000, "KOLO_AUTOTUNE_BAYES_OPT_MAX_SAMPLES",
          "an integer from 1 to 1000");
  p.check(a.warmup_samples <= 1000, "KOLO_AUTOTUNE_WARMUP_SAMPLES", "at most 1000");
  p.check(a.noise > 0 && a.noise <= 10, "KOLO_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "a number above 0, at most 10");
  a.fixed_fusion_threshold = lookup("KOLO_FUSION_THRESHOLD_BYTES") != nullptr;
  a.fixed_segment = lookup("KOLO_SEGMENT_BYTES") != nullptr;
  a.fixed_zero_copy = lookup("KOLO_ZERO_COPY_BYTES") != nullptr;
  a.fixed_hierarchical = lookup("KOLO_HIERARCHICAL_ALLREDUCE") != nullptr;
  if (!p.status().ok()) return p.status();
  *config = c;
  return Status::OK();
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
    if (!std::any_of(known_settings().begin(), known_settings().end(),
                     [&kv](const SettingInfo& s) { return kv.first == s.name; })) {
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
    std::set<std::string> known;
    for (const SettingInfo& s : known_settings()) known.insert(s.name);
    std::vector<std::string> names;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      const std::string entry = *e;
      names.push_back(entry.substr(0, entry.find('=')));
    }
    for (const std::string& name : names) {
      if (name.rfind("KOLO_", 0) == 0 && !known.count(name) && !read_elsewhere(name)) {
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
