#include "launch_options.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace kolo {
namespace launcher {
namespace {

bool parse_int(const std::string& text, long long min, long long* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0' || errno != 0 || v < min) return false;
  *out = v;
  return true;
}

bool parse_number(const std::string& text, double* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (*end != '\0' || errno != 0 || !std::isfinite(v) || v < 0) return false;
  *out = v;
  return true;
}

bool valid_env_name(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

// The flags that set one of kolo's settings on every rank (horovodrun's names), one row each.
struct SettingFlag {
  enum Kind { kText, kInteger, kNumber, kFixed };
  const char* flag;
  const char* setting;
  Kind kind;
  double scale = 1.0;          // kInteger, kNumber: the setting is the value given times this
  const char* fixed = nullptr;  // kFixed: the flag takes no value and sets this
};

const SettingFlag kSettingFlags[] = {
    {"--timeline-filename", "KOLO_TIMELINE", SettingFlag::kText},
    {"--fusion-threshold-mb", "KOLO_FUSION_THRESHOLD_BYTES", SettingFlag::kInteger, 1024.0 * 1024.0},
    {"--cycle-time-ms", "KOLO_CYCLE_TIME_MS", SettingFlag::kNumber},
    {"--cache-capacity", "KOLO_CACHE_CAPACITY", SettingFlag::kInteger},
    {"--stall-check-warning-time-seconds", "KOLO_STALL_CHECK_SECONDS", SettingFlag::kNumber},
    {"--stall-check-shutdown-time-seconds", "KOLO_STALL_SHUTDOWN_SECONDS", SettingFlag::kNumber},
    {"--no-stall-check", "KOLO_STALL_CHECK_SECONDS", SettingFlag::kFixed, 1.0, "0"},
    {"--hierarchical-allreduce", "KOLO_HIERARCHICAL_ALLREDUCE", SettingFlag::kFixed, 1.0, "1"},
    {"--no-hierarchical-allreduce", "KOLO_HIERARCHICAL_ALLREDUCE", SettingFlag::kFixed, 1.0, "0"},
    {"--hierarchical-allgather", "KOLO_HIERARCHICAL_ALLGATHER", SettingFlag::kFixed, 1.0, "1"},
    {"--autotune", "KOLO_AUTOTUNE", SettingFlag::kFixed, 1.0, "1"},
    {"--autotune-log-file", "KOLO_AUTOTUNE_LOG", SettingFlag::kText},
    {"--autotune-warmup-samples", "KOLO_AUTOTUNE_WARMUP_SAMPLES", SettingFlag::kInteger},
    {"--autotune-steps-per-sample", "KOLO_AUTOTUNE_STEPS_PER_SAMPLE", SettingFlag::kInteger},
    {"--autotune-bayes-opt-max-samples", "KOLO_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", SettingFlag::kInteger},
    {"--autotune-gaussian-process-noise", "KOLO_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", SettingFlag::kNumber},
    {"--log-level", "KOLO_LOG_LEVEL", SettingFlag::kText},
};

const SettingFlag* find_setting_flag(const std::string& flag) {
  for (const SettingFlag& f : kSettingFlags) {
    if (flag == f.flag) return &f;
  }
  return nullptr;
}

}  // namespace

const char* usage() {
  return "usage: kolorun -np N [-H host:slots,... | --hostfile FILE] [options] command [args...]\n"
         "       kolorun [-np N] [options] command [args...]      (inside a Slurm allocation)\n"
         "       kolorun --min-np N [--max-np N] [--host-discovery-script FILE] [options] command [args...]\n"
         "\n"
         "Starts `command` on N ranks through Open MPI's mpirun, one rank per slot. Inside a Slurm\n"
         "allocation (sbatch, salloc) without -H or --hostfile, mpirun takes the allocation's hosts and\n"
         "slots, and -np defaults to its tasks.\n"
         "\n"
         "Elastic mode (--min-np, --max-np or --host-discovery-script) restarts the job: after a failure\n"
         "(counted against --reset-limit), and when every rank exits 75 (planned, e.g. on the SIGUSR1\n"
         "kolorun sends when the script finds more slots). Each attempt runs min(--max-np, slots) ranks\n"
         "(the first at most -np), once there are --min-np slots. Ranks see KOLO_ELASTIC=1,\n"
         "KOLO_ELASTIC_JOB_ID and KOLO_ELASTIC_ATTEMPT (0, 1, ...).\n"
         "\n"
         "  -np, --num-proc N                 number of ranks (in a Slurm allocation: its tasks)\n"
         "  -H, --hosts H:S,...               hosts and their slots (default: this host, N slots)\n"
         "  --hostfile FILE                   hosts from a file: lines 'host slots=N' or 'host:N'\n"
         "  --verbose                         print the mpirun command before running it\n"
         "  --dry-run                         print the mpirun command, start nothing\n"
         "  --check-build                     what this kolo was built with (MPI, CUDA, NCCL, frameworks), and why not\n"
         "  --version                         kolo's version\n"
         "  --timeline-filename FILE          KOLO_TIMELINE\n"
         "  --fusion-threshold-mb N           KOLO_FUSION_THRESHOLD_BYTES, in MiB (0: no fusion)\n"
         "  --cycle-time-ms N                 KOLO_CYCLE_TIME_MS\n"
         "  --cache-capacity N                KOLO_CACHE_CAPACITY (0: no response cache)\n"
         "  --hierarchical-allreduce          KOLO_HIERARCHICAL_ALLREDUCE=1 (the default across hosts\n"
         "                                    with as many ranks on each)\n"
         "  --no-hierarchical-allreduce       KOLO_HIERARCHICAL_ALLREDUCE=0: flat\n"
         "  --hierarchical-allgather          KOLO_HIERARCHICAL_ALLGATHER=1\n"
         "  --autotune                        KOLO_AUTOTUNE=1\n"
         "  --autotune-log-file FILE          KOLO_AUTOTUNE_LOG\n"
         "  --autotune-warmup-samples N       KOLO_AUTOTUNE_WARMUP_SAMPLES\n"
         "  --autotune-steps-per-sample N     KOLO_AUTOTUNE_STEPS_PER_SAMPLE\n"
         "  --autotune-bayes-opt-max-samples N      KOLO_AUTOTUNE_BAYES_OPT_MAX_SAMPLES\n"
         "  --autotune-gaussian-process-noise X     KOLO_AUTOTUNE_GAUSSIAN_PROCESS_NOISE\n"
         "  --stall-check-warning-time-seconds N   KOLO_STALL_CHECK_SECONDS\n"
         "  --stall-check-shutdown-time-seconds N  KOLO_STALL_SHUTDOWN_SECONDS\n"
         "  --no-stall-check                  KOLO_STALL_CHECK_SECONDS=0\n"
         "  --log-level LEVEL                 KOLO_LOG_LEVEL (trace, debug, info, warning, error)\n"
         "  --network-interface IF            the interface for MPI's control and data traffic (and NCCL's)\n"
         "  --start-timeout SECONDS           how long every host has to answer (default 30) and, elastic, every\n"
         "                                    rank of an attempt to start (default 120; else the attempt restarts)\n"
         "  --rsh-agent COMMAND               how to reach other hosts (default: ssh)\n"
         "  -x VAR[=VALUE]                    forward VAR to every rank, or set it\n"
         "  --min-np N                        elastic: start (and restart) once there are N slots (default 1)\n"
         "  --max-np N                        elastic: never more than N ranks\n"
         "  --host-discovery-script FILE      elastic: prints the hosts, a line each, 'host:slots' or 'host';\n"
         "                                    run through /bin/sh, in place of -H/--hostfile\n"
         "  --elastic-timeout SECONDS         elastic: how long to wait for --min-np slots (default 600)\n"
         "  --reset-limit N                   elastic: restarts allowed after failures (default: no limit)\n"
         "  --discovery-interval SECONDS      elastic: how often to run the script (default 1)\n"
         "  --blacklist-after N               elastic: leave out a host blamed for N failures (default 2; 0: never)\n"
         "  --in-place                        elastic, in place: survivors of a lost rank go on without it (needs\n"
         "                                    Open MPI 5 with ULFM as mpirun, e.g. KOLO_MPIRUN=venv/bin/mpirun)\n"
         "  --mpi-args \"...\"                  passed to mpirun as they are\n"
         "  -h, --help                        this text\n";
}

bool split_shell_words(const std::string& text, std::vector<std::string>* words, std::string* error) {
  words->clear();
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote == '\'') {
      if (c == '\'') quote = 0; else cur += c;
      continue;
    }
    if (quote == '"') {
      if (c == '"') {
        quote = 0;
      } else if (c == '\\' && i + 1 < text.size() && std::string("\"\\$`").find(text[i + 1]) != std::string::npos) {
        cur += text[++i];
      } else {
        cur += c;
      }
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_word) words->push_back(cur);
      cur.clear();
      in_word = false;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      cur += text[++i];
      in_word = true;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (quote != 0) {
    *error = std::string("unterminated ") + quote + " quote in --mpi-args";
    return false;
  }
  if (in_word) words->push_back(cur);
  return true;
}

bool parse_host_list(const std::string& text, std::vector<Host>* hosts, std::string* error) {
  std::stringstream s(text);
  std::string item;
  while (std::getline(s, item, ',')) {
    if (item.empty()) {
      *error = "empty host name in -H '" + text + "'";
      return false;
    }
    Host h;
    const size_t colon = item.rfind(':');
    h.name = item.substr(0, colon);
    if (colon != std::string::npos) {
      long long slots;
      if (!parse_int(item.substr(colon + 1), 1, &slots)) {
        *error = "bad slot count in '" + item + "': expected host:N with N >= 1";
        return false;
      }
      h.slots = static_cast<int>(slots);
    }
    if (h.name.empty()) {
      *error = "empty host name in -H '" + text + "'";
      return false;
    }
    hosts->push_back(h);
  }
  if (hosts->empty()) {
    *error = "-H needs at least one host";
    return false;
  }
  return true;
}

bool parse_hostfile_text(const std::string& text, std::vector<Host>* hosts, std::string* error) {
  std::stringstream s(text);
  std::string line;
  int number = 0;
  while (std::getline(s, line)) {
    ++number;
    line = line.substr(0, line.find('#'));
    std::stringstream words(line);
    std::string name, rest;
    if (!(words >> name)) continue;
    Host h;
    h.name = name;
    const size_t colon = name.rfind(':');
    long long slots = 1;
    if (colon != std::string::npos) {
      h.name = name.substr(0, colon);
      if (!parse_int(name.substr(colon + 1), 1, &slots)) {
        *error = "line " + std::to_string(number) + ": bad slot count in '" + name + "'";
        return false;
      }
    }
    while (words >> rest) {
      if (rest.rfind("slots=", 0) == 0 && parse_int(rest.substr(6), 1, &slots)) continue;
      if (rest.rfind("max_slots=", 0) == 0) continue;  // Open MPI's; kolo places one rank per slot
      *error = "line " + std::to_string(number) + ": expected 'host slots=N', got '" + line + "'";
      return false;
    }
    h.slots = static_cast<int>(slots);
    hosts->push_back(h);
  }
  if (hosts->empty()) {
    *error = "the hostfile lists no hosts";
    return false;
  }
  return true;
}

bool parse_command_line(const std::vector<std::string>& args, LaunchOptions* o, std::string* error) {
  *o = LaunchOptions();
  size_t i = 0;
  // "--name=value" is "--name value", as argparse (and so horovodrun) takes it.
  std::string inline_value;
  bool has_inline = false;
  auto value = [&](const std::string& flag, std::string* v) {
    if (has_inline) {
      *v = inline_value;
      has_inline = false;
      return true;
    }
    if (i + 1 >= args.size()) {
      *error = flag + " needs a value";
      return false;
    }
    *v = args[++i];
    return true;
  };
  auto set = [&](const SettingFlag& f) {
    if (f.kind == SettingFlag::kFixed) {
      o->settings.emplace_back(f.setting, f.fixed);
      return true;
    }
    std::string v;
    if (!value(f.flag, &v)) return false;
    if (f.kind == SettingFlag::kText) {
      o->settings.emplace_back(f.setting, v);
      return true;
    }
    const bool integer = f.kind == SettingFlag::kInteger;
    double x;
    if (!parse_number(v, &x) || (integer && x != std::floor(x))) {
      *error = std::string(f.flag) + " expects a non-negative " + (integer ? "integer" : "number") + ", got '" + v +
               "'";
      return false;
    }
    std::ostringstream text;
    text.precision(15);
    text << x * f.scale;
    o->settings.emplace_back(f.setting, text.str());
    return true;
  };
  auto count = [&](const std::string& flag, long long min, int* out) {
    std::string v;
    long long n;
    if (!value(flag, &v)) return false;
    if (!parse_int(v, min, &n) || n > 1000000000) {
      *error = flag + " expects a " + (min > 0 ? "positive" : "non-negative") + " integer, got '" + v + "'";
      return false;
    }
    *out = static_cast<int>(n);
    return true;
  };
  auto seconds = [&](const std::string& flag, bool zero_allowed, double* out) {
    std::string v;
    if (!value(flag, &v)) return false;
    double x;
    if (!parse_number(v, &x) || (x == 0 && !zero_allowed)) {
      *error = flag + " expects a " + (zero_allowed ? "non-negative" : "positive") + " number of seconds, got '" + v + "'";
      return false;
    }
    *out = x;
    return true;
  };
  bool hosts_given = false;
  std::string elastic_only;  // the first option that means something in elastic mode only
  for (; i < args.size(); ++i) {
    std::string a = args[i];
    has_inline = false;
    const size_t eq = a.find('=');
    if (a.rfind("--", 0) == 0 && a.size() > 2 && eq != std::string::npos) {
      inline_value = a.substr(eq + 1);
      has_inline = true;
      a = a.substr(0, eq);
    }
    std::string v;
    if (const SettingFlag* f = find_setting_flag(a)) {
      if (!set(*f)) return false;
    } else if (a == "-np" || a == "--num-proc" || a == "-n") {
      if (!count(a, 1, &o->num_proc)) return false;
    } else if (a == "-H" || a == "--hosts") {
      if (!value(a, &v) || !parse_host_list(v, &o->hosts, error)) return false;
      if (hosts_given) {
        *error = "give hosts once, with -H or --hostfile";
        return false;
      }
      hosts_given = true;
    } else if (a == "--hostfile" || a == "-hostfile") {
      if (!value(a, &v)) return false;
      if (hosts_given) {
        *error = "give hosts once, with -H or --hostfile";
        return false;
      }
      hosts_given = true;
      std::ifstream f(v);
      if (!f) {
        *error = "cannot read hostfile '" + v + "'";
        return false;
      }
      std::stringstream text;
      text << f.rdbuf();
      if (!parse_hostfile_text(text.str(), &o->hosts, error)) {
        *error = "hostfile '" + v + "': " + *error;
        return false;
      }
      o->hostfile = v;
    } else if (a == "--verbose" || a == "-v") {
      o->verbose = true;
    } else if (a == "--dry-run") {
      o->dry_run = true;
    } else if (a == "--check-build" || a == "-cb") {
      o->check_build = true;
    } else if (a == "--version") {
      o->version = true;
    } else if (a == "-h" || a == "--help") {
      o->help = true;
    } else if (a == "--network-interface") {
      if (!value(a, &v)) return false;
      o->network_interface = v;
    } else if (a == "--start-timeout") {
      if (!seconds(a, false, &o->start_timeout_seconds)) return false;
      o->ranks_start_timeout_seconds = o->start_timeout_seconds;
    } else if (a == "--min-np") {
      if (!count(a, 1, &o->min_np)) return false;
    } else if (a == "--max-np") {
      if (!count(a, 1, &o->max_np)) return false;
    } else if (a == "--host-discovery-script") {
      if (!value(a, &v)) return false;
      if (v.empty()) {
        *error = a + " needs a file";
        return false;
      }
      o->discovery_script = v;
    } else if (a == "--in-place") {
      o->in_place = true;
    } else if (a == "--elastic-timeout") {
      if (!seconds(a, true, &o->elastic_timeout_seconds)) return false;
      elastic_only = elastic_only.empty() ? a : elastic_only;
    } else if (a == "--reset-limit") {
      if (!count(a, 0, &o->reset_limit)) return false;
      elastic_only = elastic_only.empty() ? a : elastic_only;
    } else if (a == "--discovery-interval") {
      if (!seconds(a, false, &o->discovery_interval_seconds)) return false;
      elastic_only = elastic_only.empty() ? a : elastic_only;
    } else if (a == "--blacklist-after") {
      if (!count(a, 0, &o->blacklist_after)) return false;
      elastic_only = elastic_only.empty() ? a : elastic_only;
    } else if (a == "--rsh-agent") {
      if (!value(a, &v)) return false;
      o->rsh_agent = v;
    } else if (a == "-x") {
      if (!value(a, &v)) return false;
      LaunchOptions::EnvVar e;
      const size_t eq = v.find('=');
      e.name = v.substr(0, eq);
      if (eq != std::string::npos) {
        e.value = v.substr(eq + 1);
        e.has_value = true;
      }
      if (!valid_env_name(e.name)) {
        *error = "-x expects VAR or VAR=VALUE, got '" + v + "'";
        return false;
      }
      o->env.push_back(e);
    } else if (a == "--mpi-args") {
      std::vector<std::string> words;
      if (!value(a, &v) || !split_shell_words(v, &words, error)) return false;
      o->mpi_args.insert(o->mpi_args.end(), words.begin(), words.end());
    } else if (a == "--") {
      o->command.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    } else if (!a.empty() && a[0] == '-') {
      *error = "unknown option '" + a + "' (kolorun --help lists them; pass mpirun's own with --mpi-args)";
      return false;
    } else {
      o->command.assign(args.begin() + static_cast<long>(i), args.end());
      break;
    }
    if (has_inline) {
      *error = a + " takes no value";
      return false;
    }
  }
  if (o->help || o->check_build || o->version) return true;
  if (!o->discovery_script.empty() && hosts_given) {
    *error = "give hosts one way: --host-discovery-script, or -H/--hostfile";
    return false;
  }
  if (!elastic_only.empty() && !o->elastic()) {
    *error = elastic_only + " is for elastic mode: add --min-np, --max-np, --host-discovery-script or --in-place";
    return false;
  }
  const int min_np = std::max(1, o->min_np);
  if (o->max_np > 0 && o->max_np < min_np) {
    *error = "--max-np " + std::to_string(o->max_np) + " is less than --min-np " + std::to_string(min_np);
    return false;
  }
  if (o->elastic() && o->num_proc > 0 && o->num_proc < min_np) {
    *error = "-np " + std::to_string(o->num_proc) + " is less than --min-np " + std::to_string(min_np);
    return false;
  }
  if (o->elastic() && o->max_np > 0 && o->num_proc > o->max_np) {
    *error = "-np " + std::to_string(o->num_proc) + " is more than --max-np " + std::to_string(o->max_np);
    return false;
  }
  if (o->command.empty()) {
    *error = "no command to run: kolorun -np N [options] command [args...]";
    return false;
  }
  return true;
}

}  // namespace launcher
}  // namespace kolo
