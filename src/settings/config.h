// Every KOLO_* setting's field, read in this one place (config.cc) by its row of settings/settings_table.cc,
// which declares its type, default, limits, aliases and flags. The member defaults here are checked against
// the table's (check_config_defaults), since Config{} is used without parsing too.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "comm/allreduce_choice.h"
#include "comm/topology.h"
#include "common/logging.h"
#include "settings/horovod_settings.h"
#include "settings/setting_parser.h"
#include "kolo/types.h"

namespace kolo {

struct Config {
  double cycle_time_ms = 1.0;
  // A blocking call runs the negotiation of its op (alone in flight or beside others) on the caller's thread
  // (Engine::drive). Needs MPI_THREAD_MULTIPLE: the runtime turns it off without.
  bool caller_drives = true;
  // Allreduces of at most this many bytes ride on the negotiation's collective (engine/rider.h); 0: never.
  int64_t small_op_bytes = 256;
  // With this many GPU groups still on kolo's stream, a cycle waits for one to end (0: never).
  int64_t device_groups_in_flight = 2;
  int64_t fusion_threshold_bytes = 64ll << 20;
  int64_t cache_capacity = 1024;
  std::string timeline_path;  // empty: no timeline
  bool timeline_mark_cycles = false;
  double stall_check_seconds = 60.0;
  double stall_shutdown_seconds = 0.0;
  // A process that sends no heartbeat for this long (frozen, or its host unreachable) is lost: every
  // rank fails its ops naming it. 0: no watch.
  double peer_timeout_seconds = 30.0;
  // In place (ULFM): a recovery that has not finished in this long is given up, the rank exiting for a
  // restart from the last commit. 0: no bound.
  double recovery_timeout_seconds = 60.0;
  LogLevel log_level = LogLevel::kWarning;
  // kAuto: chosen by the job's layout (resolve_layout_defaults).
  static constexpr int64_t kAuto = -1;
  int64_t segment_bytes = kAuto;
  int64_t zero_copy_bytes = kAuto;
  // Unless given (autotune.fixed_hierarchical), chosen by the job's layout (resolve_layout_defaults).
  bool hierarchical_allreduce = false;
  bool hierarchical_allgather = false;
  // CPU collectives among the ranks of one host through kolo's shared-memory segment (comm/shm/), made
  // in `shared_memory_dir`, each rank's slot `shared_memory_slot_bytes` (double-buffered; kAuto: by the
  // host's ranks, comm/mpi/host_shm.h).
  bool shared_memory = true;
  std::string shared_memory_dir = "/dev/shm";
  int64_t shared_memory_slot_bytes = kAuto;
  // Which world the ranks form (comm/world.h): by how the process was started (kAuto: an MPI launcher's
  // process MPI, any other Gloo), or forced.
  enum class Controller { kAuto = 0, kMpi = 1, kGloo = 2 };
  Controller controller = Controller::kAuto;
  // The Gloo world: how long its start waits for every rank, and the interface its connections use (empty:
  // the one this host reaches the store through).
  double gloo_timeout_seconds = 120.0;
  std::string gloo_iface;
  // Whether the Gloo world's survivors of a lost rank go on in place (comm/gloo/survivors.h).
  bool gloo_in_place = false;
  // Across hosts, negotiation's waits sleep on a UDP doorbell that the peer they wait for rings
  // (comm/mpi/mpi_peer_bell.h), instead of napping up to 1 ms.
  bool doorbell = true;
  // Nice value of kolo's thread (and the threads it starts): above 0, training threads that fill
  // every core run first and the reductions take the gaps (CPU training). 0: left as it is.
  int64_t thread_nice = 0;
  // While some ranks are in join(): an Average divides by every rank (Horovod's and DDP's Join), or
  // by the ranks that contributed.
  bool join_average_over_contributors = false;
  // KOLO_AUTOTUNE (engine/tuning/autotuner.h): tunes the fusion threshold, segment and zero-copy sizes
  // and, across hosts, hierarchical allreduce on the running job; a setting given explicitly stays fixed.
  struct Autotune {
    bool enabled = false;
    std::string log_path;  // empty: no log
    int64_t warmup_samples = 3;
    int64_t steps_per_sample = 10;
    int64_t max_samples = 20;
    double noise = 0.5;
    // Given explicitly (environment or init's settings): not tuned.
    bool fixed_fusion_threshold = false, fixed_segment = false, fixed_zero_copy = false,
         fixed_hierarchical = false;
  } autotune;
};

// Reads the settings through `lookup` (nullptr: unset). An invalid value is an error that names the
// variable and what it accepts: the KOLO_* name, or the HOROVOD_* variable and its value as the user
// wrote them where `origin` says the value came from one (settings/horovod_settings.h).
Status parse_config(const SettingLookup& lookup, Config* config, const SettingOrigin& origin = nullptr);

// Not OK, naming the setting, where a member default of Config differs from the table's default.
Status check_config_defaults();

// What comm/allreduce_choice.h needs of the settings: KOLO_HIERARCHICAL_ALLREDUCE as given (or auto) and
// whether KOLO_AUTOTUNE is on.
AllreduceSettings allreduce_settings(const Config& config);

// Fills in the settings left to the job's layout. Whether CPU allreduce is hierarchical, unless given:
// comm/allreduce_choice.h. On one host, small pieces win: 4 MiB segments stay in cache and tensors
// from 256 KiB are reduced where they lie. Hierarchical across hosts, whose pipelined stages also
// favour 4 MiB segments; flat across hosts, each MPI call costs network round trips, so fewer, larger
// ones win: 32 MiB segments. Across hosts zero copy starts at 8 MiB.
void resolve_layout_defaults(const Topology& topology, Config* config);

// Reads the process environment, with `overrides` taking precedence, and HOROVOD_* variables as the
// aliases of KOLO_* settings (a KOLO_* set too wins). What the caller should warn about comes back in
// `warnings`, a line each: KOLO_* names that kolo does not know (typos, most likely), and HOROVOD_*
// variables overridden, with no meaning here, or unknown.
Status config_from_environment(const Settings& overrides, Config* config, std::vector<std::string>* warnings);

}  // namespace kolo
