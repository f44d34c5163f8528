#include "settings/settings_table.h"

#include <iterator>

namespace kolo {
namespace {

using T = SettingType;
using H = HorovodReading;
using F = FlagValue;

constexpr SettingLimits kNone{};
constexpr SettingLimits at_most(double highest, const char* expected) { return {0, highest, false, 1, expected}; }
constexpr SettingLimits from_to(double lowest, double highest, const char* expected) {
  return {lowest, highest, false, 1, expected};
}
constexpr HorovodAliasSpec hvd(const char* name, HorovodReading reading, const char* note) { return {name, reading, note}; }
// A flag that takes a value; `scale` turns horovodrun's unit into the setting's.
constexpr SettingFlagSpec takes(const char* flag, FlagValue value, const char* usage, const char* note = "",
                                double scale = 1.0) {
  return {flag, value, nullptr, scale, usage, note};
}
// A flag that sets `value`; `usage` nullptr where its pair's line shows it ("--[no-]...").
constexpr SettingFlagSpec sets(const char* flag, const char* value, const char* usage, const char* note = "") {
  return {flag, F::kFixed, value, 1.0, usage, note};
}

// Rows: name, type, default, limits, choice words, meaning, Horovod aliases, kolorun flags.
const SettingSpec kSettings[] = {
    {"KOLO_CYCLE_TIME_MS", T::kNumber, "1", at_most(60000, "at most 60000 (one minute)"), nullptr,
     "Time between negotiation cycles while this rank has ops in flight; an op enqueued on an idle engine starts a "
     "cycle at once (a small async one, see `KOLO_CALLER_DRIVES`, within this time), and an engine with nothing in "
     "flight sleeps longer, up to 50 ms.",
     {hvd("HOROVOD_CYCLE_TIME", H::kAsWritten, "milliseconds, fractions allowed")},
     {takes("--cycle-time-ms", F::kNumber, "--cycle-time-ms N")}},
    {"KOLO_CALLER_DRIVES", T::kFlag, "1", kNone, nullptr,
     "A blocking call, or the wait of an op kolo's thread has not taken up, runs its small CPU op or ready GPU op "
     "itself, sparing two thread hand-offs. 0: only if a profile shows callers busy in kolo. "
     "[Who runs an op](performance.md#who-runs-an-op)",
     {},
     {}},
    {"KOLO_SMALL_OP_BYTES", T::kBytes, "256", at_most(4096, "at most 4096"), nullptr,
     "A CPU allreduce of at most this many bytes (float32, float64, int32 or int64; not Adasum) whose name recurs "
     "rides on the negotiation's own collective when every rank has it ready: one collective instead of two. Every "
     "cycle's negotiation carries this many bytes more; 0 turns it off.",
     {},
     {}},
    {"KOLO_DEVICE_GROUPS_IN_FLIGHT", T::kInteger, "2", kNone, nullptr,
     "GPU groups on kolo's stream at once: with this many still running, the next cycle waits (at most 50 ms) for "
     "one to end, so what becomes ready meanwhile fuses into one group instead of many small ones; 0: never wait.",
     {},
     {}},
    {"KOLO_FUSION_THRESHOLD_BYTES", T::kBytes, "67108864", kNone, nullptr,
     "Largest fused allreduce (64 MiB). A tensor larger than this goes alone; 0 turns fusion off.",
     {hvd("HOROVOD_FUSION_THRESHOLD", H::kAsWritten, "bytes, as in Horovod (whose default is 128 MiB, kolo's 64 MiB)")},
     {takes("--fusion-threshold-mb", F::kInteger, "--fusion-threshold-mb N", ", in MiB (0: no fusion)", 1 << 20)}},
    {"KOLO_CACHE_CAPACITY", T::kInteger, "1024", at_most(1 << 20, "at most 1048576"), nullptr,
     "Responses remembered so that recurring names are agreed by a bit-vector allreduce; 0 turns the cache off.",
     {hvd("HOROVOD_CACHE_CAPACITY", H::kAsWritten, "0 turns the cache off")},
     {takes("--cache-capacity", F::kInteger, "--cache-capacity N", " (0: no response cache)")}},
    {"KOLO_TIMELINE", T::kPath, "(unset)", kNone, nullptr,
     "Write a Chrome trace of every tensor's phases to this file (rank 0). A name containing `%r` gives each rank "
     "its own file. See [Timeline](performance.md#timeline).",
     {hvd("HOROVOD_TIMELINE", H::kTimeline, "a file; DYNAMIC (no file until start_timeline()) is kolo's unset")},
     {takes("--timeline-filename", F::kText, "--timeline-filename FILE")}},
    {"KOLO_TIMELINE_MARK_CYCLES", T::kFlag, "0", kNone, nullptr,
     "1: the timeline also marks the start of every negotiation cycle that ran ops.",
     {hvd("HOROVOD_TIMELINE_MARK_CYCLES", H::kFlag, "flag")},
     {sets("--timeline-mark-cycles", "1", "--[no-]timeline-mark-cycles", " (0)"),
      sets("--no-timeline-mark-cycles", "0", nullptr)}},
    {"KOLO_STALL_CHECK_SECONDS", T::kNumber, "60", kNone, nullptr,
     "Report ops that some ranks submitted and others did not for this long; 0 turns the check off. See "
     "[Stall inspector](performance.md#stall-inspector).",
     {hvd("HOROVOD_STALL_CHECK_TIME_SECONDS", H::kAsWritten, "seconds"),
      hvd("HOROVOD_STALL_CHECK_DISABLE", H::kDisablesStall,
          "flag; on means 0 (no stall check), ahead of HOROVOD_STALL_CHECK_TIME_SECONDS, as in Horovod")},
     {takes("--stall-check-warning-time-seconds", F::kNumber, "--stall-check-warning-time-seconds N"),
      sets("--no-stall-check", "0", "--no-stall-check")}},
    {"KOLO_STALL_SHUTDOWN_SECONDS", T::kNumber, "0", kNone, nullptr,
     "Fail such ops on every rank after this long; 0 waits forever.",
     {hvd("HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", H::kAsWritten, "seconds")},
     {takes("--stall-check-shutdown-time-seconds", F::kNumber, "--stall-check-shutdown-time-seconds N")}},
    {"KOLO_PEER_TIMEOUT_SECONDS", T::kNumber, "30", kNone, nullptr,
     "A rank silent this long (frozen, or its host unreachable) is lost: every other rank fails its ops naming it "
     "and its host, and the job ends. 0 turns the watch off. "
     "[Faults](faults-and-security.md#a-rank-that-freezes-or-cannot-be-reached)",
     {},
     {}},
    {"KOLO_RECOVERY_TIMEOUT_SECONDS", T::kNumber, "60", kNone, nullptr,
     "In place (ULFM): a recovery not finished in this long is given up, the rank exits with status 1 and kolorun "
     "restarts from the last commit; 0 waits forever. [Elastic training](elastic.md#a-recovery-that-cannot-finish)",
     {},
     {}},
    {"KOLO_LOG_LEVEL", T::kLogLevel, "warning", kNone, nullptr, "trace, debug, info, warning or error (any case).",
     {hvd("HOROVOD_LOG_LEVEL", H::kLogLevel, "trace, debug, info, warning, error; fatal is kolo's error (its quietest)")},
     {takes("--log-level", F::kLogLevel, "--log-level LEVEL", " (trace, debug, info, warning, error; fatal: error)")}},
    {"KOLO_CONTROLLER", T::kChoice, "auto", kNone, "auto mpi gloo",
     "Which world the ranks form: `mpi` (started by mpirun, kolorun or `srun --mpi=pmix`), `gloo` (any launcher; "
     "they meet through a key-value store), or `auto`: `mpi` under an MPI launcher. "
     "[Running jobs](running-jobs.md#without-mpi)",
     {hvd("HOROVOD_CONTROLLER", H::kAsWritten, "mpi or gloo (any case): which world the ranks form")},
     // --gloo also changes how kolorun starts the ranks: launch_usage.cc says so in its own line.
     {sets("--gloo", "gloo", nullptr), sets("--mpi", "mpi", nullptr)}},
    {"KOLO_GLOO_TIMEOUT_SECONDS", T::kNumber, "120", kNone, nullptr,
     "How long the Gloo world's start waits for every rank, naming the ranks still missing, before `init()` fails. "
     "Raise it where ranks start far apart (containers pulled one by one).",
     {hvd("HOROVOD_GLOO_TIMEOUT_SECONDS", H::kAsWritten,
          "seconds the Gloo world's start waits for every rank (Horovod's default is 30, kolo's 120)")},
     {takes("--gloo-timeout-seconds", F::kInteger, "--gloo-timeout-seconds N")}},
    {"KOLO_GLOO_IFACE", T::kText, "(unset)", kNone, nullptr,
     "The network interface (`eth1`) of the Gloo world's connections between hosts; unset: the interface this host "
     "reaches the store through. Set it where hosts have several networks.",
     {hvd("HOROVOD_GLOO_IFACE", H::kAsWritten, "the network interface of the Gloo world's connections")},
     {}},
    {"KOLO_GLOO_IN_PLACE", T::kFlag, "0", kNone, nullptr,
     "1: the Gloo world's survivors of a lost rank go on in place, `kolo.elastic` rolling them back to their last "
     "commit ([Elastic training](elastic.md#in-place-in-the-gloo-world)); `kolorun --gloo --in-place` sets it. "
     "0: a lost rank ends the job.",
     {},
     {}},
    {"KOLO_SEGMENT_BYTES", T::kBytes, "auto", at_most(1 << 30, "at most 1073741824 (1 GiB)"), nullptr,
     "Segment size of CPU collectives. auto: 4194304 (4 MiB) on one host and for hierarchical allreduce, 33554432 "
     "(32 MiB) for flat allreduce across hosts. 0: one MPI call per fused buffer. [Why](performance.md#segments)",
     {},
     {}},
    {"KOLO_ZERO_COPY_BYTES", T::kBytes, "auto", kNone, nullptr,
     "CPU allreduce reduces a tensor of at least this size where it lies instead of copying it through the fusion "
     "buffer: 262144 (256 KiB) on one host, 8388608 (8 MiB) across hosts. 0 copies every fused tensor.",
     {},
     {}},
    {"KOLO_HIERARCHICAL_ALLREDUCE", T::kFlag, "auto", kNone, nullptr,
     "1: reduce inside each host, then across hosts (every host needs as many ranks, else flat with a warning). "
     "auto: on for CPU tensors across such hosts, GPU ones only under autotune; 0: flat. "
     "[Performance](performance.md#when-scaling-is-poor)",
     {hvd("HOROVOD_HIERARCHICAL_ALLREDUCE", H::kFlag, "flag; unset, kolo chooses by the layout (auto)")},
     {sets("--hierarchical-allreduce", "1", "--hierarchical-allreduce",
           " (the default across hosts with as many ranks on each)"),
      sets("--no-hierarchical-allreduce", "0", "--no-hierarchical-allreduce", ": flat")}},
    {"KOLO_HIERARCHICAL_ALLGATHER", T::kFlag, "0", kNone, nullptr,
     "1: allgather inside each host, then across hosts among each host's first rank, then a broadcast inside each "
     "host.",
     {hvd("HOROVOD_HIERARCHICAL_ALLGATHER", H::kFlag, "flag")},
     {sets("--hierarchical-allgather", "1", "--[no-]hierarchical-allgather", " (0)"),
      sets("--no-hierarchical-allgather", "0", nullptr)}},
    {"KOLO_SHARED_MEMORY", T::kFlag, "1", kNone, nullptr,
     "1: CPU collectives among one host's ranks go through kolo's own shared-memory segment (16 MiB at most; kolo "
     "warns once and falls back where `/dev/shm` cannot hold it). 0: never; only to compare. "
     "[Shared memory](performance.md#shared-memory-inside-a-host)",
     {},
     {}},
    {"KOLO_SHARED_MEMORY_DIR", T::kPath, "/dev/shm", {0, -1, false, 1, "a directory"}, nullptr,
     "Where the segment is made (a tmpfs). It is removed as soon as every rank of the host has mapped it, so nothing "
     "is left behind however the job ends; a leftover of a job killed while starting is removed by the next kolo "
     "that starts on the host.",
     {},
     {}},
    {"KOLO_SHARED_MEMORY_SLOT_BYTES", T::kBytes, "auto",
     {4096, 64 << 20, false, 64, "a multiple of 64 from 4096 to 67108864"}, nullptr,
     "Each rank's share of the segment per round, twice over (double-buffered): the segment is 2 x ranks x this. "
     "auto: 1048576 (1 MiB) up to 8 ranks on a host, less beyond, so that the segment stays within 16 MiB (65536 at "
     "least).",
     {},
     {}},
    {"KOLO_DOORBELL", T::kFlag, "1", kNone, nullptr,
     "Across hosts, a rank waiting for a late peer is woken by a UDP ring as soon as the peer has sent, not when a "
     "nap ends (up to 1 ms). 0: no UDP, for firewalls that allow none. "
     "[A late rank](performance.md#a-late-rank-on-another-host)",
     {},
     {}},
    {"KOLO_THREAD_NICE", T::kInteger, "0", at_most(19, "an integer from 0 to 19"), nullptr,
     "Nice value (0-19) of kolo's threads. Raise it on a CPU job whose training threads fill every core, so that "
     "backward goes first and reductions take the gaps; it never raises a priority.",
     {},
     {}},
    {"KOLO_JOIN_AVERAGE", T::kChoice, "size", kNone, "size contributors",
     "While some ranks are in `join()` (contributing zeros): `size`, an Average divides by the number of ranks, as "
     "Horovod and PyTorch's Join do; `contributors`, by the ranks that contributed.",
     {},
     {}},
    {"KOLO_AUTOTUNE", T::kFlag, "0", kNone, nullptr,
     "1: tune `KOLO_FUSION_THRESHOLD_BYTES`, `KOLO_SEGMENT_BYTES`, `KOLO_ZERO_COPY_BYTES` and, when the job spans "
     "hosts with as many ranks on each, `KOLO_HIERARCHICAL_ALLREDUCE` on the running job, then keep the best (see "
     "[Autotune](performance.md#autotune)). A setting given explicitly is not tuned.",
     {hvd("HOROVOD_AUTOTUNE", H::kFlag, "flag")},
     {sets("--autotune", "1", "--[no-]autotune", " (0)"), sets("--no-autotune", "0", nullptr)}},
    {"KOLO_AUTOTUNE_LOG", T::kPath, "(unset)", kNone, nullptr,
     "With `KOLO_AUTOTUNE`: rank 0 writes every sample (settings, steps, bytes, seconds, score) and the settings it "
     "kept to this CSV file.",
     {hvd("HOROVOD_AUTOTUNE_LOG", H::kAsWritten, "a CSV file")},
     {takes("--autotune-log-file", F::kText, "--autotune-log-file FILE")}},
    {"KOLO_AUTOTUNE_WARMUP_SAMPLES", T::kInteger, "3", at_most(1000, "at most 1000"), nullptr,
     "Samples at the starting settings that are discarded first.",
     {hvd("HOROVOD_AUTOTUNE_WARMUP_SAMPLES", H::kAsWritten, "samples")},
     {takes("--autotune-warmup-samples", F::kInteger, "--autotune-warmup-samples N")}},
    {"KOLO_AUTOTUNE_STEPS_PER_SAMPLE", T::kInteger, "10", from_to(1, 100000, "an integer from 1 to 100000"), nullptr,
     "Steps each sample measures (a step ends where a name seen since it began recurs).",
     {hvd("HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", H::kAsWritten, "steps")},
     {takes("--autotune-steps-per-sample", F::kInteger, "--autotune-steps-per-sample N")}},
    {"KOLO_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", T::kInteger, "20", from_to(1, 1000, "an integer from 1 to 1000"), nullptr,
     "Samples scored (the starting settings, then the optimiser's choices) before the best is kept.",
     {hvd("HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", H::kAsWritten, "samples")},
     {takes("--autotune-bayes-opt-max-samples", F::kInteger, "--autotune-bayes-opt-max-samples N")}},
    {"KOLO_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", T::kNumber, "0.5", {0, 10, true, 1, "a number above 0, at most 10"},
     nullptr,
     "The scores' noise the optimiser assumes, as a share of their spread; larger trusts single samples less.",
     {hvd("HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", H::kAsWritten,
          "a share of the scores' spread (Horovod's default is 0.8, kolo's 0.5)")},
     {takes("--autotune-gaussian-process-noise", F::kNumber, "--autotune-gaussian-process-noise X")}},
};

}  // namespace

const SettingSpec* settings_begin() { return std::begin(kSettings); }
const SettingSpec* settings_end() { return std::end(kSettings); }

const SettingSpec* find_setting(const std::string& name) {
  for (const SettingSpec& s : kSettings) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

std::string setting_takes(const SettingSpec& s) {
  switch (s.type) {
    case SettingType::kFlag:
      return "1 or 0";
    case SettingType::kInteger:
    case SettingType::kBytes:
      return "a non-negative integer";
    case SettingType::kNumber:
      return "a non-negative number";
    case SettingType::kChoice:
      return std::string("one of ") + s.words;
    case SettingType::kLogLevel:
      return "one of trace, debug, info, warning, error";
    case SettingType::kText:
      return "a name";
    case SettingType::kPath:
      return "a path";
  }
  return "";
}

}  // namespace kolo
