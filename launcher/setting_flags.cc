#include "setting_flags.h"

#include <cmath>
#include <sstream>

#include "option_values.h"

namespace kolo {
namespace launcher {
namespace {

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
    {"--no-hierarchical-allgather", "KOLO_HIERARCHICAL_ALLGATHER", SettingFlag::kFixed, 1.0, "0"},
    {"--timeline-mark-cycles", "KOLO_TIMELINE_MARK_CYCLES", SettingFlag::kFixed, 1.0, "1"},
    {"--no-timeline-mark-cycles", "KOLO_TIMELINE_MARK_CYCLES", SettingFlag::kFixed, 1.0, "0"},
    {"--autotune", "KOLO_AUTOTUNE", SettingFlag::kFixed, 1.0, "1"},
    {"--no-autotune", "KOLO_AUTOTUNE", SettingFlag::kFixed, 1.0, "0"},
    {"--autotune-log-file", "KOLO_AUTOTUNE_LOG", SettingFlag::kText},
    {"--autotune-warmup-samples", "KOLO_AUTOTUNE_WARMUP_SAMPLES", SettingFlag::kInteger},
    {"--autotune-steps-per-sample", "KOLO_AUTOTUNE_STEPS_PER_SAMPLE", SettingFlag::kInteger},
    {"--autotune-bayes-opt-max-samples", "KOLO_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", SettingFlag::kInteger},
    {"--autotune-gaussian-process-noise", "KOLO_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", SettingFlag::kNumber},
    {"--log-level", "KOLO_LOG_LEVEL", SettingFlag::kLogLevel},
    // horovodrun's options for what kolo does not have: the ranks get the Horovod variable, and rank 0
    // says, once, that it means nothing in kolo (src/engine/horovod_settings.cc), or stays silent where
    // the value asks for what kolo does anyway.
    {"--torus-allreduce", "HOROVOD_TORUS_ALLREDUCE", SettingFlag::kFixed, 1.0, "1"},
    {"--no-torus-allreduce", "HOROVOD_TORUS_ALLREDUCE", SettingFlag::kFixed, 1.0, "0"},
    {"--mpi-threads-disable", "HOROVOD_MPI_THREADS_DISABLE", SettingFlag::kFixed, 1.0, "1"},
    {"--no-mpi-threads-disable", "HOROVOD_MPI_THREADS_DISABLE", SettingFlag::kFixed, 1.0, "0"},
    {"--num-nccl-streams", "HOROVOD_NUM_NCCL_STREAMS", SettingFlag::kInteger},
    {"--thread-affinity", "HOROVOD_THREAD_AFFINITY", SettingFlag::kInteger},
    {"--gloo-timeout-seconds", "KOLO_GLOO_TIMEOUT_SECONDS", SettingFlag::kInteger},
    {"--log-with-timestamp", "HOROVOD_LOG_HIDE_TIME", SettingFlag::kFixed, 1.0, "0"},
    {"--no-log-hide-timestamp", "HOROVOD_LOG_HIDE_TIME", SettingFlag::kFixed, 1.0, "0"},
    {"--log-without-timestamp", "HOROVOD_LOG_HIDE_TIME", SettingFlag::kFixed, 1.0, "1"},
    {"--log-hide-timestamp", "HOROVOD_LOG_HIDE_TIME", SettingFlag::kFixed, 1.0, "1"},
    // The world: --gloo starts the ranks without mpirun (launcher/gloo_launch.h).
    {"--gloo", "KOLO_CONTROLLER", SettingFlag::kFixed, 1.0, "gloo"},
    {"--mpi", "KOLO_CONTROLLER", SettingFlag::kFixed, 1.0, "mpi"},
};


}  // namespace

const SettingFlag* find_setting_flag(const std::string& flag) {
  for (const SettingFlag& f : kSettingFlags) {
    if (flag == f.flag) return &f;
  }
  return nullptr;
}

bool setting_value(const SettingFlag& f, const std::string& text, std::string* value, std::string* error) {
  if (f.kind == SettingFlag::kText) {
    *value = text;
    return true;
  }
  if (f.kind == SettingFlag::kLogLevel) {
    // horovodrun's levels, in either case; FATAL is kolo's quietest, error.
    const std::string level = lowercase(text);
    for (const char* known : {"trace", "debug", "info", "warning", "error"}) {
      if (level == known) {
        *value = level;
        return true;
      }
    }
    if (level == "fatal") {
      *value = "error";
      return true;
    }
    *error = std::string(f.flag) + " expects one of TRACE, DEBUG, INFO, WARNING, ERROR, FATAL, got '" + text + "'";
    return false;
  }
  const bool integer = f.kind == SettingFlag::kInteger;
  double x;
  if (!parse_number(text, &x) || (integer && x != std::floor(x))) {
    *error = std::string(f.flag) + " expects a non-negative " + (integer ? "integer" : "number") + ", got '" + text +
             "'";
    return false;
  }
  std::ostringstream out;
  out.precision(15);
  out << x * f.scale;
  *value = out.str();
  return true;
}

}  // namespace launcher
}  // namespace kolo
